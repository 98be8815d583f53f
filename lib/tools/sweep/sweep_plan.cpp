// fabric-sweep's plan options around the pair tests: the plan without a job (--dry-run --hosts/--hostfile) and its
// answer, the time budget's options, and what a --resume takes over from the file it continues (its hosts less the
// excluded, the pairs it finished, its rows as records).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/results/hdf5_reader.hpp"
#include "fabricbench/sweep/plan_size.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
namespace {

// Every pair of an excluded host with one of the file's hosts (`before`) that the earlier part's pair rows did not
// measure: not tested, with the reason (a pair of two excluded hosts once, the first's reason).
std::vector<UntestedPair> not_measured(const std::vector<results::Row>& rows, const SweepTables::PairColumns& c,
                                       const std::vector<ExcludedHost>& excluded,
                                       const std::vector<std::string>& before) {
  std::set<std::pair<std::string, std::string>> measured, listed;
  for (const auto& row : rows) measured.insert(std::minmax(row.get(c.host_a), row.get(c.host_b)));
  std::vector<UntestedPair> out;
  for (const auto& e : excluded)
    for (const auto& other : before) {
      if (other == e.host) continue;
      const std::pair<std::string, std::string> pair = std::minmax(e.host, other);
      if (measured.count(pair) || !listed.insert(pair).second) continue;
      out.push_back({-1, RoundKind::sweep, pair.first, pair.second, e.why});
    }
  return out;
}

}  // namespace

std::vector<std::string> SweepBenchmark::planned_hosts(const cli::po::variables_map& v) {
  if (v.count("hosts") && v.count("hostfile"))
    throw Error::usage("--hosts and --hostfile each give the hosts: use one");
  std::vector<std::string> hosts;
  if (v.count("hosts")) {
    const auto n = v["hosts"].as<long long>();
    if (n < 2 || n > 100000) throw Error::usage(fmt::format("--hosts {}: a sweep plans pairs of 2 to 100000 hosts", n));
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
    if (!seen.insert(host).second)
      throw Error::usage(fmt::format("--hostfile {}:{}: host '{}' given twice", path, number, host));
    hosts.push_back(host);
    if (hosts.size() > 100000)
      throw Error::usage(
          fmt::format("--hostfile {}:{}: more than 100000 hosts (a sweep plans 2 to 100000)", path, number));
  }
  if (hosts.size() < 2)
    throw Error::usage(fmt::format("--hostfile {}: {} host(s); a sweep plans pairs of 2 or more", path, hosts.size()));
  return hosts;
}

