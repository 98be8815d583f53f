// The adaptive plan on small fabrics measured by hand-written rules: rounds disjoint, a slow host re-paired with clean
// ones until the judge names it, the plan done when every host is judged, the same rounds for the same seed.
#include "fabricbench/sweep/adaptive_plan.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>

using namespace fabricbench::sweep;
using fabricbench::results::Better;
using fabricbench::results::Unit;

namespace {

const std::vector<JudgedMetric> bw{{"p2p_bw", Unit::mbps, Better::higher, true}};

Rules rules() {
  Rules r;
  r.metrics["p2p_bw"] = MetricRule{};
  return r;
}

std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("host" + std::to_string(i));
  return out;
}

// A pair's value on a rail; NaN: the pair hangs.
using Fabric_ = std::function<double(int a, int b, int rail)>;

struct Run {
  std::vector<Round> rounds;
  std::vector<PairRecord> records;
};

// Asks the plan round by round, as the tool does, measuring each pair on every rail in both directions.
Run drive(AdaptivePlan& plan, int rails, const Fabric_& value, int limit = 100) {
  Run run;
  while (auto round = plan.next(run.records)) {
    const int index = static_cast<int>(run.rounds.size());
    for (const auto& p : round->pairs)
      for (int r = 0; r < rails; ++r) {
        const double v = value(p.a, p.b, r);
        for (int d = 0; d < (std::isnan(v) ? 1 : 2); ++d) {
          auto rec = PairRecord::of(index, p, 0, d);
          rec.rail = r, rec.value = v, rec.hung = std::isnan(v) ? 1 : 0;
          run.records.push_back(rec);
        }
      }
    run.rounds.push_back(*round);
    if (static_cast<int>(run.rounds.size()) >= limit) break;
  }
  return run;
}

void expect_disjoint(const std::vector<Round>& rounds) {
  for (const auto& r : rounds) {
    std::set<int> seen;
    for (const auto& p : r.pairs) {
      EXPECT_NE(p.a, p.b);
      EXPECT_TRUE(seen.insert(p.a).second) << "host " << p.a << " twice in a round";
      EXPECT_TRUE(seen.insert(p.b).second) << "host " << p.b << " twice in a round";
    }
  }
}

std::set<std::string> kinds_naming(const Judgement& j, int host) {
  std::set<std::string> out;
  for (const auto& v : j.verdicts)
    if (v.a == host || v.b == host) out.insert(std::string(kind_name(v.kind)));
  return out;
}

}  // namespace

TEST(AdaptivePlan, EightHostsOneBadHostIsNamedAfterCleanPartners) {
  AdaptivePlan plan(8, 1, nullptr, bw, rules(), 7);
  const auto run = drive(plan, 1, [](int a, int b, int) { return a == 3 || b == 3 ? 400.0 : 1000.0 + a + b; });
  expect_disjoint(run.rounds);
  ASSERT_FALSE(run.rounds.empty());
  EXPECT_LT(run.rounds.size(), 7u) << "fewer rounds than all pairs of 8 hosts";
  EXPECT_EQ(plan.state().hosts_judged, 8);
  // Host 3 met at least suspect_tests hosts that were clean when it met them: its later partners.
  std::set<int> partners;
  for (std::size_t i = 2; i < run.rounds.size(); ++i)
    for (const auto& p : run.rounds[i].pairs)
      if (p.a == 3 || p.b == 3) partners.insert(p.a == 3 ? p.b : p.a);
  EXPECT_GE(partners.size(), 2u) << "re-paired after the screening rounds";
  const auto j = judge(run.records, bw, rules(), names(8));
  EXPECT_EQ(kinds_naming(j, 3), std::set<std::string>{"node"});
  EXPECT_EQ(j.verdicts.size(), 1u) << j.verdicts.front().reason;
}

TEST(AdaptivePlan, HealthyHostsStopAfterScreening) {
  AdaptivePlan plan(8, 2, nullptr, bw, rules(), 1);
  const auto run = drive(plan, 2, [](int, int, int) { return 1000.0; });
  EXPECT_EQ(run.rounds.size(), 2u);  // two screening rounds give every host-rail two clean tests
  for (const auto& r : run.rounds) EXPECT_EQ(r.pairs.size(), 4u);
  Fabric fabric;
  fabric.hosts = names(8);
  fabric.rails = 2;
  EXPECT_TRUE(judge(run.records, bw, rules(), fabric).verdicts.empty());
}

