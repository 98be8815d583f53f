// The judge with rails and a topology, on made-up pair values: each cause named from exactly its pattern.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "fabricbench/sweep/data_path.hpp"
#include "fabricbench/sweep/judge.hpp"

using namespace fabricbench::sweep;

namespace {

std::vector<std::string> host_names(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("h" + std::to_string(i));
  return out;
}

// Every pair of `n` hosts on each of `rails` rails; `slow(a, b, rail)` says which are slow.
template <typename Slow>
std::vector<PairValue> values(int n, int rails, Slow slow) {
  std::vector<PairValue> v;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      for (int r = 0; r < rails; ++r) v.push_back({a, b, slow(a, b, r) ? 2.5 : 1000.0 + 37.0 * ((a + b + r) % 5), r});
  return v;
}

Topology leaves(const std::string& sizes_text, int n, int rails) {
  std::ostringstream text;
  for (int r = 0; r < rails; ++r) {
    int first = 1, j = 1;
    std::istringstream sizes(sizes_text);
    for (int size; sizes >> size; ++j, first += size)
      text << "SwitchName=r" << r << "l" << j << " Nodes=h[" << first << "-" << first + size - 1 << "] Rail=" << r
           << "\n";
    text << "SwitchName=r" << r << "s Switches=r" << r << "l[1-" << j - 1 << "] Rail=" << r << "\n";
  }
  Topology t(host_names(n));
  std::istringstream in(text.str());
  t.parse(in, "t.conf", -1);
  t.finish(rails);
  return t;
}

std::vector<std::tuple<std::string, int, int, int, std::string>> kinds(const Assessment& a) {
  std::vector<std::tuple<std::string, int, int, int, std::string>> out;
  for (const auto& v : a.verdicts) out.emplace_back(std::string(kind_name(v.kind)), v.a, v.b, v.rail, v.switch_name);
  return out;
}

const MetricRule bw_rule;  // higher is better, suspect below half the median

}  // namespace

TEST(RailsJudge, OneRailOfOneHostIsItsNic) {
  Fabric f{host_names(8), 2, nullptr};
  const std::vector<std::string> nics{"m0", "m1", "m0", "m1", "m0", "m1", "m0", "m1",
                                      "m0", "m1", "m0", "m1", "m0", "m1", "m0", "m1"};
  const auto a = assess("p2p_bw", bw_rule, 0.75, f,
                        values(8, 2, [](int x, int y, int r) { return r == 1 && (x == 2 || y == 2); }), nics);
  ASSERT_EQ(kinds(a), (decltype(kinds(a)){{"nic", 2, -1, 1, ""}}));
  EXPECT_EQ(a.verdicts[0].nic, "m1");
}

TEST(RailsJudge, EveryRailOfOneHostIsTheNode) {
  Fabric f{host_names(8), 2, nullptr};
  const auto a = assess("p2p_bw", bw_rule, 0.75, f, values(8, 2, [](int x, int y, int) { return x == 5 || y == 5; }));
  EXPECT_EQ(kinds(a), (decltype(kinds(a)){{"node", 5, -1, -1, ""}}));
}

TEST(RailsJudge, OnePairOnOneRailIsALink) {
  Fabric f{host_names(8), 2, nullptr};
  const auto a =
      assess("p2p_bw", bw_rule, 0.75, f, values(8, 2, [](int x, int y, int r) { return r == 1 && x == 0 && y == 6; }));
  EXPECT_EQ(kinds(a), (decltype(kinds(a)){{"link", 0, 6, 1, ""}}));
}

TEST(RailsJudge, AnUplinkOfOneOfThreeLeavesIsNamed) {
  for (const char* sizes : {"3 3 2", "2 3 3"}) {
    const auto t = leaves(sizes, 8, 2);
    Fabric f{host_names(8), 2, &t};
    const auto leaf2 = [&](int h) { return t.leaf_of(h, 1) == t.leaves(1)[1]; };
    const auto a = assess("p2p_bw", bw_rule, 0.75, f,
                          values(8, 2, [&](int x, int y, int r) { return r == 1 && leaf2(x) != leaf2(y); }));
    EXPECT_EQ(kinds(a), (decltype(kinds(a)){{"uplink", -1, -1, 1, "r1l2"}})) << sizes;
  }
}

TEST(RailsJudge, WithTwoLeavesBothUplinksAreNamedAndWithoutTopologyOnlyLinks) {
  const auto t = leaves("4 4", 8, 2);
  const auto slow = [](int x, int y, int r) { return r == 1 && (x < 4) != (y < 4); };
  Fabric f{host_names(8), 2, &t};
  const auto a = assess("p2p_bw", bw_rule, 0.75, f, values(8, 2, slow));
  EXPECT_EQ(kinds(a), (decltype(kinds(a)){{"uplink", -1, -1, 1, "r1l1,r1l2"}}));
  EXPECT_NE(a.verdicts[0].reason.find("cannot tell which uplink"), std::string::npos) << a.verdicts[0].reason;
  Fabric plain{host_names(8), 2, nullptr};
  const auto b = assess("p2p_bw", bw_rule, 0.75, plain, values(8, 2, slow));
  std::set<std::string> k;
  for (const auto& v : b.verdicts) k.insert(std::string(kind_name(v.kind)));
  EXPECT_EQ(k, std::set<std::string>{"link"});
  EXPECT_EQ(b.verdicts.size(), 16u);
}

