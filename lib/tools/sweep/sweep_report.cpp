// fabric-sweep's rank-0 side: merging what both ends of a pair measured, the pair rows, and the verdicts with their
// matrices and per-node medians.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "fabricbench/tools/sweep/sweep_benchmark.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {
namespace {
constexpr const char* direction_names[] = {"a->b", "b->a", "both"};
}

void SweepBenchmark::stamp_expected(const app::RunContext& context, results::Row& row, const PairRecord& r) {
  const auto& m = *metrics_[r.metric];
  const double value = facts::ExpectedShare::gbps(r.value, m.value_unit);
  if (std::isnan(value)) return;  // latency metrics
  facts::Reference ref;
  if (m.collective()) {
    const bool nccl = backend_ == ops::BackendKind::nccl;
    const std::vector<std::string> both{hosts_[r.a], hosts_[r.b]};
    ref = context.expected.per_rank(both, ranks_per_host_, nccl);
  } else {
    ref = context.expected.stream(hosts_[r.a], hosts_[r.b], false);
    if (m.p2p_test == "bibw") ref = ref.scaled(2, "both directions of");
  }
  context.expected.stamp(row, value, ref, r.bytes, "");  // its warning line is not printed: one summary at the end
  const double percent = row.number("pct_expected");
  if (context.expected.below(percent, r.bytes)) {
    ++below_expected_;
    if (percent < lowest_percent_) {
      lowest_percent_ = percent;
      lowest_expected_ = fmt::format("{} - {} {} {:.0f}% of {:.2f} GB/s ({})", hosts_[r.a], hosts_[r.b], m.name, percent,
                                     ref.gbps, ref.basis);
    }
  }
}

std::vector<PairRecord> SweepBenchmark::report_records(const app::RunContext& context,
                                                       const std::vector<PairRecord>& records, const std::string& kind) {
  std::map<std::tuple<int, int, int, int, int>, PairRecord> merged;
  std::map<std::tuple<int, int, int, int, int>, facts::CounterReading> grown;
  for (const auto& r : records) {
    const auto key = std::make_tuple(r.round, r.a, r.b, r.metric, r.direction);
    const facts::CounterReading g{r.port_errors, r.xmit_wait, r.nvlink_errors};
    grown[key] += g;
    // Whose links saw errors: kept per host for the verdicts.
    if (r.reporter >= 0) {
      auto& mine = counter_growth_[r.reporter];
      mine.first += g;
      mine.second.insert(r.reporter == r.a ? r.b : r.a);
    }
    auto [it, fresh] = merged.emplace(key, r);
    if (fresh) continue;
    it->second.wrong += r.wrong;
    if (std::isnan(it->second.value)) {
      const auto wrong = it->second.wrong;
      it->second = r;
      it->second.wrong = wrong;
    }
  }
  std::vector<PairRecord> out;
  std::vector<results::Row> rows;
  for (const auto& [key, r] : merged) {
    const auto& m = *metrics_[r.metric];
    results::Row row(pairs_table_);
    row.set("round", std::int64_t(r.round)).set("kind", kind).set("host_a", hosts_[r.a]).set("host_b", hosts_[r.b]);
    row.set("metric", std::string(m.name)).set("direction", std::string(direction_names[r.direction]));
    row.set("bytes", std::int64_t(r.bytes)).set("iterations", std::int64_t(r.iterations)).set("value", r.value);
    row.set("window", std::int64_t(r.window)).set("cut", std::int64_t(r.cut)).set("hung", std::int64_t(r.hung));
    row.set("unit", std::string(m.unit)).set("time_us_median", r.median_us).set("time_us_p99", r.p99_us);
    row.set("wrong", std::int64_t(r.wrong));
    facts::set_counters(row, grown[key]);
    stamp_expected(context, row, r);
    rows.push_back(std::move(row));
    out.push_back(r);
  }
  context.out->rows(rows);  // the round's rows in one write and one flush
  return out;
}

