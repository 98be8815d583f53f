#include "fabricbench/timing/timed_blocks.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "fabricbench/error.hpp"

using namespace fabricbench::timing;

TEST(TimedBlocks, TheFirstBlockDecidesHowManyFillTheMinimumTime) {
  TimedBlocks b(0.1);
  EXPECT_EQ(b.count(), 1);
  EXPECT_FALSE(b.deciding());
  b.add(0.003);
  ASSERT_TRUE(b.deciding());
  b.decide(0.003);  // 0.1 / 0.003 = 33.3 -> 34 blocks
  EXPECT_EQ(b.count(), 34);
  EXPECT_FALSE(b.deciding());
  b.add(0.004);
  EXPECT_FALSE(b.deciding()) << "decided once";
}

TEST(TimedBlocks, CountStaysBetweenOneAndTheCap) {
  TimedBlocks fast(0.1);
  fast.add(1e-6);
  fast.decide(1e-6);
  EXPECT_EQ(fast.count(), TimedBlocks::max_blocks);
  TimedBlocks slow(0.1);
  slow.add(0.5);
  slow.decide(0.5);
  EXPECT_EQ(slow.count(), 1);
  TimedBlocks zero(0.1);
  zero.add(0);
  zero.decide(0);
  EXPECT_EQ(zero.count(), TimedBlocks::max_blocks) << "a block too short for the clock";
}

TEST(TimedBlocks, NoMinimumTimeIsOneBlockWithoutSpread) {
  TimedBlocks b(0);
  b.add(2.0);
  EXPECT_FALSE(b.deciding());
  EXPECT_EQ(b.count(), 1);
  EXPECT_EQ(b.blocks(), 1);
  EXPECT_DOUBLE_EQ(b.median(), 2.0);
  EXPECT_TRUE(std::isnan(b.spread()));
}

TEST(TimedBlocks, MedianAndSpreadByHand) {
  TimedBlocks b(1);
  for (double v : {5.0, 1.0, 4.0, 2.0, 3.0}) b.add(v);
  // sorted 1..5: median 3; p90 at index 3.6 -> 4.6, p10 at index 0.4 -> 1.4; (4.6 - 1.4) / 3
  EXPECT_DOUBLE_EQ(b.median(), 3.0);
  EXPECT_NEAR(b.spread(), 3.2 / 3.0, 1e-12);
  EXPECT_EQ(b.blocks(), 5);
  TimedBlocks none(1);
  EXPECT_TRUE(std::isnan(none.median()));
}

TEST(TimedBlocks, MinimumTimeOutsideItsRangeIsAUsageErrorNamingTheOption) {
  EXPECT_DOUBLE_EQ(TimedBlocks::checked_min_time(0.5, "--min-time"), 0.5);
  EXPECT_DOUBLE_EQ(TimedBlocks::checked_min_time(0, "--min-time"), 0);
  for (double bad : {-1.0, 61.0, double(NAN)}) {
    try {
      TimedBlocks::checked_min_time(bad, "--min-time");
      FAIL() << bad;
    } catch (const fabricbench::Error& e) {
      EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage) << e.what();
      EXPECT_NE(std::string(e.what()).find("--min-time"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("allowed values are 0 to 60"), std::string::npos);
    }
  }
}
