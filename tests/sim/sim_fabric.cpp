#include "sim_fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace fabricbench::sim {

std::vector<std::string> FabricModel::names() const {
  std::vector<std::string> out;
  for (int h = 0; h < hosts; ++h) out.push_back(fmt::format("n{:05}", h));
  return out;
}

std::string FabricModel::leaf_name(int group, int rail) const { return fmt::format("r{}l{}", rail, group); }

std::string FabricModel::topology_conf() const {
  std::string text;
  for (int r = 0; r < rails; ++r) {
    for (int g = 0; g < leaves(); ++g)
      text += fmt::format("SwitchName={} Nodes=n[{:05}-{:05}] Rail={}\n", leaf_name(g, r), g * leaf,
                          std::min(hosts, (g + 1) * leaf) - 1, r);
    text += fmt::format("SwitchName=r{}s Switches=r{}l[0-{}] Rail={}\n", r, r, leaves() - 1, r);
  }
  return text;
}

sweep::Topology FabricModel::topology() const {
  sweep::Topology t(names());
  std::istringstream in(topology_conf());
  t.parse(in, "simulated topology.conf", -1);
  t.finish(rails);
  return t;
}

Faults FabricModel::place(const std::string& scenario, std::uint64_t seed) const {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 17);
  Faults f;
  const auto pick = [&](int n) { return static_cast<int>(std::uniform_int_distribution<long long>(0, n - 1)(rng)); };
  std::vector<int> pool;
  if (scenario == "clean") return f;  // no fault: every verdict is a false one
  if (scenario == "faults") {
    if (leaves() >= 3) f.uplink_leaf = pick(leaves()), f.uplink_rail = pick(rails);
    for (int h = 0; h < hosts; ++h)
      if (f.uplink_leaf < 0 || leaf_of(h) != f.uplink_leaf) pool.push_back(h);
    std::shuffle(pool.begin(), pool.end(), rng);
    f.node = pool.at(0);
    if (rails >= 2) f.nic = pool.at(1), f.nic_rail = pick(rails);  // one rail slow and the others fine is a NIC
    f.link_a = pool.at(2), f.link_b = pool.at(3), f.link_rail = pick(rails);
  } else {
    for (int h = 0; h < hosts; ++h) pool.push_back(h);
    std::shuffle(pool.begin(), pool.end(), rng);
    f.hung = pool.at(0), f.flaky = pool.at(1);
  }
  return f;
}

void FabricModel::measure(int round, sweep::HostPair pair, const Faults& f, std::mt19937_64& rng,
                          std::vector<sweep::PairRecord>& out) const {
  const int a = pair.a, b = pair.b;
  if (a == f.hung || b == f.hung) {
    for (int r = 0; r < rails; ++r) {
      auto rec = sweep::PairRecord::of(round, pair, 0, 2);
      rec.rail = r, rec.hung = 1;
      out.push_back(rec);
    }
    return;
  }
  std::normal_distribution<double> noise(0.0, sigma);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const bool crosses = leaf_of(a) != leaf_of(b);
  // Slow some of the time: the host is slow for the whole test (every rail, both ways) with probability flaky_p, as
  // a host that throttles or is shared would be.
  const bool flaky = (a == f.flaky || b == f.flaky) && coin(rng) < flaky_p;
  for (int r = 0; r < rails; ++r) {
    bool slow = a == f.node || b == f.node;
    slow = slow || (r == f.nic_rail && (a == f.nic || b == f.nic));
    slow = slow || (r == f.uplink_rail && crosses && (leaf_of(a) == f.uplink_leaf || leaf_of(b) == f.uplink_leaf));
    slow = slow || (r == f.link_rail && std::minmax(a, b) == std::minmax(f.link_a, f.link_b));
    for (int direction = 0; direction < 2; ++direction) {
      auto rec = sweep::PairRecord::of(round, pair, 0, direction);
      rec.rail = r;
      rec.value = nominal * std::exp(noise(rng)) * (slow || flaky ? factor : 1.0);
      rec.iterations = 20, rec.bytes = 4 << 20;
      out.push_back(rec);
    }
  }
}

void Score::add(const Score& o) {
  for (const auto& [k, s] : o.kinds) {
    auto& m = kinds[k];
    m.verdicts += s.verdicts, m.true_positives += s.true_positives, m.injected += s.injected, m.found += s.found;
  }
  flaky_injected += o.flaky_injected, flaky_named_node += o.flaky_named_node;
  for (const auto& [k, c] : o.flaky_verdicts) flaky_verdicts[k] += c;
}

Score score(const sweep::Judgement& judgement, const Faults& f, const FabricModel& model) {
  Score s;
  for (const char* k : {"node", "nic", "uplink", "link", "hung"}) s.kinds[k];
  const auto leaves_named = [](const std::string& list) {
    std::set<std::string> out;
    std::istringstream in(list);
    for (std::string item; std::getline(in, item, ',');) out.insert(item);
    return out;
  };
  const auto rail_of = [&](const sweep::Verdict& v) { return v.rail < 0 ? 0 : v.rail; };
  const auto matches = [&](const sweep::Verdict& v, const std::string& kind) {
    if (sweep::kind_name(v.kind) != kind) return false;
    if (kind == "node") return f.node >= 0 && v.a == f.node;
    if (kind == "nic") return f.nic >= 0 && v.a == f.nic && rail_of(v) == f.nic_rail;
    if (kind == "uplink")
      return f.uplink_leaf >= 0 && rail_of(v) == f.uplink_rail &&
             leaves_named(v.switch_name).count(model.leaf_name(f.uplink_leaf, f.uplink_rail)) > 0;
    if (kind == "link")
      return f.link_a >= 0 && rail_of(v) == f.link_rail && std::minmax(v.a, v.b) == std::minmax(f.link_a, f.link_b);
    if (kind == "hung") return f.hung >= 0 && (v.a == f.hung || v.b == f.hung);
    return false;
  };
  for (const auto& v : judgement.verdicts) {
    if (f.flaky >= 0 && (v.a == f.flaky || v.b == f.flaky)) {
      ++s.flaky_verdicts[std::string(sweep::kind_name(v.kind))];
      if (v.kind == sweep::VerdictKind::node && v.a == f.flaky) s.flaky_named_node = 1;
      continue;
    }
    auto& k = s.kinds[std::string(sweep::kind_name(v.kind))];
    ++k.verdicts;
    k.true_positives += matches(v, std::string(sweep::kind_name(v.kind)));
  }
  const auto injected = [&](const std::string& kind, bool present) {
    if (!present) return;
    auto& k = s.kinds[kind];
    ++k.injected;
    k.found += std::any_of(judgement.verdicts.begin(), judgement.verdicts.end(),
                           [&](const sweep::Verdict& v) { return matches(v, kind); });
  };
  injected("node", f.node >= 0);
  injected("nic", f.nic >= 0);
  injected("uplink", f.uplink_leaf >= 0);
  injected("link", f.link_a >= 0);
  injected("hung", f.hung >= 0);
  s.flaky_injected = f.flaky >= 0;
  return s;
}

}  // namespace fabricbench::sim
