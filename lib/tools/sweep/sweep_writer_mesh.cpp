// fabric-sweep's rank-0 writer, a mesh's side (--repeat): each pass's /sweep/passes row and its change verdicts
// (sweep::MeshHistory) as /sweep/changes rows and lines, and the Prometheus file rewritten whole (a single sweep's
// once, at the end).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <set>

#include "fabricbench/results/prometheus.hpp"
#include "fabricbench/tools/sweep/sweep_writer.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
namespace {

// A value in the metric's unit in Prometheus' base unit, and the figure's name (as fabric-report metrics has them).
struct BaseUnit {
  double factor;  // multiply; negative: divide by its absolute value
  const char* figure;
};
BaseUnit base_unit(results::Unit unit) {
  switch (unit) {
    case results::Unit::us:
      return {-1e6, "latency_seconds"};
    case results::Unit::mbps:
      return {1e6, "bandwidth_bytes_per_second"};
    case results::Unit::gbps:
      return {1e9, "bandwidth_bytes_per_second"};
    case results::Unit::mibps:
      return {1048576.0, "bandwidth_bytes_per_second"};
    case results::Unit::none:
    case results::Unit::bytes:
    case results::Unit::elements:
    case results::Unit::seconds:
    case results::Unit::gbitps:
    case results::Unit::mega_per_s:
    case results::Unit::percent:
      break;
  }
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

void SweepWriter::start_mesh(const std::vector<JudgedMetric>& metrics, const Judgement* resumed, int resumed_pass) {
  context_.out->declare(tables_.passes);
  context_.out->declare(tables_.changes);
  context_.out->attribute("repeat", static_cast<std::int64_t>(opt_.repeat));
  context_.out->attribute("every_s", opt_.every_s);
  mesh_history_.emplace(metrics, job_.fabric(opt_));
  if (resumed) mesh_history_->add(resumed_pass, "", *resumed);
}

void SweepWriter::pass(int pass, const RoundTally& tally, const Untested& untested, const std::string& started,
                       double wall_s, std::size_t rounds, const std::vector<PairRecord>& records,
                       const Judgement& judgement, bool last) {
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
                       .set(tables_.change_col.host_a, v.a >= 0 ? job_.hosts[v.a] : std::string())
                       .set(tables_.change_col.host_b, v.b >= 0 ? job_.hosts[v.b] : std::string())
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
  context_.out->rows(rows);
  std::string summary;
  for (std::size_t k = 0; k < opt_.metrics.size(); ++k) {
    std::vector<double> medians;
    for (const auto& s : judgement.nodes)
      if (s.metric == static_cast<int>(k) && !std::isnan(s.median)) medians.push_back(s.median);
    std::sort(medians.begin(), medians.end());
    if (!medians.empty())
      summary += fmt::format("; {} median host {:.4g} {}", opt_.metrics[k]->name, medians[medians.size() / 2],
                             opt_.metrics[k]->unit());
  }
  context_.out->note(fmt::format("pass {}{} at {}: {} pairs in {:.2f} s{}; {}", pass,
                                 opt_.repeat > 0 ? fmt::format(" of {}", opt_.repeat) : "", started, pairs, wall_s,
                                 summary,
                                 judgement.verdicts.empty() ? std::string("no verdict")
                                                            : fmt::format("{} verdict(s)", judgement.verdicts.size())));
  for (const auto& c : changes) context_.out->note("CHANGE " + c.text);
  if (!opt_.prometheus.empty()) prometheus(pass, tally, untested, started, records, judgement, last);
  std::fflush(stdout);  // a watcher of the terminal (or a test) sees each pass as it ends
}

void SweepWriter::prometheus(int pass, const RoundTally& tally, const Untested& untested, const std::string& started,
                             const std::vector<PairRecord>& records, const Judgement& judgement, bool last) const {
  results::Exposition e(context_.program);
  std::string hosts;
  for (const auto& h : job_.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  const std::string status = last ? "complete" : "running";
  e.add(
      "run_info", "the run: version, hosts, file and full status, value 1",
      {{"tool_version", FABRICBENCH_VERSION},
       {"hosts", hosts},
       {"file", std::filesystem::path(opt_.resume.empty() ? context_.options.output : opt_.resume).filename().string()},
       {"status", status}},
      1);
  for (const char* s : {"complete", "failed", "running"})
    e.add("run_status", "the run's status: 1 for complete, failed or running, 0 for the others", {{"status", s}},
          status == s ? 1 : 0);
  e.add("run_start_timestamp_seconds", "when the run started (Unix time)", {}, mesh_start_epoch_);
  e.add("run_hosts", "hosts of the run", {}, static_cast<double>(job_.hosts.size()));
  e.add("sweep_pass", "fabric-sweep --repeat: the pass these figures are from (from 1)", {}, pass);
  e.add("sweep_passes_requested", "fabric-sweep --repeat: the passes asked for (0: until stopped)", {}, opt_.repeat);
  e.add("sweep_pass_start_timestamp_seconds", "fabric-sweep --repeat: when this pass started (Unix time)", {},
        epoch_of(started));
  e.add("sweep_changes", "fabric-sweep --repeat: change verdicts so far (a verdict that appeared or went)", {},
        static_cast<double>(changes_));
  prometheus_figures(e, records, judgement);
  prometheus_answer(e, coverage(records, tally, untested), judgement);  // a pass that tested less is not a pass
  try {
    e.write(opt_.prometheus);
  } catch (const Error& err) {  // a full disk or a removed folder: said, and the mesh goes on
    context_.out->note(std::string("warning: ") + err.what());
    fmt::print(stderr, "{}: warning: {}\n", context_.program, err.what());
  }
}

void SweepWriter::prometheus_figures(results::Exposition& e, const std::vector<PairRecord>& records,
                                     const Judgement& judgement) const {
  for (const auto& r : records) {  // in the order measured: a re-test replaces the sweep's figure
    if (std::isnan(r.value)) continue;
    const auto& m = *opt_.metrics[static_cast<std::size_t>(r.metric)];
    const auto unit = base_unit(m.value_unit);
    e.add(fmt::format("sweep_pair_{}", unit.figure),
          fmt::format("fabric-sweep: a node pair's {} (/sweep/pairs value), the last measured (a re-test replaces the "
                      "sweep's row)",
                      std::string(unit.figure).substr(0, std::string(unit.figure).find('_'))),
          {{"metric", std::string(m.name)},
           {"host_a", job_.hosts[r.a]},
           {"host_b", job_.hosts[r.b]},
           {"direction", r.direction_name()},
           {"bytes", std::to_string(r.bytes)},
           {"rail", std::to_string(r.rail)},
           {"nic_a", job_.nic_of(opt_, m, r.a, r.rail)},
           {"nic_b", job_.nic_of(opt_, m, r.b, r.rail)}},
          to_base(r.value, unit));
  }
  for (const auto& s : judgement.nodes) {
    const auto& m = *opt_.metrics[static_cast<std::size_t>(s.metric)];
    const auto unit = base_unit(m.value_unit);
    const results::Exposition::Labels labels{{"metric", std::string(m.name)},
                                             {"host", job_.hosts[s.host]},
                                             {"rail", std::to_string(s.rail)},
                                             {"nic", job_.nic_of(opt_, m, s.host, s.rail)}};
    e.add(fmt::format("sweep_node_median_{}", unit.figure),
          fmt::format("fabric-sweep: the median {} of a node's pairs (/sweep/nodes), best of re-tests",
                      std::string(unit.figure).substr(0, std::string(unit.figure).find('_'))),
          labels, to_base(s.median, unit));
    e.add("sweep_node_suspect_pairs", "fabric-sweep: a node's pairs below the rules", labels,
          static_cast<double>(s.suspect_pairs));
  }
}

void SweepWriter::prometheus_answer(results::Exposition& e, const Coverage& covered, const Judgement& judgement) const {
  e.add("sweep_hosts_planned", "fabric-sweep: hosts the plan asked to test", {},
        static_cast<double>(covered.hosts_planned));
  e.add("sweep_hosts_tested", "fabric-sweep: hosts a pair test measured", {},
        static_cast<double>(covered.hosts_tested));
  e.add("sweep_pairs_planned", "fabric-sweep: host pairs the plan asked for", {},
        static_cast<double>(covered.pairs_planned));
  e.add("sweep_pairs_tested", "fabric-sweep: host pairs measured", {}, static_cast<double>(covered.pairs_tested));
  e.add("sweep_coverage_complete", "fabric-sweep: 1 when every host and pair asked for was tested, else 0 (not a pass)",
        {}, covered.complete() ? 1 : 0);
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
           {"host", v.a >= 0 ? job_.hosts[v.a] : ""},
           {"peer", v.b >= 0 ? job_.hosts[v.b] : ""},
           {"rail", v.rail >= 0 ? std::to_string(v.rail) : ""},
           {"nic", v.nic},
           {"switch", v.switch_name},
           {"reason", v.reason}},
          1);
  }
}

}  // namespace fabricbench::tools::sweep
