// fabric-sweep's planning around the pair tests: the plan without a job (--dry-run --hosts), the time budget and what
// it left out, the round's time limit, which hosts rest after a hung pair, what a --resume takes over from the file it
// continues, and the metrics as the judge reads them.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fabricbench/cli/ini_file.hpp"

#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {

std::vector<std::string> SweepBenchmark::planned_hosts(const cli::po::variables_map& v) {
  if (v.count("hosts") && v.count("hostfile")) throw Error::usage("--hosts and --hostfile each give the hosts: use one");
  std::vector<std::string> hosts;
  if (v.count("hosts")) {
    const auto n = v["hosts"].as<long long>();
    if (n < 2 || n > 100000)
      throw Error::usage(fmt::format("--hosts {}: a sweep plans pairs of 2 to 100000 hosts", n));
    for (long long h = 0; h < n; ++h) hosts.push_back(fmt::format("host{}", h));
    return hosts;
  }
  const auto path = v["hostfile"].as<std::string>();
  cli::require_text_file(path, "--hostfile");
  std::ifstream in(path);
  if (!in) throw Error::usage(fmt::format("--hostfile {}: cannot read the file", path));
  std::set<std::string> seen;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::istringstream words(line.substr(0, line.find('#')));
    std::string host;
    if (!(words >> host)) continue;
    if (!seen.insert(host).second) throw Error::usage(fmt::format("--hostfile {}:{}: host '{}' given twice", path, number, host));
    hosts.push_back(host);
  }
  if (hosts.size() < 2) throw Error::usage(fmt::format("--hostfile {}: {} host(s); a sweep plans pairs of 2 or more", path, hosts.size()));
  return hosts;
}

void SweepBenchmark::configure_budget(const cli::po::variables_map& v) {
  double budget = 0;
  budget_given_.clear();
  if (v.count("budget")) {
    budget_given_ = v["budget"].as<std::string>();
    budget = cli::parse_duration(budget_given_, "--budget");
    if (!(budget > 0)) throw Error::usage(fmt::format("--budget {}: give a time above 0 (15m, 1h, 90s)", budget_given_));
  }
  if ((v.count("hosts") || v.count("hostfile")) && !dry_run_)
    throw Error::usage("--hosts/--hostfile plan for hosts other than the job's: give --dry-run too");
  // A round runs each metric's pair test (both directions where it has two) on every pair at once.
  double estimate = 0;
  if (v.count("pair-time-estimate")) {
    estimate = cli::parse_duration(v["pair-time-estimate"].as<std::string>(), "--pair-time-estimate");
    if (!(estimate > 0))
      throw Error::usage(fmt::format("--pair-time-estimate {}: give a time above 0 (3s)", v["pair-time-estimate"].as<std::string>()));
    estimate_source_ = "--pair-time-estimate";
  } else {
    const double each = pair_time_s_ > 0 ? pair_time_s_ : 2.0;
    int tests = 0;
    for (const auto* m : metrics_) tests += m->directions();
    estimate = each * tests;
    estimate_source_ = fmt::format("{} per metric and direction{}: a guess until rounds are measured; "
                                   "--pair-time-estimate sets it", human_duration(each),
                                   pair_time_s_ > 0 ? " (--pair-time)" : "");
  }
  budget_ = RoundBudget(budget, estimate);
}

std::string SweepBenchmark::answer_without_run() const {
  if (!dry_run_) return {};
  const auto& rounds = schedule_->rounds();
  std::size_t pairs = 0, most = 0, fewest = rounds.empty() ? 0 : rounds.front().pairs.size();
  for (const auto& r : rounds) {
    pairs += r.pairs.size();
    most = std::max(most, r.pairs.size()), fewest = std::min(fewest, r.pairs.size());
  }
  std::string metrics;
  for (const auto* m : metrics_) metrics += (metrics.empty() ? "" : ", ") + std::string(m->name);
  const auto per_round = fewest == most ? fmt::format("{}", most) : fmt::format("{}-{}", fewest, most);
  std::string out = fmt::format("fabric-sweep --dry-run: {} hosts{}, plan {}: {} rounds of {} pairs ({} pair tests{}); "
                                "metrics: {}\n", hosts_.size(), rails_ > 1 ? fmt::format(" x {} rails", rails_) : "",
                                schedule_->pattern(), rounds.size(), per_round, pairs,
                                rails_ > 1 ? fmt::format(", each on {} rails at once", rails_) : "", metrics);
  const double each = budget_.round_estimate_s();
  out += fmt::format("estimated {} per round ({}): {} in all\n", human_duration(each), estimate_source_,
                     human_duration(each * static_cast<double>(rounds.size())));
  if (budget_.limited()) {
    const auto fit = std::min<long long>(budget_.rounds_that_fit(), static_cast<long long>(rounds.size()));
    std::size_t covered = 0;
    for (long long r = 0; r < fit; ++r) covered += rounds[static_cast<std::size_t>(r)].pairs.size();
    out += fmt::format("--budget {}: {} of {} rounds fit, {} of {} pairs\n", budget_given_, fit, rounds.size(), covered, pairs);
  }
  return out;
}

bool SweepBenchmark::round_fits(const app::RunContext& context, const std::vector<Round>& rounds, std::size_t i,
                                const std::string& kind, int first_round) {
  if (!budget_.limited()) return true;
  std::int64_t fits = 1;
  if (context.is_root()) {
    fits = budget_.fits(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()) ? 1 : 0;
    if (!fits)
      for (std::size_t j = i; j < rounds.size(); ++j)
        for (const auto& p : rounds[j].pairs) untested_.push_back({first_round + static_cast<int>(j), kind, p});
  }
  return context.world.broadcast_value(fits, 0) == 1;
}

void SweepBenchmark::write_untested(const app::RunContext& context) {
  if (!budget_.limited()) return;
  context.out->attribute("budget_s", budget_.budget_s());
  std::set<std::pair<int, int>> sweep_pairs;
  for (const auto& u : untested_)
    if (u.kind == "sweep") sweep_pairs.insert({u.pair.unordered().a, u.pair.unordered().b});
  context.out->attribute("pairs_not_covered", static_cast<double>(sweep_pairs.size()));
  std::size_t planned = 0;
  for (const auto& r : schedule_->rounds()) planned += r.pairs.size();
  const auto spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  auto note = fmt::format("--budget {}: {} of {} rounds run in {} (a round: {})", budget_given_, sweep_rounds_run_,
                          sweep_rounds_planned_, human_duration(spent), human_duration(budget_.round_estimate_s()));
  if (untested_.empty()) {
    context.out->note(note + "; every pair covered");
    return;
  }
  const auto retests = untested_.size() - static_cast<std::size_t>(std::count_if(untested_.begin(), untested_.end(),
                                                                                  [](const Untested& u) { return u.kind == "sweep"; }));
  note += fmt::format("; not covered: {} of {} pairs{}", sweep_pairs.size(), planned,
                      rails_ > 1 ? fmt::format(" (on all {} rails)", rails_) : "");
  if (retests) note += fmt::format(", {} re-tests", retests);
  context.out->note(note + " (/sweep/untested)");
  context.out->declare(untested_table_);
  std::vector<results::Row> rows;
  for (const auto& u : untested_)
    rows.push_back(results::Row(untested_table_).set("round", std::int64_t(u.round)).set("kind", u.kind)
                       .set("host_a", hosts_[static_cast<std::size_t>(u.pair.a)])
                       .set("host_b", hosts_[static_cast<std::size_t>(u.pair.b)]).set("reason", std::string("budget")));
  context.out->rows(rows);
}

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
