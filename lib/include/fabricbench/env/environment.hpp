// What a run ran on: per rank (host, local rank, GPU), per host (kernel, MPI, CUDA, NCCL versions, RDMA devices)
// and the environment variables that shape the fabric, through an allowlist: the whole environment never is
// captured, and names that look like secrets are refused even under an allowed prefix.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricbench/doctor/checks.hpp"
#include "fabricbench/facts/expected_share.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/runtime/placement.hpp"

namespace fabricbench::env {

// Facts about this process's host and rank, as key -> value. Test hook FABRICBENCH_TEST_HOST_FACT=HOST:key=value
// replaces one fact of host HOST (so that a test can make one host of an emulated cluster differ).
std::map<std::string, std::string> describe_host(const std::string& host);
std::map<std::string, std::string> describe_rank(int gpu);

// What rank 0 knows after the capture: every host's facts, the bandwidth its hardware should reach, and the cheap
// checks' findings (also written to /env/hosts, /env/expected and /env/checks).
struct EnvReport {
  std::vector<doctor::HostFacts> hosts;
  std::vector<facts::Expected> expected;
  std::vector<doctor::Finding> checks;
};

// The /env tables, and a collective over `world` that gathers every rank's facts and hands the rows to `out`
// (which is only non-null on rank 0). With `checks`, the first rank of each host runs the cheap checks and rank 0
// adds the across-host consistency.
class EnvironmentCapture {
 public:
  EnvironmentCapture();
  const results::TableSpec& ranks() const { return ranks_; }
  const results::TableSpec& hosts() const { return hosts_; }
  const results::TableSpec& variables() const { return variables_; }
  const results::TableSpec& expected() const { return expected_; }
  const results::TableSpec& checks() const { return checks_; }

  EnvReport gather(const runtime::Communicator& world, const runtime::Placement& placement, int gpu,
                   results::ResultSet* out, bool checks = true) const;

 private:
  results::TableSpec ranks_, hosts_, variables_, expected_, checks_;
  // The columns as handles, made with the tables. /env/hosts' columns past host and cores are host facts of the
  // same names (describe_host, hardware_facts), each with its handle.
  struct HostColumns {
    results::ColumnHandle<std::string> host;
    results::ColumnHandle<std::int64_t> cores;
    std::vector<std::pair<std::string, results::ColumnHandle<std::string>>> facts;
  } host_col_;
  struct RankColumns {
    results::ColumnHandle<std::int64_t> rank, local_rank, gpu;
    results::ColumnHandle<std::string> host, gpu_name, gpu_uuid, pci_bus_id;
  } rank_col_;
  struct VariableColumns {
    results::ColumnHandle<std::string> host, name, value;
  } variable_col_;
  struct ExpectedColumns {
    results::ColumnHandle<std::string> host, kind, subject, basis;
    results::ColumnHandle<double> gbps;
  } expected_col_;
};

}  // namespace fabricbench::env
