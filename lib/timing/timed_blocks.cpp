#include "fabricbench/timing/timed_blocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fabricbench/error.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::timing {

double TimedBlocks::checked_min_time(double min_time_s, std::string_view option) {
  if (!(min_time_s >= 0 && min_time_s <= max_min_time_s))
    throw Error::usage(fmt::format("{} {}: allowed values are 0 to {} (seconds)", option, min_time_s, max_min_time_s));
  return min_time_s;
}

void TimedBlocks::decide(double first_block_s) {
  decided_ = true;
  count_ = static_cast<int>(
      std::clamp(std::ceil(min_time_s_ / std::max(first_block_s, 1e-9)), 1.0, static_cast<double>(max_blocks)));
}

double TimedBlocks::median() const {
  if (values_.empty()) return NAN;
  auto sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  return percentile_of_sorted(sorted, 0.5);
}

double TimedBlocks::spread() const {
  if (values_.size() < 2) return NAN;
  auto sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  const double mid = percentile_of_sorted(sorted, 0.5);
  return mid > 0 ? (percentile_of_sorted(sorted, 0.9) - percentile_of_sorted(sorted, 0.1)) / mid : NAN;
}

}  // namespace fabricbench::timing
