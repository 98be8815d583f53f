// fabric-sweep's continuous mesh (--repeat N --every D): the options, the wait between passes (collective, without
// spinning, cut short by a stop request), and rank 0's record of each pass: its /sweep/passes row, its change
// verdicts (sweep::MeshHistory) as /sweep/changes rows and lines, and the Prometheus file rewritten whole.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include "fabricbench/results/hdf5_reader.hpp"
#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {
namespace {

// A value in the metric's unit in Prometheus' base unit, and the figure's name (as fabric-report metrics has them).
struct BaseUnit {
  double factor;  // multiply; negative: divide by its absolute value
  const char* figure;
};
BaseUnit base_unit(const std::string& unit) {
  if (unit == "us") return {-1e6, "latency_seconds"};
  if (unit == "MB/s") return {1e6, "bandwidth_bytes_per_second"};
  if (unit == "GB/s") return {1e9, "bandwidth_bytes_per_second"};
  if (unit == "MiB/s") return {1048576.0, "bandwidth_bytes_per_second"};
  return {1, "value"};
}
double to_base(double value, const BaseUnit& u) { return u.factor < 0 ? value / -u.factor : value * u.factor; }

// "2026-11-24T14:02:30Z" as seconds since the epoch; NaN where unreadable.
double epoch_of(const std::string& utc) {
  std::tm tm{};
  if (!strptime(utc.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return NAN;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

void SweepBenchmark::configure_mesh(const cli::po::variables_map& v, bool root) {
  opt_.mesh = v.count("repeat") > 0;
  opt_.repeat = 1;
  opt_.every_s = 0;
  first_pass_ = 1;
  first_round_ = 0;
  changes_ = 0;
  opt_.prometheus = v.count("prometheus") ? v["prometheus"].as<std::string>() : std::string();
  if (opt_.mesh) {
    const auto repeat = v["repeat"].as<long long>();
    cli::require_in_range("--repeat", repeat, 0, 1000000);
    opt_.repeat = static_cast<int>(repeat);
    if (v.count("budget"))
      throw Error::usage(
          "--budget caps one sweep; with --repeat each pass is the whole plan: give --every, or a --plan "
          "that fits (quick, --pairs-file)");
  }
  opt_.bw_every = 1;
  last_bw_records_.clear();
  if (v.count("bw-every")) {
    if (!opt_.mesh)
      throw Error::usage("--bw-every: give --repeat N too (it spaces the bandwidth metrics over the passes)");
    const auto k = v["bw-every"].as<long long>();
    cli::require_in_range("--bw-every", k, 1, 1000000);
    opt_.bw_every = static_cast<int>(k);
    const auto higher = [](const SweepMetric* m) { return m->better == results::Better::higher; };
    if (opt_.bw_every > 1 && (std::all_of(opt_.metrics.begin(), opt_.metrics.end(), higher) ||
                              std::none_of(opt_.metrics.begin(), opt_.metrics.end(), higher)))
      throw Error::usage(
          fmt::format("--bw-every {}: give --metric with a latency metric (p2p_latency, rdma_lat) and a "
                      "bandwidth one, e.g. p2p_latency,p2p_bw",
                      opt_.bw_every));
  }
  if (v.count("every")) {
    if (!opt_.mesh) throw Error::usage("--every: give --repeat N too (the passes it spaces; 0: until stopped)");
    opt_.every_s = cli::parse_duration(v["every"].as<std::string>(), "--every", true);  // 0, 0s ...: no wait
  }
  if (!opt_.prometheus.empty()) {
    const auto folder = std::filesystem::path(opt_.prometheus).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder))
      throw Error::usage(
          fmt::format("--prometheus {}: the folder {} does not exist", opt_.prometheus, folder.string()));
    if (std::filesystem::path(opt_.prometheus).extension() != ".prom")
      throw Error::usage(
          fmt::format("--prometheus {}: give a file ending in .prom (node_exporter's textfile collector "
                      "reads *.prom)",
                      opt_.prometheus));
    if (root && !opt_.dry_run) results::Exposition::check_writable(opt_.prometheus);  // rank 0 writes it
  }
  if (opt_.resume.empty() || opt_.dry_run || !root) return;  // rank 0 reads the file; run() tells the others
  const bool is_mesh = results::has_table(opt_.resume, tables_.passes);  // declared by a mesh's start, rows or not
  if (is_mesh != opt_.mesh)
    throw Error::usage(
        is_mesh ? fmt::format("--resume {}: a mesh (--repeat); give --repeat (the passes in all) to go on", opt_.resume)
                : fmt::format("--resume {}: a sweep of one pass; resume it without --repeat", opt_.resume));
  if (!opt_.mesh) return;
  for (const auto& row : results::read_rows(opt_.resume, tables_.passes))
    first_pass_ = std::max(first_pass_, static_cast<int>(std::get<std::int64_t>(row.get("pass"))) + 1);
  for (const auto& row : resumed_rows_)
    first_round_ = std::max(first_round_, static_cast<int>(std::get<std::int64_t>(row.get("round"))) + 1);
  if (opt_.repeat > 0 && first_pass_ > opt_.repeat)
    throw Error::usage(fmt::format("--resume {}: its {} passes are done; ask for more with --repeat {} or 0",
                                   opt_.resume, first_pass_ - 1, first_pass_));
}

bool SweepBenchmark::wait_for_pass(const app::RunContext& context, std::chrono::steady_clock::time_point when) const {
  const bool root = context.is_root();
  while (true) {
    const auto left = when - std::chrono::steady_clock::now();
    // {a rank was asked to stop, rank 0 waits on}: MAX over ranks, without spinning between tests.
    int mine[2] = {context.watchdog.stop_requested() ? 1 : 0, root && left > std::chrono::milliseconds(0) ? 1 : 0};
    int all[2] = {0, 0};
    MPI_Request request;
    MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, context.world.get(), &request);
    for (int done = 0; !done;) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (all[0]) return false;
    if (!all[1]) return true;
    // Every rank sleeps about as long, so that the next round of the reduction finds them together.
    std::this_thread::sleep_for(
        root ? std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(200))
             : std::chrono::milliseconds(200));
  }
}

