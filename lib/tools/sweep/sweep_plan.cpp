// fabric-sweep's planning around the pair tests: the round's time limit, which hosts rest after a hung pair, what a
// --resume takes over from the file it continues, and the metrics as the judge reads them.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {

std::vector<JudgedMetric> SweepBenchmark::judged_metrics() const {
  std::vector<JudgedMetric> out;
  for (const auto* m : metrics_)
    out.push_back({std::string(m->name), std::string(m->unit), m->value_unit, m->better, m->both_directions, nics_of(*m)});
  return out;
}

double SweepBenchmark::round_timeout_s(const app::RunContext& context) const {
  // A round holds one bounded test per collective metric (each within --timeout when the back end can abort it):
  // the round's own limit leaves room for all of them before the run ends.
  const double t = context.options.timeout_s;
  if (t <= 0 || backend_ != ops::BackendKind::nccl) return t;
  const auto collectives = std::count_if(metrics_.begin(), metrics_.end(), [](auto* m) { return m->collective(); });
  return t * static_cast<double>(collectives + 1) + 10;
}

void SweepBenchmark::rest_hung_hosts(const app::RunContext& context, const std::vector<PairRecord>& records,
                                     std::vector<Round>& rounds, std::size_t from) {
  std::vector<int> hung;
  if (context.is_root())
    for (const auto& r : records)
      if (r.hung) hung.insert(hung.end(), {r.a, r.b});
  for (int h : context.world.broadcast_array(hung, 0))
    if (std::find(resting_.begin(), resting_.end(), h) == resting_.end()) resting_.push_back(h);
  if (resting_.empty()) return;
  const auto rests = [&](const HostPair& p) {
    return std::find(resting_.begin(), resting_.end(), p.a) != resting_.end() ||
           std::find(resting_.begin(), resting_.end(), p.b) != resting_.end();
  };
  for (std::size_t i = from; i < rounds.size(); ++i)
    rounds[i].pairs.erase(std::remove_if(rounds[i].pairs.begin(), rounds[i].pairs.end(), rests), rounds[i].pairs.end());
}

std::vector<PairRecord> SweepBenchmark::resumed_records() const {
  const auto index = [](const auto& names, const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (std::string_view(names[i]) == name) return static_cast<std::int32_t>(i);
    return std::int32_t{-1};
  };
  std::vector<std::string> metric_names, directions{"a->b", "b->a", "both"};
  for (const auto* m : metrics_) metric_names.emplace_back(m->name);
  std::vector<PairRecord> out;
  for (const auto& row : resumed_rows_) {
    if (std::get<std::string>(row.get("kind")) != "sweep") continue;  // re-tests run again after the sweep
    const auto text = [&](const char* c) { return std::get<std::string>(row.get(c)); };
    const auto integer = [&](const char* c) { return std::get<std::int64_t>(row.get(c)); };
    auto r = PairRecord::of(static_cast<int>(integer("round")),
                            {index(hosts_, text("host_a")), index(hosts_, text("host_b"))},
                            index(metric_names, text("metric")), index(directions, text("direction")));
    if (r.a < 0 || r.b < 0 || r.metric < 0 || r.direction < 0) continue;
    r.iterations = static_cast<std::int32_t>(integer("iterations"));
    r.bytes = integer("bytes"), r.wrong = integer("wrong"), r.hung = static_cast<std::int32_t>(integer("hung"));
    r.value = row.number("value"), r.median_us = row.number("time_us_median"), r.p99_us = row.number("time_us_p99");
    r.window = static_cast<std::int32_t>(integer("window")), r.cut = static_cast<std::int32_t>(integer("cut"));
    r.rail = static_cast<std::int32_t>(integer("rail"));
    // Whose counters grew: the row's sums go to each host it names (to both where both grew).
    std::istringstream grew(text("counters_host"));
    for (std::string host; std::getline(grew, host, ',');)
      for (int end = 0; end < 2; ++end)
        if (index(hosts_, host) == (end == 0 ? r.a : r.b)) {
          r.port_errors[end] = row.number("port_errors"), r.nvlink_errors[end] = row.number("nvlink_errors");
        }
    out.push_back(r);
  }
  return out;
}

std::vector<HostPair> SweepBenchmark::finished_pairs() const {
  // A pair is finished when the earlier part wrote every row it owes: one per metric, two for both-direction ones.
  std::size_t owed = 0;
  for (const auto* m : metrics_) owed += static_cast<std::size_t>(m->directions() * rails_);
  std::map<std::pair<int, int>, std::size_t> rows;
  for (const auto& r : resumed_records()) ++rows[std::minmax(r.a, r.b)];
  std::vector<HostPair> out;
  for (const auto& [pair, count] : rows)
    if (count >= owed) out.push_back({pair.first, pair.second});
  return out;
}

}  // namespace fabricbench::sweep
