#include "fabricbench/timing/sample_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace fabricbench::timing {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double median_of(std::vector<double> samples) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto half = samples.begin() + static_cast<long>(samples.size() / 2);
  std::nth_element(samples.begin(), half, samples.end());
  if (samples.size() % 2 == 1) return *half;
  const double lo = *std::max_element(samples.begin(), half), hi = *half;
  return lo + (hi - lo) * 0.5;  // as percentile_of_sorted at 0.5
}

SampleStats SampleStats::of(std::vector<double> samples) {
  SampleStats s;
  s.count = samples.size();
  if (samples.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.min = s.max = s.mean = s.median = s.p90 = s.p99 = s.stddev = nan;
    return s;
  }
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  s.median = percentile_of_sorted(samples, 0.5);
  s.p90 = percentile_of_sorted(samples, 0.9);
  s.p99 = percentile_of_sorted(samples, 0.99);
  double sq = 0;
  for (double v : samples) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / static_cast<double>(samples.size()));
  return s;
}

}  // namespace fabricbench::timing
