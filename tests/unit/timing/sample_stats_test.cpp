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

TEST(MedianOf, HandComputedAndTheSameAsSampleStats) {
  EXPECT_DOUBLE_EQ(median_of({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);  // the midpoint of 2 and 3
  EXPECT_DOUBLE_EQ(median_of({7}), 7.0);
  EXPECT_TRUE(std::isnan(median_of({})));
  std::vector<double> v;
  for (int i = 0; i < 101; ++i) v.push_back(static_cast<double>((i * 37) % 101) * 0.5);
  for (std::size_t n : {100u, 101u}) {
    const std::vector<double> part(v.begin(), v.begin() + static_cast<long>(n));
    EXPECT_DOUBLE_EQ(median_of(part), SampleStats::of(part).median) << n;
  }
}