void SweepBenchmark::write_pass(const app::RunContext& context, int pass, const RoundTally& tally,
                                const std::string& started, double wall_s, std::size_t rounds,
                                const std::vector<PairRecord>& records, const Judgement& judgement, bool last) {
  const auto changes = mesh_history_->add(pass, started, judgement);
  changes_ += static_cast<std::int64_t>(changes.size());
  std::vector<results::Row> rows;
  for (const auto& c : changes) {
    const auto& v = c.verdict;
    rows.push_back(results::Row(tables_.changes)
                       .set(tables_.change_col.pass, pass)
                       .set(tables_.change_col.started, started)
                       .set(tables_.change_col.change, std::string(c.recovered ? "recovered" : "new"))
                       .set(tables_.change_col.kind, std::string(kind_name(v.kind)))
                       .set(tables_.change_col.metric, v.metric)
                       .set(tables_.change_col.host_a, v.a >= 0 ? hosts_[v.a] : std::string())
                       .set(tables_.change_col.host_b, v.b >= 0 ? hosts_[v.b] : std::string())
                       .set(tables_.change_col.rail, std::int64_t(v.rail))
                       .set(tables_.change_col.nic, v.nic)
                       .set(tables_.change_col.switch_name, v.switch_name)
                       .set(tables_.change_col.before, c.before)
                       .set(tables_.change_col.after, c.after)
                       .set(tables_.change_col.unit, c.unit)
                       .set(tables_.change_col.text, c.text));
  }
  std::set<std::pair<int, int>> tested;
  for (const auto& r : records) tested.insert(std::minmax(r.a, r.b));
  const auto pairs = static_cast<std::int64_t>(tested.size());
  const double start_s = std::isnan(mesh_start_epoch_) ? 0 : epoch_of(started) - mesh_start_epoch_;
  rows.push_back(results::Row(tables_.passes)
                     .set(tables_.pass_col.pass, pass)
                     .set(tables_.pass_col.started, started)
                     .set(tables_.pass_col.start_s, start_s)
                     .set(tables_.pass_col.wall_s, wall_s)
                     .set(tables_.pass_col.rounds, std::int64_t(rounds))
                     .set(tables_.pass_col.pairs, pairs)
                     .set(tables_.pass_col.verdicts, std::int64_t(judgement.verdicts.size()))
                     .set(tables_.pass_col.changes, std::int64_t(changes.size())));
  context.out->rows(rows);
  std::string summary;
  for (std::size_t k = 0; k < opt_.metrics.size(); ++k) {
    std::vector<double> medians;
    for (const auto& s : judgement.nodes)
      if (s.metric == static_cast<int>(k) && !std::isnan(s.median)) medians.push_back(s.median);
    std::sort(medians.begin(), medians.end());
    if (!medians.empty())
      summary += fmt::format("; {} median host {:.4g} {}", opt_.metrics[k]->name, medians[medians.size() / 2],
                             opt_.metrics[k]->unit);
  }
  context.out->note(fmt::format("pass {}{} at {}: {} pairs in {:.2f} s{}; {}", pass,
                                opt_.repeat > 0 ? fmt::format(" of {}", opt_.repeat) : "", started, pairs, wall_s,
                                summary,
                                judgement.verdicts.empty() ? std::string("no verdict")
                                                           : fmt::format("{} verdict(s)", judgement.verdicts.size())));
  for (const auto& c : changes) context.out->note("CHANGE " + c.text);
  if (!opt_.prometheus.empty()) write_prometheus(context, pass, tally, started, records, judgement, last);
  std::fflush(stdout);  // a watcher of the terminal (or a test) sees each pass as it ends
}

