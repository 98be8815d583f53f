#include "fabricbench/doctor/checks.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>  // environ (with C linkage, as every other file of a unity batch sees it)

#include <algorithm>

#include "check_functions.hpp"
#include "fabricbench/cli/name_list.hpp"
#include "fabricbench/facts/environment_variables.hpp"
#include "port_mtus.hpp"

namespace fabricbench::doctor {
namespace {
using namespace checks;  // the check functions, one file per group

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

const std::vector<Check> table{
    {"rdma.devices", "rdma", Scope::host, true, "RDMA devices present and their firmware", always, rdma_devices},
    {"rdma.modules", "rdma", Scope::host, false,
     "kernel modules for user-space verbs (ib_core, ib_uverbs, nvidia_peermem)", with_rdma, rdma_modules},
    {"rdma.port_state", "rdma", Scope::host, true, "every port Active and LinkUp (ibstat)", with_rdma, rdma_port_state},
    {"rdma.link", "rdma", Scope::host, false, "link layer, rate, active MTU, a RoCE v2 GID on Ethernet", with_rdma,
     rdma_link},
    {"rdma.errors", "rdma", Scope::host, false, "port error counters ibcheckerrors reads, and transmit wait", with_rdma,
     rdma_errors},
    {"rdma.ecn", "rdma", Scope::host, false, "ECN/DCQCN on RoCE ports where the driver exposes it", with_rdma,
     rdma_ecn},
    {"rdma.ibacm", "rdma", Scope::host, false, "the ibacm service (it can stall RDMA connection setup)", with_rdma,
     rdma_ibacm},
    {"limits.memlock", "limits", Scope::rank, true, "locked-memory limit (ulimit -l) large enough for verbs", always,
     limits_memlock},
    {"limits.shm", "limits", Scope::host, true, "/dev/shm size for NCCL and MPI shared memory", always, limits_shm},
    {"nccl.variables", "nccl", Scope::rank, true,
     "NCCL_IB_HCA/NCCL_SOCKET_IFNAME name what exists; P2P/SHM not disabled", always, nccl_variables},
    {"nccl.transport", "nccl", Scope::rank, false,
     "the network and channel transports NCCL chose (small NCCL run, INFO log)", with_nccl_log, nccl_transport},
    {"gpu.p2p", "gpu", Scope::host, false, "peer-to-peer status of every GPU pair (nvidia-smi topo -p2p)",
     with_gpu_pairs, gpu_p2p},
    {"gpu.nvlink", "gpu", Scope::host, false, "NVLink links active and their speed (nvidia-smi nvlink -s)", with_nvml,
     gpu_nvlink},
    {"gpu.nvlink_errors", "gpu", Scope::host, false, "NVLink replay, recovery and CRC error counters (nvlink -e)",
     with_nvml, gpu_nvlink_errors},
    {"gpu.remapped_rows", "gpu", Scope::host, false, "remapped rows: pending, failure, correctable, uncorrectable",
     with_nvml, gpu_remapped_rows},
    {"gpu.ecc", "gpu", Scope::host, false, "uncorrectable ECC errors (volatile)", with_nvml, gpu_ecc},
    {"gpu.pcie", "gpu", Scope::host, false, "PCIe generation and width, current against maximum", with_nvml, gpu_pcie},
    {"gpu.versions", "gpu", Scope::host, false, "driver and VBIOS versions", with_nvml, gpu_versions},
    {"gpu.clocks", "gpu", Scope::host, false, "clocks-event (throttle) reasons", with_nvml, gpu_clocks},
    {"host.thp", "host", Scope::host, true, "transparent huge pages: mode and defrag", always, host_thp},
    {"host.fragmentation", "host", Scope::host, false, "free memory in large blocks (/proc/buddyinfo)", always,
     host_fragmentation},
    {"host.numa", "host", Scope::rank, false, "NUMA node of the rank's CPUs, its GPU and the nearest NIC", always,
     host_numa},
    {"host.acs", "host", Scope::host, false, "PCIe ACS redirect on bridges between a GPU and its NIC", always,
     host_acs},
    {"host.iommu", "host", Scope::host, false, "IOMMU mode (off or passthrough)", always, host_iommu},
    {"job.consistency", "job", Scope::job, true, "versions, GPUs, HCAs, rates, MTU and GID type the same on every host",
     always, nullptr},
};

}  // namespace

Context Context::gather(const std::string& host, int rank, int hosts, bool load_nvml) {
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
  if (!c.any_gpu()) {
    c.gpu_skip = "no NVIDIA GPU on this host";
  } else if (load_nvml) {
    c.nvml = facts::load_nvml(&c.gpu_skip);
    c.gpus = c.nvml.get();
  }
  if (!c.ports.empty() && c.files.real()) c.active_mtu = active_port_mtus();
  return c;
}

const std::vector<Check>& all_checks() { return table; }

std::vector<const Check*> select_checks(const std::string& spec, const std::string& option) {
  // The words for several checks: all, cheap, and each group in the table's order.
  std::vector<cli::NameGroup> words{cli::NameGroup::all(table.size()), {"cheap", {}}};
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].cheap) words[1].members.push_back(i);
    auto group =
        std::find_if(words.begin() + 2, words.end(), [&](const cli::NameGroup& w) { return w.word == table[i].group; });
    if (group == words.end()) group = words.insert(words.end(), cli::NameGroup{table[i].group, {}});
    group->members.push_back(i);
  }
  std::vector<const Check*> out;
  const auto names = cli::names_of(table, [](const Check& c) { return c.name; });
  for (const auto i : cli::parse_name_list(option, spec, names, words)) out.push_back(&table[i]);
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