TEST(AdaptivePlan, SameSeedSameRoundsOtherSeedOtherRounds) {
  const auto rounds_of = [](std::uint64_t seed) {
    AdaptivePlan plan(16, 2, nullptr, bw, rules(), seed);
    auto run = drive(plan, 2, [](int a, int b, int r) { return (a == 5 || b == 5) && r == 1 ? 300.0 : 1000.0; });
    std::vector<std::pair<int, int>> flat;
    for (const auto& round : run.rounds) {
      for (const auto& p : round.pairs) flat.emplace_back(p.a, p.b);
      flat.emplace_back(-1, -1);
    }
    return flat;
  };
  EXPECT_EQ(rounds_of(42), rounds_of(42));
  EXPECT_NE(rounds_of(42), rounds_of(43));
}

TEST(AdaptivePlan, BadNicIsNamedWithItsRail) {
  AdaptivePlan plan(16, 2, nullptr, bw, rules(), 3);
  const auto run = drive(plan, 2, [](int a, int b, int r) { return (a == 5 || b == 5) && r == 1 ? 300.0 : 1000.0; });
  expect_disjoint(run.rounds);
  Fabric f;
  f.hosts = names(16), f.rails = 2;
  const auto j = judge(run.records, bw, rules(), f);
  ASSERT_EQ(j.verdicts.size(), 1u);
  EXPECT_EQ(j.verdicts[0].kind, VerdictKind::nic);
  EXPECT_EQ(j.verdicts[0].a, 5);
  EXPECT_EQ(j.verdicts[0].rail, 1);
}

TEST(AdaptivePlan, HungHostIsSplitFromItsPartnerAndNeverPairedAgain) {
  AdaptivePlan plan(8, 1, nullptr, bw, rules(), 11);
  const auto run = drive(plan, 1, [](int a, int b, int) { return a == 6 || b == 6 ? NAN : 1000.0; });
  expect_disjoint(run.rounds);
  int hangs = 0, last_hang = -1;
  for (const auto& r : run.records)
    if (r.hung) ++hangs, last_hang = std::max(last_hang, r.round);
  EXPECT_LE(hangs, 2) << "a hung host meets at most one more partner (the test that splits its pair)";
  for (std::size_t i = static_cast<std::size_t>(last_hang) + 1; i < run.rounds.size(); ++i)
    for (const auto& p : run.rounds[i].pairs) EXPECT_TRUE(p.a != 6 && p.b != 6);
  EXPECT_EQ(plan.state().hosts_hung, 1);
  EXPECT_EQ(plan.state().hosts_judged, 8);
  const auto j = judge(run.records, bw, rules(), names(8));
  for (const auto& v : j.verdicts) {
    EXPECT_EQ(v.kind, VerdictKind::hung);
    EXPECT_TRUE(v.a == 6 || v.b == 6);
  }
  EXPECT_FALSE(j.verdicts.empty());
}

TEST(AdaptivePlan, BadUplinkGetsPairsInsideItsLeafAndIsNamed) {
  // 24 hosts in three leaves of 8 on each of 2 rails; leaf 2's rail-1 uplink is slow.
  std::ostringstream conf;
  for (int r = 0; r < 2; ++r) {
    for (int l = 0; l < 3; ++l)
      conf << "SwitchName=r" << r << "l" << l << " Nodes=host[" << l * 8 << "-" << l * 8 + 7 << "] Rail=" << r << "\n";
    conf << "SwitchName=r" << r << "s Switches=r" << r << "l[0-2] Rail=" << r << "\n";
  }
  Topology topo(names(24));
  std::istringstream in(conf.str());
  topo.parse(in, "t.conf", -1);
  topo.finish(2);
  const auto in_leaf2 = [](int h) { return h >= 16; };
  AdaptivePlan plan(24, 2, &topo, bw, rules(), 5);
  const auto run =
      drive(plan, 2, [&](int a, int b, int r) { return r == 1 && in_leaf2(a) != in_leaf2(b) ? 300.0 : 1000.0; });
  expect_disjoint(run.rounds);
  EXPECT_LT(run.rounds.size(), 23u);
  Fabric f;
  f.hosts = names(24), f.rails = 2, f.topology = &topo;
  const auto j = judge(run.records, bw, rules(), f);
  ASSERT_EQ(j.verdicts.size(), 1u) << j.verdicts.front().kind << ": " << j.verdicts.front().reason;
  EXPECT_EQ(j.verdicts[0].kind, VerdictKind::uplink);
  EXPECT_EQ(j.verdicts[0].switch_name, "r1l2");
}

