#include "fabricbench/doctor/checks.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "fabricbench/facts/environment_variables.hpp"
#include "fabricbench/error.hpp"

extern char** environ;

namespace fabricbench::doctor {
using namespace facts;  // the host facts the checks read
namespace {

std::string mib(std::uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

// ---- applies-when --------------------------------------------------------------------------------------------
std::string always(const Context&) { return {}; }
std::string with_rdma(const Context& c) { return c.ports.empty() ? "no RDMA device on this host" : ""; }
std::string with_nvml(const Context& c) {
  if (!c.gpus) return c.gpu_skip;
  return c.gpus->count() == 0 ? "NVML sees no GPU" : "";
}
std::string with_gpu_pairs(const Context& c) {
  if (auto why = with_nvml(c); !why.empty()) return why;
  return c.gpus->count() < 2 ? "one GPU: no pair to check" : "";
}
std::string with_nccl_log(const Context& c) { return c.nccl_log ? "" : c.nccl_skip; }

// ---- rdma ----------------------------------------------------------------------------------------------------
void rdma_devices(const Context& c, Findings& out) {
  if (c.ports.empty()) {
    out.skip("devices", "no RDMA device (/sys/class/infiniband is empty)");
    return;
  }
  std::map<std::string, std::pair<std::string, int>> devices;
  for (const auto& p : c.ports) {
    devices[p.device].first = p.firmware;
    ++devices[p.device].second;
  }
  for (const auto& [name, d] : devices)
    out.ok(name, fmt::format("{} port(s), firmware {}", d.second, d.first.empty() ? "(not reported)" : d.first));
}

void rdma_modules(const Context& c, Findings& out) {
  const auto modules = loaded_modules(c.files);
  if (modules.empty()) {
    out.skip("modules", "/proc/modules is empty or unreadable (modules built into the kernel?)");
    return;
  }
  for (const char* m : {"ib_core", "ib_uverbs"}) {
    if (modules.count(m)) out.ok(m, "loaded");
    else
      out.add(m, Status::fail, "not loaded", "loaded",
              fmt::format("modprobe {}: user-space verbs (NCCL, MPI, fabric-verbs) need it", m));
  }
  if (c.any_gpu())
    out.ok("nvidia_peermem", modules.count("nvidia_peermem") ? "loaded"
                                                              : "not loaded: GPUDirect RDMA relies on dma-buf (kernel >= 5.12, open GPU driver)");
}

void rdma_port_state(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    const std::string value = p.state + "/" + p.phys_state;
    if (p.active() && p.phys_state == "LinkUp") {
      out.ok(p.name(), value, "ACTIVE/LinkUp");
      continue;
    }
    std::string hint = "check the cable and the switch port";
    if (p.state == "INIT" || p.state == "ARMED") hint = "the link is up but no subnet manager configured it: start opensm or check the SM";
    if (p.phys_state == "Disabled") hint = "the port is administratively disabled";
    out.add(p.name(), Status::warn, value, "ACTIVE/LinkUp", hint);
  }
}

void rdma_link(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    if (!p.active()) continue;
    std::string value = fmt::format("{}, {}", p.link_layer, p.rate.empty() ? "rate not reported" : p.rate);
    Status status = Status::ok;
    std::string hint;
    if (auto it = c.active_mtu.find(p.name()); it != c.active_mtu.end()) {
      value += fmt::format(", MTU {}", it->second);
      if (it->second < 4096) {
        status = Status::warn;
        hint = p.link_layer == "Ethernet" ? "active MTU below 4096: raise the interface MTU (jumbo frames, 9000)"
                                          : "active MTU below 4096: check the subnet manager's partition MTU";
      }
    } else if (!p.netdev.empty()) {
      value += ", netdev " + p.netdev + " MTU " + c.files.line("/sys/class/net/" + p.netdev + "/mtu");
    }
    if (p.link_layer == "Ethernet") {
      value += p.roce_v2 ? ", RoCE v2 GID" : ", no RoCE v2 GID";
      if (!p.roce_v2) {
        status = Status::fail;
        hint = "no RoCE v2 GID: give " + (p.netdev.empty() ? std::string("the interface") : p.netdev) +
               " an IP address (the GID table is built from them)";
      }
    }
    out.add(p.name(), status, value, p.link_layer == "Ethernet" ? "RoCE v2 GID, MTU 4096" : "MTU 4096", hint);
  }
}

void rdma_errors(const Context& c, Findings& out) {
  for (const auto& p : c.ports) {
    std::vector<std::string> grown;
    bool any = false;
    for (const auto& counter : port_error_counters()) {
      const auto it = p.counters.find(counter.file);
      if (it == p.counters.end()) continue;
      any = true;
      if (it->second > 0) grown.push_back(fmt::format("{} {}", counter.label, it->second));
    }
    if (!any) {
      out.skip(p.name(), "the driver exposes no port error counters (counters/)");
      continue;
    }
    const auto wait = p.counters.find(xmit_wait_counter);
    const std::string wait_text = wait == p.counters.end() ? "" : fmt::format("; transmit wait {}", wait->second);
    if (grown.empty()) out.ok(p.name(), "0 errors" + wait_text, "0");
    else
      out.add(p.name(), Status::warn, join(grown) + wait_text, "0",
              "errors since the counters were last cleared: reseat or replace the cable/transceiver if they grow");
  }
}

void rdma_ecn(const Context& c, Findings& out) {
  bool any_roce = false;
  for (const auto& p : c.ports) {
    if (p.link_layer != "Ethernet" || p.netdev.empty()) continue;
    any_roce = true;
    const std::string dir = "/sys/class/net/" + p.netdev + "/ecn";
    if (!c.files.exists(dir)) {
      out.skip(p.name(), "the driver exposes no ECN settings (" + dir + ")");
      continue;
    }
    std::vector<std::string> parts;
    bool on = false;
    for (const char* side : {"roce_np", "roce_rp"}) {
      std::vector<std::string> prios;
      for (const auto& prio : c.files.list(dir + "/" + side + "/enable"))
        if (c.files.line(dir + "/" + side + "/enable/" + prio) == "1") prios.push_back(prio);
      on = on || !prios.empty();
      parts.push_back(fmt::format("{} {}", side, prios.empty() ? "off" : "on for priority " + join(prios, ",")));
    }
    if (on) out.ok(p.name(), join(parts), "ECN/DCQCN on");
    else
      out.add(p.name(), Status::warn, join(parts), "ECN/DCQCN on",
              "congestion control is off: lossy RoCE under load falls back to retransmits");
  }
  if (!any_roce) out.skip("ecn", "no RoCE (Ethernet) port");
}

void rdma_ibacm(const Context& c, Findings& out) {
  for (const auto& pid : c.files.list("/proc")) {
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    if (c.files.line("/proc/" + pid + "/comm") == "ibacm") {
      out.add("ibacm", Status::warn, "running (pid " + pid + ")", "not running",
              "ibacm can stall RDMA connection setup (rdma_cm address resolution): systemctl stop ibacm");
      return;
    }
  }
  out.ok("ibacm", "not running", "not running");
}

// ---- limits --------------------------------------------------------------------------------------------------
void limits_memlock(const Context& c, Findings& out) {
  const std::string value = c.memlock_bytes ? mib(*c.memlock_bytes) : "unlimited";
  if (!c.memlock_bytes) {
    out.ok("memlock", value, "unlimited");
  } else if (c.ports.empty()) {
    out.ok("memlock", value, "unlimited where RDMA is used");
  } else {
    const Status s = *c.memlock_bytes < (64ull << 20) ? Status::fail : Status::warn;
    out.add("memlock", s, value, "unlimited",
            "verbs register (pin) every buffer: ulimit -l unlimited (docker: --ulimit memlock=-1, Slurm: PropagateResourceLimits)");
  }
}

void limits_shm(const Context& c, Findings& out) {
  if (!c.shm_bytes) {
    out.add("/dev/shm", c.any_gpu() ? Status::warn : Status::ok, "not mounted", "a tmpfs of 1 GiB or more",
            "NCCL and MPI shared memory transports need /dev/shm");
    return;
  }
  const std::uint64_t size = *c.shm_bytes;
  Status s = Status::ok;
  if (c.any_gpu() && size < (256ull << 20)) s = Status::fail;
  else if (c.any_gpu() && size < (1ull << 30)) s = Status::warn;
  else if (size < (64ull << 20)) s = Status::warn;
  out.add("/dev/shm", s, mib(size), "1024 MiB or more",
          s == Status::ok ? "" : "NCCL's shared-memory buffers need about 1 GiB: docker --shm-size=1g, or remount /dev/shm larger");
}

// ---- nccl ----------------------------------------------------------------------------------------------------
NcclContext nccl_context(const Context& c) {
  NcclContext n;
  for (const auto& p : c.ports) {
    n.rdma_devices.insert(p.device);
    if (p.active()) n.active_rdma_ports.push_back(p.name());
  }
  for (const auto& iface : c.files.list("/sys/class/net")) n.interfaces.insert(iface);
  for (const auto& [k, v] : c.variables)
    if (k.rfind("NCCL_", 0) == 0) n.variables[k] = v;
  n.hosts = c.hosts;
  return n;
}
void nccl_variables(const Context& c, Findings& out) { check_nccl_variables(nccl_context(c), out); }
void nccl_transport(const Context& c, Findings& out) { check_nccl_transport(*c.nccl_log, nccl_context(c), out); }

// ---- gpu (NVML) ----------------------------------------------------------------------------------------------

void gpu_p2p(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int a = 0; a < g.count(); ++a)
    for (int b = a + 1; b < g.count(); ++b) {
      std::vector<std::string> parts;
      bool ok = true;
      for (auto [kind, label] : {std::pair{P2PKind::read, "read"}, std::pair{P2PKind::write, "write"}, std::pair{P2PKind::nvlink, "nvlink"}}) {
        const auto s = g.p2p_status(a, b, kind);
        parts.push_back(fmt::format("{} {}", label, s.value_or("?")));
        if (kind != P2PKind::nvlink && s.value_or("") != "OK") ok = false;
      }
      const std::string subject = gpu_name(a) + "-" + gpu_name(b);
      if (ok) out.ok(subject, join(parts), "read OK, write OK");
      else
        out.add(subject, Status::warn, join(parts), "read OK, write OK",
                "no peer-to-peer: NCCL copies through host memory (check PCIe ACS, the IOMMU and nvidia-smi topo -p2p r)");
    }
}

