#include <gtest/gtest.h>

#include "fabricbench/error.hpp"
#include "fabricbench/runtime/placement.hpp"

using namespace fabricbench::runtime;

TEST(RankPairs, RankIPairsWithIPlusHalf) {
  const RankPairs p(8);
  EXPECT_EQ(p.pairs(), 4);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(p.peer_of(p.peer_of(r)), r);
    EXPECT_EQ(p.leads(r), r < 4);
    EXPECT_EQ(p.pair_of(r), p.pair_of(p.peer_of(r)));
  }
  EXPECT_EQ(p.peer_of(0), 4);
  EXPECT_EQ(p.peer_of(3), 7);
  EXPECT_EQ(p.peer_of(5), 1);
}

TEST(RankPairs, OddOrSingleRankCountsAreUsageErrors) {
  for (int n : {0, 1, 3, 7}) EXPECT_THROW(RankPairs{n}, fabricbench::Error) << n;
}

TEST(Placement, ListsHostsInOrderOfFirstAppearance) {
  const Placement p({{0, "b", 0, 2}, {1, "a", 0, 2}, {2, "b", 1, 2}, {3, "a", 1, 2}}, 2);
  EXPECT_EQ(p.hosts(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(p.me().local_rank, 1);
  EXPECT_EQ(p.world_size(), 4);
}
