// The adaptive plan's own types, shared by its two rooms: adaptive_plan.cpp reads the evidence (records, hangs, the
// judge's view, which host-rails are decided) and adaptive_round.cpp composes the round from it. Not a public header.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabricbench/sweep/adaptive_plan.hpp"

namespace fabricbench::sweep::adaptive {

inline std::uint64_t pair_key(int a, int b) {
  const auto [lo, hi] = std::minmax(a, b);
  return (static_cast<std::uint64_t>(lo) << 32) | static_cast<std::uint32_t>(hi);
}

inline std::pair<int, int> hosts_of(std::uint64_t key) {
  return {static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffffu)};
}

// What the records say of one pair on one rail, over every metric.
struct PairEvidence {
  int tests = 0;         // tests of it (re-tests apart), the most of any metric
  bool suspect = false;  // suspect in any metric, best of its tests
};

// One host-rail's test: its partner, and whether the pair was slow for a reason nobody else explains.
struct Test {
  int partner;
  bool slow;
};

// The leaves a switch or uplink verdict names ("r0l1,r0l2").
inline std::set<std::string> leaf_names(const std::string& names) {
  std::set<std::string> leaves;
  for (std::size_t start = 0; start <= names.size();) {
    const auto comma = std::min(names.find(',', start), names.size());
    leaves.insert(names.substr(start, comma - start));
    start = comma + 1;
  }
  return leaves;
}

}  // namespace fabricbench::sweep::adaptive

namespace fabricbench::sweep {

using adaptive::pair_key;
using adaptive::PairEvidence;
using adaptive::Test;

struct AdaptivePlan::Evidence {
  std::unordered_map<std::uint64_t, std::vector<PairEvidence>> pairs;  // pair_key -> per rail
  std::vector<char> named, explained;  // per host-rail: named by a node or NIC verdict; under a leaf a verdict names
  std::vector<std::pair<std::uint64_t, int>> slow_tests;  // pair, rail of every test beyond the line
  // Whether a verdict already explains a slow pair between these host-rails.
  bool cause_known(std::size_t hx, std::size_t hy) const {
    return named[hx] || named[hy] || explained[hx] || explained[hy];
  }
};

struct AdaptivePlan::HostView {
  std::vector<std::vector<Test>> tests;                        // per host-rail
  std::vector<std::pair<std::uint64_t, int>> to_confirm;       // slow pairs (pair, rail) tested too few times, sorted
  std::map<std::pair<int, int>, int> inside;                   // (leaf, rail) -> pairs inside it
  std::vector<char> clean, needs_tests, needs_clean, watched;  // per host
  std::vector<char> suspect_rail, undecided;                   // per host-rail
};

// A round being filled: hosts disjoint; partners from a random order of the hosts.
class AdaptivePlan::RoundBuilder {
 public:
  RoundBuilder(const AdaptivePlan& plan, const std::vector<Hung>& hung, std::mt19937_64& rng)
      : plan_(plan), hung_(hung), busy(static_cast<std::size_t>(plan.hosts_), 0), order(busy.size()) {
    for (int h = 0; h < plan.hosts_; ++h) order[h] = h;
    std::shuffle(order.begin(), order.end(), rng);
  }
  void add(int a, int b) {
    busy[a] = busy[b] = 1;
    pairs.push_back({std::min(a, b), std::max(a, b)});
  }
  bool free(int h) const { return !busy[h] && plan_.usable(hung_, h); }
  // A partner for `h` from `order`: free, `wanted`, preferably never tested with h and under another leaf.
  // `fresh_only`: never tested with h (else one tested before may do: a re-test is a test too).
  template <typename Wanted>
  int partner(int h, Wanted&& wanted, bool fresh_only = false) const {
    int fallback = -1, again = -1;  // untested under the same leaf; tested before
    for (int p : order) {
      if (p == h || !free(p) || !wanted(p)) continue;
      const bool fresh = !plan_.tested_.count(pair_key(h, p));
      if (fresh && (plan_.leaf(h, 0) < 0 || plan_.leaf(h, 0) != plan_.leaf(p, 0))) return p;
      if (fallback < 0 && fresh) fallback = p;
      if (again < 0) again = p;
    }
    return fallback >= 0 || fresh_only ? fallback : again;
  }

 private:
  const AdaptivePlan& plan_;
  const std::vector<Hung>& hung_;

 public:
  std::vector<char> busy;
  std::vector<int> order;
  std::vector<HostPair> pairs;
};

}  // namespace fabricbench::sweep