std::vector<Verdict> SweepBenchmark::judge(const app::RunContext& context, const std::vector<PairRecord>& records,
                                           bool final, std::vector<HostPair>* suspects) {
  const int n = static_cast<int>(hosts_.size());
  std::vector<Verdict> verdicts;
  if (final) {
    context.out->declare(nodes_table_);
    context.out->declare(verdicts_table_);
  }
  std::vector<results::Row> node_rows;
  std::int64_t wrong = 0;
  // A pair that hung is a verdict of its own: both hosts named, the other pairs judged as usual.
  for (const auto& r : records) {
    if (!r.hung) continue;
    const auto& m = *metrics_[r.metric];
    const bool seen = std::any_of(verdicts.begin(), verdicts.end(), [&](const Verdict& v) {
      return v.kind == "hung" && v.a == r.a && v.b == r.b && v.metric == m.name;
    });
    if (!seen)
      verdicts.push_back({std::string(m.name), "hung", r.a, r.b,
                          fmt::format("{} - {}: {} did not finish within the timeout (round {}); its communicator was "
                                      "aborted and both hosts rested for the rest of the sweep",
                                      hosts_[r.a], hosts_[r.b], m.name, r.round)});
  }
  // A host whose own link error counters grew while it was tested is named, whatever its speed.
  for (const auto& [h, g] : counter_growth_) {
    std::vector<std::string> peers;
    for (int p : g.second) peers.push_back(hosts_[p]);
    for (auto [what, value] : {std::pair{"port_errors", g.first.port_errors}, std::pair{"nvlink_errors", g.first.nvlink_errors}})
      if (!std::isnan(value) && value > 0)
        verdicts.push_back({what, "node", h, -1,
                            fmt::format("{}: its {} error counters grew by {:.0f} during its pair tests (with {})", hosts_[h],
                                        std::string(what) == "port_errors" ? "RDMA port" : "NVLink", value,
                                        fmt::join(peers, ", "))});
  }
  for (std::size_t k = 0; k < metrics_.size(); ++k) {
    const auto& m = *metrics_[k];
    const auto& rule = rules_.rule(std::string(m.name));
    auto better = [&](double x, double y) { return rule.higher_is_better ? std::max(x, y) : std::min(x, y); };
    auto worse = [&](double x, double y) { return rule.higher_is_better ? std::min(x, y) : std::max(x, y); };
    // One value per test of a pair: the worse direction counts. Across re-tests assess() keeps the best.
    std::map<std::tuple<int, int, int>, double> per_test;
    std::map<std::tuple<int, int, int>, double> best_directed;  // (a, b, direction) over all passes
    for (const auto& r : records) {
      if (r.metric != static_cast<int>(k)) continue;
      wrong += r.wrong;
      if (std::isnan(r.value)) continue;
      auto [it, fresh] = per_test.emplace(std::make_tuple(r.round, r.a, r.b), r.value);
      if (!fresh) it->second = worse(it->second, r.value);
      auto [d, first] = best_directed.emplace(std::make_tuple(r.a, r.b, r.direction), r.value);
      if (!first) d->second = better(d->second, r.value);
    }
    std::vector<PairValue> values;
    for (const auto& [key, v] : per_test) values.push_back({std::get<1>(key), std::get<2>(key), v});
    const auto a = assess(std::string(m.name), rule, rules_.bad_node_fraction, n, values, hosts_);
    verdicts.insert(verdicts.end(), a.verdicts.begin(), a.verdicts.end());
    for (std::size_t i = 0; i < values.size(); ++i)
      if (a.suspect[i] && suspects) {
        const HostPair p{values[i].a, values[i].b};
        if (std::find(suspects->begin(), suspects->end(), p) == suspects->end()) suspects->push_back(p);
      }
    if (!final) continue;
    std::vector<double> matrix(static_cast<std::size_t>(n * n), NAN);
    for (const auto& [key, v] : best_directed) {
      const auto [x, y, direction] = key;
      if (direction != 1) matrix[x * n + y] = v;
      if (direction != 0) matrix[y * n + x] = v;
    }
    context.out->matrix({"/sweep/matrices/" + std::string(m.name),
                         fmt::format("{} ({}): row -> column{}", m.name, m.unit,
                                     m.both_directions ? ", each direction measured on its own" : ""),
                         m.value_unit, m.better, hosts_, hosts_, std::move(matrix)});
    // Per node: the median of its pairs (best of re-tests) and how many were suspect.
    std::map<std::pair<int, int>, double> best_pair;
    for (const auto& v : values) {
      auto [it, fresh] = best_pair.emplace(std::minmax(v.a, v.b), v.value);
      if (!fresh) it->second = better(it->second, v.value);
    }
    for (int h = 0; h < n; ++h) {
      std::vector<double> mine;
      std::int64_t suspect = 0;
      for (const auto& [pair, v] : best_pair)
        if (pair.first == h || pair.second == h) mine.push_back(v);
      for (std::size_t i = 0; i < values.size(); ++i)
        if (a.suspect[i] && (values[i].a == h || values[i].b == h)) ++suspect;
      node_rows.push_back(results::Row(nodes_table_).set("host", hosts_[h]).set("metric", std::string(m.name))
                              .set("median", timing::SampleStats::of(mine).median).set("unit", std::string(m.unit))
                              .set("pairs", std::int64_t(mine.size())).set("suspect_pairs", suspect));
    }
    if (n > 16) {  // no matrix on the terminal: the worst pairs instead
      std::vector<std::pair<double, std::pair<int, int>>> ranked;
      for (const auto& [pair, v] : best_pair) ranked.push_back({v, pair});
      std::sort(ranked.begin(), ranked.end(), [&](auto& x, auto& y) { return rule.higher_is_better ? x.first < y.first : x.first > y.first; });
      for (std::size_t i = 0; i < std::min<std::size_t>(10, ranked.size()); ++i)
        context.out->note(fmt::format("worst {} pairs: {} - {}: {:.4g} {}", m.name, hosts_[ranked[i].second.first],
                                      hosts_[ranked[i].second.second], ranked[i].first, m.unit));
    }
  }
  if (!final) return verdicts;
  context.out->section(nodes_table_, "per-node medians (over the pairs of each node; best of re-tests)",
                       {{"host"}, {"metric"}, {"median"}, {"unit"}, {"pairs"}, {"suspect_pairs"}});
  for (const auto& row : node_rows) context.out->row(row);
  for (const auto& v : verdicts) {
    context.out->row(results::Row(verdicts_table_).set("metric", v.metric).set("kind", v.kind).set("host_a", hosts_[v.a])
                         .set("host_b", v.b >= 0 ? hosts_[v.b] : std::string()).set("reason", v.reason));
    context.out->note(fmt::format("VERDICT bad {} ({}): {}", v.kind, v.metric, v.reason));
  }
  if (wrong > 0) {
    context.out->note(fmt::format("{} bytes failed the check", wrong));
    verdicts.push_back({"check", "data", 0, -1, "wrong data"});
  }
  if (below_expected_ > 0) {
    const auto line = fmt::format("warning: {} pair value(s) below {:g}% of what the hardware should reach; lowest: {} "
                                  "(configs/expected.ini)", below_expected_, context.expected.rule().warn_below_percent,
                                  lowest_expected_);
    context.out->note(line);
    if (context.options.quiet) fmt::print(stderr, "{}: {}\n", context.program, line);
  }
  if (verdicts.empty())
    context.out->note(fmt::format("verdict: all {} hosts and their pairs pass", n));
  return verdicts;
}

}  // namespace fabricbench::sweep
