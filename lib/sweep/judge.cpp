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
    out.push_back({m.name, VerdictKind::hung, r.a, r.b,
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
        out.push_back(
            {what, VerdictKind::node, h, -1,
             fmt::format("{}: its {} error counters grew by {:.0f} during its pair tests (with {})", hosts[h],
                         std::string(what) == "port_errors" ? "RDMA port" : "NVLink", value, fmt::join(peers, ", "))});
  }
}

// The matrices keep each direction's best over every pass: the measured cells only (a dense N x N per rail was
// most of the judge's time at 4096 hosts, and 1 GiB at 8 rails). Cells go to a bucket per (rail, row) by counting,
// then each bucket is sorted by column: no sort of millions of cells with a budget's records. One list per rail.
std::vector<std::vector<results::MatrixCell>> best_cells(const std::vector<PairRecord>& records, int metric, int n,
                                                         int rails, bool higher_is_better) {
  const auto counted = [&](const PairRecord& r) {
    return r.metric == metric && !std::isnan(r.value) && r.rail >= 0 && r.rail < rails && r.a >= 0 && r.a < n &&
           r.b >= 0 && r.b < n;  // else a record of a host or rail the fabric lacks (assess skips it too)
  };
  const auto bucket = [&](int rail, int row) {
    return static_cast<std::size_t>(rail) * n + static_cast<std::size_t>(row);
  };
  std::vector<std::size_t> start(static_cast<std::size_t>(rails) * n + 1, 0);
  for (const auto& r : records)
    if (counted(r)) {
      if (r.direction != 1) ++start[bucket(r.rail, r.a) + 1];
      if (r.direction != 0) ++start[bucket(r.rail, r.b) + 1];
    }
  for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  struct Cell {
    std::int32_t column;
    double value;
  };
  std::vector<Cell> cells(start.back());
  auto next = start;  // the next free place of each bucket
  for (const auto& r : records)
    if (counted(r)) {
      if (r.direction != 1) cells[next[bucket(r.rail, r.a)]++] = {r.b, r.value};
      if (r.direction != 0) cells[next[bucket(r.rail, r.b)]++] = {r.a, r.value};
    }
  std::vector<std::vector<results::MatrixCell>> matrices(static_cast<std::size_t>(rails));
  for (int rail = 0; rail < rails; ++rail)
    for (int row = 0; row < n; ++row) {
      const auto first = cells.begin() + static_cast<long>(start[bucket(rail, row)]);
      const auto last = cells.begin() + static_cast<long>(start[bucket(rail, row) + 1]);
      std::sort(first, last, [](const Cell& x, const Cell& y) { return x.column < y.column; });
      auto& matrix = matrices[static_cast<std::size_t>(rail)];
      for (auto c = first; c != last; ++c)
        if (c != first && c->column == (c - 1)->column)
          matrix.back().value =
              higher_is_better ? std::max(matrix.back().value, c->value) : std::min(matrix.back().value, c->value);
        else
          matrix.push_back({row, c->column, c->value});
    }
  return matrices;
}

// Per host and rail: the median of its pairs (best of re-tests, assess' one reduction) and how many were suspect,
// gathered in one pass over the pairs; rail by rail, host by host.
std::vector<NodeSummary> node_summaries(const Assessment& a, int metric, int n, int rails) {
  std::vector<std::vector<double>> mine(static_cast<std::size_t>(n) * rails);
  std::vector<std::int64_t> suspect(static_cast<std::size_t>(n) * rails, 0);
  const auto slot = [&](int h, int r) { return static_cast<std::size_t>(h) * rails + r; };
  for (const auto& p : a.best) {
    mine[slot(p.a, p.rail)].push_back(p.value);
    mine[slot(p.b, p.rail)].push_back(p.value);
  }
  for (const auto& [x, y, r] : a.suspects)
    if (r >= 0 && r < rails) ++suspect[slot(x, r)], ++suspect[slot(y, r)];
  std::vector<NodeSummary> out;
  for (int rail = 0; rail < rails; ++rail)
    for (int h = 0; h < n; ++h) {
      auto& values_of_h = mine[slot(h, rail)];
      const auto count = static_cast<std::int64_t>(values_of_h.size());
      out.push_back({h, metric, rail, timing::median_of(std::move(values_of_h)), count, suspect[slot(h, rail)]});
    }
  return out;
}

