// The judge's answer when the pairs themselves are too spread to tell a bad host from a good one (sweep/verdict.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {

bool name_noise(const std::string& metric, const MetricRule& rule, double gap_needed, int hosts,
                const std::vector<PairValue>& tests, Assessment& assessment) {
  // Against a baseline every host may truly be slow: the line is the cluster's own, not drawn from these pairs.
  // A gap of 1 turns the judgement off.
  if (hosts < 4 || !(gap_needed > 1) || assessment.verdicts.empty() || !std::isnan(rule.baseline)) return false;
  // A fault leaves a gap between its slow pairs and the rest (a leaf's uplink at 20 Mbit/s: 24 against 1400 MB/s);
  // noise is a continuum across the line, the healthy-looking pairs reaching down to the slow ones.
  // The pairs' best values; where none is suspect (a node slow some of the time is named from its slow tests), the
  // tests themselves.
  double worst_healthy = NAN, best_suspect = NAN;
  std::vector<double> healthy;
  const auto place = [&](double value, bool slow) {
    auto& edge = slow ? best_suspect : worst_healthy;
    const bool further = slow == rule.higher_is_better ? value > edge : value < edge;
    if (std::isnan(edge) || further) edge = value;
    if (!slow) healthy.push_back(value);
  };
  std::vector<double> values;
  for (const auto& p : assessment.best) values.push_back(p.value), place(p.value, p.suspect);
  if (std::isnan(best_suspect)) {
    worst_healthy = NAN;
    healthy.clear();
    for (std::size_t i = 0; i < tests.size() && i < assessment.slow_test.size(); ++i)
      if (!std::isnan(tests[i].value)) place(tests[i].value, assessment.slow_test[i]);
  }
  if (std::isnan(worst_healthy) || std::isnan(best_suspect)) return false;  // nothing to set apart, or nothing healthy
  // The healthy-looking pairs' own spread is what this fabric's measurements vary by: a gap between them and the
  // suspects no wider than that is no evidence (6 hosts whose links flicker from 10 to 1000 Mbit/s: healthy pairs
  // 10.8-26 MB/s, 5 "links" at 4.3-6.4, a gap of 1.68). Their 90th percentile against their worst, so that one lucky
  // pair does not silence a fault; on quiet fabrics it is 1.1-1.3 and `gap_needed` decides. It raises the gap a fault
  // must leave to twice `gap_needed` at most: a slow NIC on a noisy fabric (Soft-RoCE rails in a busy VM) still
  // stands that far from its healthy pairs, and silence on a degraded path is worse than a verdict on noise.
  std::sort(healthy.begin(), healthy.end());
  const double typical = timing::percentile_of_sorted(healthy, rule.higher_is_better ? 0.9 : 0.1);
  const double spread = rule.higher_is_better ? typical / worst_healthy : worst_healthy / typical;
  const double gap = rule.higher_is_better ? worst_healthy / best_suspect : best_suspect / worst_healthy;
  const double needed = std::max(gap_needed, std::min(spread, 2 * gap_needed));
  if (!(gap < needed)) return false;
  std::sort(values.begin(), values.end());
  const double low = timing::percentile_of_sorted(values, 0.1), high = timing::percentile_of_sorted(values, 0.9);
  const auto line = rule.higher_is_better
                        ? fmt::format("below {:g} x the median host", rule.below_fraction_of_median)
                        : fmt::format("above {:g} x the median host's best pair", rule.above_multiple_of_best);
  const auto count = assessment.verdicts.size();
  assessment.verdicts.assign(
      1, Verdict(metric, VerdictKind::noise, -1, -1,
                 fmt::format(
                     "too noisy to judge: {} verdict(s) would blame hosts, but the slowest pair that looks "
                     "healthy ({:.4g}) is within {:.2f}x of the best suspect one ({:.4g}), no wider than the healthy "
                     "pairs spread among themselves ({:.2f}x); the pairs spread {:.1f}x (10th-90th percentile "
                     "{:.4g}-{:.4g}) against a line drawn {}; run "
                     "again with more iterations (-n) or in a quieter window",
                     count, worst_healthy, gap, best_suspect, spread, low > 0 ? high / low : NAN, low, high, line)));
  return true;
}

}  // namespace fabricbench::sweep
