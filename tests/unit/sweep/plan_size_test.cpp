// PlanSize (lib/sweep/plan_size.cpp): a fixed plan counted by formula says what building it holds, round for round
// and byte for byte, so a dry run can answer for 100,000 hosts without building 37 GiB.
#include "fabricbench/sweep/plan_size.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fabricbench/error.hpp"

using namespace fabricbench::sweep;

namespace {

// What a built schedule holds: its vectors' capacity, as the allocator gave it.
double held(const PairSchedule& s) {
  double bytes = 0;
  for (const auto& r : s.rounds())
    bytes += sizeof(Round) + r.pairs.capacity() * sizeof(HostPair) + r.resting.capacity() * sizeof(int);
  return bytes;
}

}  // namespace

TEST(PlanSize, CountsWhatBuildingThePlanHolds) {
  for (int n = 2; n <= 41; ++n)
    for (const Plan plan : {Plan::all_pairs, Plan::quick, Plan::shift}) {
      SCOPED_TRACE(testing::Message() << to_string(plan) << " of " << n << " hosts");
      const auto built = PairSchedule::of(plan, n);
      const auto counted = PlanSize::of(plan, n);
      const auto& rounds = built.rounds();
      EXPECT_EQ(counted.rounds(), static_cast<long long>(rounds.size()));
      long long pairs = 0, fewest = rounds.front().pairs.size(), most = 0;
      for (const auto& r : rounds) {
        pairs += static_cast<long long>(r.pairs.size());
        fewest = std::min<long long>(fewest, r.pairs.size()), most = std::max<long long>(most, r.pairs.size());
      }
      EXPECT_EQ(counted.pairs(), pairs);
      EXPECT_EQ(counted.fewest(), fewest);
      EXPECT_EQ(counted.most(), most);
      EXPECT_DOUBLE_EQ(counted.bytes(), held(built));
      // Counted from the built rounds: the same.
      const auto from_rounds = PlanSize::of(rounds, n, built.directed());
      EXPECT_EQ(from_rounds.pairs(), pairs);
      EXPECT_DOUBLE_EQ(from_rounds.bytes(), counted.bytes());
      EXPECT_EQ(counted.pairs_in_first(1), static_cast<long long>(rounds.front().pairs.size()));
    }
}

TEST(PlanSize, SequentialIsOneRoundPerPairEachListingTheRest) {
  const auto seq = PlanSize::of(Plan::all_pairs, 8).one_pair_per_round();
  EXPECT_EQ(seq.rounds(), 28);
  EXPECT_EQ(seq.most(), 1);
  EXPECT_DOUBLE_EQ(seq.bytes(), 28 * (sizeof(Round) + sizeof(HostPair) + 6 * sizeof(int)));
  // 16,384 hosts: 134,209,536 pairs of 8 bytes and 16,383 rounds, just over 1 GiB.
  EXPECT_EQ(PlanSize::of(Plan::all_pairs, 16384).pairs(), 134209536);
  EXPECT_EQ(binary_bytes(PlanSize::of(Plan::all_pairs, 16384).bytes()), "1.00 GiB");
  EXPECT_EQ(binary_bytes(PlanSize::of(Plan::all_pairs, 8192).bytes()), "256 MiB");
  EXPECT_EQ(PlanSize::of(Plan::all_pairs, 100000).pairs(), 4999950000LL);
  EXPECT_THROW(PlanSize::of(Plan::adaptive, 8), fabricbench::Error);
}
