// The host part of /env/hosts: versions and the RDMA devices with their ports' states, read on the host's first rank.
#include <fmt/format.h>
#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "fabricbench/env/environment.hpp"
#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/test_hooks.hpp"

namespace fabricbench::env {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::map<std::string, std::string> describe_host(const std::string& host) {
  std::map<std::string, std::string> out;
  utsname u{};
  if (uname(&u) == 0) out["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  out["mpi"] = runtime::MpiSession::library_version();
  out["cpu"] = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return std::string{};
  }();
  out["cores"] = std::to_string(std::thread::hardware_concurrency());
  std::string os = read_first_line("/etc/os-release");
  {
    std::ifstream in("/etc/os-release");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(12);
  }
  os.erase(std::remove(os.begin(), os.end(), '"'), os.end());
  out["os"] = os;
  out["driver"] = read_first_line("/sys/module/nvidia/version");
  // dev[port:state/...]: every RDMA device of the host and the state of its ports.
  std::map<std::string, std::string> devices;
  for (const auto& port : facts::read_rdma_ports(facts::HostFiles{})) {
    auto& text = devices[port.device];
    text += fmt::format("{}{}:{}", text.empty() ? "" : "/", port.port, port.state);
  }
  std::string rdma;
  for (const auto& [device, ports] : devices) rdma += fmt::format("{}{}[{}]", rdma.empty() ? "" : " ", device, ports);
  out["rdma_devices"] = rdma;
  if (const auto& h = TestHooks::current().host_fact; !h.empty()) {  // HOST:key=value
    const auto colon = h.find(':'), eq = h.find('=');
    if (colon != std::string::npos && eq != std::string::npos && eq > colon && h.substr(0, colon) == host)
      out[h.substr(colon + 1, eq - colon - 1)] = h.substr(eq + 1);
  }
  return out;
}

}  // namespace fabricbench::env
