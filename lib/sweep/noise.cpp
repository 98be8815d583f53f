// The judge's answer when the pairs themselves are too spread to tell a bad host from a good one (sweep/verdict.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {

// The slow pairs of a fault sit at least this far beyond the worst pair that looks healthy.
constexpr double separated_gap = 1.5;

}  // namespace

bool name_noise(const std::string& metric, const MetricRule& rule, double host_fraction, int hosts,
                Assessment& assessment) {
  // Against a baseline every host may truly be slow: the line is the cluster's own, not drawn from these pairs.
  if (hosts < 4 || assessment.verdicts.empty() || !std::isnan(rule.baseline)) return false;
  // A host is implicated by a verdict about it alone (node, NIC) or by two verdicts about its pairs: two bad links on
  // four hosts name every host once each and are two faults, not noise; noise gives each host many slow pairs.
  std::map<int, int> pair_verdicts;
  std::set<int> named;
  for (const auto& v : assessment.verdicts) {
    if (v.a >= 0 && v.b < 0) named.insert(v.a);
    if (v.a >= 0 && v.b >= 0)
      for (int h : {v.a, v.b})
        if (++pair_verdicts[h] == 2) named.insert(h);
  }
  if (static_cast<double>(named.size()) <= host_fraction * hosts) return false;
  // A fault leaves a gap between its slow pairs and the rest (a leaf's uplink at 20 Mbit/s: 24 against 1400 MB/s, and
  // its 16 crossing links blame all 8 hosts); noise is a continuum across the line. Only then are the hosts let go.
  double worst_healthy = NAN, best_suspect = NAN;
  for (const auto& p : assessment.best) {
    auto& edge = p.suspect ? best_suspect : worst_healthy;
    const bool further = p.suspect == rule.higher_is_better ? p.value > edge : p.value < edge;
    if (std::isnan(edge) || further) edge = p.value;
  }
  const double gap = rule.higher_is_better ? worst_healthy / best_suspect : best_suspect / worst_healthy;
  if (gap >= separated_gap) return false;
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
                 fmt::format("too noisy to judge: the rule would blame {} of {} hosts, but the pairs themselves spread "
                             "{:.1f}x (10th-90th percentile {:.4g}-{:.4g}) against a line drawn at {}; run again with "
                             "more iterations (-n) or in a quieter window",
                             named.size(), hosts, spread, low, high, line)));
  return true;
}

}  // namespace fabricbench::sweep
