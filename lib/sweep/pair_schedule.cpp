#include "fabricbench/sweep/pair_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/sweep/plan_size.hpp"
#include "fabricbench/sweep/topology.hpp"

namespace fabricbench::sweep {

std::string_view kind_name(RoundKind kind) { return kind == RoundKind::sweep ? "sweep" : "retest"; }

void PairSchedule::add_round(std::vector<HostPair> pairs) {
  Round r;
  std::vector<bool> busy(static_cast<std::size_t>(hosts_), false);
  int resting = hosts_;
  for (auto& p : pairs) {
    if (!directed() && p.a > p.b) std::swap(p.a, p.b);
    resting -= !busy[p.a] + !busy[p.b];
    busy[p.a] = busy[p.b] = true;
  }
  pairs.shrink_to_fit();  // what PlanSize::bytes counts: no spare capacity
  r.pairs = std::move(pairs);
  r.resting.reserve(static_cast<std::size_t>(resting));
  for (int h = 0; h < hosts_; ++h)
    if (!busy[h]) r.resting.push_back(h);
  rounds_.push_back(std::move(r));
}

std::string_view to_string(Plan plan) {
  switch (plan) {
    case Plan::all_pairs:
      return "all-pairs";
    case Plan::quick:
      return "quick";
    case Plan::shift:
      return "shift";
    case Plan::adaptive:
      return "adaptive";
    case Plan::pairs_file:
      return "pairs-file";
  }
  return "";
}

const std::vector<Plan>& chosen_plans() {
  static const std::vector<Plan> plans{Plan::all_pairs, Plan::quick, Plan::shift, Plan::adaptive};
  return plans;
}

PairSchedule PairSchedule::of(Plan plan, int hosts) {
  switch (plan) {
    case Plan::all_pairs:
      return all_pairs(hosts);
    case Plan::quick:
      return quick(hosts);
    case Plan::shift:
      return shift(hosts);
    case Plan::adaptive:
      return adaptive(hosts);
    case Plan::pairs_file:
      break;
  }
  throw Error::internal("a pairs-file plan is read from its file (from_pairs_file)");
}

void PairSchedule::check_size(Plan plan, int hosts) {
  const auto size = PlanSize::of(plan, hosts);
  if (size.pairs() <= max_pairs) return;
  // The memory in GiB with two decimals: whole GiB shifted down said "about 0 GiB" for the 1.00 GiB of 16,384 hosts.
  throw Error::usage(
      fmt::format("--plan {} of {} hosts: {} pair tests in {} rounds (about {} of plan on every rank), more than a "
                  "plan holds ({} pair tests); use --plan adaptive (it judges every host in a few rounds) or quick, or "
                  "sweep fewer hosts at once",
                  to_string(plan), hosts, size.pairs(), size.rounds(), binary_bytes(size.bytes()), max_pairs));
}

PairSchedule PairSchedule::counted(Plan plan, int hosts) {
  PlanSize::of(plan, hosts);  // refuses a plan it cannot count
  PairSchedule s(plan, hosts);
  s.built_ = false;
  return s;
}

PairSchedule PairSchedule::all_pairs(int hosts) {
  PairSchedule s(Plan::all_pairs, hosts);
  if (hosts < 2) return s;
  check_size(s.plan_, hosts);
  // Circle method on an even number of slots; with odd N the extra slot is a "bye" and its partner rests.
  const int slots = hosts % 2 == 0 ? hosts : hosts + 1;
  const int fixed = slots - 1;
  for (int round = 0; round < slots - 1; ++round) {
    std::vector<HostPair> pairs;
    pairs.reserve(static_cast<std::size_t>(hosts / 2));
    auto add = [&](int x, int y) {
      if (x < hosts && y < hosts) pairs.push_back({x, y});
    };
    add(fixed, round);
    for (int k = 1; k < slots / 2; ++k) add((round + k) % fixed, (round - k + fixed) % fixed);
    s.add_round(std::move(pairs));
  }
  return s;
}

PairSchedule PairSchedule::quick(int hosts) {
  PairSchedule s(Plan::quick, hosts);
  std::vector<HostPair> pairs;
  for (int i = 0; i < hosts / 2; ++i) pairs.push_back({i, i + hosts / 2});
  if (!pairs.empty()) s.add_round(std::move(pairs));
  // Odd N: the host the round left out is tested too, in a round of its own with host 0 (a preflight must see
  // every node).
  if (hosts % 2 == 1 && hosts > 1) s.add_round({{0, hosts - 1}});
  return s;
}

PairSchedule PairSchedule::shift(int hosts) {
  PairSchedule s(Plan::shift, hosts);
  check_size(s.plan_, hosts);
  for (int d = 1; d < hosts; ++d) {
    std::vector<HostPair> pairs;
    pairs.reserve(static_cast<std::size_t>(hosts));
    for (int i = 0; i < hosts; ++i) pairs.push_back({i, (i + d) % hosts});
    s.add_round(std::move(pairs));
  }
  return s;
}

PairSchedule PairSchedule::from_pairs_file(std::istream& in, const std::vector<std::string>& hosts,
                                           std::string_view source) {
  PairSchedule s(Plan::pairs_file, static_cast<int>(hosts.size()));
  std::map<long, std::vector<HostPair>> rounds;
  std::map<long, std::vector<bool>> used;
  auto index_of = [&](const std::string& name, int line) {
    auto it = std::find(hosts.begin(), hosts.end(), name);
    if (it == hosts.end())
      throw Error::usage(fmt::format("{}:{}: unknown host '{}' (not in this job's allocation)", source, line, name));
    return static_cast<int>(it - hosts.begin());
  };
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream fields(text);
    std::string round_text, a, b, extra;
    if (!(fields >> round_text)) continue;  // blank or comment
    char* end = nullptr;
    errno = 0;
    const long round = std::strtol(round_text.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || round < 0 || round > 1000000 || !(fields >> a >> b) || (fields >> extra))
      throw Error::usage(
          fmt::format("{}:{}: expected 'ROUND HOST_A HOST_B' with ROUND a whole number 0 to 1000000", source, line));
    const int ia = index_of(a, line), ib = index_of(b, line);
    if (ia == ib) throw Error::usage(fmt::format("{}:{}: host '{}' paired with itself", source, line, a));
    auto& busy = used[round];
    busy.resize(hosts.size(), false);
    for (int h : {ia, ib})
      if (busy[h])
        throw Error::usage(fmt::format("{}:{}: host '{}' appears twice in round {}", source, line, hosts[h], round));
    busy[ia] = busy[ib] = true;
    rounds[round].push_back({ia, ib});
  }
  if (rounds.empty()) throw Error::usage(fmt::format("{}: no pairs in the file", source));
  for (auto& [round, pairs] : rounds) s.add_round(std::move(pairs));
  return s;
}

