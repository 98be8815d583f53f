// perftest's bandwidth and latency figures on hand-computed cases (bandwidth.hpp, perftest section).
#include <gtest/gtest.h>

#include <numeric>

#include "fabricbench/error.hpp"
#include "fabricbench/ops/bandwidth.hpp"

using namespace fabricbench::ops;

TEST(PerftestBandwidth, AverageIsBytesOverFirstPostToLastCompletionInMiB) {
  // 4 messages of 1 MiB; the last completes at 8 ms: 4 MiB / 0.008 s = 500 MiB/s ("MB/sec" in perftest).
  const std::vector<double> posted{0, 0.001, 0.002, 0.003}, completed{0.002, 0.003, 0.004, 0.008};
  const auto bw = perftest_bandwidth(1 << 20, posted, completed, 1, true);
  EXPECT_DOUBLE_EQ(bw.avg_mibps, 500.0);
  EXPECT_DOUBLE_EQ(bw.avg_gbitps, 4.0 * 1048576 * 8 / 0.008 / 1e9);  // 4.194304 Gb/s
  EXPECT_DOUBLE_EQ(bw.msg_rate_mps, 4 / 0.008 / 1e6);
  // Peak: the best run from a post to a later completion: messages 0..2 in 4 ms, 1.333 ms each -> 750 MiB/s.
  EXPECT_NEAR(bw.peak_mibps, 750.0, 1e-9);
  EXPECT_NEAR(bw.peak_gbitps, 1048576.0 * 8 / (0.004 / 3) / 1e9, 1e-9);
}

TEST(PerftestBandwidth, PeakUsesOnlySignaledCompletions) {
  // cq_mod 2: messages 1 and 3 are signaled; stamps of 0 and 2 do not exist (0 here, ignored).
  const std::vector<double> posted{0, 0.001, 0.002, 0.003}, completed{0, 0.003, 0, 0.008};
  const auto bw = perftest_bandwidth(1 << 20, posted, completed, 2, true);
  EXPECT_DOUBLE_EQ(bw.avg_mibps, 500.0);
  // Candidates: 0..1 in 3 ms (1.5 ms each), 0..3 in 8 ms (2), 1..1 (2), 1..3 in 7 ms (2.33), 2..3 (3), 3..3 (5).
  EXPECT_NEAR(bw.peak_mibps, 1.0 / 0.0015, 1e-9);
}

TEST(PerftestBandwidth, NoPeakWhenNotAsked) {
  const std::vector<double> posted{0, 0.001}, completed{0.001, 0.002};
  const auto bw = perftest_bandwidth(1000, posted, completed, 1, false);
  EXPECT_DOUBLE_EQ(bw.peak_mibps, 0.0);
  EXPECT_DOUBLE_EQ(bw.avg_mibps, 2000 / 0.002 / 1048576.0);
}

TEST(PerftestBandwidth, NoTimeOrNoMessagesIsAnInternalError) {
  EXPECT_THROW(perftest_bandwidth(1000, {}, {}, 1, true), fabricbench::Error);
  EXPECT_THROW(perftest_bandwidth(1000, {0.0}, {0.0}, 1, true), fabricbench::Error);
  EXPECT_THROW(perftest_bandwidth(0, {0.0}, {1.0}, 1, true), fabricbench::Error);
}

TEST(PerftestLatency, DropsTheTwoLargestAndHalvesPingPongs) {
  // 7 round trips (8 iterations): the kept 5 are 10..14 us; halved: 5, 5.5, 6, 6.5, 7.
  const auto lat = perftest_latency({14, 200, 10, 12, 100, 11, 13}, 2);
  EXPECT_EQ(lat.count, 5u);
  EXPECT_DOUBLE_EQ(lat.min_us, 5.0);
  EXPECT_DOUBLE_EQ(lat.typical_us, 6.0);
  EXPECT_DOUBLE_EQ(lat.avg_us, 6.0);
  EXPECT_NEAR(lat.stdev_us, std::sqrt(0.5), 1e-12);
  // perftest's t_max, 99% and 99.9% index the sorted deltas at n, ceil(0.99 n), ceil(0.999 n): here entry 5, the
  // second largest round trip (100 us, 50 one way).
  EXPECT_DOUBLE_EQ(lat.max_us, 50.0);
  EXPECT_DOUBLE_EQ(lat.p99_us, 50.0);
  EXPECT_DOUBLE_EQ(lat.p999_us, 50.0);
}

TEST(PerftestLatency, EvenCountTypicalIsTheMeanOfTheMiddleTwo) {
  const auto lat = perftest_latency({6, 5, 4, 3, 2, 1}, 1);
  EXPECT_EQ(lat.count, 4u);
  EXPECT_DOUBLE_EQ(lat.typical_us, 2.5);
  EXPECT_DOUBLE_EQ(lat.max_us, 5.0);
  EXPECT_DOUBLE_EQ(lat.p99_us, 5.0);
}

TEST(PerftestLatency, IndicesOfAThousandIterations) {
  // 1000 iterations give 999 round trips; perftest keeps n = 997: median entry 498, 99% entry 988, 99.9% entry 997.
  std::vector<double> rt(999);
  std::iota(rt.rbegin(), rt.rend(), 0.0);  // 998 .. 0, unsorted on purpose
  const auto lat = perftest_latency(rt, 1);
  EXPECT_DOUBLE_EQ(lat.typical_us, 498.0);
  EXPECT_DOUBLE_EQ(lat.p99_us, 988.0);
  EXPECT_DOUBLE_EQ(lat.p999_us, 997.0);
  EXPECT_DOUBLE_EQ(lat.max_us, 997.0);
  EXPECT_DOUBLE_EQ(lat.min_us, 0.0);
}

TEST(PerftestLatency, TooFewRoundTripsIsAnInternalError) {
  EXPECT_THROW(perftest_latency({1, 2}, 1), fabricbench::Error);
}