TEST(RailsJudge, AWholeLeafOnOneRailIsTheSwitch) {
  const auto t = leaves("3 3 2", 8, 2);
  Fabric f{host_names(8), 2, &t};
  const auto a =
      assess("p2p_bw", bw_rule, 0.75, f, values(8, 2, [](int x, int y, int r) { return r == 0 && (x < 3 || y < 3); }));
  EXPECT_EQ(kinds(a), (decltype(kinds(a)){{"switch", -1, -1, 0, "r0l1"}}));
}

TEST(RailsJudge, NoFaultNoVerdictAndFullCoverage) {
  const auto t = leaves("4 4", 8, 2);
  Fabric f{host_names(8), 2, &t};
  EXPECT_TRUE(assess("p2p_bw", bw_rule, 0.75, f, values(8, 2, [](int, int, int) { return false; })).verdicts.empty());
  std::vector<PairRecord> records;
  for (const auto& v : values(8, 2, [](int, int, int) { return false; })) {
    auto r = PairRecord::of(0, {v.a, v.b}, 0, 2);
    r.rail = v.rail, r.value = v.value;
    records.push_back(r);
  }
  EXPECT_DOUBLE_EQ(leaf_pair_coverage(records, t, 2), 1.0);
  records.erase(std::remove_if(records.begin(), records.end(),
                               [](const PairRecord& r) { return r.rail == 1 && (r.a < 4) != (r.b < 4); }),
                records.end());
  EXPECT_DOUBLE_EQ(leaf_pair_coverage(records, t, 2), 0.5);
}

TEST(RailsJudge, CoverageCountsALeafOfEveryRailAtItsPlaceOnEachRail) {
  // Leaf s has no Rail=: it is the first leaf of rail 0 ([s, a]) and the third of rail 1 ([c, d, s]).
  Topology t(host_names(6));
  std::istringstream in(
      "SwitchName=c Nodes=h[1-2] Rail=1\nSwitchName=d Nodes=h[3-4] Rail=1\n"
      "SwitchName=s Nodes=h[5-6]\nSwitchName=a Nodes=h[1-4] Rail=0\n");
  t.parse(in, "t.conf", -1);
  t.finish(2);
  const auto record = [](int a, int b, int rail) {
    auto r = PairRecord::of(0, {a, b}, 0, 2);
    r.rail = rail, r.value = 1000;
    return r;
  };
  // Rail 0 has one leaf pair (a, s), rail 1 three: (c, d), (c, s), (d, s).
  EXPECT_DOUBLE_EQ(leaf_pair_coverage({record(0, 4, 0)}, t, 2), 0.25);
  EXPECT_DOUBLE_EQ(leaf_pair_coverage({record(0, 4, 0), record(0, 4, 1)}, t, 2), 0.5);
  EXPECT_DOUBLE_EQ(leaf_pair_coverage({record(0, 4, 0), record(0, 4, 1), record(2, 5, 1), record(1, 3, 1)}, t, 2), 1.0);
  EXPECT_DOUBLE_EQ(leaf_pair_coverage({record(0, 2, 0), record(4, 5, 1)}, t, 2), 0.0) << "inside one leaf";
}

TEST(DataPath, AHostWhoseRailStraysInMostRoundsIsNamedNotItsPeers) {
  Fabric f{host_names(4), 2, nullptr};
  const std::vector<std::string> nics{"eth0", "eth1", "eth0", "eth1", "eth0", "eth1", "eth0", "eth1"};
  std::vector<NicTraffic> traffic;
  // Host 1's rail-1 traffic goes by eth0 in each of its 3 rounds; its peer of each round strays in that round only.
  for (int round = 0; round < 3; ++round) {
    const int peer = round == 0 ? 0 : round == 1 ? 2 : 3;
    for (int h = 0; h < 4; ++h) {
      const bool astray = h == 1 || h == peer;
      traffic.push_back({round, h, 0, astray ? 2.1e6 : 1.05e6, 1e6});
      traffic.push_back({round, h, 1, astray ? 0.01e6 : 1.05e6, 1e6});
    }
  }
  const auto v = check_data_path(traffic, f, nics);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, VerdictKind::path);
  EXPECT_EQ(v[0].a, 1);
  EXPECT_EQ(v[0].rail, 1);
  EXPECT_NE(v[0].reason.find("rail 1 traffic left by eth0, not eth1"), std::string::npos) << v[0].reason;
  // Healthy: every NIC carried its own rail's bytes.
  for (auto& t : traffic) t.bytes = 1.05e6;
  EXPECT_TRUE(check_data_path(traffic, f, nics).empty());
  // Two rails given one NIC.
  const auto shared = check_data_path({}, f, {"eth0", "eth0", "eth0", "eth1", "eth0", "eth1", "eth0", "eth1"});
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_NE(shared[0].reason.find("rails 0 and 1 both use eth0"), std::string::npos);
}
