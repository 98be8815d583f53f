// The network rule's placing of a slow connection, on rated connections whose answer is read off by hand (the
// patterns measured on the GPU machine's multi-host rig, docs/slow-ranks.md).
#include "fabricbench/job/network_rule.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using fabricbench::job::Evidence;
using fabricbench::job::NetworkRuleSettings;
using fabricbench::job::NetworkVerdict;
using fabricbench::job::place_slow_connections;
using fabricbench::job::RatedConnection;

// A ring of 4 (r sends to r + 1) whose sends read these ratios; the first is the slow one, 1->2.
std::vector<RatedConnection> ring(double r01, double r12, double r23, double r30) {
  return {{{0, 1}, r01, 0.2}, {{1, 2}, r12, 0.2}, {{2, 3}, r23, 0.2}, {{3, 0}, r30, 0.2}};
}

NetworkVerdict one(const std::vector<RatedConnection>& all, std::vector<RatedConnection> slow) {
  const auto v = place_slow_connections(slow, all, NetworkRuleSettings{});
  EXPECT_EQ(v.size(), 1u);
  return v.empty() ? NetworkVerdict{} : v[0];
}

TEST(NetworkRule, AReceiverWhoseOwnSendsSlowBesideIsItsNetwork) {
  // A stalled rank 2 (DDP, 60-70 s): 1->2 4.6x, its own 2->3 1.3x, 0->1 0.9x.
  const auto all = ring(0.9, 4.6, 1.3, 1.0);
  const auto v = one(all, {all[1]});
  EXPECT_EQ(v.kind, NetworkVerdict::Kind::network);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.evidence, Evidence::sends_into);
  ASSERT_EQ(v.connections.size(), 2u);  // the slow one, then the one beside that decided
  EXPECT_EQ(v.connections[1].who, (std::pair<int, int>{2, 3}));
}

TEST(NetworkRule, ASenderWhoseIncomingSendsSlowBesideIsItsNetwork) {
  // A NIC slowed on its sends at rank 1: 1->2 12x, the sends into it 0->1 1.85x (its acknowledgements wait).
  const auto all = ring(1.85, 12, 0.84, 1.0);
  const auto v = one(all, {all[1]});
  EXPECT_EQ(v.kind, NetworkVerdict::Kind::network);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.evidence, Evidence::sends_from);
}

TEST(NetworkRule, NoLeanIsTheLink) {
  for (const auto& all : {ring(1.0, 7.7, 1.01, 1.0), ring(1.5, 7.7, 1.5, 1.0), ring(1.2, 7.7, 1.2, 1.0)}) {
    const auto v = one(all, {all[1]});
    EXPECT_EQ(v.kind, NetworkVerdict::Kind::link);
    EXPECT_EQ(v.rank, 1);
    EXPECT_EQ(v.peer, 2);
    EXPECT_EQ(v.evidence, Evidence::link);
  }
}

TEST(NetworkRule, SlowConnectionsThatAllTouchOneRankAreItsNetwork) {
  const auto all = ring(6.5, 4.8, 1.0, 1.0);
  const auto v = one(all, {all[0], all[1]});
  EXPECT_EQ(v.kind, NetworkVerdict::Kind::network);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(v.evidence, Evidence::connections);
  EXPECT_DOUBLE_EQ(v.ratio, 6.5);
  EXPECT_TRUE(place_slow_connections({}, all, NetworkRuleSettings{}).empty());
}

}  // namespace
