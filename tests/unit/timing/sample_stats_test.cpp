#include "fabricbench/timing/sample_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace fabricbench::timing;

TEST(SampleStats, HandComputedPercentilesInterpolateLinearly) {
  // Sorted: 1 2 3 4 10. Median index 2 -> 3. p90: 0.9*4 = 3.6 -> 4 + 0.6*(10-4) = 7.6.
  // p99: 3.96 -> 4 + 0.96*6 = 9.76. Mean 4. Population variance (9+4+1+0+36)/5 = 10 -> stddev sqrt(10).
  const auto s = SampleStats::of({10, 3, 1, 4, 2});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);
  EXPECT_DOUBLE_EQ(s.p99, 9.76);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(10.0));
}

TEST(SampleStats, EvenCountMedianIsTheMidpoint) {
  const auto s = SampleStats::of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);  // 0.9*3 = 2.7 -> 3 + 0.7*1
}

TEST(SampleStats, OneSampleAndNone) {
  const auto one = SampleStats::of({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.p99, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  const auto none = SampleStats::of({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_TRUE(std::isnan(none.median));
}

TEST(Percentile, EndsAreMinAndMax) {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 1), 11);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0.5), 6);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0.25), 3.5);
}
