// fabric-sweep's planning around the pair tests: how long each p2p pair test may take (probes and budgets), which
// hosts rest after a hung pair, and what a --resume takes over from the file it continues.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include "fabricbench/ops/p2p_exchange.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {

const ops::P2PTest& SweepBenchmark::p2p_test_of(const SweepMetric& m) const { return *ops::find_p2p_test(m.p2p_test); }

std::uint64_t SweepBenchmark::bytes_of(const SweepMetric& m) const {
  return p2p_test_of(m).exchange == ops::Exchange::ping_pong ? lat_bytes_ : bw_bytes_;
}

PairBudgets SweepBenchmark::pair_budgets(const app::RunContext& context, const runtime::Communicator* pair) {
  const std::size_t slots = metrics_.size() * 2;
  PairBudgets plan{std::vector<double>(slots, 0), std::vector<double>(slots, 0), 0};
  measured_.resize(slots, INFINITY);
  fastest_.resize(slots, INFINITY);
  if (pair_time_s_ <= 0) return plan;
  const auto probes_start = std::chrono::steady_clock::now();
  for (std::size_t k = 0; pair && k < metrics_.size(); ++k) {
    const auto& m = *metrics_[k];
    if (m.p2p_test.empty()) continue;
    const auto& test = p2p_test_of(m);
    for (int direction = 0; direction < (m.both_directions ? 2 : 1); ++direction) {
      const int me = pair->rank();
      plan.probe_s[slot(k, direction)] = ops::probe_message_s(
          test, {pair->get(), me, 1 - me, me == direction, *send_, *recv_, bytes_of(m), 0, 0, window_, false, false});
    }
  }
  // The probes are link time, part of the pair's test (not the sweep's overhead in /sweep/rounds).
  plan.probing_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - probes_start).count();
  // The fastest pair so far, from what earlier rounds measured (a probe of a fresh connection runs in TCP's slow
  // start and would make the fast pairs look slow): every leader offers its own, the world takes the minimum.
  std::vector<double> fastest(slots);
  runtime::check_mpi(MPI_Allreduce(measured_.data(), fastest.data(), static_cast<int>(slots), MPI_DOUBLE, MPI_MIN,
                                   context.world.get()), "MPI_Allreduce");
  for (std::size_t i = 0; i < slots; ++i) {
    fastest_[i] = std::min(fastest_[i], fastest[i]);
    plan.budget_s[i] = std::isfinite(fastest_[i]) ? std::max(pair_time_s_, pair_time_relative_ * fastest_[i]) : pair_time_s_;
  }
  return plan;
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
  std::string hung;
  if (context.is_root())
    for (const auto& r : records)
      if (r.hung) hung += fmt::format("{} {} ", r.a, r.b);
  hung = context.world.broadcast(hung, 0);
  std::istringstream in(hung);
  for (int h; in >> h;)
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
    PairRecord r{static_cast<std::int32_t>(integer("round")), index(hosts_, text("host_a")), index(hosts_, text("host_b")),
                 index(metric_names, text("metric")), index(directions, text("direction")),
                 static_cast<std::int32_t>(integer("iterations")), integer("bytes"), integer("wrong"),
                 std::get<double>(row.get("value")), std::get<double>(row.get("time_us_median")),
                 std::get<double>(row.get("time_us_p99")), 0, static_cast<std::int32_t>(integer("window")),
                 static_cast<std::int32_t>(integer("cut"))};
    if (r.a >= 0 && r.b >= 0 && r.metric >= 0 && r.direction >= 0) out.push_back(r);
  }
  return out;
}

std::string SweepBenchmark::finished_pairs() const {
  // A pair is finished when the earlier part wrote every row it owes: one per metric, two for both-direction ones.
  std::size_t owed = 0;
  for (const auto* m : metrics_) owed += m->both_directions ? 2 : 1;
  std::map<std::pair<int, int>, std::size_t> rows;
  for (const auto& r : resumed_records()) ++rows[std::minmax(r.a, r.b)];
  std::string out;
  for (const auto& [pair, count] : rows)
    if (count >= owed) out += fmt::format("{}:{}\n", pair.first, pair.second);
  return out;
}

}  // namespace fabricbench::sweep
