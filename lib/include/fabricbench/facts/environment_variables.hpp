// The environment variables that shape the fabric, through an allowlist: the whole environment never is captured,
// and names that look like secrets are refused even under an allowed prefix.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabricbench::facts {

// True when `name` may be recorded: an allowed prefix (NCCL_, UCX_, OMPI_, CUDA_, SLURM_JOB_, ...) or exact
// name, and nothing like SECRET, TOKEN, PASSWORD, CREDENTIAL or KEY in it.
bool is_allowed_variable(std::string_view name);

// The allowed variables of an environ-style array, sorted by name.
std::vector<std::pair<std::string, std::string>> allowed_variables(char** environ_block);

}  // namespace fabricbench::facts