void gpu_nvlink(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const int links = g.nvlink_count(i);
    if (links == 0) {
      out.skip(gpu_name(i), "no NVLink on this GPU");
      continue;
    }
    std::vector<std::string> down;
    int active = 0;
    for (int l = 0; l < links; ++l) {
      if (g.nvlink_active(i, l).value_or(false)) ++active;
      else down.push_back(std::to_string(l));
    }
    const auto speed = g.nvlink_speed_gbps(i);
    const std::string value = fmt::format("{}/{} links active{}", active, links,
                                          speed ? fmt::format(", {:.2f} GB/s each", *speed) : std::string());
    if (down.empty()) out.ok(gpu_name(i), value, fmt::format("{} links active", links));
    else
      out.add(gpu_name(i), Status::warn, value, fmt::format("{} links active", links),
              "inactive links " + join(down, ",") + ": NVLink bandwidth is cut; check the GPU/NVSwitch (nvidia-smi nvlink -s)");
  }
}

void gpu_nvlink_errors(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const int links = g.nvlink_count(i);
    if (links == 0) {
      out.skip(gpu_name(i), "no NVLink on this GPU");
      continue;
    }
    NvLinkErrors sum;
    std::vector<std::string> bad;
    bool any = false;
    for (int l = 0; l < links; ++l) {
      const auto e = g.nvlink_errors(i, l);
      if (!e) continue;
      any = true;
      sum.replay += e->replay;
      sum.recovery += e->recovery;
      sum.crc_flit += e->crc_flit;
      sum.crc_data += e->crc_data;
      if (e->total() > 0) bad.push_back(std::to_string(l));
    }
    if (!any) {
      out.skip(gpu_name(i), "NVML reports no NVLink error counters");
      continue;
    }
    std::string value = fmt::format("replay {}, recovery {}, CRC {}", sum.replay, sum.recovery, sum.crc_flit);
    if (sum.crc_data > 0) value += fmt::format(" (data CRC {}, corrected: not counted)", sum.crc_data);
    if (bad.empty()) out.ok(gpu_name(i), value, "0");
    else out.add(gpu_name(i), Status::warn, value + " on links " + join(bad, ","), "0", "a link with growing errors is failing: see nvidia-smi nvlink -e");
  }
}

