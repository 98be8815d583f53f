// The checks as data: one table of entries (name, group, scope, cheap or not, applies-when, run). Adding a check is
// adding an entry. A check reads a `Context` (what one host or rank looks like, gathered once) and writes findings;
// one that cannot apply here is skipped with the reason, never an error. Also the across-host consistency of the
// hosts' facts (consistency.cpp).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/doctor/nccl_transport.hpp"
#include "fabricbench/facts/host.hpp"

namespace fabricbench::doctor {

// The checks read the host's facts as the rest of the suite does (facts/ sits below the doctor).
using facts::AcsControl;
using facts::GpuInfo;
using facts::HostFiles;
using facts::P2PKind;
using facts::RdmaPort;

// What a check reads. `gather` fills it from the system; tests fill it by hand (a tree under HostFiles' root, a
// fake GpuInfo, a parsed log, made-up limits).
struct Context : facts::Host {
  int rank = -1;
  int hosts = 1;  // hosts in the job
  const job::NcclLog* nccl_log = nullptr;
  std::string nccl_skip = "no NCCL run in this tool";
  std::map<std::string, std::string> variables;  // NCCL_* and friends of this process
  std::set<int> cpus;                            // this rank's CPU binding
  std::string gpu_bus;                           // this rank's GPU ("" when it has none)
  std::optional<std::uint64_t> memlock_bytes;    // nullopt: unlimited
  std::optional<std::uint64_t> shm_bytes;        // nullopt: no /dev/shm

  std::unique_ptr<facts::GpuInfo> nvml;  // owns what `gpus` points to, when loaded

  // This process on this host (files under FABRICBENCH_TEST_SYSROOT when set), the one way every tool builds it
  // (fabric-doctor and the cheap checks of the others): with `load_nvml` (the host's first rank) NVML is loaded
  // where the host has NVIDIA GPUs, and the RDMA ports' active MTUs come from libibverbs where it is built in.
  static Context gather(const std::string& host, int rank, int hosts, bool load_nvml);
};

enum class Scope { host, rank, job };

struct Check {
  const char* name;   // "rdma.port_state"
  const char* group;  // "rdma"
  Scope scope;
  bool cheap;                              // run by every tool at start (no GPU work, no NCCL run)
  const char* summary;                     // one line for --list
  std::string (*applies)(const Context&);  // "" when it applies, else why it is skipped
  void (*run)(const Context&, Findings&);
};

const std::vector<Check>& all_checks();
// --checks: comma-separated names or groups ("rdma,host.thp"), "all" or "cheap". Throws Error::usage naming the
// option and the names it accepts.
std::vector<const Check*> select_checks(const std::string& spec, const std::string& option = "--checks");
// The checks of `scope` among `selected`, run on `context`: host-scope findings carry rank -1.
void run_checks(const std::vector<const Check*>& selected, Scope scope, const Context& context, Findings& out);

// Across hosts: for each fact every host reports (versions, GPU and HCA counts and models, port rates, MTU, GID
// type), the value most hosts have, and the hosts that differ named (warn; fail for the facts in `must_match`).
struct HostFacts {
  std::string host;
  std::map<std::string, std::string> facts;
};
const std::vector<std::string>& consistency_keys();
void check_consistency(const std::vector<HostFacts>& hosts, Findings& out);

}  // namespace fabricbench::doctor