std::size_t PairSchedule::cover(const Topology& topology, int rails) {
  std::set<std::pair<int, int>> have;
  for (const auto& round : rounds_)
    for (const auto& p : round.pairs) have.insert(std::minmax(p.a, p.b));
  std::vector<HostPair> wanted;
  std::vector<int> load(static_cast<std::size_t>(hosts_), 0);  // pairs added per host: spread them
  // The leaf pairs the pairs so far cross on the rail being covered, found in one pass over the pairs (not one pass
  // per leaf pair: all pairs of 4096 hosts in 128 leaves made that hours).
  std::set<std::pair<int, int>> leaf_pairs;
  int rail_now = 0;
  const auto add = [&](const std::vector<int>& from, const std::vector<int>& to) {
    int x = -1, y = -1;
    for (int a : from)
      for (int b : to)
        if (a != b && !have.count(std::minmax(a, b)) && (x < 0 || load[a] + load[b] < load[x] + load[y])) x = a, y = b;
    if (x < 0) return;
    have.insert(std::minmax(x, y));
    leaf_pairs.insert(std::minmax(topology.leaf_of(x, rail_now), topology.leaf_of(y, rail_now)));
    wanted.push_back({x, y});
    ++load[x], ++load[y];
  };
  for (int r = 0; r < rails; ++r) {
    const auto leaves = topology.leaves(r);
    const auto leaf = [&](int h) { return topology.leaf_of(h, r); };
    rail_now = r;
    leaf_pairs.clear();
    for (const auto& p : have) leaf_pairs.insert(std::minmax(leaf(p.first), leaf(p.second)));
    const auto crossed = [&](int l, int m) { return leaf_pairs.count(std::minmax(l, m)) > 0; };
    for (std::size_t i = 0; i < leaves.size(); ++i) {
      const auto& hosts_i = topology.switches()[static_cast<std::size_t>(leaves[i])].hosts;
      if (hosts_i.size() >= 2 && !crossed(leaves[i], leaves[i])) add(hosts_i, hosts_i);
      for (std::size_t j = i + 1; j < leaves.size(); ++j)
        if (!crossed(leaves[i], leaves[j]))
          add(hosts_i, topology.switches()[static_cast<std::size_t>(leaves[j])].hosts);
    }
  }
  // Greedy packing: each pair into the first new round where neither host is busy.
  std::vector<std::vector<HostPair>> packed;
  std::vector<std::set<int>> busy;
  for (const auto& p : wanted) {
    std::size_t r = 0;
    while (r < packed.size() && (busy[r].count(p.a) || busy[r].count(p.b))) ++r;
    if (r == packed.size()) packed.emplace_back(), busy.emplace_back();
    packed[r].push_back(p);
    busy[r].insert({p.a, p.b});
  }
  for (auto& pairs : packed) add_round(std::move(pairs));
  return wanted.size();
}