void gpu_remapped_rows(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto r = g.remapped_rows(i);
    if (!r) {
      out.skip(gpu_name(i), "NVML does not report remapped rows on this GPU");
      continue;
    }
    const std::string value = fmt::format("pending {}, failure {}, correctable {}, uncorrectable {}", r->pending ? "yes" : "no",
                                          r->failure ? "yes" : "no", r->correctable, r->uncorrectable);
    if (r->failure) out.add(gpu_name(i), Status::fail, value, "no failure", "row remapping failed: the GPU needs replacing (RMA)");
    else if (r->pending) out.add(gpu_name(i), Status::warn, value, "none pending", "a remapping is pending: reset the GPU (or reboot) to apply it");
    else if (r->uncorrectable > 0)
      out.add(gpu_name(i), Status::warn, value, "0 uncorrectable", "rows remapped after uncorrectable errors: watch this GPU");
    else out.ok(gpu_name(i), value, "none pending, no failure");
  }
}

void gpu_ecc(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto n = g.ecc_uncorrected(i);
    if (!n) out.skip(gpu_name(i), "ECC is off or not reported");
    else if (*n > 0) out.add(gpu_name(i), Status::fail, fmt::format("{} uncorrectable (volatile)", *n), "0", "reset the GPU; replace it if they return");
    else out.ok(gpu_name(i), "0 uncorrectable (volatile)", "0");
  }
}