void SweepBenchmark::configure_resume(const cli::po::variables_map& v, const runtime::Placement& placement,
                                      const std::string& sizes_option) {
  opt_.resume = v.count("resume") ? v["resume"].as<std::string>() : std::string();
  resumed_rows_.clear();
  job_.excluded.clear();
  job_.excluded_pairs.clear();
  if (v.count("exclude") && opt_.resume.empty())
    throw Error::usage(
        "--exclude: give --resume FILE too (a new sweep leaves a host out of its allocation: srun --exclude)");
  // A resumed run appends to the file it continues: an --output would be left unwritten without a word.
  if (!opt_.resume.empty() && v.count("output"))
    throw Error::usage(fmt::format("--output {}: --resume {} appends to the file it continues; give one of them",
                                   v["output"].as<std::string>(), opt_.resume));
  if (opt_.resume.empty() || placement.me().rank != 0)
    return;  // rank 0 reads it; the others learn the finished pairs in run()
  if (results::read_root_attribute(opt_.resume, "tool") != program())
    throw Error::usage(fmt::format("--resume {}: not a fabric-sweep results file", opt_.resume));
  const auto list = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
      if (!item.empty()) out.push_back(item);
    return out;
  };
  const auto before = list(results::read_root_attribute(opt_.resume, "hosts"));
  const auto in_file = [&](const std::string& h) { return std::find(before.begin(), before.end(), h) != before.end(); };
  const auto left_out = [&](const std::string& host) {
    return std::any_of(job_.excluded.begin(), job_.excluded.end(), [&](const auto& e) { return e.host == host; });
  };
  const auto add = [&](const std::string& host, UntestedReason why) {
    if (!left_out(host)) job_.excluded.push_back({host, why});
  };
  const auto in_job = [&](const std::string& h) {
    return std::find(job_.hosts.begin(), job_.hosts.end(), h) != job_.hosts.end();
  };
  for (const auto& host : list(v.count("exclude") ? v["exclude"].as<std::string>() : std::string())) {
    if (!in_file(host))
      throw Error::usage(fmt::format("--exclude {}: not a host of {} ({})", host, opt_.resume, fmt::join(before, ",")));
    if (in_job(host))
      throw Error::usage(
          fmt::format("--exclude {}: this job runs on it; launch without it (srun --exclude {})", host, host));
    add(host, UntestedReason::excluded);
  }
  // A host the earlier part named hung (a rank of it never started the step the others waited in, or never answered)
  // is left out when the job was launched without it; launched with it (repaired), it takes part again.
  using namespace results;
  const TableSpec failures{
      "failure", "ranks", {key_int("rank"), setting_text("host", 64), setting_int("answered"), setting_int("started")}};
  try {
    const auto answered = failures.handle<std::int64_t>("answered"), started = failures.handle<std::int64_t>("started");
    const auto host = failures.handle<std::string>("host");
    for (const auto& row : read_rows(opt_.resume, failures))
      if ((row.get(answered) == 0 || row.get(started) == 0) && !in_job(row.get(host)))
        add(row.get(host), UntestedReason::hung);
  } catch (const Error&) {
    // a file of an older version: /failure/ranks without "started"; only --exclude leaves hosts out
  }
  for (const auto& host : job_.hosts)
    if (!in_file(host))
      throw Error::usage(
          fmt::format("--resume {}: host {} is not one of its hosts ({}); a resumed sweep runs on the same "
                      "hosts, less any --exclude",
                      opt_.resume, host, fmt::join(before, ",")));
  std::vector<std::string> expected;
  for (const auto& host : before)
    if (!left_out(host)) expected.push_back(host);
  auto job = job_.hosts;
  std::sort(job.begin(), job.end());
  auto want = expected;
  std::sort(want.begin(), want.end());
  if (job != want) {
    std::vector<std::string> missing;
    std::set_difference(want.begin(), want.end(), job.begin(), job.end(), std::back_inserter(missing));
    throw Error::usage(fmt::format(
        "--resume {}: this job lacks {} of its hosts{}; launch on them, or go on without them with --exclude {}",
        opt_.resume, fmt::join(missing, ","),
        job_.excluded.empty() ? "" : fmt::format(" (left out: {})", job_.excluded_text()), fmt::join(missing, ",")));
  }
  resumed_rows_ = read_rows(opt_.resume, tables_.pairs);
  for (const auto& row : resumed_rows_) {
    const auto& metric = row.get(tables_.pair_col.metric);
    if (std::none_of(opt_.metrics.begin(), opt_.metrics.end(), [&](const SweepMetric* m) { return m->name == metric; }))
      throw Error::usage(
          fmt::format("--resume {}: it measured --metric {}; give the same metrics", opt_.resume, metric));
  }
  check_resumed_sizes(sizes_option);
  job_.excluded_pairs = not_measured(resumed_rows_, tables_.pair_col, job_.excluded, before);
}

// The message sizes the file's pairs were measured with, against this run's: a resume with other --sizes appended
// 1 MiB rows to a file of 64 KiB ones and ended "complete". Files written before bw_bytes/lat_bytes were root
// attributes are checked by their p2p rows (each row's bytes is its message).
void SweepBenchmark::check_resumed_sizes(const std::string& sizes_option) const {
  const auto refuse = [&](const std::string& option, double file, std::uint64_t given) {
    throw Error::usage(
        fmt::format("--resume {}: its pairs were measured with {} {:.0f} (bytes) and this run gives {}; "
                    "resume with the same {}",
                    opt_.resume, option, file, given, option));
  };
  const double bw = results::read_root_number(opt_.resume, "bw_bytes");
  const double lat = results::read_root_number(opt_.resume, "lat_bytes");
  if (!std::isnan(bw) && bw != static_cast<double>(opt_.bw_bytes)) refuse(sizes_option, bw, opt_.bw_bytes);
  if (!std::isnan(lat) && lat != static_cast<double>(opt_.lat_bytes)) refuse("--lat-bytes", lat, opt_.lat_bytes);
  if (!std::isnan(bw) && !std::isnan(lat)) return;
  for (const auto& row : resumed_rows_) {
    const auto m = std::find_if(opt_.metrics.begin(), opt_.metrics.end(),
                                [&](const SweepMetric* x) { return x->name == row.get(tables_.pair_col.metric); });
    if (m == opt_.metrics.end() || (*m)->family != MetricFamily::p2p) continue;
    const bool latency = (*m)->p2p().ping_pong();
    const auto given = latency ? opt_.lat_bytes : opt_.bw_bytes;
    const auto file = static_cast<double>(row.get(tables_.pair_col.bytes));
    if (file != static_cast<double>(given)) refuse(latency ? "--lat-bytes" : sizes_option, file, given);
  }
}

