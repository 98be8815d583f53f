#include "fabricbench/tools/watchdog/nic_samples.hpp"

#include <cstring>

namespace fabricbench::watchdog {

std::vector<job::slow::NicSample> nic_samples(const facts::HostFiles& files) {
  std::vector<job::slow::NicSample> out;
  for (const auto& p : facts::read_rdma_ports(files)) {
    job::slow::NicSample n{};
    std::strncpy(n.device, p.device.c_str(), sizeof n.device - 1);
    n.port = static_cast<std::uint8_t>(p.port);
    n.rate_mbps = static_cast<std::uint32_t>(p.rate_gbps * 1000);
    n.active = p.state == "ACTIVE" && p.phys_state == "LinkUp";
    const auto counter = [&](const char* name) {
      const auto it = p.counters.find(name);
      return it == p.counters.end() ? std::uint64_t{0} : it->second;
    };
    for (const auto& c : facts::port_error_counters()) n.errors += counter(c.file);
    n.link_downed = static_cast<std::uint32_t>(counter("link_downed"));
    n.xmit_wait = counter(facts::xmit_wait_counter);
    out.push_back(n);
  }
  return out;
}

}  // namespace fabricbench::watchdog