void gpu_pcie(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto p = g.pcie(i);
    if (!p) {
      out.skip(gpu_name(i), "NVML does not report the PCIe link");
      continue;
    }
    const std::string value = fmt::format("gen {} x{}", p->gen, p->width);
    const std::string expected = fmt::format("gen {} x{}", p->max_gen, p->max_width);
    if (p->width < p->max_width)
      out.add(gpu_name(i), Status::warn, value, expected, "the link trained narrower than it can: reseat the GPU or check the riser");
    else if (p->gen < p->max_gen)
      out.add(gpu_name(i), Status::warn, value, expected, "below the maximum generation (an idle GPU may train down; check again under load)");
    else out.ok(gpu_name(i), value, expected);
  }
}

void gpu_versions(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  std::set<std::string> vbios;
  for (int i = 0; i < g.count(); ++i) vbios.insert(g.vbios(i));
  out.ok("driver", g.driver_version());
  const std::vector<std::string> list(vbios.begin(), vbios.end());
  if (vbios.size() > 1) out.add("vbios", Status::warn, join(list), "one VBIOS on every GPU", "flash the GPUs to one VBIOS version");
  else out.ok("vbios", join(list));
}

void gpu_clocks(const Context& c, Findings& out) {
  const auto& g = *c.gpus;
  for (int i = 0; i < g.count(); ++i) {
    const auto mask = g.clock_event_reasons(i);
    if (!mask) {
      out.skip(gpu_name(i), "NVML does not report clocks-event reasons");
      continue;
    }
    std::vector<std::string> names, slowing;
    for (const auto& r : clock_reasons())
      if (*mask & r.bit) (r.slows ? slowing : names).push_back(r.name);
    if (!slowing.empty())
      out.add(gpu_name(i), Status::warn, join(slowing), "no slowdown", "the GPU is throttled (power or thermal): check cooling and power limits");
    else out.ok(gpu_name(i), names.empty() ? "none" : join(names), "no slowdown");
  }
}

// ---- host ----------------------------------------------------------------------------------------------------
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
  else out.ok("defrag", defrag.empty() ? "(not reported)" : defrag);
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
            "memory is fragmented: huge pages and large pinned buffers fall back to small pages (echo 1 > /proc/sys/vm/compact_memory)");
  else out.ok("free memory", value, "10% or more");
}

