// Statistics of per-iteration samples, computed in one place and shared by every output.
// Percentiles interpolate linearly between order statistics (numpy's default), so they can be checked by hand.
#pragma once
#include <cstddef>
#include <vector>

namespace fabricbench::timing {

// q in [0, 1] of an ascending-sorted, non-empty sample.
double percentile_of_sorted(const std::vector<double>& sorted, double q);
// SampleStats::of(samples).median without sorting them all (nth_element); NaN for none. The sweep's judge takes one per
// host-rail, thousands of them.
double median_of(std::vector<double> samples);

struct SampleStats {
  std::size_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0, p90 = 0, p99 = 0, stddev = 0;  // stddev: population

  // NaN everywhere for an empty sample.
  static SampleStats of(std::vector<double> samples);
};

}  // namespace fabricbench::timing
