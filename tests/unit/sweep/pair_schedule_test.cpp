#include "fabricbench/sweep/pair_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/sweep/verdict.hpp"

using namespace fabricbench::sweep;

namespace {
// Every unordered pair exactly once, no host twice in a round, the resting hosts are exactly the others.
void expect_round_robin(const PairSchedule& s, int n) {
  std::set<std::pair<int, int>> seen;
  for (const auto& round : s.rounds()) {
    std::set<int> busy;
    for (const auto& p : round.pairs) {
      EXPECT_NE(p.a, p.b);
      EXPECT_TRUE(busy.insert(p.a).second) << "host " << p.a << " twice in a round";
      EXPECT_TRUE(busy.insert(p.b).second) << "host " << p.b << " twice in a round";
      EXPECT_TRUE(seen.insert({std::min(p.a, p.b), std::max(p.a, p.b)}).second) << "pair tested twice";
    }
    EXPECT_EQ(busy.size() + round.resting.size(), static_cast<std::size_t>(n));
    for (int r : round.resting) EXPECT_EQ(busy.count(r), 0u);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(n * (n - 1) / 2)) << "every pair once";
}
}  // namespace

TEST(AllPairs, EvenNodeCountsTakeNMinusOneRoundsOfHalfNPairs) {
  for (int n : {2, 4, 6, 8, 16, 64}) {
    const auto s = PairSchedule::all_pairs(n);
    ASSERT_EQ(s.rounds().size(), static_cast<std::size_t>(n - 1)) << n;
    for (const auto& r : s.rounds()) {
      EXPECT_EQ(r.pairs.size(), static_cast<std::size_t>(n / 2));
      EXPECT_TRUE(r.resting.empty());
    }
    expect_round_robin(s, n);
  }
}

TEST(AllPairs, OddNodeCountsTakeNRoundsWithOneNodeResting) {
  for (int n : {3, 5, 7, 33}) {
    const auto s = PairSchedule::all_pairs(n);
    ASSERT_EQ(s.rounds().size(), static_cast<std::size_t>(n)) << n;
    std::set<int> rested;
    for (const auto& r : s.rounds()) {
      EXPECT_EQ(r.pairs.size(), static_cast<std::size_t>((n - 1) / 2));
      ASSERT_EQ(r.resting.size(), 1u);
      rested.insert(r.resting[0]);
    }
    EXPECT_EQ(rested.size(), static_cast<std::size_t>(n)) << "each node rests exactly once";
    expect_round_robin(s, n);
  }
}

TEST(Round, OneByOneGivesEveryPairARoundOfItsOwnInOrderWithTheOthersResting) {
  // all-pairs of 4: three rounds of two pairs -> six rounds of one pair each, the two other hosts resting.
  const auto plan = PairSchedule::all_pairs(4).rounds();
  const auto alone = Round::one_by_one(4, plan);
  ASSERT_EQ(alone.size(), 6u);
  std::size_t k = 0;
  for (const auto& r : plan)
    for (const auto& p : r.pairs) {
      ASSERT_EQ(alone[k].pairs.size(), 1u);
      EXPECT_EQ(alone[k].pairs[0], p) << "round " << k << ": the plan's order";
      std::set<int> resting(alone[k].resting.begin(), alone[k].resting.end());
      EXPECT_EQ(resting.size(), 2u);
      EXPECT_FALSE(resting.count(p.a) || resting.count(p.b));
      ++k;
    }
  // Re-tests of one suspect pair among 6 hosts pack the suspect's hosts with good ones two pairs a round.
  const auto retests = plan_retests(6, {{1, 3}});
  std::size_t pairs = 0;
  for (const auto& r : retests) pairs += r.pairs.size();
  ASSERT_GT(pairs, retests.size()) << "some re-test round holds two pairs";
  EXPECT_EQ(Round::one_by_one(6, retests).size(), pairs);
  EXPECT_TRUE(Round::one_by_one(6, {}).empty());
}

TEST(Round, LanesKeepEveryHostsSendAndReceiveOnDifferentCommunicators) {
  // Each host's send (as a) and receive (as b) on different lanes, in every component: both ends of a pair see its
  // lane, so that holds in the reverse phase too.
  const auto check = [](const Round& r, int most) {
    const auto lanes = r.lanes();
    ASSERT_EQ(lanes.size(), r.pairs.size());
    for (std::size_t i = 0; i < r.pairs.size(); ++i) {
      EXPECT_GE(lanes[i], 0);
      EXPECT_LE(lanes[i], most);
      for (std::size_t j = 0; j < r.pairs.size(); ++j)
        if (r.pairs[j].a == r.pairs[i].b) EXPECT_NE(lanes[i], lanes[j]) << "host " << r.pairs[i].b;
    }
  };
  // Even cycles (shift of 8 hosts, d = 1..4) and 2-cycles: two lanes.
  const auto shift = PairSchedule::shift(8).rounds();
  for (const auto& r : shift) check(r, 1);
  // An odd cycle (0 -> 1 -> 2 -> 0) needs a third lane, on its last pair only; a chain beside it (3 -> 4 -> 5) and a
  // pair alone (6 -> 7) alternate from their first pair.
  Round r;
  r.pairs = {{0, 1}, {1, 2}, {2, 0}, {4, 5}, {3, 4}, {6, 7}};
  EXPECT_EQ(r.lanes(), (std::vector<int>{0, 1, 2, 1, 0, 0}));
  check(r, 2);
  // A cycle of 5 beside a 4-cycle.
  Round mixed;
  mixed.pairs = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {5, 6}, {6, 7}, {7, 8}, {8, 5}};
  check(mixed, 2);
  const auto lanes = mixed.lanes();
  EXPECT_EQ(std::count(lanes.begin(), lanes.end(), 2), 1);
}

