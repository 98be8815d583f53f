// One measured value of one node pair: what the ends of a pair test send rank 0 (a plain record, gathered as an
// array), what the judge reads, and what a --resume rebuilds from /sweep/pairs.
#pragma once
#include <cmath>
#include <cstdint>

#include "fabricbench/sweep/pair_schedule.hpp"

namespace fabricbench::sweep {

struct PairRecord {
  std::int32_t round = 0, a = 0, b = 0, metric = 0;
  std::int32_t direction = 2;   // 0 a->b, 1 b->a, 2 both
  std::int32_t iterations = 0;  // done (the pair-time budget may cut the requested count)
  std::int64_t bytes = 0, wrong = 0;
  double value = NAN, median_us = NAN, p99_us = NAN;
  double test_s = 0;  // wall time of this rank's part of the pair test (all its metrics)
  // Setup of this metric on this pair: the test's own (NCCL communicator, QPs connected), plus, on the round's first
  // metric, the pair communicator's split. The row takes the larger end's.
  double setup_s = 0;
  double measure_s = 0;  // this metric's test after its setup (warm-up, timed part, check); the row: the larger end's
  std::int32_t window = 0, cut = 0;  // messages in flight used; 1 when the budget cut the counts
  std::int32_t hung = 0;             // 1: the pair did not finish within --timeout (NCCL: communicator aborted)
  std::int32_t rail = 0;             // the local rank of both ends (0 without --rails)
  double payload = 0;  // bytes this end's NIC carried for the timed part (sent + received), for the data-path check
  // Growth of the link counters of each end's host (index 0: a, 1: b) during this metric; NaN where that host has
  // no such counters. A metric's growth sits on its first record only, so sums over records count it once.
  double port_errors[2] = {NAN, NAN}, xmit_wait[2] = {NAN, NAN}, nvlink_errors[2] = {NAN, NAN};

  // The one way a record starts: which round, pair, metric (index into the sweep's metrics) and direction.
  // The direction as the rows name it: "a->b", "b->a", "both".
  const char* direction_name() const { return direction == 0 ? "a->b" : direction == 1 ? "b->a" : "both"; }
  static PairRecord of(int round, HostPair hosts, int metric, int direction) {
    PairRecord r;
    r.round = round, r.a = hosts.a, r.b = hosts.b, r.metric = metric, r.direction = direction;
    return r;
  }
  // The end (0: a, 1: b) that `host` is.
  int end_of(int host) const { return host == a ? 0 : 1; }
};

}  // namespace fabricbench::sweep
