#include "fabricbench/facts/rail_nic.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <fstream>
#include <memory>
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

RailMap RailMap::read(const std::string& path) {
  cli::require_text_file(path, "--rail-map");
  std::ifstream in(path);
  if (!in) throw Error::usage(fmt::format("--rail-map {}: cannot read the file", path));
  return parse(in, path);
}

RailMap RailMap::parse(std::istream& in, std::string_view source) {
  std::vector<std::optional<RailNic>> rails;
  std::vector<int> lines;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (const auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::string first;
    if (!(words >> first)) continue;
    const auto at = fmt::format("--rail-map {}:{}", source, line);
    if (!digits(first) || std::stoi(first) > 63)
      throw Error::usage(fmt::format(
          "{}: '{}': a line is RAIL (0-63) then rdma=DEVICE[:PORT] and/or net=INTERFACE|A.B.C.D/N", at, first));
    const int rail = std::stoi(first);
    RailNic nic;
    bool rdma = false, net = false;
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      const auto key = word.substr(0, eq == std::string::npos ? 0 : eq);
      const auto value = eq == std::string::npos ? std::string() : word.substr(eq + 1);
      if ((key != "rdma" && key != "net") || value.empty())
        throw Error::usage(
            fmt::format("{}: '{}': allowed are rdma=DEVICE[:PORT] and net=INTERFACE|A.B.C.D/N", at, word));
      if ((key == "rdma" && rdma) || (key == "net" && net))
        throw Error::usage(fmt::format("{}: {}= given twice", at, key));
      for (char c : value)
        if (!(std::isalnum(static_cast<unsigned char>(c)) ||
              std::string_view("-_.:/").find(c) != std::string_view::npos))
          throw Error::usage(
              fmt::format("{}: '{}': a device or interface name has letters, digits, '-', '_', '.'", at, word));
      if (key == "rdma") {
        rdma = true;
        const auto colon = value.find(':');
        nic.rdma = value.substr(0, colon);
        if (colon != std::string::npos) {
          const auto port = value.substr(colon + 1);
          if (!digits(port) || std::stoi(port) < 1 || std::stoi(port) > 255 || nic.rdma.empty())
            throw Error::usage(fmt::format("{}: '{}': give rdma=DEVICE or rdma=DEVICE:PORT (port 1-255)", at, word));
          nic.port = std::stoi(port);
        }
      } else {
        net = true;
        nic.net = value;
      }
    }
    if (!rdma && !net) throw Error::usage(fmt::format("{}: rail {} names no NIC (give rdma= and/or net=)", at, rail));
    if (rails.size() <= static_cast<std::size_t>(rail)) rails.resize(rail + 1), lines.resize(rail + 1, 0);
    if (rails[rail]) throw Error::usage(fmt::format("{}: rail {} was given at line {}", at, rail, lines[rail]));
    rails[rail] = nic, lines[rail] = line;
  }
  RailMap map;
  if (rails.empty()) throw Error::usage(fmt::format("--rail-map {}: no rails (lines 'RAIL rdma=... net=...')", source));
  for (std::size_t r = 0; r < rails.size(); ++r) {
    if (!rails[r])
      throw Error::usage(
          fmt::format("--rail-map {}: rail {} is missing (rails are 0 to {})", source, r, rails.size() - 1));
    map.rails_.push_back(*rails[r]);
  }
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

std::optional<RailPort> rail_rdma_port(const HostFiles& files, int rail, const char* cuda_visible) {
  std::vector<RdmaPort> active;
  for (auto& p : read_rdma_ports(files))
    if (p.active()) active.push_back(std::move(p));
  if (rail < 0 || active.empty()) return std::nullopt;
  // The rail's GPU as CUDA numbers them. A CUDA_VISIBLE_DEVICES of UUIDs or MIG names leaves the order unknown here.
  auto gpus = pci_devices(files, "0x10de", {"0300", "0302"});
  if (cuda_visible) {
    std::vector<std::string> picked;
    std::istringstream in(cuda_visible);
    for (std::string item; std::getline(in, item, ',');) {
      if (!digits(item) || std::stoul(item) >= gpus.size()) {
        picked.clear();
        break;
      }
      picked.push_back(gpus[std::stoul(item)]);
    }
    gpus = picked;
  }
  if (static_cast<std::size_t>(rail) < gpus.size()) {
    const auto& gpu = gpus[static_cast<std::size_t>(rail)];
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
