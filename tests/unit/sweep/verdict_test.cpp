#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/app/shipped_files.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <set>

#include "fabricbench/error.hpp"

using namespace fabricbench::sweep;

namespace {
const std::vector<std::string> names{"h1", "h2", "h3", "h4", "h5"};

std::vector<PairValue> all_pairs_with(int hosts, double fast, double slow, std::set<int> slow_hosts,
                                      std::set<std::pair<int, int>> slow_links = {}) {
  std::vector<PairValue> v;
  const auto schedule = PairSchedule::all_pairs(hosts);
  for (const auto& round : schedule.rounds())
    for (const auto& p : round.pairs) {
      const bool s = slow_hosts.count(p.a) || slow_hosts.count(p.b) || slow_links.count(std::minmax(p.a, p.b));
      v.push_back({p.a, p.b, s ? slow : fast});
    }
  return v;
}
}  // namespace

TEST(Assess, NamesTheNodeInAllSlowPairs) {
  const MetricRule bw;  // higher is better, suspect below half the median
  for (int n : {4, 5}) {
    const auto a = assess("p2p_bw", bw, 0.75, n, all_pairs_with(n, 1000, 22, {2}), names);
    ASSERT_EQ(a.verdicts.size(), 1u) << n;
    EXPECT_EQ(a.verdicts[0].kind, "node");
    EXPECT_EQ(a.verdicts[0].a, 2);
    EXPECT_NE(a.verdicts[0].reason.find("h3:"), std::string::npos) << a.verdicts[0].reason;
  }
}

TEST(Assess, NamesTheLinkWhenBothNodesAreFineElsewhere) {
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, all_pairs_with(4, 1000, 22, {}, {{0, 3}}), names);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, "link");
  EXPECT_EQ(a.verdicts[0].a, 0);
  EXPECT_EQ(a.verdicts[0].b, 3);
}

TEST(Assess, UniformPairsGiveNoVerdictEvenWhenNoisy) {
  std::vector<PairValue> v = all_pairs_with(5, 1000, 0, {});
  for (std::size_t i = 0; i < v.size(); ++i) v[i].value = 600 + 80.0 * static_cast<double>(i % 5);  // 600..920
  EXPECT_TRUE(assess("p2p_bw", MetricRule{}, 0.75, 5, v, names).verdicts.empty());
}

TEST(Assess, LatencyIsSuspectAboveAMultipleOfTheBest) {
  MetricRule lat;
  lat.higher_is_better = false;
  const auto a = assess("p2p_latency", lat, 0.75, 4, all_pairs_with(4, 10, 45, {1}), names);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, "node");
  EXPECT_EQ(a.verdicts[0].a, 1);
  EXPECT_DOUBLE_EQ(a.reference, 10);
}

TEST(Assess, ABaselineMakesUniformlySlowPairsSuspect) {
  MetricRule bw;
  bw.baseline = 2000;  // every pair at 1000 is below (1 - 0.2) x 2000
  const auto a = assess("p2p_bw", bw, 0.75, 4, all_pairs_with(4, 1000, 0, {}), names);
  EXPECT_EQ(a.verdicts.size(), 4u) << "every node is in all-suspect pairs";
}

TEST(Assess, ARetestThatDoesNotConfirmClearsThePair) {
  auto v = all_pairs_with(4, 1000, 22, {}, {{0, 3}});
  v.push_back({3, 0, 990});  // the re-test of 0-3 was fine: a transient
  EXPECT_TRUE(assess("p2p_bw", MetricRule{}, 0.75, 4, v, names).verdicts.empty());
}

TEST(Assess, RetestsThatAddTheBadNodesPairsDoNotHideIt) {
  // quick pattern (0-2, 1-3) where node 3 is slow, then re-tests 1-3, 1-0 and 3-2: 3 of 5 pairs are slow, so the
  // median pair is slow; the median node is not.
  const std::vector<PairValue> v{{0, 2, 900}, {1, 3, 2.4}, {1, 3, 2.4}, {1, 0, 1000}, {3, 2, 2.4}, {3, 0, 2.4}};
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, v, names);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, "node");
  EXPECT_EQ(a.verdicts[0].a, 3);
}

