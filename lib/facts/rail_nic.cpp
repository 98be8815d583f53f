#include "fabricbench/facts/rail_nic.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::facts {
namespace {

bool digits(std::string_view s) {
  return !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "10.91.0.0/24" -> network and mask (host order); nullopt when not a subnet.
std::optional<std::pair<std::uint32_t, std::uint32_t>> subnet(const std::string& cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string::npos || !digits(cidr.substr(slash + 1))) return std::nullopt;
  const int bits = std::stoi(cidr.substr(slash + 1));
  in_addr a{};
  if (bits > 32 || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &a) != 1) return std::nullopt;
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return std::make_pair(ntohl(a.s_addr) & mask, mask);
}

}  // namespace

RailMap RailMap::read(const std::string& path, const std::string& option) {
  cli::require_text_file(path, option);
  std::ifstream in(path);
  if (!in) throw Error::usage(fmt::format("{} {}: cannot read the file", option, path));
  return parse(in, path, option);
}

namespace {

constexpr const char* allowed =
    "allowed: one line \"RAIL KEY=VALUE ...\" per rail, rails 0..R-1 each once (R at most 64), keys "
    "rdma=DEVICE[:PORT] and net=INTERFACE or net=A.B.C.D/N, at least one key and each at most once per line, \"#\" "
    "starts a comment";

// Letters, digits, '_', '.' and '-', at most `most`, starting with a letter or digit (or '_' where allowed).
bool name_chars(std::string_view s, std::size_t most, bool underscore_first) {
  if (s.empty() || s.size() > most) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0])) && !(underscore_first && s[0] == '_')) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

// "A.B.C.D/N" with octets 0-255 and N 0-32; nullopt when it is not shaped like one, false when a number is out of
// range.
std::optional<bool> cidr_shape(const std::string& v) {
  int a, b, c, d, n;
  char end;
  if (v.find_first_not_of("0123456789./") != std::string::npos ||
      std::sscanf(v.c_str(), "%3d.%3d.%3d.%3d/%2d%c", &a, &b, &c, &d, &n, &end) != 5)
    return std::nullopt;
  return a <= 255 && b <= 255 && c <= 255 && d <= 255 && n <= 32;
}

}  // namespace

RailMap RailMap::parse(std::istream& in, std::string_view source, std::string_view option) {
  std::vector<std::optional<RailNic>> rails;
  std::vector<int> lines;
  std::string text;
  const auto fail = [&](int line, const std::string& what) {
    return Error::usage(fmt::format("{} {}:{}: {}; {}", option, source, line, what, allowed));
  };
  const auto shown = [](const std::string& v) { return "'" + v.substr(0, 64) + "'"; };
  for (int line = 1; std::getline(in, text); ++line) {
    if (const auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::string first;
    if (!(words >> first)) continue;
    if (!digits(first) || first.size() > 2 || (first.size() == 2 && first[0] == '0') || std::stoi(first) > 63)
      throw fail(line, fmt::format("rail {} is not a whole number 0-63", shown(first)));
    const int rail = std::stoi(first);
    if (static_cast<std::size_t>(rail) < rails.size() && rails[rail])
      throw fail(line, fmt::format("rail {} again (first on line {})", rail, lines[rail]));
    RailNic nic;
    std::set<std::string> seen;
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        throw fail(line, fmt::format("{} is not KEY=VALUE", shown(word)));
      const auto key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key != "rdma" && key != "net") throw fail(line, fmt::format("unknown key {}", shown(key)));
      if (!seen.insert(key).second) throw fail(line, fmt::format("key {} twice", key));
      if (key == "rdma") {
        const auto colon = value.find(':');
        const auto device = value.substr(0, colon), port = colon == std::string::npos ? "" : value.substr(colon + 1);
        const bool port_ok = colon == std::string::npos ||
                             (digits(port) && port[0] != '0' && std::stoi(port) >= 1 && std::stoi(port) <= 255);
        if (!name_chars(device, 64, false) || !port_ok)
          throw fail(line, fmt::format("rdma={} is not DEVICE[:PORT] (a device name such as mlx5_0, a port 1-255)",
                                       shown(value)));
        nic.rdma = device, nic.port = port.empty() ? 1 : std::stoi(port);
      } else {
        if (const auto cidr = cidr_shape(value)) {
          if (!*cidr)
            throw fail(line, fmt::format("net={} is not a subnet A.B.C.D/N (octets 0-255, N 0-32)", shown(value)));
        } else if (!name_chars(value, 15, true)) {
          throw fail(line, fmt::format("net={} is neither an interface name (at most 15 letters, digits, '_', '.', "
                                       "'-') nor a subnet A.B.C.D/N",
                                       shown(value)));
        }
        nic.net = value;
      }
    }
    if (seen.empty()) throw fail(line, fmt::format("rail {} has no keys", rail));
    if (rails.size() <= static_cast<std::size_t>(rail)) rails.resize(rail + 1), lines.resize(rail + 1, 0);
    rails[rail] = nic, lines[rail] = line;
  }
  if (rails.empty()) throw Error::usage(fmt::format("{} {}: no rails; {}", option, source, allowed));
  std::size_t given = 0;
  for (const auto& r : rails) given += r ? 1 : 0;
  if (given < rails.size()) {  // the first line whose rail is beyond the count names the gap
    std::size_t missing = 0;
    while (rails[missing]) ++missing;
    int at = 0;
    for (std::size_t r = given; r < rails.size(); ++r)
      if (rails[r] && (at == 0 || lines[r] < at)) at = lines[r];
    const auto beyond = std::find(lines.begin(), lines.end(), at) - lines.begin();
    throw fail(at, fmt::format("rail {}, but the {} rails of the map must be numbered 0..{} (rail {} is missing)",
                               beyond, given, given - 1, missing));
  }
  RailMap map;
  map.source_ = std::string(source);
  for (std::size_t r = 0; r < rails.size(); ++r) map.rails_.push_back(*rails[r]), map.lines_.push_back(lines[r]);
  return map;
}

