// The judge's answer when the pairs themselves are too spread to tell a bad host from a good one (sweep/verdict.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {

bool name_noise(const std::string& metric, const MetricRule& rule, double host_fraction, int hosts,
                Assessment& assessment) {
  // Against a baseline every host may truly be slow: the line is the cluster's own, not drawn from these pairs.
  if (hosts < 4 || assessment.verdicts.empty() || !std::isnan(rule.baseline)) return false;
  std::set<int> named;
  for (const auto& v : assessment.verdicts)
    for (int h : {v.a, v.b})
      if (h >= 0) named.insert(h);
  if (static_cast<double>(named.size()) <= host_fraction * hosts) return false;
  std::vector<double> values;
  for (const auto& p : assessment.best) values.push_back(p.value);
  std::sort(values.begin(), values.end());
  const double low = timing::percentile_of_sorted(values, 0.1), high = timing::percentile_of_sorted(values, 0.9);
  const double spread = low > 0 ? high / low : NAN;
  const auto line = rule.higher_is_better
                        ? fmt::format("below {:g} x the median host", rule.below_fraction_of_median)
                        : fmt::format("above {:g} x the median host's best pair", rule.above_multiple_of_best);
  assessment.verdicts.assign(
      1, Verdict(metric, "noise",
                 -1, -1,
                 fmt::format("too noisy to judge: the rule would name {} of {} hosts, but the pairs themselves spread "
                             "{:.1f}x (10th-90th percentile {:.4g}-{:.4g}) against a line drawn at {}; run again with "
                             "more iterations (-n) or in a quieter window",
                             named.size(), hosts, spread, low, high, line)));
  return true;
}

}  // namespace fabricbench::sweep
