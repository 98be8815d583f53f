// The sweep's judge: a pure function from every pair record so far and the rules to verdicts of every kind (node,
// link, pair, hung, counters, wrong data), the matrices, per-node medians, the worst pairs and the pairs to re-test.
// No MPI, no tables, no state: the tool writes what it returns, the simulator and the unit tests call it alike.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fabricbench/results/table.hpp"
#include "fabricbench/sweep/data_path.hpp"
#include "fabricbench/sweep/pair_record.hpp"
#include "fabricbench/sweep/verdict.hpp"

namespace fabricbench::sweep {

// A metric as the judge reads it: the better direction comes from its declaration, never from a rules file.
struct JudgedMetric {
  std::string name;  // "p2p_bw"
  results::Unit value_unit = results::Unit::none;
  results::Better better = results::Better::higher;
  bool both_directions = false;
  std::vector<std::string> nics;  // per host * rails + rail: the NIC its ranks used for this metric ("" unknown)
};

struct NodeSummary {
  int host, metric, rail;
  double median;  // of the host's pairs, best of re-tests
  std::int64_t pairs, suspect_pairs;
};

struct RankedPair {
  int metric, a, b, rail;
  double value;  // best of re-tests
};

struct Judgement {
  std::vector<Verdict> verdicts;
  std::vector<results::Matrix> matrices;  // one per metric and rail: the best value per direction (row -> column)
  std::vector<NodeSummary> nodes;         // per host, metric and rail
  std::vector<LeafSummary> leaves;        // with a topology: per leaf, rail and metric
  double leaf_pair_coverage = NAN;        // with a topology: the share of (leaf pair, rail) crossed by a measured pair
  std::vector<RankedPair> worst;          // per metric, up to ten pairs, worst first
  std::vector<HostPair> suspects;         // unordered pairs to re-test (suspect or doubtful), in the order first seen
  std::int64_t wrong = 0;                 // bytes or elements that failed the check, over every record
};

Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const Fabric& fabric, const std::vector<NicTraffic>& traffic = {},
                const std::vector<std::string>& traffic_nics = {});
// One rail, no topology.
Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const std::vector<std::string>& hosts);
// What `assess` reads of one metric (index `metric` into the sweep's metrics): one value per test of a pair on a rail,
// the worse direction of that test (several tests of one pair, re-tests, stay apart; assess keeps their best). The
// judge and the adaptive plan reduce records this one way.
std::vector<PairValue> pair_values(const std::vector<PairRecord>& records, int metric, bool higher_is_better);
// The share of (leaf pair, rail) that a measured pair crossed; NaN where no rail has two leaves.
double leaf_pair_coverage(const std::vector<PairRecord>& records, const Topology& topology, int rails);

}  // namespace fabricbench::sweep