GivenNics GivenNics::from(const std::function<std::string(const char*)>& env,
                          const std::function<std::string(const std::string&)>& interface_of) {
  const auto shown = [&](std::string v) {
    if (v.empty()) return v;
    const auto name = interface_of(v);
    return name.empty() ? v : fmt::format("{} ({})", name, v);
  };
  GivenNics g;
  const auto ucx = env("UCX_NET_DEVICES"), tcp = env("OMPI_MCA_btl_tcp_if_include");
  g.mpi = env("OMPI_MCA_pml") == "ucx" && !ucx.empty() ? ucx
          : !tcp.empty()                               ? shown(tcp)
          : !ucx.empty()                               ? ucx
                                                       : shown(env("FABRICBENCH_RAIL_NIC"));
  const auto hca = env("NCCL_IB_HCA");
  g.nccl = !hca.empty() ? hca : shown(env("NCCL_SOCKET_IFNAME"));
  return g;
}

std::string interface_in_subnet(const std::string& cidr) {
  const auto net = subnet(cidr);
  if (!net) return {};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owned(list, freeifaddrs);
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto ip = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    if ((ip & net->second) == net->first) return a->ifa_name;
  }
  return {};
}

std::string counter_device(const std::string& nic) {
  auto device = nic.substr(0, nic.find(' '));
  if (!device.empty() && (device[0] == '=' || device[0] == '^')) device.erase(0, 1);
  return device.substr(0, device.find(','));  // a list: its first entry
}

double nic_bytes(const HostFiles& files, const std::string& device) {
  if (device.empty() || device.find('/') != std::string::npos) return NAN;
  if (const auto colon = device.find(':'); colon != std::string::npos) {
    const auto dir =
        fmt::format("/sys/class/infiniband/{}/ports/{}/counters/", device.substr(0, colon), device.substr(colon + 1));
    const auto tx = files.number(dir + "port_xmit_data"), rx = files.number(dir + "port_rcv_data");
    if (!tx || !rx) return NAN;
    return 4.0 * static_cast<double>(*tx + *rx);  // the port counters count 4-byte words
  }
  // /proc/net/dev, not /sys/class/net: it follows the reader's network namespace (sysfs shows the namespace that
  // mounted it). A line is "  eth1: RX bytes packets errs drop fifo frame compressed multicast TX bytes ...".
  const auto text = files.read("/proc/net/dev");
  if (!text) return NAN;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(' ');
    if (line.substr(start, colon - start) != device) continue;
    std::istringstream fields(line.substr(colon + 1));
    std::vector<double> v;
    for (double x; fields >> x;) v.push_back(x);
    return v.size() >= 9 ? v[0] + v[8] : NAN;
  }
  return NAN;
}

std::string cuda_gpu(const HostFiles& files, int index, const char* cuda_visible) {
  // A CUDA_VISIBLE_DEVICES of UUIDs or MIG names leaves the order unknown here.
  auto gpus = pci_devices(files, "0x10de", {"0300", "0302"});
  if (cuda_visible) {
    std::vector<std::string> picked;
    std::istringstream in(cuda_visible);
    for (std::string item; std::getline(in, item, ',');) {
      if (!digits(item) || std::stoul(item) >= gpus.size()) return "";
      picked.push_back(gpus[std::stoul(item)]);
    }
    gpus = picked;
  }
  return index >= 0 && static_cast<std::size_t>(index) < gpus.size() ? gpus[static_cast<std::size_t>(index)] : "";
}

std::optional<RailPort> rail_rdma_port(const HostFiles& files, int rail, const char* cuda_visible) {
  std::vector<RdmaPort> active;
  for (auto& p : read_rdma_ports(files))
    if (p.active()) active.push_back(std::move(p));
  if (rail < 0 || active.empty()) return std::nullopt;
  if (const auto gpu = cuda_gpu(files, rail, cuda_visible); !gpu.empty()) {
    const auto gpu_up = pci_upstream(files, gpu);
    const int gpu_numa = pci_numa_node(files, gpu);
    const RdmaPort* best = nullptr;
    std::tuple<long, int, std::string> best_key;
    for (const auto& p : active) {
      if (p.pci_address.empty()) continue;  // a software device (Soft-RoCE) is near no GPU
      const auto up = pci_upstream(files, p.pci_address);
      std::size_t shared = 0;
      while (shared < up.size() && shared < gpu_up.size() && up[shared] == gpu_up[shared]) ++shared;
      const std::tuple<long, int, std::string> key{-static_cast<long>(shared),
                                                   gpu_numa >= 0 && p.numa_node == gpu_numa ? 0 : 1, p.name()};
      if (!best || key < best_key) best = &p, best_key = key;
    }
    if (best) return RailPort{*best, "nearest GPU " + gpu};
  }
  if (static_cast<std::size_t>(rail) >= active.size()) return std::nullopt;
  return RailPort{active[static_cast<std::size_t>(rail)], fmt::format("Active port {} in name order", rail)};
}

}  // namespace fabricbench::facts