void SweepBenchmark::configure_budget(const cli::po::variables_map& v) {
  double budget = 0;
  opt_.budget_given.clear();
  if (v.count("budget")) {
    opt_.budget_given = v["budget"].as<std::string>();
    budget = cli::parse_duration(opt_.budget_given, "--budget");
    if (!(budget > 0))
      throw Error::usage(fmt::format("--budget {}: give a time above 0 (15m, 1h, 90s)", opt_.budget_given));
  }
  if ((v.count("hosts") || v.count("hostfile")) && !opt_.dry_run)
    throw Error::usage("--hosts/--hostfile plan for hosts other than the job's: give --dry-run too");
  // A round runs each metric's pair test (both directions where it has two) on every pair at once.
  double estimate = 0;
  if (v.count("pair-time-estimate")) {
    estimate = cli::parse_duration(v["pair-time-estimate"].as<std::string>(), "--pair-time-estimate");
    if (!(estimate > 0))
      throw Error::usage(
          fmt::format("--pair-time-estimate {}: give a time above 0 (3s)", v["pair-time-estimate"].as<std::string>()));
    opt_.estimate_source = "--pair-time-estimate";
  } else {
    const double each = opt_.pair_time_s > 0 ? opt_.pair_time_s : 2.0;
    int tests = 0;
    for (const auto* m : opt_.metrics) tests += m->directions();
    estimate = each * tests;
    opt_.estimate_source = fmt::format(
        "{} per metric and direction{}: a guess until rounds are measured; "
        "--pair-time-estimate sets it",
        human_duration(each), opt_.pair_time_s > 0 ? " (--pair-time)" : "");
  }
  budget_ = RoundBudget(budget, estimate);
}

std::string SweepBenchmark::dry_run_answer() const {
  if (!opt_.dry_run) return {};
  if (opt_.adaptive) {
    std::string out = fmt::format(
        "fabric-sweep --dry-run: {} hosts{}, plan adaptive: its rounds are chosen from the results as it goes, so no "
        "plan exists before them (the simulator, tests/sim, judged every host in 7-8 rounds on average, 33 at most, at "
        "256 to 4096 hosts x 8 rails; docs/fabric-sweep.md); estimated {} per round ({})\n",
        job_.hosts.size(), opt_.rails > 1 ? fmt::format(" x {} rails", opt_.rails) : "",
        human_duration(budget_.round_estimate_s()), opt_.estimate_source);
    if (budget_.limited()) {  // after judging, the rest of the budget goes to pairs never tested
      const long long n = static_cast<long long>(job_.hosts.size()), all = n * (n - 1) / 2;
      const long long fit = budget_.rounds_that_fit();
      const long long per_round = opt_.duplex_cover() ? n : n / 2;  // duplex: each host leads one pair
      out += fmt::format("--budget {}: about {} rounds fit, room for {} of {} pairs (every host judged first{})\n",
                         opt_.budget_given, fit, std::min(all, fit * per_round), all,
                         opt_.duplex_cover() ? "; then duplex rounds of N pairs" : "");
    }
    return out;
  }
  // Counted, not built (PairSchedule::counted), or counted from the rounds a pairs file or a topology gave.
  const int n = static_cast<int>(job_.hosts.size());
  const auto& schedule = *job_.schedule;
  const auto plan =
      schedule.built() ? PlanSize::of(schedule.rounds(), n, schedule.directed()) : PlanSize::of(schedule.plan(), n);
  const auto run = opt_.sequential ? plan.one_pair_per_round() : plan;
  std::string metrics;
  for (const auto* m : opt_.metrics) metrics += (metrics.empty() ? "" : ", ") + std::string(m->name);
  const auto per_round =
      run.fewest() == run.most() ? fmt::format("{}", run.most()) : fmt::format("{}-{}", run.fewest(), run.most());
  std::string out = fmt::format(
      "fabric-sweep --dry-run: {} hosts{}, plan {}: {} rounds of {} pairs ({} pair tests{}); "
      "metrics: {}\n",
      n, opt_.rails > 1 ? fmt::format(" x {} rails", opt_.rails) : "",
      std::string(schedule.pattern()) + (opt_.sequential ? " (sequential)" : ""), run.rounds(), per_round, run.pairs(),
      opt_.rails > 1 ? fmt::format(", each on {} rails at once", opt_.rails) : "", metrics);
  const double each = budget_.round_estimate_s();
  out += fmt::format("estimated {} per round ({}): {} in all\n", human_duration(each), opt_.estimate_source,
                     human_duration(each * static_cast<double>(run.rounds())));
  // A run holds the plan on every rank, and beside it the rounds it goes through (a copy; one round per pair with
  // --sequential, each listing its resting hosts).
  out += fmt::format("memory: about {} of plan on every rank ({} the schedule, {} the rounds run)\n",
                     binary_bytes(plan.bytes() + run.bytes()), binary_bytes(plan.bytes()), binary_bytes(run.bytes()));
  if (!schedule.built() && plan.pairs() > PairSchedule::max_pairs)
    out += fmt::format(
        "a run refuses this plan: more than {} pair tests ({} of plan); use --plan adaptive (it judges every host in "
        "a few rounds) or quick, or sweep fewer hosts at once\n",
        PairSchedule::max_pairs, binary_bytes(static_cast<double>(PairSchedule::max_pairs) * sizeof(HostPair)));
  if (budget_.limited()) {
    const auto fit = std::min<long long>(budget_.rounds_that_fit(), run.rounds());
    out += fmt::format("--budget {}: {} of {} rounds fit, {} of {} pairs\n", opt_.budget_given, fit, run.rounds(),
                       run.pairs_in_first(fit), run.pairs());
  }
  return out;
}