TEST(Assess, OnePairPerNodeCannotTellNodeFromLink) {
  const std::vector<PairValue> quick{{0, 2, 1000}, {1, 3, 20}};
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, quick, names);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, "pair");
  EXPECT_NE(a.verdicts[0].reason.find("--retest"), std::string::npos);
}

TEST(PlanRetests, PairsEachSuspectHostWithAGoodHostInDisjointRounds) {
  const auto rounds = plan_retests(6, {{1, 3}});
  std::set<std::pair<int, int>> planned;
  for (const auto& r : rounds) {
    std::set<int> busy;
    for (const auto& p : r.pairs) {
      EXPECT_TRUE(busy.insert(p.a).second);
      EXPECT_TRUE(busy.insert(p.b).second);
      planned.insert({p.a, p.b});
    }
  }
  EXPECT_TRUE(planned.count({1, 3})) << "the suspect pair itself is re-tested";
  int with_good = 0;
  for (const auto& [a, b] : planned)
    if ((a == 1 || a == 3) && b != 1 && b != 3) ++with_good;
  EXPECT_EQ(with_good, 2) << "each suspect host is paired with a good host";
}

TEST(RetestLedger, EachPairIsReTestedItsPassesWhenEverItTurnsSuspect) {
  RetestLedger ledger(1);
  const auto first = ledger.due({{0, 1}});
  ASSERT_EQ(first.size(), 1u);
  // The re-test moved the median: {2, 3} is suspect now and {0, 1} still; only {2, 3} is due (once), in either order.
  const auto second = ledger.due({{1, 0}, {3, 2}});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].unordered(), (HostPair{2, 3}));
  EXPECT_TRUE(ledger.due({{0, 1}, {2, 3}}).empty());
  RetestLedger twice(2);
  EXPECT_EQ(twice.due({{0, 1}}).size(), 1u);
  EXPECT_EQ(twice.due({{0, 1}}).size(), 1u);
  EXPECT_TRUE(twice.due({{0, 1}}).empty());
  EXPECT_TRUE(RetestLedger(0).due({{0, 1}}).empty());
}

TEST(Rules, LoadsTheShippedConfigAndRejectsBadKeys) {
  const auto rules = Rules::load(fabricbench::app::shipped_config("sweep.ini"));
  EXPECT_DOUBLE_EQ(rules.rule("p2p_latency").above_multiple_of_best, 3.0);
  EXPECT_DOUBLE_EQ(rules.bad_node_fraction, 0.75);
  const auto dir = std::filesystem::temp_directory_path();
  // Which way is better is the metric's declaration: a rules file cannot say it again (or contradict it).
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nbetter = lower\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nsuspect_below = 0.5\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nsuspect_below_fraction_of_median = half\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  std::ofstream(dir / "fb_base.ini") << "[baseline]\ntolerance = 25%\n[sweep/pairs bw]\nmetric = p2p_bw\nvalue = 12000\n";
  const fabricbench::results::TableSpec pairs{"sweep", "pairs",
                                              {fabricbench::results::key_text("metric", 16),
                                               fabricbench::results::measured("value", fabricbench::results::Unit::none,
                                                                              fabricbench::results::Better::none)}};
  const auto with_base = Rules::load(fabricbench::app::shipped_config("sweep.ini"),
                                     fabricbench::results::Baseline::load((dir / "fb_base.ini").string(), pairs));
  EXPECT_DOUBLE_EQ(with_base.rule("p2p_bw").baseline, 12000);
  EXPECT_DOUBLE_EQ(with_base.rule("p2p_bw").baseline_tolerance, 0.25);
  EXPECT_TRUE(std::isnan(with_base.rule("p2p_latency").baseline));
  EXPECT_THROW(Rules::load(fabricbench::app::shipped_config("missing.ini")), fabricbench::Error);
}
