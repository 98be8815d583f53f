#include "fabricbench/sweep/judge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {

// A pair that hung is a verdict of its own: both hosts named, the other pairs judged as usual.
void hung_pairs(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics,
                const std::vector<std::string>& hosts, std::vector<Verdict>& out) {
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& r : records) {
    if (!r.hung || !seen.insert({r.metric, r.a, r.b}).second) continue;
    const auto& m = metrics[r.metric];
    out.push_back({m.name, "hung", r.a, r.b,
                   fmt::format("{} - {}: {} did not finish within the timeout (round {}); its communicator was "
                               "aborted and both hosts rested for the rest of the sweep",
                               hosts[r.a], hosts[r.b], m.name, r.round)});
  }
}

// A host whose own link error counters grew while it was tested is named, whatever its speed.
void grown_counters(const std::vector<PairRecord>& records, const std::vector<std::string>& hosts,
                    std::vector<Verdict>& out) {
  struct Growth {
    double port = 0, nvlink = 0;
    std::set<int> peers;
  };
  std::map<int, Growth> by_host;
  for (const auto& r : records)
    for (int end = 0; end < 2; ++end) {
      const double port = r.port_errors[end], nvlink = r.nvlink_errors[end];
      if (std::isnan(port) && std::isnan(nvlink)) continue;
      auto& g = by_host[end == 0 ? r.a : r.b];
      if (!std::isnan(port)) g.port += port;
      if (!std::isnan(nvlink)) g.nvlink += nvlink;
      g.peers.insert(end == 0 ? r.b : r.a);
    }
  for (const auto& [h, g] : by_host) {
    std::vector<std::string> peers;
    for (int p : g.peers) peers.push_back(hosts[p]);
    for (auto [what, value] : {std::pair{"port_errors", g.port}, std::pair{"nvlink_errors", g.nvlink}})
      if (value > 0)
        out.push_back({what, "node", h, -1,
                       fmt::format("{}: its {} error counters grew by {:.0f} during its pair tests (with {})", hosts[h],
                                   std::string(what) == "port_errors" ? "RDMA port" : "NVLink", value,
                                   fmt::join(peers, ", "))});
  }
}

}  // namespace

Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const std::vector<std::string>& hosts) {
  Fabric fabric;
  fabric.hosts = hosts;
  return judge(records, metrics, rules, fabric);
}

