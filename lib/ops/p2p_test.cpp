#include "fabricbench/ops/p2p_test.hpp"

#include "fabricbench/ops/bandwidth.hpp"

namespace fabricbench::ops {

const std::vector<P2PTest>& p2p_tests() {
  // OSU 7.x defaults: latency 10000/1000 iterations with 100/10 warm-up; bandwidth tests 100/20 with 10/2;
  // large messages are those above 8 KiB.
  static const IterationDefaults latency{10000, 1000, 100, 10, 8192};
  static const IterationDefaults bandwidth{100, 20, 10, 2, 8192};
  static const std::vector<P2PTest> tests{
      {"latency", "ping-pong; one-way latency = half the round trip (osu_latency)", Exchange::ping_pong, 1,
       PairAggregate::mean, latency},
      {"bw", "window of non-blocking sends then an ack; per-pair bandwidth (osu_bw)", Exchange::window, 1,
       PairAggregate::mean, bandwidth},
      {"bibw", "both sides send a window at once; bytes of both directions (osu_bibw)", Exchange::bidirectional_window,
       2, PairAggregate::mean, bandwidth},
      {"mbw_mr", "all pairs at once; aggregate bandwidth and message rate (osu_mbw_mr)", Exchange::window, 1,
       PairAggregate::sum, bandwidth},
  };
  return tests;
}

const P2PTest* find_p2p_test(std::string_view name) {
  for (const auto& t : p2p_tests())
    if (t.name == name) return &t;
  return nullptr;
}

double P2PTest::pair_figure(std::uint64_t bytes, int window, int iterations, double elapsed_s) const {
  return ping_pong() ? pingpong_latency_us(elapsed_s, iterations)
                     : window_bandwidth_mbps(bytes, window, iterations, directions, elapsed_s);
}

}  // namespace fabricbench::ops
