// The mesh's change verdicts: what appeared and what went, pass after pass, with the figures before and after.
#include "fabricbench/sweep/mesh_history.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace fabricbench::sweep;
using fabricbench::results::Better;
using fabricbench::results::Unit;

namespace {

const std::vector<std::string> mesh_hosts{"h0", "h1", "h2", "h3", "h4", "h5"};
const std::vector<JudgedMetric> latency{{"p2p_latency", Unit::us, Better::lower, false}};

// One all-pairs pass of p2p_latency: 20 us, and `slow_us` for every pair of host `slow` (-1: none).
Judgement pass_of(int slow, double slow_us = 2000) {
  Rules rules;
  rules.metrics["p2p_latency"] = MetricRule{};
  std::vector<PairRecord> records;
  int round = 0;
  const auto schedule = PairSchedule::all_pairs(static_cast<int>(mesh_hosts.size()));
  for (const auto& r : schedule.rounds()) {
    for (const auto& p : r.pairs) {
      auto rec = PairRecord::of(round, p, 0, 2);
      rec.value = (p.a == slow || p.b == slow) ? slow_us : 20.0 + 0.1 * (p.a + p.b);
      records.push_back(rec);
    }
    ++round;
  }
  Fabric fabric;
  fabric.hosts = mesh_hosts;
  return judge(records, latency, rules, fabric);
}

}  // namespace

TEST(MeshHistory, NamesTheHostInThePassWhereItChangedAndNotBeforeOrAgain) {
  Fabric fabric;
  fabric.hosts = mesh_hosts;
  MeshHistory mesh(latency, fabric);
  EXPECT_TRUE(mesh.add(1, "2026-11-24T14:00:00Z", pass_of(-1)).empty());
  EXPECT_TRUE(mesh.add(2, "2026-11-24T14:00:30Z", pass_of(-1)).empty());
  const auto changed = mesh.add(3, "2026-11-24T14:01:00Z", pass_of(2));
  ASSERT_EQ(changed.size(), 1u);
  const auto& c = changed[0];
  EXPECT_EQ(c.verdict.kind, VerdictKind::node);
  EXPECT_EQ(c.verdict.a, 2);
  EXPECT_FALSE(c.recovered);
  EXPECT_EQ(c.pass, 3);
  // Before: h2's median pair in pass 2 (its pairs with h0, h1, h3, h4, h5: 20.2, 20.3, 20.5, 20.6, 20.7); after: 2000.
  EXPECT_NEAR(c.before, 20.5, 1e-9);
  EXPECT_DOUBLE_EQ(c.after, 2000);
  EXPECT_EQ(c.text.rfind("node h2: p2p_latency to every peer 20.5 -> 2000 us from pass 3, 14:01:00Z", 0), 0u) << c.text;
  EXPECT_TRUE(mesh.add(4, "2026-11-24T14:01:30Z", pass_of(2, 2500)).empty()) << "still bad: no change";
  const auto back = mesh.add(5, "2026-11-24T14:02:00Z", pass_of(-1));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].recovered);
  EXPECT_DOUBLE_EQ(back[0].before, 2500);
  EXPECT_NEAR(back[0].after, 20.5, 1e-9);
  EXPECT_EQ(back[0].text, "node h2: p2p_latency back to 20.5 us from pass 5, 14:02:00Z (was 2500)");
}

TEST(MeshHistory, AFaultPresentFromTheStartIsNamedInTheFirstPassWithoutABeforeFigure) {
  Fabric fabric;
  fabric.hosts = mesh_hosts;
  MeshHistory mesh(latency, fabric);
  const auto first = mesh.add(1, "2026-11-24T14:00:00Z", pass_of(4));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].verdict.a, 4);
  EXPECT_TRUE(std::isnan(first[0].before));
  EXPECT_EQ(first[0].text.rfind("node h4: p2p_latency to every peer 2000 us from pass 1", 0), 0u) << first[0].text;
}
