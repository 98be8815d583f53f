// From pair measurements to verdicts. Rules and thresholds come from an INI file (configs/sweep.ini), not code:
// a pair is suspect below a fraction of the median (bandwidth: the median over nodes of each node's median pair,
// which one bad node cannot drag down) or above a multiple of the best pair (latency), or worse than a baseline; a node whose pairs are suspect in at least `bad_node_fraction` of its tests is a bad
// node, and a suspect pair between two nodes that are not bad is a bad link. Re-tests pair suspects with good nodes
// so that a node with only one pair can still be told from its link.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fabricbench/results/baseline.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"

namespace fabricbench::sweep {

struct MetricRule {
  bool higher_is_better = true;           // from the metric's declaration (the judge sets it), not from the file
  double below_fraction_of_median = 0.5;  // higher is better: suspect when value < fraction x median node
  double above_multiple_of_best = 3.0;    // lower is better: suspect when value > multiple x best
  double baseline = NAN;                  // expected value (from --baseline); NaN: none
  double baseline_tolerance = 0.2;        // suspect when worse than baseline by more than this (the file's tolerance)
};

struct Rules {
  std::map<std::string, MetricRule> metrics;
  double bad_node_fraction = 0.75;
  // Reads `path` (INI: one [metric] section per metric, [attribution]); unknown keys (`better` too: the direction is
  // the metric's own) or bad numbers are
  // Error::usage naming the file and key. `baseline`: entries of table sweep/pairs with key `metric` and the
  // expected `value` (the format of fabric-report baseline, docs/analysis.md), with their tolerance.
  // `metrics`: the section names allowed besides [attribution] (empty: any). Fractions are refused outside (0, 1],
  // multiples below 1.
  static Rules load(const std::string& path, const results::Baseline& baseline = {},
                    const std::vector<std::string>& metrics = {});
  const MetricRule& rule(const std::string& metric) const;
};

struct PairValue {
  int a, b;
  double value;  // NaN: not measured
};

struct Verdict {
  std::string metric;
  std::string kind;  // "node" or "link"
  int a, b;          // b = -1 for a node
  std::string reason;
};

struct Assessment {
  double reference = NAN;        // the median node's median pair (higher is better) or the best pair (lower)
  std::vector<bool> suspect;     // per input value
  std::vector<Verdict> verdicts;
  std::map<std::pair<int, int>, double> best;  // the best value of each unordered pair (a < b)
};

// Several values of one pair (directions, re-tests) are combined first: the best of them counts, so a transient
// slowdown that a re-test does not confirm is no verdict.
Assessment assess(const std::string& metric, const MetricRule& rule, double bad_node_fraction, int hosts,
                  const std::vector<PairValue>& values, const std::vector<std::string>& names);

// Rounds that re-test each suspect pair and pair each of its hosts with a good host (a host in no suspect pair),
// hosts disjoint within a round.
std::vector<Round> plan_retests(int hosts, const std::vector<HostPair>& suspects);

}  // namespace fabricbench::sweep
