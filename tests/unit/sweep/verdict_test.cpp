#include "fabricbench/sweep/verdict.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/error.hpp"

using namespace fabricbench::sweep;

namespace {
const std::vector<std::string> five_hosts{"h1", "h2", "h3", "h4", "h5"};

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
    const auto a = assess("p2p_bw", bw, 0.75, n, all_pairs_with(n, 1000, 22, {2}), five_hosts);
    ASSERT_EQ(a.verdicts.size(), 1u) << n;
    EXPECT_EQ(a.verdicts[0].kind, VerdictKind::node);
    EXPECT_EQ(a.verdicts[0].a, 2);
    EXPECT_NE(a.verdicts[0].reason.find("h3:"), std::string::npos) << a.verdicts[0].reason;
  }
}

TEST(Assess, NamesTheLinkWhenBothNodesAreFineElsewhere) {
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, all_pairs_with(4, 1000, 22, {}, {{0, 3}}), five_hosts);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, VerdictKind::link);
  EXPECT_EQ(a.verdicts[0].a, 0);
  EXPECT_EQ(a.verdicts[0].b, 3);
}

TEST(Assess, UniformPairsGiveNoVerdictEvenWhenNoisy) {
  std::vector<PairValue> v = all_pairs_with(5, 1000, 0, {});
  for (std::size_t i = 0; i < v.size(); ++i) v[i].value = 600 + 80.0 * static_cast<double>(i % 5);  // 600..920
  EXPECT_TRUE(assess("p2p_bw", MetricRule{}, 0.75, 5, v, five_hosts).verdicts.empty());
}

TEST(Assess, LatencyIsSuspectAboveAMultipleOfTheBest) {
  MetricRule lat;
  lat.higher_is_better = false;
  const auto a = assess("p2p_latency", lat, 0.75, 4, all_pairs_with(4, 10, 45, {1}), five_hosts);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, VerdictKind::node);
  EXPECT_EQ(a.verdicts[0].a, 1);
  EXPECT_DOUBLE_EQ(a.reference, 10);
}

TEST(Assess, ABaselineMakesUniformlySlowPairsSuspect) {
  MetricRule bw;
  bw.baseline = 2000;  // every pair at 1000 is below (1 - 0.2) x 2000
  const auto a = assess("p2p_bw", bw, 0.75, 4, all_pairs_with(4, 1000, 0, {}), five_hosts);
  EXPECT_EQ(a.verdicts.size(), 4u) << "every node is in all-suspect pairs";
}

TEST(Assess, ARetestThatDoesNotConfirmClearsThePair) {
  auto v = all_pairs_with(4, 1000, 22, {}, {{0, 3}});
  v.push_back({3, 0, 990});  // the re-test of 0-3 was fine: a transient
  EXPECT_TRUE(assess("p2p_bw", MetricRule{}, 0.75, 4, v, five_hosts).verdicts.empty());
}

TEST(Assess, RetestsThatAddTheBadNodesPairsDoNotHideIt) {
  // quick pattern (0-2, 1-3) where node 3 is slow, then re-tests 1-3, 1-0 and 3-2: 3 of 5 pairs are slow, so the
  // median pair is slow; the median node is not.
  const std::vector<PairValue> v{{0, 2, 900}, {1, 3, 2.4}, {1, 3, 2.4}, {1, 0, 1000}, {3, 2, 2.4}, {3, 0, 2.4}};
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, v, five_hosts);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, VerdictKind::node);
  EXPECT_EQ(a.verdicts[0].a, 3);
}

TEST(Assess, OnePairPerNodeCannotTellNodeFromLink) {
  const std::vector<PairValue> quick{{0, 2, 1000}, {1, 3, 20}};
  const auto a = assess("p2p_bw", MetricRule{}, 0.75, 4, quick, five_hosts);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, VerdictKind::pair);
  EXPECT_NE(a.verdicts[0].reason.find("--retest"), std::string::npos);
}

// Ten hosts, every pair tested once at 1000; `slow` lists pairs whose first test read 400 and whose re-test read 1000
// (the best of the two is fine, so no pair is suspect).
std::vector<PairValue> retested_once_slow(const std::set<std::pair<int, int>>& slow) {
  auto v = all_pairs_with(10, 1000, 1000, {});
  for (auto& x : v)
    if (slow.count(std::minmax(x.a, x.b))) {
      x.value = 400;
      v.push_back({x.a, x.b, 1000});
    }
  return v;
}