void host_numa(const Context& c, Findings& out) {
  const auto nodes = cpu_nodes(c.files);
  if (nodes.size() == 0 || std::set<int>([&] {
        std::set<int> s;
        for (auto& [cpu, n] : nodes) s.insert(n);
        return s;
      }()).size() < 2) {
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
  if (gpu_node >= 0 && !cpu_nodes_of_rank.count(gpu_node)) problems.push_back("the rank's CPUs are not on its GPU's node");
  const int near = gpu_node >= 0 ? gpu_node : (cpu_nodes_of_rank.size() == 1 ? *cpu_nodes_of_rank.begin() : -1);
  if (near >= 0 && !nic_nodes.empty() && !nic_nodes.count(near)) problems.push_back("no Active NIC on the same node");
  if (problems.empty()) out.ok("binding", value, "CPU, GPU and NIC on one node");
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
      if (!acs) unreadable = true;
      else if (acs->present && acs->redirects()) redirecting.push_back(b);
    }
    const std::string subject = gpu + " - " + nearest->device;
    if (!redirecting.empty())
      out.add(subject, Status::warn, "ACS redirect on " + join(redirecting), "ACS off between GPU and NIC",
              "peer-to-peer traffic goes up to the root complex: disable ACS on these bridges (setpci) for GPUDirect");
    else if (unreadable) out.skip(subject, "reading the bridges' PCIe extended config space needs root");
    else out.ok(subject, bridges.empty() ? "no bridge between them" : "ACS redirect off on " + join(bridges), "ACS off between GPU and NIC");
  }
}

void host_iommu(const Context& c, Findings& out) {
  const auto units = c.files.list("/sys/class/iommu");
  const std::string cmdline = c.files.line("/proc/cmdline");
  const bool passthrough = cmdline.find("iommu=pt") != std::string::npos || cmdline.find("iommu.passthrough=1") != std::string::npos;
  if (units.empty()) out.ok("iommu", "off", "off or passthrough");
  else if (passthrough) out.ok("iommu", "on, passthrough", "off or passthrough");
  else
    out.add("iommu", Status::warn, fmt::format("on ({} units), translating", units.size()), "off or passthrough",
            "DMA translation slows RDMA and GPU peer-to-peer: boot with iommu=pt");
}

