// The point-to-point tests of fabric-p2p as data: which exchange runs, how many directions its bytes count,
// how pairs combine into one row, and OSU's iteration defaults. Adding a test is one table entry.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "fabricbench/ops/iteration_defaults.hpp"

namespace fabricbench::ops {

enum class Exchange {
  ping_pong,            // leader sends, follower answers; timed on the leader per round trip
  window,               // leader posts `window` sends, follower `window` receives, then one ack back
  bidirectional_window  // both post `window` receives and `window` sends at once
};

enum class PairAggregate {
  mean,  // the row is a typical pair (osu_latency, osu_bw, osu_bibw with one pair)
  sum    // the row is the aggregate over all pairs (osu_mbw_mr)
};

// The most messages in flight a window may hold (--window): requests are allocated per message.
inline constexpr int max_window = 100000;

struct P2PTest {
  std::string_view name;
  std::string_view description;
  Exchange exchange;
  int directions;
  PairAggregate aggregate;
  IterationDefaults defaults;

  bool ping_pong() const { return exchange == Exchange::ping_pong; }
  // The figure one pair's timed block gives, as fabric-p2p and fabric-sweep report it: half the round trip (us) for
  // ping-pong, else the bandwidth (MB/s) of the windows that moved, OSU's formulas (ops/bandwidth.hpp).
  double pair_figure(std::uint64_t bytes, int window, int iterations, double elapsed_s) const;
};

const std::vector<P2PTest>& p2p_tests();
// nullptr when there is no such test.
const P2PTest* find_p2p_test(std::string_view name);

}  // namespace fabricbench::ops
