// Coverage: a sweep that tested fewer hosts or pairs than its plan asked for is not a pass.
#include "fabricbench/sweep/coverage.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "fabricbench/sweep/pair_schedule.hpp"

using namespace fabricbench::sweep;

namespace {

std::vector<PairRecord> measured(const std::vector<HostPair>& pairs, double value = 10) {
  std::vector<PairRecord> out;
  for (const auto& p : pairs) {
    auto r = PairRecord::of(0, p, 0, 2);
    r.value = value;
    out.push_back(r);
  }
  return out;
}

std::vector<HostPair> all_of(const PairSchedule& s) {
  std::vector<HostPair> out;
  for (const auto& r : s.rounds()) out.insert(out.end(), r.pairs.begin(), r.pairs.end());
  return out;
}

}  // namespace

TEST(Coverage, NothingTestedIsNotAPass) {
  // The run: 8 hosts, a 2 s budget spent before any pair test.
  auto c = Coverage::of({}, 8, all_of(PairSchedule::all_pairs(8)), true);
  c.why = "--budget 2s";
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(c.text(), "incomplete: 0 of 28 pairs and 0 of 8 hosts tested (--budget 2s)");
  const auto v = c.verdicts();
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[3].kind, VerdictKind::untested);
  EXPECT_EQ(v[3].a, 3);
  EXPECT_EQ(v[3].reason, "no pair test measured this host (--budget 2s)");
}

TEST(Coverage, AHungRecordTestsNothing) {
  auto hung = measured({{0, 1}}, NAN);
  hung[0].hung = 1;
  const auto c = Coverage::of(hung, 2, {{0, 1}}, true);
  EXPECT_EQ(c.hosts_tested, 0);
  EXPECT_FALSE(c.complete());
}

TEST(Coverage, EveryPlannedPairTestedIsComplete) {
  const auto quick = PairSchedule::quick(4);  // 2 of the 6 pairs: all it asks for
  const auto c = Coverage::of(measured(all_of(quick)), 4, all_of(quick), true);
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(c.pairs_planned, 2);
  EXPECT_EQ(c.text(), "complete");
  EXPECT_TRUE(c.verdicts().empty());
}

TEST(Coverage, AFixedPlanMissingPairsIsOneVerdictWhenEveryHostWasTested) {
  const auto all = all_of(PairSchedule::all_pairs(4));
  const auto c = Coverage::of(measured({all.begin(), all.begin() + 2}), 4, all, true);  // round 0 only
  EXPECT_EQ(c.hosts_tested, 4);
  EXPECT_FALSE(c.complete());
  const auto v = c.verdicts();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].a, -1);
  EXPECT_EQ(v[0].reason, "4 of 6 planned pairs not tested; /sweep/untested lists them");
}

TEST(Coverage, TheAdaptivePlanAsksForEveryHostJudgedNotEveryPair) {
  auto c = Coverage::of(measured({{0, 1}, {2, 3}}), 4, {}, false);
  c.hosts_judged = 4;
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(c.pairs_planned, 6);
  c.hosts_judged = 3;
  EXPECT_FALSE(c.complete());
  EXPECT_EQ(c.verdicts().at(0).reason.rfind("the adaptive plan judged 3 of 4 hosts (a host is judged once", 0), 0u);
}
