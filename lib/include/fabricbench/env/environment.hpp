// What a run ran on: per rank (host, local rank, GPU), per host (kernel, MPI, CUDA, NCCL versions, RDMA devices)
// and the environment variables that shape the fabric, through an allowlist: the whole environment never is
// captured, and names that look like secrets are refused even under an allowed prefix.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricbench/results/result_set.hpp"
#include "fabricbench/runtime/placement.hpp"

namespace fabricbench::env {

// True when `name` may be recorded: an allowed prefix (NCCL_, UCX_, OMPI_, CUDA_, SLURM_JOB_, ...) or exact
// name, and nothing like SECRET, TOKEN, PASSWORD, CREDENTIAL or KEY in it.
bool is_allowed_variable(std::string_view name);

// The allowed variables of an environ-style array, sorted by name.
std::vector<std::pair<std::string, std::string>> allowed_variables(char** environ_block);

// Facts about this process's host and rank, as key -> value.
std::map<std::string, std::string> describe_host();
std::map<std::string, std::string> describe_rank(int gpu);

// The /env tables, and a collective over `world` that gathers every rank's facts and hands the rows to `out`
// (which is only non-null on rank 0).
class EnvironmentCapture {
 public:
  EnvironmentCapture();
  const results::TableSpec& ranks() const { return ranks_; }
  const results::TableSpec& hosts() const { return hosts_; }
  const results::TableSpec& variables() const { return variables_; }

  void gather(const runtime::Communicator& world, const runtime::Placement& placement, int gpu,
              results::ResultSet* out) const;

 private:
  results::TableSpec ranks_, hosts_, variables_;
};

}  // namespace fabricbench::env
