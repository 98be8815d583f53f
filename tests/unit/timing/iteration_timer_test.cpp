#include "fabricbench/timing/iteration_timer.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>

using namespace fabricbench::timing;

TEST(IterationTimer, LapsAddUpToTheSteadyClockSpanAndFollowTheWork) {
  IterationTimer t(4);
  t.start();
  for (int ms : {2, 8, 2, 8}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    t.lap();
  }
  t.stop();
  const auto laps = t.laps_us();
  ASSERT_EQ(laps.size(), 4u);
  const double total = std::accumulate(laps.begin(), laps.end(), 0.0);
  EXPECT_NEAR(total, t.elapsed_s() * 1e6, t.elapsed_s() * 1e6 * 0.01);
  EXPECT_GE(t.elapsed_s(), 0.020);
  // Relative order only (the machine is shared): each 8 ms lap is longer than the 2 ms laps.
  EXPECT_GT(laps[1], laps[0]);
  EXPECT_GT(laps[3], laps[2]);
  for (double l : laps) EXPECT_GE(l, 1900.0);
}

TEST(IterationTimer, NoLapsGiveNoSamples) {
  IterationTimer t(0);
  t.start();
  t.stop();
  EXPECT_TRUE(t.laps_us().empty());
}
