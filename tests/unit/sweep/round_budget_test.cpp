#include "fabricbench/sweep/round_budget.hpp"

#include <gtest/gtest.h>

using namespace fabricbench::sweep;

TEST(RoundBudget, WithoutABudgetEveryRoundFits) {
  RoundBudget none;
  EXPECT_FALSE(none.limited());
  EXPECT_TRUE(none.fits(1e9));
  EXPECT_EQ(none.rounds_that_fit(), -1);
}

TEST(RoundBudget, TheGivenEstimateUntilRoundsAreMeasuredThenTheirMedian) {
  RoundBudget b(10.0, 3.0);  // 10 s; 3 s a round before any ran
  EXPECT_EQ(b.rounds_that_fit(), 3);
  EXPECT_TRUE(b.fits(7.0));    // 7 + 3 = 10: just fits
  EXPECT_FALSE(b.fits(7.5));
  b.measured(1.0);
  b.measured(9.0);  // one slow round (a hung pair's) ...
  b.measured(2.0);
  EXPECT_DOUBLE_EQ(b.round_estimate_s(), 2.0) << "... does not end the sweep: the median of 1, 9, 2";
  EXPECT_TRUE(b.fits(8.0));
  EXPECT_FALSE(b.fits(8.5));
  b.measured(4.0);
  EXPECT_DOUBLE_EQ(b.round_estimate_s(), 3.0) << "even count: the mean of the middle two (2 and 4)";
  EXPECT_EQ(b.rounds_that_fit(), 3);
}

TEST(RoundBudget, DurationsAsPeopleReadThem) {
  EXPECT_EQ(human_duration(12.5), "12.5 s");
  EXPECT_EQ(human_duration(250), "4 min 10 s");
  EXPECT_EQ(human_duration(3725), "1 h 02 min");
  EXPECT_EQ(human_duration(3599.6), "1 h 00 min");
  EXPECT_EQ(human_duration(-1), "?");
}