TEST(Quick, OneRoundPairingIWithIPlusHalf) {
  const auto s = PairSchedule::quick(6);
  ASSERT_EQ(s.rounds().size(), 1u);
  EXPECT_EQ(s.rounds()[0].pairs, (std::vector<HostPair>{{0, 3}, {1, 4}, {2, 5}}));
  // Odd N: the node the first round leaves out gets a round of its own, so every node is tested.
  const auto odd = PairSchedule::quick(5);
  ASSERT_EQ(odd.rounds().size(), 2u);
  EXPECT_EQ(odd.rounds()[0].resting, std::vector<int>{4});
  EXPECT_EQ(odd.rounds()[1].pairs, (std::vector<HostPair>{{0, 4}}));
}

TEST(Shift, EveryNodeSendsToNodePlusDAndReceivesFromNodeMinusD) {
  const int n = 5;
  const auto s = PairSchedule::shift(n);
  ASSERT_EQ(s.rounds().size(), static_cast<std::size_t>(n - 1));
  EXPECT_TRUE(s.directed());
  std::set<std::pair<int, int>> directed;
  for (std::size_t d = 0; d < s.rounds().size(); ++d) {
    std::vector<int> sends(n, 0), receives(n, 0);
    for (const auto& p : s.rounds()[d].pairs) {
      EXPECT_EQ(p.b, (p.a + static_cast<int>(d) + 1) % n);
      ++sends[p.a];
      ++receives[p.b];
      directed.insert({p.a, p.b});
    }
    for (int h = 0; h < n; ++h) EXPECT_EQ(sends[h] + receives[h], 2);
  }
  EXPECT_EQ(directed.size(), static_cast<std::size_t>(n * (n - 1))) << "every ordered pair once";
}

TEST(PairsFile, ReadsRoundsInOrder) {
  std::istringstream in("# custom rounds\n1 c d\n0 a b   # first\n\n0 c d\n1 a b\n");
  const auto s = PairSchedule::from_pairs_file(in, {"a", "b", "c", "d"}, "pairs.txt");
  ASSERT_EQ(s.rounds().size(), 2u);
  EXPECT_EQ(s.rounds()[0].pairs, (std::vector<HostPair>{{0, 1}, {2, 3}}));
  EXPECT_EQ(s.rounds()[1].pairs, (std::vector<HostPair>{{2, 3}, {0, 1}}));
}

TEST(PairsFile, ErrorsNameTheLine) {
  const std::vector<std::string> hosts{"a", "b", "c", "d"};
  const std::vector<std::pair<std::string, std::string>> cases{
      {"0 a b\n0 a c\n", "pairs.txt:2: host 'a' appears twice in round 0"},
      {"0 a x\n", "pairs.txt:1: unknown host 'x'"},
      {"0 a\n", "pairs.txt:1: expected 'ROUND HOST_A HOST_B'"},
      {"r a b\n", "pairs.txt:1: expected"},
      {"0 a b c\n", "pairs.txt:1: expected"},
      {"-1 a b\n", "pairs.txt:1: expected"},
      {"0 b b\n", "pairs.txt:1: host 'b' paired with itself"},
      {"# nothing\n", "pairs.txt: no pairs"},
  };
  for (const auto& [text, message] : cases) {
    std::istringstream in(text);
    try {
      PairSchedule::from_pairs_file(in, hosts, "pairs.txt");
      FAIL() << "accepted: " << text;
    } catch (const fabricbench::Error& e) {
      EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// A plan's memory is bounded whatever --hosts says (2-100000): all-pairs and shift beyond max_pairs are refused in
// one usage line before any round is built (--dry-run --hosts 100000 needed ~40 GB before); quick stays small.
TEST(PairSchedule, PlansBeyondTheBoundAreRefusedBeforeTheyAreBuilt) {
  const auto refusal = [](auto&& build) {
    try {
      build();
    } catch (const fabricbench::Error& e) {
      EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage);
      return std::string(e.what());
    }
    return std::string();
  };
  // The memory figure is the refused plan's (4,999,950,000 pairs of 8 bytes and 99,999 rounds), not the bound's.
  EXPECT_EQ(refusal([] { PairSchedule::all_pairs(100000); }).substr(0, 117),
            "--plan all-pairs of 100000 hosts: 4999950000 pair tests in 99999 rounds (about 37.26 GiB of plan on every "
            "rank), more");
  // Whole GiB shifted down said "about 0 GiB" for the 1.00 GiB of 16,384 hosts.
  EXPECT_NE(refusal([] {
              PairSchedule::all_pairs(16384);
            }).find("134209536 pair tests in 16383 rounds (about 1.00 GiB of plan on every rank)"),
            std::string::npos);
  EXPECT_NE(refusal([] { PairSchedule::all_pairs(11586); }), "");  // 67,111,905 pairs: just past the bound
  EXPECT_NE(refusal([] { PairSchedule::shift(8193); }).find("use --plan adaptive"), std::string::npos);
  EXPECT_EQ(PairSchedule::quick(100000).rounds().at(0).pairs.size(), 50000u);
}
