#include "fabricbench/ops/bandwidth.hpp"

#include <gtest/gtest.h>

#include "fabricbench/ops/p2p_test.hpp"
#include "fabricbench/runtime/mpi.hpp"

#include <limits>
#include <string>

using namespace fabricbench::ops;

TEST(OsuFormulas, LatencyIsHalfTheRoundTrip) {
  // 1000 round trips in 2 ms: 2 us per round trip, 1 us one way.
  EXPECT_DOUBLE_EQ(pingpong_latency_us(2e-3, 1000), 1.0);
  EXPECT_DOUBLE_EQ(pingpong_latency_us(0.5, 250000), 1.0);
}

TEST(OsuFormulas, WindowBandwidthCountsEveryMessage) {
  // 100 windows of 64 messages of 1 MiB in 1 s: 6710.8864 MB/s (1e6 B/s).
  EXPECT_DOUBLE_EQ(window_bandwidth_mbps(1 << 20, 64, 100, 1, 1.0), 6710.8864);
  // Both directions of bibw double it; half the time doubles it again.
  EXPECT_DOUBLE_EQ(window_bandwidth_mbps(1 << 20, 64, 100, 2, 0.5), 4 * 6710.8864);
  // 4 MiB * 64 * 20 in 0.1 s = 53687.0912 MB/s.
  EXPECT_DOUBLE_EQ(window_bandwidth_mbps(4 << 20, 64, 20, 1, 0.1), 53687.0912);
}

TEST(OsuFormulas, MessageRateInMillionsPerSecond) {
  EXPECT_DOUBLE_EQ(message_rate_mps(64, 100, 1, 1e-3), 6.4);
  EXPECT_DOUBLE_EQ(message_rate_mps(64, 100, 2, 1e-3), 12.8);
}

TEST(P2PTests, OsuDefaultsSwitchAboveEightKiB) {
  const auto* latency = find_p2p_test("latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->defaults.iterations(8192, 0), 10000);
  EXPECT_EQ(latency->defaults.iterations(8193, 0), 1000);
  EXPECT_EQ(latency->defaults.warmup(8, -1), 100);
  EXPECT_EQ(latency->defaults.warmup(1 << 20, -1), 10);
  EXPECT_EQ(latency->defaults.iterations(1 << 20, 5), 5) << "an explicit count wins";
  EXPECT_EQ(latency->defaults.warmup(1 << 20, 0), 0);
  const auto* bibw = find_p2p_test("bibw");
  ASSERT_NE(bibw, nullptr);
  EXPECT_EQ(bibw->directions, 2);
  EXPECT_EQ(find_p2p_test("mbw_mr")->aggregate, PairAggregate::sum);
  EXPECT_EQ(find_p2p_test("nope"), nullptr);
}

TEST(Formulas, NoTimeOrNothingMovedIsAnInternalErrorNeverAFigure) {
  auto status_of = [](auto&& f) {
    try {
      f();
    } catch (const fabricbench::Error& e) {
      EXPECT_NE(std::string(e.what()).find("internal error"), std::string::npos) << e.what();
      return e.status();
    }
    return fabricbench::ExitStatus::ok;
  };
  using fabricbench::ExitStatus;
  EXPECT_EQ(status_of([] { window_bandwidth_mbps(1 << 20, 64, 20, 1, 0.0); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { window_bandwidth_mbps(0, 64, 20, 1, 1e-3); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { message_rate_mps(64, 0, 1, 1e-3); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { pingpong_latency_us(-1e-6, 10); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { algbw_gbps(4096, 0.0); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { algbw_gbps(0, 1e-3); }), ExitStatus::runtime);
  EXPECT_EQ(status_of([] { algbw_gbps(4096, std::numeric_limits<double>::infinity()); }), ExitStatus::runtime);
  // A latency of a 0-byte message is a measurement (osu_latency starts at 0 B).
  EXPECT_EQ(status_of([] { pingpong_latency_us(1e-3, 10); }), ExitStatus::ok);
}

TEST(ByteMessage, SplitsLargeMessagesIntoWholeBlocksAndTheRest) {
  using fabricbench::runtime::ByteMessage;
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(ByteMessage::block_bytes, gib);
  const auto four = ByteMessage::split(4 * gib);
  EXPECT_EQ(four.blocks, 4u);
  EXPECT_EQ(four.remainder, 0u);
  const auto odd = ByteMessage::split(2 * gib + 3);
  EXPECT_EQ(odd.blocks, 2u);
  EXPECT_EQ(odd.remainder, 3u);
  EXPECT_EQ(odd.blocks * ByteMessage::block_bytes + odd.remainder, 2 * gib + 3) << "every byte is covered";
}
