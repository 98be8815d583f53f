// The host group: transparent huge pages, memory fragmentation, the NUMA binding of the rank against its GPU and NICs,
// PCIe ACS between a GPU and its nearest NIC, the IOMMU mode.
#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "check_functions.hpp"

namespace fabricbench::doctor::checks {
using namespace facts;  // the host facts the checks read

void host_thp(const Context& c, Findings& out) {
  const std::string base = "/sys/kernel/mm/transparent_hugepage/";
  const std::string enabled = bracketed_choice(c.files.line(base + "enabled"));
  const std::string defrag = bracketed_choice(c.files.line(base + "defrag"));
  if (enabled.empty()) {
    out.skip("thp", "the kernel has no transparent huge pages");
    return;
  }
  out.ok("enabled", enabled);
  if (defrag == "always")
    out.add("defrag", Status::warn, defrag, "madvise, defer or defer+madvise",
            "direct compaction stalls allocations (latency spikes): echo defer+madvise > " + base + "defrag");
  else
    out.ok("defrag", defrag.empty() ? "(not reported)" : defrag);
}

void host_fragmentation(const Context& c, Findings& out) {
  const auto text = c.files.read("/proc/buddyinfo");
  if (!text) {
    out.skip("buddyinfo", "/proc/buddyinfo is unreadable");
    return;
  }
  const auto free = buddy_free_pages(*text);
  const double share = free_share_at_or_above(free, 9);  // 2 MiB blocks of 4 KiB pages
  const std::string value = fmt::format("{:.0f}% of free memory in blocks of 2 MiB or more", 100 * share);
  if (share < 0.10)
    out.add("free memory", Status::warn, value, "10% or more",
            "memory is fragmented: huge pages and large pinned buffers fall back to small pages (echo 1 > "
            "/proc/sys/vm/compact_memory)");
  else
    out.ok("free memory", value, "10% or more");
}

void host_numa(const Context& c, Findings& out) {
  const auto nodes = cpu_nodes(c.files);
  if (nodes.size() == 0 || std::set<int>([&] {
                             std::set<int> s;
                             for (auto& [cpu, n] : nodes) s.insert(n);
                             return s;
                           }())
                                   .size() < 2) {
    out.ok("numa", "one NUMA node");
    return;
  }
  std::set<int> cpu_nodes_of_rank;
  for (int cpu : c.cpus)
    if (auto it = nodes.find(cpu); it != nodes.end()) cpu_nodes_of_rank.insert(it->second);
  auto list = [](const std::set<int>& s) {
    std::vector<std::string> v;
    for (int n : s) v.push_back(std::to_string(n));
    return join(v, ",");
  };
  const int gpu_node = c.gpu_bus.empty() ? -1 : pci_numa_node(c.files, c.gpu_bus);
  std::set<int> nic_nodes;
  for (const auto& p : c.ports)
    if (p.active() && p.numa_node >= 0) nic_nodes.insert(p.numa_node);
  std::string value = "cpus on node " + list(cpu_nodes_of_rank);
  if (gpu_node >= 0) value += fmt::format(", GPU on node {}", gpu_node);
  if (!nic_nodes.empty()) value += ", NICs on node " + list(nic_nodes);
  std::vector<std::string> problems;
  if (cpu_nodes_of_rank.size() > 1) problems.push_back("the rank is not bound to one NUMA node");
  if (gpu_node >= 0 && !cpu_nodes_of_rank.count(gpu_node))
    problems.push_back("the rank's CPUs are not on its GPU's node");
  const int near = gpu_node >= 0 ? gpu_node : (cpu_nodes_of_rank.size() == 1 ? *cpu_nodes_of_rank.begin() : -1);
  if (near >= 0 && !nic_nodes.empty() && !nic_nodes.count(near)) problems.push_back("no Active NIC on the same node");
  if (problems.empty())
    out.ok("binding", value, "CPU, GPU and NIC on one node");
  else
    out.add("binding", Status::warn, value, "CPU, GPU and NIC on one node",
            join(problems, "; ") + ": bind ranks with --map-by ppr:N:numa --bind-to core (srun --cpu-bind)");
}

void host_acs(const Context& c, Findings& out) {
  const auto gpus = pci_devices(c.files, "0x10de", {"0302", "0300"});
  std::vector<const RdmaPort*> nics;
  std::set<std::string> seen;
  for (const auto& p : c.ports)
    if (!p.pci_address.empty() && seen.insert(p.pci_address).second) nics.push_back(&p);
  if (gpus.empty() || nics.empty()) {
    out.skip("acs", gpus.empty() ? "no NVIDIA GPU on PCI" : "no PCI RDMA device");
    return;
  }
  for (const auto& gpu : gpus) {
    // The NIC nearest the GPU: the one sharing the longest run of upstream bridges.
    const auto gpu_up = pci_upstream(c.files, gpu);
    const RdmaPort* nearest = nullptr;
    std::size_t best = 0;
    for (const auto* nic : nics) {
      const auto nic_up = pci_upstream(c.files, nic->pci_address);
      std::size_t shared = 0;
      while (shared < gpu_up.size() && shared < nic_up.size() && gpu_up[shared] == nic_up[shared]) ++shared;
      if (!nearest || shared > best) nearest = nic, best = shared;
    }
    const auto bridges = pci_bridges_between(gpu_up, pci_upstream(c.files, nearest->pci_address));
    std::vector<std::string> redirecting;
    bool unreadable = false;
    for (const auto& b : bridges) {
      const auto acs = parse_acs(c.files.read("/sys/bus/pci/devices/" + b + "/config").value_or(""));
      if (!acs)
        unreadable = true;
      else if (acs->present && acs->redirects())
        redirecting.push_back(b);
    }
    const std::string subject = gpu + " - " + nearest->device;
    if (!redirecting.empty())
      out.add(subject, Status::warn, "ACS redirect on " + join(redirecting), "ACS off between GPU and NIC",
              "peer-to-peer traffic goes up to the root complex: disable ACS on these bridges (setpci) for GPUDirect");
    else if (unreadable)
      out.skip(subject, "reading the bridges' PCIe extended config space needs root");
    else
      out.ok(subject, bridges.empty() ? "no bridge between them" : "ACS redirect off on " + join(bridges),
             "ACS off between GPU and NIC");
  }
}

void host_iommu(const Context& c, Findings& out) {
  const auto units = c.files.list("/sys/class/iommu");
  const std::string cmdline = c.files.line("/proc/cmdline");
  const bool passthrough =
      cmdline.find("iommu=pt") != std::string::npos || cmdline.find("iommu.passthrough=1") != std::string::npos;
  if (units.empty())
    out.ok("iommu", "off", "off or passthrough");
  else if (passthrough)
    out.ok("iommu", "on, passthrough", "off or passthrough");
  else
    out.add("iommu", Status::warn, fmt::format("on ({} units), translating", units.size()), "off or passthrough",
            "DMA translation slows RDMA and GPU peer-to-peer: boot with iommu=pt");
}

}  // namespace fabricbench::doctor::checks