// Up to ten pairs of the metric, worst first (ties in the pairs' order).
std::vector<RankedPair> worst_pairs(const Assessment& a, int metric, bool higher_is_better) {
  std::vector<RankedPair> ranked;
  for (const auto& p : a.best) ranked.push_back({metric, p.a, p.b, p.rail, p.value});
  const auto top = std::min<std::size_t>(10, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<long>(top), ranked.end(),
                    [&](const RankedPair& x, const RankedPair& y) {
                      if (x.value != y.value) return higher_is_better ? x.value < y.value : x.value > y.value;
                      return std::tie(x.a, x.b, x.rail) < std::tie(y.a, y.b, y.rail);
                    });
  ranked.resize(top);
  return ranked;
}

// One metric judged: its verdicts (or one of noise), leaves, suspects to re-test, matrices, node rows and worst pairs.
void judge_metric(const std::vector<PairRecord>& records, const JudgedMetric& m, int k, const Rules& rules,
                  const Fabric& fabric, Judgement& out) {
  const int n = static_cast<int>(fabric.hosts.size()), rails = std::max(1, fabric.rails);
  auto rule = rules.rule(m.name);
  rule.higher_is_better = m.better != results::Better::lower;
  const auto values = pair_values(records, k, rule.higher_is_better);
  auto a = assess(m.name, rule, rules.bad_node_fraction, fabric, values, m.nics);
  name_noise(m.name, rule, rules, fabric, values, a);
  out.verdicts.insert(out.verdicts.end(), a.verdicts.begin(), a.verdicts.end());
  for (auto leaf : a.leaves) {
    leaf.metric = k;
    out.leaves.push_back(leaf);
  }
  std::set<std::pair<int, int>> listed;  // suspects once each, in the order first seen
  for (const auto& p : out.suspects) listed.insert({p.a, p.b});
  for (std::size_t i = 0; i < values.size(); ++i) {
    const HostPair p{values[i].a, values[i].b};
    if (a.suspect[i] && listed.insert({p.a, p.b}).second) out.suspects.push_back(p);
  }
  // Called noise: the healthy-looking pairs that left no gap are re-tested too. One stalled test among six pairs of
  // four hosts (30 MB/s against 240-450, a slow host's pairs at 12) made a slowed node "too noisy to judge" in CI.
  for (const auto& [x, y, rail] : a.doubtful)
    if (listed.insert({x, y}).second) out.suspects.push_back({x, y});
  auto matrices = best_cells(records, k, n, rails, rule.higher_is_better);
  for (int rail = 0; rail < rails; ++rail) {
    const auto suffix = rails > 1 ? fmt::format("_rail{}", rail) : std::string();
    out.matrices.push_back({"/sweep/matrices/" + m.name + suffix,
                            fmt::format("{} ({}){}: row -> column{}", m.name, results::to_string(m.value_unit),
                                        rails > 1 ? fmt::format(", rail {}", rail) : "",
                                        m.both_directions ? ", each direction measured on its own" : ""),
                            m.value_unit, m.better, fabric.hosts, fabric.hosts,
                            std::move(matrices[static_cast<std::size_t>(rail)])});
  }
  const auto nodes = node_summaries(a, k, n, rails);
  out.nodes.insert(out.nodes.end(), nodes.begin(), nodes.end());
  const auto worst = worst_pairs(a, k, rule.higher_is_better);
  out.worst.insert(out.worst.end(), worst.begin(), worst.end());
}

}  // namespace

Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const std::vector<std::string>& hosts) {
  Fabric fabric;
  fabric.hosts = hosts;
  return judge(records, metrics, rules, fabric);
}

