// The simulator's synthetic fabric: N hosts x R rails in leaves of L hosts (one leaf switch per rail and group, one
// spine per rail above them), pair values with lognormal noise, faults injected on disjoint hosts, and the score of a
// judgement against them. Deterministic per seed (std::mt19937_64). Not installed: a benchmark of the sweep's
// planner and judge (docs/fabric-sweep.md, "The simulator").
#pragma once
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/topology.hpp"

namespace fabricbench::sim {

// One scenario's faults (-1: none of that kind). Scenario "faults": node, nic, uplink and link on disjoint hosts,
// none of them under the slow uplink's leaf. Scenario "hung": a hung host and a host slow 30% of the time. Scenario
// "clean": none.
struct Faults {
  int node = -1;                        // every rail at `factor` of nominal
  int nic = -1, nic_rail = 0;           // one host-rail
  int uplink_leaf = -1, uplink_rail = 0;  // pairs crossing the leaf (index of the host group) on that rail
  int link_a = -1, link_b = -1, link_rail = 0;
  int hung = -1;                        // its pairs hang: records with hung = 1, value NaN
  int flaky = -1;                       // each test of its pairs (all rails) at `factor` with probability `flaky_p`
};

struct FabricModel {
  int hosts, rails, leaf;  // leaf: hosts per leaf switch
  double nominal = 100.0, sigma = 0.03, factor = 0.4, flaky_p = 0.3;
  int leaves() const { return (hosts + leaf - 1) / leaf; }
  int leaf_of(int h) const { return h / leaf; }
  std::vector<std::string> names() const;
  // topology.conf text: per rail r, SwitchName=r<r>l<j> Nodes=... Rail=r and a spine r<r>s above them.
  std::string topology_conf() const;
  sweep::Topology topology() const;
  std::string leaf_name(int group, int rail) const;
  Faults place(const std::string& scenario, std::uint64_t seed) const;
  // The records of one pair test on every rail (both directions; a hung pair: one record per rail, hung = 1).
  void measure(int round, sweep::HostPair pair, const Faults& f, std::mt19937_64& rng, std::vector<sweep::PairRecord>& out) const;
};

// Per verdict kind: how many verdicts, how many matched an injected fault; per fault kind: injected and found.
struct KindScore {
  long long verdicts = 0, true_positives = 0, injected = 0, found = 0;
};
struct Score {
  std::map<std::string, KindScore> kinds;  // node, nic, uplink, link, hung, and any other verdict kind seen
  long long flaky_injected = 0, flaky_named_node = 0;
  std::map<std::string, long long> flaky_verdicts;  // verdicts naming the flaky host, by kind (not in `kinds`)
  void add(const Score& other);
};

// A verdict is a true positive when its kind and subject (host; host + rail; leaf + rail; pair + rail; for hung, a
// pair with the hung host) match an injected fault. Verdicts naming the flaky host are counted apart.
Score score(const sweep::Judgement& judgement, const Faults& faults, const FabricModel& model);

}  // namespace fabricbench::sim