void SweepBenchmark::write_prometheus(const app::RunContext& context, int pass, const RoundTally& tally,
                                      const std::string& started, const std::vector<PairRecord>& records,
                                      const Judgement& judgement, bool last) const {
  results::Exposition e(program());
  std::string hosts;
  for (const auto& h : hosts_) hosts += (hosts.empty() ? "" : ",") + h;
  const std::string status = last ? "complete" : "running";
  e.add(
      "run_info", "the run: version, hosts, file and full status, value 1",
      {{"tool_version", FABRICBENCH_VERSION},
       {"hosts", hosts},
       {"file", std::filesystem::path(opt_.resume.empty() ? context.options.output : opt_.resume).filename().string()},
       {"status", status}},
      1);
  for (const char* s : {"complete", "failed", "running"})
    e.add("run_status", "the run's status: 1 for complete, failed or running, 0 for the others", {{"status", s}},
          status == s ? 1 : 0);
  e.add("run_start_timestamp_seconds", "when the run started (Unix time)", {}, mesh_start_epoch_);
  e.add("run_hosts", "hosts of the run", {}, static_cast<double>(hosts_.size()));
  e.add("sweep_pass", "fabric-sweep --repeat: the pass these figures are from (from 1)", {}, pass);
  e.add("sweep_passes_requested", "fabric-sweep --repeat: the passes asked for (0: until stopped)", {}, opt_.repeat);
  e.add("sweep_pass_start_timestamp_seconds", "fabric-sweep --repeat: when this pass started (Unix time)", {},
        epoch_of(started));
  e.add("sweep_changes", "fabric-sweep --repeat: change verdicts so far (a verdict that appeared or went)", {},
        static_cast<double>(changes_));
  for (const auto& r : records) {  // in the order measured: a re-test replaces the sweep's figure
    if (std::isnan(r.value)) continue;
    const auto& m = *opt_.metrics[static_cast<std::size_t>(r.metric)];
    const auto unit = base_unit(std::string(m.unit));
    const auto& nics = nics_of(m);
    const auto nic = [&](int host) {
      const auto i = static_cast<std::size_t>(host * opt_.rails + r.rail);
      return i < nics.size() ? nics[i] : std::string();
    };
    e.add(fmt::format("sweep_pair_{}", unit.figure),
          fmt::format("fabric-sweep: a node pair's {} (/sweep/pairs value), the last measured (a re-test replaces the "
                      "sweep's row)",
                      std::string(unit.figure).substr(0, std::string(unit.figure).find('_'))),
          {{"metric", std::string(m.name)},
           {"host_a", hosts_[r.a]},
           {"host_b", hosts_[r.b]},
           {"direction", r.direction_name()},
           {"bytes", std::to_string(r.bytes)},
           {"rail", std::to_string(r.rail)},
           {"nic_a", nic(r.a)},
           {"nic_b", nic(r.b)}},
          to_base(r.value, unit));
  }
  for (const auto& s : judgement.nodes) {
    const auto& m = *opt_.metrics[static_cast<std::size_t>(s.metric)];
    const auto unit = base_unit(std::string(m.unit));
    const auto& nics = nics_of(m);
    const auto i = static_cast<std::size_t>(s.host * opt_.rails + s.rail);
    const results::Exposition::Labels labels{{"metric", std::string(m.name)},
                                             {"host", hosts_[s.host]},
                                             {"rail", std::to_string(s.rail)},
                                             {"nic", i < nics.size() ? nics[i] : ""}};
    e.add(fmt::format("sweep_node_median_{}", unit.figure),
          fmt::format("fabric-sweep: the median {} of a node's pairs (/sweep/nodes), best of re-tests",
                      std::string(unit.figure).substr(0, std::string(unit.figure).find('_'))),
          labels, to_base(s.median, unit));
    e.add("sweep_node_suspect_pairs", "fabric-sweep: a node's pairs below the rules", labels,
          static_cast<double>(s.suspect_pairs));
  }
  const auto coverage = coverage_of(records, tally);  // a pass that tested less than asked is not a pass
  e.add("sweep_hosts_planned", "fabric-sweep: hosts the plan asked to test", {},
        static_cast<double>(coverage.hosts_planned));
  e.add("sweep_hosts_tested", "fabric-sweep: hosts a pair test measured", {},
        static_cast<double>(coverage.hosts_tested));
  e.add("sweep_pairs_planned", "fabric-sweep: host pairs the plan asked for", {},
        static_cast<double>(coverage.pairs_planned));
  e.add("sweep_pairs_tested", "fabric-sweep: host pairs measured", {}, static_cast<double>(coverage.pairs_tested));
  e.add("sweep_coverage_complete", "fabric-sweep: 1 when every host and pair asked for was tested, else 0 (not a pass)",
        {}, coverage.complete() ? 1 : 0);
  std::int64_t verdicts = 0;
  for (const auto& v : judgement.verdicts) verdicts += v.kind != VerdictKind::data;
  e.add("sweep_verdicts", "fabric-sweep: how many verdicts the run gave (0: nothing wrong)", {},
        static_cast<double>(verdicts));
  for (const auto& v : judgement.verdicts) {
    if (v.kind == VerdictKind::data) continue;
    e.add("sweep_verdict",
          "fabric-sweep: one verdict (kind node, link, pair, hung, nic, switch, uplink, path ...; "
          "host and peer; rail, nic and switch where it has them; the reason), value 1",
          {{"kind", std::string(kind_name(v.kind))},
           {"metric", v.metric},
           {"host", v.a >= 0 ? hosts_[v.a] : ""},
           {"peer", v.b >= 0 ? hosts_[v.b] : ""},
           {"rail", v.rail >= 0 ? std::to_string(v.rail) : ""},
           {"nic", v.nic},
           {"switch", v.switch_name},
           {"reason", v.reason}},
          1);
  }
  try {
    e.write(opt_.prometheus);
  } catch (const Error& err) {  // a full disk or a removed folder: said, and the mesh goes on
    context.out->note(std::string("warning: ") + err.what());
    fmt::print(stderr, "{}: warning: {}\n", context.program, err.what());
  }
}

}  // namespace fabricbench::sweep
