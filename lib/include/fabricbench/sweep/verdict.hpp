// From pair measurements to verdicts. Rules and thresholds come from an INI file (configs/sweep.ini), not code:
// a pair is suspect below a fraction of the median (bandwidth: the median over nodes of each node's median pair,
// which one bad node cannot drag down) or above a multiple of the best pair (latency), or worse than a baseline; a node
// whose pairs are suspect in at least `bad_node_fraction` of its tests is a bad node, and a suspect pair between two
// nodes that are not bad is a bad link. Re-tests pair suspects with good nodes so that a node with only one pair can
// still be told from its link.
#pragma once
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fabricbench/results/baseline.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/sweep/topology.hpp"

namespace fabricbench::sweep {

struct MetricRule {
  bool higher_is_better = true;           // from the metric's declaration (the judge sets it), not from the file
  double below_fraction_of_median = 0.5;  // higher is better: suspect when value < fraction x median node
  double above_multiple_of_best = 3.0;    // lower is better: suspect when value > multiple x best
  double baseline = NAN;                  // expected value (from --baseline); NaN: none
  double baseline_tolerance = 0.2;        // suspect when worse than baseline by more than this (the file's tolerance)
  // A node slow only some of the time ([attribution] in the file, the same for every metric): a host is named when at
  // least `intermittent_peers` of its peers, and this fraction of them, had a slow test with it that nothing else
  // explains, counting only peers slow with at most one other host. Re-tests keep a pair's best, so its slow tests
  // would otherwise vanish, or stand as links one by one.
  double intermittent_fraction = 0.15;
  int intermittent_peers = 4;
  // Whether `value` is beyond the line drawn from `reference` (the median host-rail or the best pair) or the baseline.
  bool beyond(double value, double reference) const;
};

struct Rules {
  std::map<std::string, MetricRule> metrics;
  double bad_node_fraction = 0.75;
  // Pervasive noise ([attribution] noise_gap, name_noise): a metric whose suspect pairs are within this factor of
  // the slowest healthy-looking pair gets one "noise" verdict instead of its others (an oversubscribed machine once
  // named 7-8 of 8 hosts bad nodes against one fast pair; a fabric whose links flicker named a node and links).
  double noise_gap = 1.5;
  // ... unless they gather on one place (a host-rail, a host, the pairs crossing a leaf) beyond chance ([attribution]
  // noise_chance): where noise that makes the same share of pairs suspect would put that many of one place's pairs
  // among them with at most this probability (over all places of its kind), the pattern is a fault and the verdicts
  // stand (issue 48: every rail-1 pair of one host, 2.99x below the healthy ones, was called noise).
  double noise_chance = 1e-3;
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
  int rail = 0;
};

// What the judge knows of the hardware: the hosts, how many rails each has (local rank i of a host is rail i; 1
// without --rails), the NIC each host-rail used (per metric, in JudgedMetric) and the switch tree, if given.
struct Fabric {
  std::vector<std::string> hosts;
  int rails = 1;
  const Topology* topology = nullptr;
  // The rail a verdict or row names: -1 without rails.
  int rail_column(int rail) const { return rails > 1 ? rail : -1; }
};

// What a verdict blames; kind_name() is its `kind` column and the word of its VERDICT line.
enum class VerdictKind {
  node,         // a host slow with every peer, on every rail tested
  link,         // one pair slow while both hosts are fine with other peers
  pair,         // one pair slow where its hosts have too few other pairs to tell node from link
  hung,         // a pair test that did not finish within --timeout
  nic,          // one host slow on one rail, fine on another
  leaf_switch,  // "switch": every host under a leaf slow on one rail, pairs inside it too
  uplink,       // the pairs crossing a leaf slow on one rail, those inside it fine
  path,         // a rail's traffic left by another NIC than the rail's
  data,         // wrong bytes (--check)
  noise,        // suspects within the spread of the healthy pairs: no host named
  untested,     // hosts or pairs the plan asked for that no test measured
};
std::string_view kind_name(VerdictKind kind);
inline std::ostream& operator<<(std::ostream& out, VerdictKind kind) { return out << kind_name(kind); }

struct Verdict {
  Verdict(std::string metric_name, VerdictKind verdict_kind, int host_a, int host_b, std::string why,
          int rail_index = -1, std::string nic_name = {}, std::string switch_names = {})
      : metric(std::move(metric_name)),
        kind(verdict_kind),
        a(host_a),
        b(host_b),
        reason(std::move(why)),
        rail(rail_index),
        nic(std::move(nic_name)),
        switch_name(std::move(switch_names)) {}
  std::string metric;
  VerdictKind kind;
  int a, b;  // hosts; b = -1 where one host (or none: a = -1 for a switch) is named
  std::string reason;
  int rail = -1;            // -1: not about one rail
  std::string nic;          // kind nic and path: the NIC named
  std::string switch_name;  // kind switch and uplink: the leaf (an uplink that cannot be told from its twins: all,
                            // comma-separated)
};

// One leaf switch on one rail, as a metric saw it (with a topology).
struct LeafSummary {
  int leaf, rail;
  int metric = 0;  // set by the judge
  std::int64_t hosts = 0, inside_pairs = 0, inside_suspect = 0, crossing_pairs = 0, crossing_suspect = 0;
  double inside_median = NAN, crossing_median = NAN;
};

// One unordered pair (a < b) on one rail: the best of its tests.
struct PairBest {
  int a, b, rail;
  double value;
  bool suspect = false;
};

struct Assessment {
  double reference =
      NAN;  // the median host-rail's median pair (higher is better); lower: the lower median of their best
  std::vector<bool> suspect;    // per input value: its pair (best of its tests) is suspect
  std::vector<bool> slow_test;  // per input value: this test itself was beyond the line (a re-test may clear the pair)
  std::vector<Verdict> verdicts;
  std::vector<PairBest> best;                       // one per unordered pair and rail, sorted by (a, b, rail)
  std::vector<std::tuple<int, int, int>> suspects;  // (a, b, rail) of the pairs in `best` that are suspect, in order
  std::vector<LeafSummary> leaves;                  // with a topology: per leaf and rail
  // Where name_noise called it noise: the healthy-looking pairs inside the gap it wanted, (a, b, rail) as in `best`.
  // A re-test may lift them clear (one test stalled on a quiet fabric), and then the suspects stand apart again.
  std::vector<std::tuple<int, int, int>> doubtful;
};

// Several values of one pair on one rail (directions, re-tests) are combined first: the best of them counts, so a
// transient slowdown that a re-test does not confirm is no verdict. Then the suspect pairs are explained, the
// widest cause first: with a topology, a leaf switch (every host under it slow on one rail, pairs inside it too) and
// a leaf's uplink (the pairs crossing it slow, those inside it fine); then a node (slow on every rail it was tested
// on), a NIC (one host slow on one rail, fine on another), a node slow some of the time (its slow tests counted one
// by one, before the best is taken: MetricRule::intermittent_*), and what is left is a link (or a pair, where the
// hosts have too few other pairs to tell). `nics`: per host * rails + rail, the NIC used ("" unknown; may be empty).
Assessment assess(const std::string& metric, const MetricRule& rule, double bad_node_fraction, const Fabric& fabric,
                  const std::vector<PairValue>& values, const std::vector<std::string>& nics = {});
// One rail, no topology: the first `hosts` of `names`.
Assessment assess(const std::string& metric, const MetricRule& rule, double bad_node_fraction, int hosts,
                  const std::vector<PairValue>& values, const std::vector<std::string>& names);

// Pervasive noise: where `assessment` has verdicts (4 hosts or more; not against a baseline, where every host may truly
// be slow) but its suspect pairs sit within `rules.noise_gap` of the slowest pair that looks healthy, or no further
// from it than the healthy-looking pairs spread among themselves, up to 2 x `noise_gap` (no gap: a continuum across
// the line, where a fault leaves one), and they gather on no host-rail, host or leaf beyond what chance gives
// (`rules.noise_chance`: the binomial tail of that place's suspects, given the share of suspect pairs, times the places
// of its kind), the verdicts are replaced by one of kind "noise" that names no host and gives the spread, the pattern
// and what to do. Returns whether it did.
// `tests`: the values `assessment` was made from (its slow tests stand in where no pair is suspect).
bool name_noise(const std::string& metric, const MetricRule& rule, const Rules& rules, const Fabric& fabric,
                const std::vector<PairValue>& tests, Assessment& assessment);

// Rounds that re-test each suspect pair and pair each of its hosts with a good host (a host in no suspect pair),
// hosts disjoint within a round.
std::vector<Round> plan_retests(int hosts, const std::vector<HostPair>& suspects);

// How often each unordered pair was re-tested. A re-test moves the medians, so a pair can turn suspect only after
// the pass that re-tested others: the re-test count is per pair (`passes` each), not a number of passes.
class RetestLedger {
 public:
  explicit RetestLedger(int passes) : passes_(passes) {}
  // The suspects re-tested fewer than `passes` times, each counted as re-tested once more.
  std::vector<HostPair> due(const std::vector<HostPair>& suspects);

 private:
  int passes_;
  std::map<std::pair<int, int>, int> done_;
};

}  // namespace fabricbench::sweep
