#include "fabricbench/sweep/topology.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"

using namespace fabricbench;
using namespace fabricbench::sweep;

namespace {
std::vector<std::string> topology_hosts(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("node" + std::string(i < 10 ? "00" : "0") + std::to_string(i));
  return out;
}

Topology parse(const std::string& text, int n, int rails) {
  Topology t(topology_hosts(n));
  std::istringstream in(text);
  t.parse(in, "topo.conf", -1);
  t.finish(rails);
  return t;
}

std::string refusal(const std::string& text, int n, int rails) {
  try {
    parse(text, n, rails);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST(HostList, ExpandsRangesListsAndProducts) {
  EXPECT_EQ(expand_host_list("node[001-003]", "x"), (std::vector<std::string>{"node001", "node002", "node003"}));
  EXPECT_EQ(expand_host_list("h1,h[3,5-6]", "x"), (std::vector<std::string>{"h1", "h3", "h5", "h6"}));
  EXPECT_EQ(expand_host_list("r[1-2]n[8-9]", "x"), (std::vector<std::string>{"r1n8", "r1n9", "r2n8", "r2n9"}));
  for (const char* bad : {"node[3-1]", "node[1-", "node]1", "a,,b", "node[x]", "no de"})
    EXPECT_THROW(expand_host_list(bad, "x"), Error) << bad;
}

TEST(Topology, LeavesPerRailAndParents) {
  const auto t = parse(
      "# two rails, two leaves each\n"
      "SwitchName=r0l1 Nodes=node[001-002] Rail=0\nSwitchName=r0l2 Nodes=node[003-004] Rail=0\n"
      "SwitchName=r1l1 Nodes=node[001-002] Rail=1 LinkSpeed=400\nSwitchName=r1l2 Nodes=node[003-004,099] Rail=1\n"
      "SwitchName=s0 Switches=r0l[1-2] Rail=0\nswitchname=s1 switches=r1l[1-2] rail=1\n",
      4, 2);
  EXPECT_EQ(t.switches()[static_cast<std::size_t>(t.leaf_of(2, 1))].name, "r1l2");
  EXPECT_EQ(t.switches()[static_cast<std::size_t>(t.leaf_of(0, 0))].name, "r0l1");
  EXPECT_EQ(t.leaves(1).size(), 2u);
  EXPECT_EQ(t.parent_name(t.leaf_of(3, 1)), "s1");
  EXPECT_EQ(t.switches()[static_cast<std::size_t>(t.leaf_of(3, 1))].hosts, (std::vector<int>{2, 3}))
      << "node099 is not in the job";
}

TEST(Topology, RefusesWithFileAndLine) {
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-002]\nSwitchName=b Nodes=node[003-004] Color=red\n", 4, 1)
                .find("topo.conf:2: unknown key 'Color'"),
            std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-004]\nSwitchName=s Switches=a,zz\n", 4, 1).find("topo.conf:2"),
            std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-004]\nSwitchName=s Switches=t\nSwitchName=t Switches=s\n", 4, 1)
                .find("cycle"),
            std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-003]\nSwitchName=b Nodes=node[003-004]\n", 4, 1)
                .find("node003 is under leaf"),
            std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-003]\n", 4, 1).find("node004 of the job is under no leaf"),
            std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-004] Rail=0\n", 4, 2).find("on rail 1"), std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-004]\nSwitchName=a Nodes=node[001-004]\n", 4, 1)
                .find("declared at topo.conf:1"),
            std::string::npos);
  EXPECT_NE(refusal("Nodes=node[001-004]\n", 4, 1).find("without SwitchName"), std::string::npos);
  EXPECT_NE(refusal("SwitchName=a Nodes=node[001-004] Rail=x\n", 4, 1).find("Rail=x"), std::string::npos);
  EXPECT_NE(refusal("SwitchName=a\n", 4, 1).find("either Nodes="), std::string::npos);
}

TEST(Topology, OneFilePerRailChecksItsRail) {
  Topology t(topology_hosts(2));
  std::istringstream rail0("SwitchName=l0 Nodes=node[001-002]\n"), rail1("SwitchName=l1 Nodes=node[001-002] Rail=0\n");
  t.parse(rail0, "rail0.conf", 0);
  EXPECT_THROW(t.parse(rail1, "rail1.conf", 1), Error);
}

TEST(PairScheduleCover, AddsLeafPairsAndInsidePairsAQuickScheduleLacks) {
  // quick on 8 hosts pairs i with i+4: every pair crosses leaf1 (1-4) and leaf2 (5-8), none is inside a leaf.
  const auto t = parse(
      "SwitchName=l1 Nodes=node[001-004]\nSwitchName=l2 Nodes=node[005-008]\nSwitchName=s Switches=l[1-2]\n", 8, 1);
  auto s = PairSchedule::quick(8);
  const auto added = s.cover(t, 1);
  EXPECT_EQ(added, 2u) << "one pair inside each leaf";
  bool inside1 = false, inside2 = false;
  for (const auto& round : s.rounds())
    for (const auto& p : round.pairs) {
      inside1 = inside1 || (p.a < 4 && p.b < 4);
      inside2 = inside2 || (p.a >= 4 && p.b >= 4);
    }
  EXPECT_TRUE(inside1 && inside2);
  auto all = PairSchedule::all_pairs(8);
  EXPECT_EQ(all.cover(t, 1), 0u) << "all pairs cross everything already";
}