std::vector<PairValue> pair_values(const std::vector<PairRecord>& records, int metric, bool higher_is_better) {
  // Sorted keys instead of a map: millions of records at thousands of hosts.
  struct Test {
    std::int32_t round, a, b, rail;
    double value;
  };
  std::vector<Test> tests;
  for (const auto& r : records)
    if (r.metric == metric && !std::isnan(r.value)) tests.push_back({r.round, r.a, r.b, r.rail, r.value});
  const auto key = [](const Test& t) { return std::make_tuple(t.round, t.a, t.b, t.rail); };
  std::sort(tests.begin(), tests.end(), [&](const Test& x, const Test& y) { return key(x) < key(y); });
  std::vector<PairValue> out;
  for (std::size_t i = 0; i < tests.size(); ++i) {
    if (i > 0 && key(tests[i]) == key(tests[i - 1])) {
      auto& v = out.back().value;
      v = higher_is_better ? std::min(v, tests[i].value) : std::max(v, tests[i].value);  // the worse direction
      continue;
    }
    out.push_back({tests[i].a, tests[i].b, tests[i].value, tests[i].rail});
  }
  return out;
}

double leaf_pair_coverage(const std::vector<PairRecord>& records, const Topology& topology, int rails) {
  // Per rail: each leaf's position among the rail's leaves and a flag per (position, position) crossed; flags, not a
  // set of tuples (every record is read: hundreds of thousands at 4096 hosts).
  // A leaf without Rail= serves every rail, at its own position in each: positions are per rail.
  const std::size_t switches = topology.switches().size();
  std::vector<int> position(static_cast<std::size_t>(rails) * switches, -1);  // rail * switches + leaf
  std::vector<std::size_t> count(static_cast<std::size_t>(rails), 0);
  std::vector<std::vector<char>> crossed(static_cast<std::size_t>(rails));
  double wanted = 0;
  for (int r = 0; r < rails; ++r) {
    const auto leaves = topology.leaves(r);
    for (std::size_t i = 0; i < leaves.size(); ++i)
      position[static_cast<std::size_t>(r) * switches + static_cast<std::size_t>(leaves[i])] = static_cast<int>(i);
    count[static_cast<std::size_t>(r)] = leaves.size();
    crossed[static_cast<std::size_t>(r)].assign(leaves.size() * leaves.size(), 0);
    wanted += static_cast<double>(leaves.size() * (leaves.size() - (leaves.empty() ? 0 : 1)) / 2);
  }
  double got = 0;
  for (const auto& rec : records) {
    if (std::isnan(rec.value) || rec.rail < 0 || rec.rail >= rails) continue;
    const int la = topology.leaf_of(rec.a, rec.rail), lb = topology.leaf_of(rec.b, rec.rail);
    if (la < 0 || lb < 0 || la == lb) continue;
    const auto at = static_cast<std::size_t>(rec.rail) * switches;
    const int i = position[at + static_cast<std::size_t>(la)], j = position[at + static_cast<std::size_t>(lb)];
    if (i < 0 || j < 0) continue;
    const auto n = count[static_cast<std::size_t>(rec.rail)];
    auto& flag = crossed[static_cast<std::size_t>(rec.rail)]
                        [static_cast<std::size_t>(std::min(i, j)) * n + static_cast<std::size_t>(std::max(i, j))];
    if (!flag) flag = 1, ++got;
  }
  return wanted == 0 ? NAN : got / wanted;
}

Judgement judge(const std::vector<PairRecord>& records, const std::vector<JudgedMetric>& metrics, const Rules& rules,
                const Fabric& fabric, const std::vector<NicTraffic>& traffic,
                const std::vector<std::string>& traffic_nics) {
  const int rails = std::max(1, fabric.rails);
  Judgement out;
  hung_pairs(records, metrics, fabric.hosts, out.verdicts);
  grown_counters(records, fabric.hosts, out.verdicts);
  const auto path = check_data_path(traffic, fabric, traffic_nics);
  out.verdicts.insert(out.verdicts.end(), path.begin(), path.end());
  if (fabric.topology) out.leaf_pair_coverage = leaf_pair_coverage(records, *fabric.topology, rails);
  for (const auto& r : records) out.wrong += r.wrong;
  for (std::size_t k = 0; k < metrics.size(); ++k)
    judge_metric(records, metrics[k], static_cast<int>(k), rules, fabric, out);
  if (out.wrong > 0) out.verdicts.push_back({"check", VerdictKind::data, 0, -1, "wrong data"});
  return out;
}

}  // namespace fabricbench::sweep
