#include "fabricbench/facts/environment_variables.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace fabricbench::facts {
namespace {

constexpr std::array allowed_prefixes{"NCCL_",    "UCX_",         "OMPI_",       "OPAL_",  "PMIX_MCA_", "CUDA_",
                                      "NVIDIA_",  "SLURM_JOB_",   "SLURM_STEP_", "FI_",    "MLX5_",     "HCOLL_",
                                      "NVSHMEM_", "FABRICBENCH_", "IBV_",        "RDMAV_", "UCC_",      "TORCH_NCCL_"};
constexpr std::array allowed_names{
    "SLURM_NNODES",    "SLURM_NTASKS",    "SLURM_NTASKS_PER_NODE", "SLURM_CLUSTER_NAME",
    "SLURM_PARTITION", "OMP_NUM_THREADS", "LD_LIBRARY_PATH",       "TORCH_SYMM_MEM_DISABLE_MULTICAST"};
// PRECONDITION_TRANSPORTS: Open MPI's per-job key for the PSM/OFI transports (OMPI_MCA_orte_precondition_transports).
constexpr std::array secret_words{
    "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "KEY", "AUTH", "COOKIE", "PRECONDITION_TRANSPORTS"};

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

}  // namespace

bool is_allowed_variable(std::string_view name) {
  const std::string n = upper(name);
  for (const char* word : secret_words)
    if (n.find(word) != std::string::npos) return false;
  for (const char* exact : allowed_names)
    if (n == exact) return true;
  for (const char* prefix : allowed_prefixes)
    if (n.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> allowed_variables(char** environ_block) {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ_block; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (is_allowed_variable(name)) out.emplace_back(std::move(name), entry.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fabricbench::facts