std::vector<int> Round::lanes() const {
  std::map<int, std::size_t> sends, receives;  // host -> the pair it sends in (as a), receives in (as b)
  for (std::size_t i = 0; i < pairs.size(); ++i) sends[pairs[i].a] = i, receives[pairs[i].b] = i;
  std::vector<int> lane(pairs.size(), -1);
  // Along the sends from pair `first` (each host sends in one pair and receives in one at most: the pairs make chains
  // and cycles) until the chain ends or closes.
  const auto walk = [&](std::size_t first) {
    std::size_t at = first, last = first;
    int k = 0;
    for (; lane[at] < 0; ++k) {
      lane[at] = k % 2, last = at;
      const auto next = sends.find(pairs[at].b);
      if (next == sends.end()) return;
      at = next->second;
    }
    if (at == first && k % 2 == 1 && k > 1) lane[last] = 2;  // an odd cycle: its last pair would meet its first's lane
  };
  for (std::size_t i = 0; i < pairs.size(); ++i)
    if (!receives.count(pairs[i].a)) walk(i);  // chains first, from the pair whose sender receives nothing
  for (std::size_t i = 0; i < pairs.size(); ++i)
    if (lane[i] < 0) walk(i);  // the rest are cycles
  return lane;
}

Round Round::of(int hosts, std::vector<HostPair> pairs) {
  Round r{std::move(pairs), {}};
  std::vector<bool> busy(static_cast<std::size_t>(hosts), false);
  for (const auto& p : r.pairs) busy[p.a] = busy[p.b] = true;
  for (int h = 0; h < hosts; ++h)
    if (!busy[h]) r.resting.push_back(h);
  return r;
}

std::vector<Round> Round::one_by_one(int hosts, const std::vector<Round>& rounds) {
  std::vector<Round> out;
  for (const auto& r : rounds)
    for (const auto& p : r.pairs) out.push_back(of(hosts, {p}));
  return out;
}

}  // namespace fabricbench::sweep