TEST(AdaptivePlan, CoverPairsGoesOnUntilEveryPairIsTested) {
  AdaptiveOptions o;
  o.cover_pairs = true;
  AdaptivePlan plan(8, 1, nullptr, bw, rules(), 2, o);
  const auto run = drive(plan, 1, [](int, int, int) { return 1000.0; });
  expect_disjoint(run.rounds);
  std::set<std::pair<int, int>> seen;
  for (const auto& r : run.rounds)
    for (const auto& p : r.pairs) seen.insert(std::minmax(p.a, p.b));
  EXPECT_EQ(seen.size(), 28u);
}

TEST(AdaptivePlan, CoveringConfirmsASlowPairOnceAndLosesNoPair) {
  AdaptiveOptions o;
  o.cover_pairs = true;
  AdaptivePlan plan(16, 1, nullptr, bw, rules(), 5, o);
  const auto run = drive(
      plan, 1, [](int a, int b, int) { return std::min(a, b) == 2 && std::max(a, b) == 11 ? 300.0 : 1000.0; }, 200);
  expect_disjoint(run.rounds);
  std::map<std::pair<int, int>, int> tests;
  for (const auto& r : run.rounds)
    for (const auto& p : r.pairs) ++tests[{std::min(p.a, p.b), std::max(p.a, p.b)}];
  EXPECT_EQ(tests.size(), 120u) << "every pair of 16 hosts";
  EXPECT_EQ((tests[{2, 11}]), 2) << "the slow pair once more, not again";
  const auto j = judge(run.records, bw, rules(), names(16));
  ASSERT_EQ(j.verdicts.size(), 1u) << j.verdicts.front().reason;
  EXPECT_EQ(j.verdicts[0].kind, VerdictKind::link);
}

TEST(AdaptivePlan, CoveringGivesAHostSlowEveryThirdTestEnoughPeersToBeNamed) {
  AdaptiveOptions o;
  o.cover_pairs = true;
  AdaptivePlan plan(16, 1, nullptr, bw, rules(), 9, o);
  int tests_of_4 = 0;
  const auto run = drive(
      plan, 1,
      [&](int a, int b, int) {
        if (a != 4 && b != 4) return 1000.0;
        return tests_of_4++ % 3 == 0 ? 400.0 : 1000.0;
      },
      200);
  const auto j = judge(run.records, bw, rules(), names(16));
  ASSERT_EQ(j.verdicts.size(), 1u) << j.verdicts.front().kind << ": " << j.verdicts.front().reason;
  EXPECT_EQ(j.verdicts[0].kind, VerdictKind::node);
  EXPECT_EQ(j.verdicts[0].a, 4);
  EXPECT_NE(j.verdicts[0].reason.find("slow some of the time"), std::string::npos) << j.verdicts[0].reason;
}

TEST(AdaptivePlan, AHostThatHangsWhileCoveringIsSplitOffAndTheOtherPairsAreStillTested) {
  AdaptiveOptions o;
  o.cover_pairs = true;
  AdaptivePlan plan(16, 1, nullptr, bw, rules(), 13, o);
  int hangs_of_9 = 0;  // host 9 passes the judging rounds and hangs with every peer once covering began
  const auto run = drive(
      plan, 1,
      [&](int a, int b, int) -> double {
        if ((a == 9 || b == 9) && plan.state().covering) return ++hangs_of_9, std::nan("");
        return 1000.0;
      },
      200);
  expect_disjoint(run.rounds);
  ASSERT_GT(hangs_of_9, 0) << "host 9 was tested while covering";
  EXPECT_LE(hangs_of_9, 2) << "its hung pair, then the test that splits it";
  std::set<std::pair<int, int>> others;
  for (const auto& r : run.rounds)
    for (const auto& p : r.pairs)
      if (p.a != 9 && p.b != 9) others.insert({std::min(p.a, p.b), std::max(p.a, p.b)});
  EXPECT_EQ(others.size(), 105u) << "every pair of the 15 other hosts, the hung pair's partner's too";
  EXPECT_EQ(plan.state().hosts_hung, 1);
  EXPECT_LE(plan.state().hosts_judged, 16);
}

