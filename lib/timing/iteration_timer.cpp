#include "fabricbench/timing/iteration_timer.hpp"

namespace fabricbench::timing {

std::vector<double> IterationTimer::laps_us() const {
  std::vector<double> laps;
  if (laps_ == 0) return laps;
  const double span_ticks = static_cast<double>(ticks_[laps_] - ticks_[0]);
  // The laps cover (almost all of) begin_..end_; scale ticks by that span. A zero tick span (a clock that
  // did not advance) leaves equal laps.
  const double us = elapsed_s() * 1e6;
  const double n = static_cast<double>(laps_);
  laps.reserve(laps_);
  for (std::size_t i = 1; i <= laps_; ++i) {
    const double t = static_cast<double>(ticks_[i] - ticks_[i - 1]);
    laps.push_back(span_ticks > 0 ? t / span_ticks * us : us / n);
  }
  return laps;
}

}  // namespace fabricbench::timing
