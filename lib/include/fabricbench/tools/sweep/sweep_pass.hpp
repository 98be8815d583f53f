// What fabric-sweep's pass loop hands down to its rounds, and what the rounds hand back, as values: the pass in
// flight (`Pass`), and a run of rounds' records, NIC traffic and cost (`RoundTally`). The loop (SweepBenchmark::run)
// adds up the tallies of its passes and gives them to the writers; the rounds keep no counters in the tool.
#pragma once
#include <cstdint>
#include <vector>

#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::sweep {

// The pass in flight: its number (from 1; a resumed mesh goes on from the file's) and whether its bandwidth metrics
// run (between a mesh's --bw-every passes they rest).
struct Pass {
  int number = 1;
  bool bandwidth = true;
  bool rests(const SweepMetric& m) const { return !bandwidth && m.better == results::Better::higher; }
};

// What a run of rounds gave. On rank 0: the merged records (a pass's start with a --resume's earlier ones), the NIC
// traffic read around them (--rails), and what they cost; on every rank: how many sweep rounds ran (a --budget may
// stop them early).
struct RoundTally {
  std::vector<PairRecord> records;
  std::vector<NicTraffic> traffic;
  int sweep_rounds = 0;
  // Each round's longest pair test and longest setup, summed; every pair row's setup_s and measure_s, summed.
  double test_longest_s = 0, setup_longest_s = 0, pair_setup_s = 0, pair_measure_s = 0;
  std::int64_t pair_rows = 0;
  // --plan adaptive: the unordered pairs tested and the hosts judged when the plan ended (-1: a fixed plan).
  long long adaptive_pairs_tested = -1;
  int adaptive_hosts_judged = -1;

  // `more` after these: its records and traffic appended, its counts and times added, its plan's reach kept.
  void add(RoundTally more) {
    records.insert(records.end(), more.records.begin(), more.records.end());
    traffic.insert(traffic.end(), more.traffic.begin(), more.traffic.end());
    sweep_rounds += more.sweep_rounds;
    test_longest_s += more.test_longest_s, setup_longest_s += more.setup_longest_s;
    pair_setup_s += more.pair_setup_s, pair_measure_s += more.pair_measure_s, pair_rows += more.pair_rows;
    if (more.adaptive_pairs_tested >= 0)
      adaptive_pairs_tested = more.adaptive_pairs_tested, adaptive_hosts_judged = more.adaptive_hosts_judged;
  }
};

}  // namespace fabricbench::sweep