// A duplex round: each host at most once a (it sends first) and once b; a pair of hosts at most once.
void expect_duplex(const Round& r, int hosts) {
  std::vector<int> as_a(static_cast<std::size_t>(hosts)), as_b(as_a.size());
  std::set<std::pair<int, int>> pairs;
  for (const auto& p : r.pairs) {
    EXPECT_NE(p.a, p.b);
    EXPECT_LE(++as_a[static_cast<std::size_t>(p.a)], 1) << "host " << p.a << " sends first twice";
    EXPECT_LE(++as_b[static_cast<std::size_t>(p.b)], 1) << "host " << p.b << " receives first twice";
    EXPECT_TRUE(pairs.insert(std::minmax(p.a, p.b)).second) << p.a << "-" << p.b << " twice in one round";
  }
}

// Duplex covering, every pair tested: N / 2 shift steps instead of the circle method's N - 1 (even and odd N), the
// rounds before covering as before (disjoint), each covering round duplex and full where nothing was tested.
TEST(AdaptivePlan, DuplexCoverTestsEveryPairInAboutHalfTheRounds) {
  for (const int n : {8, 9, 16, 33}) {
    AdaptiveOptions simplex, duplex;
    simplex.cover_pairs = duplex.cover_pairs = duplex.duplex_cover = true;
    AdaptivePlan one_way(n, 1, nullptr, bw, rules(), 3, simplex), both_ways(n, 1, nullptr, bw, rules(), 3, duplex);
    const auto good = [](int, int, int) { return 1000.0; };
    const auto a = drive(one_way, 1, good, 400), b = drive(both_ways, 1, good, 400);
    std::set<std::pair<int, int>> seen;
    int duplex_rounds = 0, busiest = 0;
    for (const auto& r : b.rounds) {
      for (const auto& p : r.pairs) seen.insert(std::minmax(p.a, p.b));
      if (!r.duplex) {
        expect_disjoint({r});
        continue;
      }
      ++duplex_rounds;
      expect_duplex(r, n);
      busiest = std::max(busiest, static_cast<int>(r.pairs.size()));
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(n * (n - 1) / 2)) << n << " hosts";
    EXPECT_GT(duplex_rounds, 0) << n << " hosts";
    EXPECT_GT(busiest, n / 2) << n << " hosts: a duplex round holds more pairs than a disjoint one can";
    EXPECT_LE(duplex_rounds, n / 2) << n << " hosts: the shift steps";
    EXPECT_LT(b.rounds.size(), a.rounds.size()) << n << " hosts";
    for (const auto& r : a.rounds) EXPECT_FALSE(r.duplex);
  }
}

// Duplex covering keeps what covering did: a slow pair found in a duplex round is confirmed once (in a round of its
// own ends) and named the link, nothing else; a host that hangs while covering is split off, every other pair tested.
TEST(AdaptivePlan, DuplexCoverConfirmsASlowPairAndSplitsAHungHost) {
  AdaptiveOptions o;
  o.cover_pairs = o.duplex_cover = true;
  AdaptivePlan plan(16, 1, nullptr, bw, rules(), 5, o);
  int hangs_of_9 = 0;
  const auto run = drive(
      plan, 1,
      [&](int a, int b, int) -> double {
        if ((a == 9 || b == 9) && plan.state().covering) return ++hangs_of_9, std::nan("");
        return std::min(a, b) == 2 && std::max(a, b) == 11 ? 300.0 : 1000.0;
      },
      200);
  std::map<std::pair<int, int>, int> tests;
  int duplex_rounds = 0;
  for (const auto& r : run.rounds) {
    if (r.duplex) ++duplex_rounds, expect_duplex(r, 16);
    for (const auto& p : r.pairs) ++tests[std::minmax(p.a, p.b)];
  }
  EXPECT_GT(duplex_rounds, 0);
  ASSERT_GT(hangs_of_9, 0) << "host 9 was tested while covering";
  EXPECT_LE(hangs_of_9, 2) << "its hung pair, then the test that splits it";
  int others = 0;
  for (const auto& [pair, count] : tests) others += pair.first != 9 && pair.second != 9;
  EXPECT_EQ(others, 105) << "every pair of the 15 other hosts";
  EXPECT_EQ((tests[{2, 11}]), 2) << "the slow pair once more, not again";
  EXPECT_EQ(plan.state().hosts_hung, 1);
  const auto j = judge(run.records, bw, rules(), names(16));
  std::set<std::string> links;
  for (const auto& v : j.verdicts)
    if (v.kind == VerdictKind::link) links.insert(std::to_string(v.a) + "-" + std::to_string(v.b));
  EXPECT_EQ(links, std::set<std::string>{"2-11"});
}