const std::vector<Check> table{
    {"rdma.devices", "rdma", Scope::host, true, "RDMA devices present and their firmware", always, rdma_devices},
    {"rdma.modules", "rdma", Scope::host, false, "kernel modules for user-space verbs (ib_core, ib_uverbs, nvidia_peermem)", with_rdma, rdma_modules},
    {"rdma.port_state", "rdma", Scope::host, true, "every port Active and LinkUp (ibstat)", with_rdma, rdma_port_state},
    {"rdma.link", "rdma", Scope::host, false, "link layer, rate, active MTU, a RoCE v2 GID on Ethernet", with_rdma, rdma_link},
    {"rdma.errors", "rdma", Scope::host, false, "port error counters ibcheckerrors reads, and transmit wait", with_rdma, rdma_errors},
    {"rdma.ecn", "rdma", Scope::host, false, "ECN/DCQCN on RoCE ports where the driver exposes it", with_rdma, rdma_ecn},
    {"rdma.ibacm", "rdma", Scope::host, false, "the ibacm service (it can stall RDMA connection setup)", with_rdma, rdma_ibacm},
    {"limits.memlock", "limits", Scope::rank, true, "locked-memory limit (ulimit -l) large enough for verbs", always, limits_memlock},
    {"limits.shm", "limits", Scope::host, true, "/dev/shm size for NCCL and MPI shared memory", always, limits_shm},
    {"nccl.variables", "nccl", Scope::rank, true, "NCCL_IB_HCA/NCCL_SOCKET_IFNAME name what exists; P2P/SHM not disabled", always, nccl_variables},
    {"nccl.transport", "nccl", Scope::rank, false, "the network and channel transports NCCL chose (small NCCL run, INFO log)", with_nccl_log, nccl_transport},
    {"gpu.p2p", "gpu", Scope::host, false, "peer-to-peer status of every GPU pair (nvidia-smi topo -p2p)", with_gpu_pairs, gpu_p2p},
    {"gpu.nvlink", "gpu", Scope::host, false, "NVLink links active and their speed (nvidia-smi nvlink -s)", with_nvml, gpu_nvlink},
    {"gpu.nvlink_errors", "gpu", Scope::host, false, "NVLink replay, recovery and CRC error counters (nvlink -e)", with_nvml, gpu_nvlink_errors},
    {"gpu.remapped_rows", "gpu", Scope::host, false, "remapped rows: pending, failure, correctable, uncorrectable", with_nvml, gpu_remapped_rows},
    {"gpu.ecc", "gpu", Scope::host, false, "uncorrectable ECC errors (volatile)", with_nvml, gpu_ecc},
    {"gpu.pcie", "gpu", Scope::host, false, "PCIe generation and width, current against maximum", with_nvml, gpu_pcie},
    {"gpu.versions", "gpu", Scope::host, false, "driver and VBIOS versions", with_nvml, gpu_versions},
    {"gpu.clocks", "gpu", Scope::host, false, "clocks-event (throttle) reasons", with_nvml, gpu_clocks},
    {"host.thp", "host", Scope::host, true, "transparent huge pages: mode and defrag", always, host_thp},
    {"host.fragmentation", "host", Scope::host, false, "free memory in large blocks (/proc/buddyinfo)", always, host_fragmentation},
    {"host.numa", "host", Scope::rank, false, "NUMA node of the rank's CPUs, its GPU and the nearest NIC", always, host_numa},
    {"host.acs", "host", Scope::host, false, "PCIe ACS redirect on bridges between a GPU and its NIC", always, host_acs},
    {"host.iommu", "host", Scope::host, false, "IOMMU mode (off or passthrough)", always, host_iommu},
    {"job.consistency", "job", Scope::job, true, "versions, GPUs, HCAs, rates, MTU and GID type the same on every host", always, nullptr},
};

}  // namespace

Context Context::gather(const std::string& host, int rank, int hosts) {
  Context c;
  static_cast<facts::Host&>(c) = facts::Host::read(host);
  c.rank = rank;
  c.hosts = hosts;
  for (const auto& [k, v] : facts::allowed_variables(environ)) c.variables[k] = v;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) c.cpus.insert(cpu);
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) c.memlock_bytes = limit.rlim_cur;
  struct statvfs shm {};
  if (statvfs(c.files.path("/dev/shm").c_str(), &shm) == 0) c.shm_bytes = std::uint64_t(shm.f_blocks) * shm.f_frsize;
  return c;
}

const std::vector<Check>& all_checks() { return table; }

std::vector<const Check*> select_checks(const std::string& spec, const std::string& option) {
  std::vector<const Check*> out;
  auto add = [&](const Check& c) {
    if (std::find(out.begin(), out.end(), &c) == out.end()) out.push_back(&c);
  };
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    bool found = false;
    for (const auto& c : table)
      if (item == "all" || (item == "cheap" && c.cheap) || item == c.name || item == c.group) {
        add(c);
        found = true;
      }
    if (!found) {
      std::set<std::string> groups;
      for (const auto& c : table) groups.insert(c.group);
      throw Error::usage(fmt::format("{} {}: unknown check; allowed: all, cheap, a group ({}) or a check name (see --list)",
                                     option, item, join({groups.begin(), groups.end()})));
    }
  }
  // The table's order, whatever the order asked for.
  std::sort(out.begin(), out.end());
  return out;
}

void run_checks(const std::vector<const Check*>& selected, Scope scope, const Context& context, Findings& out) {
  for (const auto* check : selected) {
    if (check->scope != scope || !check->run) continue;
    out.begin_check(context.host, scope == Scope::rank ? context.rank : -1, check->name);
    if (const auto why = check->applies(context); !why.empty()) {
      out.skip(check->group, why);
      continue;
    }
    try {
      check->run(context, out);
    } catch (const std::exception& e) {
      out.add("-", Status::warn, "the check could not run", "", e.what());
    }
  }
}

}  // namespace fabricbench::doctor
