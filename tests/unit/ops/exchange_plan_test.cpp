#include <gtest/gtest.h>

#include "fabricbench/ops/p2p_exchange.hpp"

using fabricbench::ops::ExchangePlan;

TEST(ExchangePlan, FitsTheRequestedCountsWhenTheyFit) {
  // 1 ms a message, window 64: 64 ms an iteration; 20 + 2 iterations = 1.408 s within 3 s.
  const auto p = ExchangePlan::fit(1e-3, 20, 2, 64, 3.0);
  EXPECT_EQ(p.iterations, 20);
  EXPECT_EQ(p.warmup, 2);
  EXPECT_EQ(p.window, 64);
  EXPECT_FALSE(p.cut);
  EXPECT_FALSE(ExchangePlan::fit(1.0, 1000, 100, 64, 0).cut) << "no budget, no cut";
}

TEST(ExchangePlan, CutsIterationsThenWarmupsThenTheWindow) {
  // 10 ms a message x 64 = 0.64 s an iteration; 3 s holds 4 whole iterations; warm-ups get at most a fifth (0).
  auto p = ExchangePlan::fit(10e-3, 20, 2, 64, 3.0);
  EXPECT_TRUE(p.cut);
  EXPECT_EQ(p.warmup, 0);
  EXPECT_EQ(p.iterations, 4);
  EXPECT_EQ(p.window, 64);
  // 0.1 s an iteration, 10 s: 100 fit; 20 warm-ups (a fifth) leave 80 of the 1000 asked.
  p = ExchangePlan::fit(1e-3, 1000, 100, 100, 10.0);
  EXPECT_EQ(p.warmup, 20);
  EXPECT_EQ(p.iterations, 80);
  // RIGS.md's slowed host: 4 MiB at 24 MB/s is 0.175 s a message; 64 of them (11 s) do not fit 3 s: one iteration
  // of the 17 messages that do.
  p = ExchangePlan::fit(4194304 / 24e6, 20, 2, 64, 3.0);
  EXPECT_EQ(p.iterations, 1);
  EXPECT_EQ(p.warmup, 0);
  EXPECT_EQ(p.window, 17);
  // Even one message is longer than the budget: it still sends one.
  p = ExchangePlan::fit(5.0, 20, 2, 64, 3.0);
  EXPECT_EQ(p.window, 1);
  EXPECT_EQ(p.iterations, 1);
}

TEST(ExchangePlan, PingPongIsAWindowOfOne) {
  // 1 ms round trips, 1000 + 100 do not fit 0.5 s: 500 fit, 100 warm-ups, 400 timed.
  const auto p = ExchangePlan::fit(1e-3, 1000, 100, 1, 0.5);
  EXPECT_EQ(p.window, 1);
  EXPECT_EQ(p.warmup, 100);
  EXPECT_EQ(p.iterations, 400);
}