double leaf_pair_coverage(const std::vector<PairRecord>& records, const Topology& topology, int rails) {
  std::set<std::tuple<int, int, int>> crossed, wanted;  // leaf, leaf, rail
  for (int r = 0; r < rails; ++r) {
    const auto leaves = topology.leaves(r);
    for (std::size_t i = 0; i < leaves.size(); ++i)
      for (std::size_t j = i + 1; j < leaves.size(); ++j) wanted.insert({leaves[i], leaves[j], r});
  }
  for (const auto& rec : records) {
    if (std::isnan(rec.value)) continue;
    const int la = topology.leaf_of(rec.a, rec.rail), lb = topology.leaf_of(rec.b, rec.rail);
    const int x = std::min(la, lb), y = std::max(la, lb);
    if (wanted.count({x, y, rec.rail})) crossed.insert({x, y, rec.rail});
  }
  return wanted.empty() ? NAN : static_cast<double>(crossed.size()) / static_cast<double>(wanted.size());
}

Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const Fabric& fabric, const std::vector<NicTraffic>& traffic, const std::vector<std::string>& traffic_nics) {
  const auto& hosts = fabric.hosts;
  const int n = static_cast<int>(hosts.size()), rails = std::max(1, fabric.rails);
  Judgement out;
  hung_pairs(records, metrics, hosts, out.verdicts);
  grown_counters(records, hosts, out.verdicts);
  const auto path = check_data_path(traffic, fabric, traffic_nics);
  out.verdicts.insert(out.verdicts.end(), path.begin(), path.end());
  if (fabric.topology) out.leaf_pair_coverage = leaf_pair_coverage(records, *fabric.topology, rails);
  for (const auto& r : records) out.wrong += r.wrong;
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    const auto& m = metrics[k];
    auto rule = rules.rule(m.name);
    rule.higher_is_better = m.better != results::Better::lower;
    const auto better = [&](double x, double y) { return rule.higher_is_better ? std::max(x, y) : std::min(x, y); };
    const auto worse = [&](double x, double y) { return rule.higher_is_better ? std::min(x, y) : std::max(x, y); };
    // One value per test of a pair on a rail: the worse direction counts (assess keeps the best over re-tests). The
    // matrix keeps each direction's best over every pass.
    std::map<std::tuple<int, int, int, int>, double> per_test, best_directed;  // (round, a, b, rail), (a, b, rail, dir)
    for (const auto& r : records) {
      if (r.metric != static_cast<int>(k) || std::isnan(r.value)) continue;
      auto [t, fresh] = per_test.emplace(std::make_tuple(r.round, r.a, r.b, r.rail), r.value);
      if (!fresh) t->second = worse(t->second, r.value);
      auto [d, first] = best_directed.emplace(std::make_tuple(r.a, r.b, r.rail, r.direction), r.value);
      if (!first) d->second = better(d->second, r.value);
    }
    std::vector<PairValue> values;
    for (const auto& [key, v] : per_test) values.push_back({std::get<1>(key), std::get<2>(key), v, std::get<3>(key)});
    const auto a = assess(m.name, rule, rules.bad_node_fraction, fabric, values, m.nics);
    out.verdicts.insert(out.verdicts.end(), a.verdicts.begin(), a.verdicts.end());
    for (auto leaf : a.leaves) {
      leaf.metric = static_cast<int>(k);
      out.leaves.push_back(leaf);
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      const HostPair p{values[i].a, values[i].b};
      if (a.suspect[i] && std::find(out.suspects.begin(), out.suspects.end(), p) == out.suspects.end())
        out.suspects.push_back(p);
    }
    for (int rail = 0; rail < rails; ++rail) {
      std::vector<double> matrix(static_cast<std::size_t>(n) * n, NAN);
      for (const auto& [key, v] : best_directed) {
        const auto [x, y, r, direction] = key;
        if (r != rail) continue;
        if (direction != 1) matrix[static_cast<std::size_t>(x) * n + y] = v;
        if (direction != 0) matrix[static_cast<std::size_t>(y) * n + x] = v;
      }
      const auto suffix = rails > 1 ? fmt::format("_rail{}", rail) : std::string();
      out.matrices.push_back({"/sweep/matrices/" + m.name + suffix,
                              fmt::format("{} ({}){}: row -> column{}", m.name, m.unit,
                                          rails > 1 ? fmt::format(", rail {}", rail) : "",
                                          m.both_directions ? ", each direction measured on its own" : ""),
                              m.value_unit, m.better, hosts, hosts, std::move(matrix)});
      // Per host and rail: the median of its pairs (best of re-tests, assess' one reduction) and how many were suspect.
      for (int h = 0; h < n; ++h) {
        std::vector<double> mine;
        std::int64_t suspect = 0;
        for (const auto& [key, v] : a.best)
          if (std::get<2>(key) == rail && (std::get<0>(key) == h || std::get<1>(key) == h)) mine.push_back(v);
        for (const auto& [x, y, r] : a.suspects)
          if (r == rail && (x == h || y == h)) ++suspect;
        out.nodes.push_back({h, static_cast<int>(k), rail, timing::SampleStats::of(mine).median,
                             static_cast<std::int64_t>(mine.size()), suspect});
      }
    }
    std::vector<RankedPair> ranked;
    for (const auto& [key, v] : a.best)
      ranked.push_back({static_cast<int>(k), std::get<0>(key), std::get<1>(key), std::get<2>(key), v});
    std::sort(ranked.begin(), ranked.end(), [&](const RankedPair& x, const RankedPair& y) {
      return rule.higher_is_better ? x.value < y.value : x.value > y.value;
    });
    ranked.resize(std::min<std::size_t>(10, ranked.size()));
    out.worst.insert(out.worst.end(), ranked.begin(), ranked.end());
  }
  if (out.wrong > 0) out.verdicts.push_back({"check", "data", 0, -1, "wrong data"});
  return out;
}

}  // namespace fabricbench::sweep
