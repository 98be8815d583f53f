#include <gtest/gtest.h>

#include "fabricbench/facts/link_counters.hpp"

using fabricbench::facts::first_of_each;

TEST(LinkWatch, TheFirstRankOfEachHostAndLinksReads) {
  // fabric-p2p and the sweep: the key is the host; fabric-verbs: the host and the port the rank opened.
  EXPECT_EQ(first_of_each({"h1", "h1", "h2", "h2", "h1"}), (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(first_of_each({"h1 mlx5_0/1", "h1 mlx5_1/1", "h1 mlx5_0/1", "h2 mlx5_0/1"}),
            (std::vector<bool>{true, true, false, true}));
  EXPECT_TRUE(first_of_each({}).empty());
}
