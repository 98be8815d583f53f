#include "fabricbench/tools/sweep/sweep_options.hpp"

#include <algorithm>

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

bool SweepOptions::on_gpus(const SweepMetric& m) const { return m.runs_on_gpus(gpu_p2p); }

bool SweepOptions::any_on_gpus() const {
  return std::any_of(metrics.begin(), metrics.end(), [&](const SweepMetric* m) { return on_gpus(*m); });
}

bool SweepOptions::duplex_cover() const {
  return adaptive && !budget_given.empty() && metrics.size() == 1 && is_one_way_p2p(*metrics[0]);
}

}  // namespace fabricbench::tools::sweep