std::vector<PairRecord> SweepBenchmark::resumed_records(int pass) const {
  const auto index = [](const auto& names, const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (std::string_view(names[i]) == name) return static_cast<std::int32_t>(i);
    return std::int32_t{-1};
  };
  std::vector<std::string> metric_names, directions{"a->b", "b->a", "both"};
  for (const auto* m : opt_.metrics) metric_names.emplace_back(m->name);
  std::vector<PairRecord> out;
  const auto& c = tables_.pair_col;
  for (const auto& row : resumed_rows_) {
    if (pass > 0 ? row.get(c.pass) != pass : row.get(c.kind) != kind_name(RoundKind::sweep))
      continue;  // re-tests run again after the sweep
    auto r = PairRecord::of(static_cast<int>(row.get(c.round)),
                            {index(job_.hosts, row.get(c.host_a)), index(job_.hosts, row.get(c.host_b))},
                            index(metric_names, row.get(c.metric)), index(directions, row.get(c.direction)));
    if (r.a < 0 || r.b < 0 || r.metric < 0 || r.direction < 0) continue;
    r.iterations = static_cast<std::int32_t>(row.get(c.iterations));
    r.bytes = row.get(c.bytes), r.wrong = row.get(c.wrong), r.hung = static_cast<std::int32_t>(row.get(c.hung));
    r.value = row.get(c.value), r.median_us = row.get(c.time_us_median), r.p99_us = row.get(c.time_us_p99);
    r.window = static_cast<std::int32_t>(row.get(c.window)), r.cut = static_cast<std::int32_t>(row.get(c.cut));
    r.rail = static_cast<std::int32_t>(row.get(c.rail));
    // Whose counters grew: the row's sums go to each host it names (to both where both grew; add-on columns).
    std::istringstream grew(row.get(c.counters_host));
    for (std::string host; std::getline(grew, host, ',');)
      for (int end = 0; end < 2; ++end)
        if (index(job_.hosts, host) == (end == 0 ? r.a : r.b)) {
          r.port_errors[end] = row.number("port_errors"), r.nvlink_errors[end] = row.number("nvlink_errors");
        }
    out.push_back(r);
  }
  return out;
}

std::vector<HostPair> SweepBenchmark::finished_pairs() const {
  if (opt_.mesh) return {};  // a mesh's unfinished pass runs again whole
  // A pair is finished when the earlier part wrote every row it owes: one per metric, two for both-direction ones.
  std::size_t owed = 0;
  for (const auto* m : opt_.metrics) owed += static_cast<std::size_t>(m->directions() * opt_.rails);
  std::map<std::pair<int, int>, std::size_t> rows;
  for (const auto& r : resumed_records()) ++rows[std::minmax(r.a, r.b)];
  std::vector<HostPair> out;
  for (const auto& [pair, count] : rows)
    if (count >= owed) out.push_back({pair.first, pair.second});
  return out;
}

}  // namespace fabricbench::tools::sweep
