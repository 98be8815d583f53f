#include "fabricbench/facts/host_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "fabricbench/test_hooks.hpp"

namespace fs = std::filesystem;

namespace fabricbench::facts {
namespace {

std::string after_colon(const std::string& text) {  // "4: ACTIVE" -> "ACTIVE"
  const auto colon = text.find(':');
  std::string out = colon == std::string::npos ? text : text.substr(colon + 1);
  out.erase(0, out.find_first_not_of(' '));
  return out;
}

bool is_pci_address(const std::string& name) {  // "0000:17:00.0"
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

}  // namespace

HostFiles HostFiles::for_host(const std::string& host) { return for_host(host, TestHooks::current().sysroot); }

HostFiles HostFiles::for_host(const std::string& host, std::string r) {
  if (r.empty()) return HostFiles();
  for (auto pos = r.find("%h"); pos != std::string::npos; pos = r.find("%h")) r.replace(pos, 2, host);
  return HostFiles(r);
}

bool HostFiles::exists(std::string_view p) const {
  std::error_code ec;
  return fs::exists(path(p), ec);
}

std::optional<std::string> HostFiles::read(std::string_view p) const {
  std::ifstream in(path(p), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string HostFiles::line(std::string_view p) const {
  std::ifstream in(path(p));
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<std::uint64_t> HostFiles::number(std::string_view p) const {
  const auto text = read(p);
  if (!text || text->empty()) return std::nullopt;
  try {
    return std::stoull(*text, nullptr, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> HostFiles::list(std::string_view dir) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path(dir), ec)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string HostFiles::resolve(std::string_view p) const {
  std::error_code ec;
  const auto real = fs::canonical(path(p), ec).string();
  if (ec) return {};
  if (root_.empty()) return real;
  const auto root = fs::canonical(root_, ec).string();
  return real.rfind(root, 0) == 0 ? real.substr(root.size()) : real;
}

std::vector<RdmaPort> read_rdma_ports(const HostFiles& files) {
  std::vector<RdmaPort> ports;
  for (const auto& device : files.list("/sys/class/infiniband")) {
    const std::string dev_dir = "/sys/class/infiniband/" + device;
    const std::string firmware = files.line(dev_dir + "/fw_ver");
    const auto numa = files.number(dev_dir + "/device/numa_node");
    std::string pci;
    if (const auto target = files.resolve(dev_dir + "/device"); !target.empty()) {
      const auto name = fs::path(target).filename().string();
      if (is_pci_address(name)) pci = name;
    }
    for (const auto& port_name : files.list(dev_dir + "/ports")) {
      const std::string dir = dev_dir + "/ports/" + port_name;
      RdmaPort p;
      p.device = device;
      p.port = std::atoi(port_name.c_str());
      p.state = after_colon(files.line(dir + "/state"));
      p.phys_state = after_colon(files.line(dir + "/phys_state"));
      p.link_layer = files.line(dir + "/link_layer");
      p.rate = files.line(dir + "/rate");
      p.rate_gbps = std::atof(p.rate.c_str());
      p.firmware = firmware;
      p.numa_node = numa && *numa < 4096 ? static_cast<int>(*numa) : -1;
      p.pci_address = pci;
      p.netdev = files.line(dir + "/gid_attrs/ndevs/0");
      // Up to the first RoCE v2 entry (a RoCE port's default GID is entries 0 and 1, v1 and v2): the rest of the
      // table is mostly empty entries, a file read each (rxe's has 1024), and a run reads these facts several times
      // (in the Soft-RoCE guest, 8 ranks on 10 rxe devices: 70 s of a sweep's start).
      for (const auto& index : files.list(dir + "/gid_attrs/types")) {
        const std::string gid = files.line(dir + "/gids/" + index);
        if (gid.empty() || gid == "0000:0000:0000:0000:0000:0000:0000:0000") continue;
        std::string type = files.line(dir + "/gid_attrs/types/" + index);
        std::transform(type.begin(), type.end(), type.begin(), ::tolower);
        if ((p.roce_v2 = type.find("v2") != std::string::npos)) break;
      }
      for (const auto& [folder, prefix] : {std::pair{"/counters", ""}, std::pair{"/hw_counters", "hw_"}})
        for (const auto& name : files.list(dir + folder))
          if (const auto v = files.number(dir + folder + "/" + name)) p.counters[prefix + name] = *v;
      ports.push_back(std::move(p));
    }
  }
  return ports;
}

const std::vector<PortCounter>& port_error_counters() {
  static const std::vector<PortCounter> counters{
      {"symbol_error", "symbol errors"},
      {"link_error_recovery", "link error recovery"},
      {"link_downed", "link downed"},
      {"port_rcv_errors", "receive errors"},
      {"port_rcv_remote_physical_errors", "remote physical errors"},
      {"port_xmit_discards", "transmit discards"},
      {"excessive_buffer_overrun_errors", "buffer overruns"},
      {"local_link_integrity_errors", "local link integrity errors"},
  };
  return counters;
}

std::string bracketed_choice(std::string_view line) {
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::string(line);
  return std::string(line.substr(open + 1, close - open - 1));
}

std::set<int> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  std::stringstream in{std::string(text)};
  for (std::string part; std::getline(in, part, ',');) {
    if (part.empty() || !std::isdigit(static_cast<unsigned char>(part[0]))) continue;
    const auto dash = part.find('-');
    const int lo = std::stoi(part);
    const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
  }
  return cpus;
}

std::map<int, int> cpu_nodes(const HostFiles& files) {
  std::map<int, int> nodes;
  for (const auto& name : files.list("/sys/devices/system/node")) {
    if (name.rfind("node", 0) != 0 || name.size() < 5 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    const int node = std::stoi(name.substr(4));
    for (int cpu : parse_cpu_list(files.line("/sys/devices/system/node/" + name + "/cpulist"))) nodes[cpu] = node;
  }
  return nodes;
}

std::set<std::string> loaded_modules(const HostFiles& files) {
  std::set<std::string> names;
  std::istringstream in(files.read("/proc/modules").value_or(""));
  for (std::string line; std::getline(in, line);) names.insert(line.substr(0, line.find(' ')));
  return names;
}

std::vector<std::uint64_t> buddy_free_pages(std::string_view buddyinfo) {
  std::vector<std::uint64_t> free(11, 0);
  std::istringstream in{std::string(buddyinfo)};
  for (std::string line; std::getline(in, line);) {
    const auto zone = line.find("zone");
    if (zone == std::string::npos) continue;
    std::istringstream fields(line.substr(zone + 4));
    std::string name;
    fields >> name;
    std::uint64_t n = 0;
    for (std::size_t order = 0; order < free.size() && fields >> n; ++order) free[order] += n;
  }
  return free;
}

double free_share_at_or_above(const std::vector<std::uint64_t>& free_pages, int order) {
  double total = 0, large = 0;
  for (std::size_t o = 0; o < free_pages.size(); ++o) {
    const double pages = static_cast<double>(free_pages[o]) * static_cast<double>(1ull << o);
    total += pages;
    if (static_cast<int>(o) >= order) large += pages;
  }
  return total > 0 ? large / total : 0.0;
}

std::vector<std::string> pci_devices(const HostFiles& files, std::string_view vendor,
                                     const std::vector<std::string>& class_prefixes) {
  std::vector<std::string> out;
  for (const auto& address : files.list("/sys/bus/pci/devices")) {
    const std::string dir = "/sys/bus/pci/devices/" + address;
    if (files.line(dir + "/vendor") != vendor) continue;
    const std::string cls = files.line(dir + "/class");  // "0x030200"
    for (const auto& prefix : class_prefixes)
      if (cls.rfind("0x" + prefix, 0) == 0) {
        out.push_back(address);
        break;
      }
  }
  return out;
}

int pci_numa_node(const HostFiles& files, const std::string& address) {
  const std::string text = files.line("/sys/bus/pci/devices/" + address + "/numa_node");
  return text.empty() ? -1 : std::atoi(text.c_str());
}

std::vector<std::string> pci_upstream(const HostFiles& files, const std::string& address) {
  std::vector<std::string> bridges;
  for (const auto& part : fs::path(files.resolve("/sys/bus/pci/devices/" + address))) {
    const auto name = part.string();
    if (is_pci_address(name) && name != address) bridges.push_back(name);
  }
  return bridges;
}

std::vector<std::string> pci_bridges_between(const std::vector<std::string>& up_a,
                                             const std::vector<std::string>& up_b) {
  std::size_t common = 0;
  while (common < up_a.size() && common < up_b.size() && up_a[common] == up_b[common]) ++common;
  std::vector<std::string> out(up_a.begin() + static_cast<std::ptrdiff_t>(common), up_a.end());
  out.insert(out.end(), up_b.begin() + static_cast<std::ptrdiff_t>(common), up_b.end());
  // The last common bridge routes between its two branches: ACS there redirects their traffic too.
  if (common > 0 && common <= up_a.size()) out.insert(out.begin(), up_a[common - 1]);
  return out;
}

std::optional<AcsControl> parse_acs(const std::string& config) {
  if (config.size() < 0x104) return std::nullopt;
  auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(config[at + static_cast<std::size_t>(i)]);
    return v;
  };
  AcsControl acs;
  std::size_t at = 0x100;
  for (int guard = 0; at >= 0x100 && at + 8 <= config.size() && guard < 64; ++guard) {
    const std::uint32_t header = u32(at);
    if (header == 0 || header == 0xffffffffu) break;
    if ((header & 0xffff) == 0x000d) {  // ACS extended capability
      acs.present = true;
      acs.control = static_cast<std::uint16_t>(u32(at + 4) >> 16);
      return acs;
    }
    at = header >> 20;
    if (at == 0) break;
  }
  return acs;
}

}  // namespace fabricbench::facts