TEST(Assess, AHostSlowInTestsWithFourFinePeersIsANodeSlowSomeOfTheTime) {
  const MetricRule bw;
  const std::vector<std::string> ten{"h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"};
  const auto a = assess("p2p_bw", bw, 0.75, 10, retested_once_slow({{0, 1}, {0, 3}, {0, 5}, {0, 8}}), ten);
  ASSERT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(a.verdicts[0].kind, VerdictKind::node);
  EXPECT_EQ(a.verdicts[0].a, 0);
  EXPECT_NE(a.verdicts[0].reason.find("h0: slow some of the time: 4 of its 9 peers"), std::string::npos)
      << a.verdicts[0].reason;
  EXPECT_TRUE(a.suspects.empty()) << "no pair is suspect: each re-test was fine";
  // Its slow tests stay apart from the pairs' best: 4 values slow, the rest not.
  EXPECT_EQ(std::count(a.slow_test.begin(), a.slow_test.end(), true), 4);
  // Three peers are below intermittent_peers (4); the same four tests spread over four hosts name nobody.
  EXPECT_TRUE(assess("p2p_bw", bw, 0.75, 10, retested_once_slow({{0, 1}, {0, 3}, {0, 5}}), ten).verdicts.empty());
  EXPECT_TRUE(
      assess("p2p_bw", bw, 0.75, 10, retested_once_slow({{0, 1}, {2, 3}, {4, 5}, {6, 7}}), ten).verdicts.empty());
  // Peers slow with others too (h1 and h3 with three hosts each): they are not fine elsewhere, so h0 is not named.
  EXPECT_TRUE(assess("p2p_bw", bw, 0.75, 10,
                     retested_once_slow({{0, 1}, {0, 3}, {0, 5}, {0, 8}, {1, 6}, {1, 7}, {3, 6}, {3, 7}}), ten)
                  .verdicts.empty());
  // Never re-tested (all-pairs without --retest): the slow pairs are the node's, not four links.
  auto once = all_pairs_with(10, 1000, 1000, {});
  for (auto& x : once)
    if (x.a == 0 && (x.b == 2 || x.b == 4 || x.b == 6 || x.b == 9)) x.value = 400;
  const auto b = assess("p2p_bw", bw, 0.75, 10, once, ten);
  ASSERT_EQ(b.verdicts.size(), 1u) << b.verdicts[0].kind << ": " << b.verdicts[0].reason;
  EXPECT_EQ(b.verdicts[0].kind, VerdictKind::node);
  EXPECT_EQ(b.suspects.size(), 4u);
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
  const auto dir = std::filesystem::temp_directory_path() / ("fb-rules-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Which way is better is the metric's declaration: a rules file cannot say it again (or contradict it).
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nbetter = lower\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nsuspect_below = 0.5\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\nsuspect_below_fraction_of_median = half\n";
  EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error);
  // [attribution] applies the intermittent rule's settings to every metric; a peer count must be whole and >= 1.
  std::ofstream(dir / "fb_bad_rules.ini")
      << "[p2p_bw]\nsuspect_below_fraction_of_median = 0.5\n[p2p_latency]\nsuspect_above_multiple_of_best = 3\n"
         "[attribution]\nintermittent_fraction = 0.3\n"
         "intermittent_peers = 6\nnoise_gap = 2\nnoise_chance = 0.01\n";
  const auto intermittent = Rules::load((dir / "fb_bad_rules.ini").string());
  EXPECT_DOUBLE_EQ(intermittent.rule("p2p_latency").intermittent_fraction, 0.3);
  EXPECT_EQ(intermittent.rule("p2p_bw").intermittent_peers, 6);
  EXPECT_DOUBLE_EQ(intermittent.noise_gap, 2);
  EXPECT_DOUBLE_EQ(intermittent.noise_chance, 0.01);
  for (const char* bad :
       {"intermittent_peers = 2.5", "intermittent_peers = 0", "intermittent_peers = 1e10", "intermittent_peers = inf",
        "intermittent_fraction = 1.5", "noise_gap = 0.5", "noise_gap = wide", "noise_chance = 0", "noise_chance = 2"}) {
    std::ofstream(dir / "fb_bad_rules.ini") << "[p2p_bw]\n[attribution]\n" << bad << "\n";
    EXPECT_THROW(Rules::load((dir / "fb_bad_rules.ini").string()), fabricbench::Error) << bad;
  }
  std::ofstream(dir / "fb_base.ini")
      << "[baseline]\ntolerance = 25%\n[sweep/pairs bw]\nmetric = p2p_bw\nvalue = 12000\n";
  const fabricbench::results::TableSpec pairs{
      "sweep",
      "pairs",
      {fabricbench::results::key_text("metric", 16),
       fabricbench::results::measured("value", fabricbench::results::Unit::none, fabricbench::results::Better::none)}};
  const auto with_base = Rules::load(fabricbench::app::shipped_config("sweep.ini"),
                                     fabricbench::results::Baseline::load((dir / "fb_base.ini").string(), pairs));
  EXPECT_DOUBLE_EQ(with_base.rule("p2p_bw").baseline, 12000);
  EXPECT_DOUBLE_EQ(with_base.rule("p2p_bw").baseline_tolerance, 0.25);
  EXPECT_TRUE(std::isnan(with_base.rule("p2p_latency").baseline));
  EXPECT_THROW(Rules::load(fabricbench::app::shipped_config("missing.ini")), fabricbench::Error);
  std::filesystem::remove_all(dir);
}
