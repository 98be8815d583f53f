#include "fabricbench/tools/watchdog/nic_samples.hpp"

#include <cstring>
#include <string>

namespace fabricbench::tools::watchdog {

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
    // Its verbs device (/dev/infiniband/uverbsN): a rank that holds it open uses the port.
    n.uverbs = -1;
    for (const auto& e : files.list("/sys/class/infiniband/" + p.device + "/device/infiniband_verbs"))
      if (e.rfind("uverbs", 0) == 0 && e.size() > 6 && e.find_first_not_of("0123456789", 6) == std::string::npos)
        n.uverbs = static_cast<std::int16_t>(std::stoi(e.substr(6)));
    out.push_back(n);
  }
  return out;
}

}  // namespace fabricbench::tools::watchdog
