// fabric-sweep's rank-0 side: the run's opening notes and tables, merging what both ends of a pair measured
// into the pair rows, and writing what the judge returns (matrices, per-node medians, verdicts, notes on the terminal).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "fabricbench/timing/sample_stats.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {
namespace {

// NaN + x = x where only one end had the counter: NaN stays only where neither had it.
void add(double& into, double more) {
  if (std::isnan(more)) return;
  into = std::isnan(into) ? more : into + more;
}

// Rank 0's view of a metric's value against the hardware (what stamp_expected writes and the summary counts).
// A collective pair test over GPU links is held against the healthy curve of its op for its communicator's ranks
// (both nodes' ranks; with rails, one rank of each node).
facts::Reference reference_of(const app::RunContext& context, const SweepMetric& m, const std::string& a,
                              const std::string& b, int ranks_per_host, bool nccl, int rails, std::int64_t bytes) {
  if (m.collective())
    return context.expected.at_size(context.expected.per_rank({a, b}, ranks_per_host, nccl), m.op().name,
                                    rails > 1 ? 2 : 2 * ranks_per_host, static_cast<std::uint64_t>(bytes));
  auto ref = context.expected.stream(a, b, false);
  return m.family == MetricFamily::p2p && m.p2p().directions == 2 ? ref.scaled(2, "both directions of") : ref;
}

}  // namespace

void SweepBenchmark::write_start(const app::RunContext& context, const std::vector<Round>& rounds,
                                 std::size_t skipped) {
  const int n = static_cast<int>(hosts_.size());
  if (!opt_.resume.empty())
    context.out->note(fmt::format("resuming {}: {} pairs finished before are skipped", opt_.resume, skipped));
  std::string metrics;
  for (const auto* m : opt_.metrics) metrics += (metrics.empty() ? "" : ", ") + std::string(m->name);
  context.out->note(fmt::format(
      "{} hosts{}, pattern {}{}, {}; metrics: {}; bandwidth message {} B, latency {} B", n,
      opt_.rails > 1 ? fmt::format(" x {} rails", opt_.rails) : "", schedule_->pattern(),
      opt_.sequential ? " (sequential)" : "",
      opt_.adaptive ? std::string("rounds chosen from the results") : fmt::format("{} rounds", rounds.size()), metrics,
      opt_.bw_bytes, opt_.lat_bytes));
  context.out->declare(tables_.schedule);
  context.out->declare(tables_.rounds);
  if (opt_.rails > 1) {
    context.out->declare(tables_.traffic);
    context.out->attribute("rails", opt_.rails);
  }
  for (std::size_t r = 0; opt_.resume.empty() && r < rounds.size(); ++r)
    for (const auto& p : rounds[r].pairs)
      context.out->row(results::Row(tables_.schedule)
                           .set(tables_.schedule_col.round, std::int64_t(r))
                           .set(tables_.schedule_col.kind, std::string(kind_name(RoundKind::sweep)))
                           .set(tables_.schedule_col.host_a, hosts_[p.a])
                           .set(tables_.schedule_col.host_b, hosts_[p.b]));
  if (!opt_.mesh && n <= 16) {  // a mesh's passes are a line each; its pair rows go to the file only
    std::vector<results::TerminalColumn> columns{{"round"}, {"host_a"}, {"host_b"},       {"metric"}, {"direction"},
                                                 {"value"}, {"unit"},   {"pct_expected"}, {"wrong"}};
    if (opt_.rails > 1) columns.insert(columns.begin() + 3, {"rail"});
    context.out->section(tables_.pairs, "pair tests", columns);
  }
}

void SweepBenchmark::stamp_expected(const app::RunContext& context, results::Row& row, const PairRecord& r) {
  const auto& m = *opt_.metrics[r.metric];
  const double value = facts::ExpectedShare::gbps(r.value, m.value_unit);
  if (std::isnan(value)) return;  // latency metrics
  const auto ref = reference_of(context, m, hosts_[r.a], hosts_[r.b], ranks_per_host_,
                                opt_.backend == ops::BackendKind::nccl, opt_.rails, r.bytes);
  context.expected.stamp(row, value, ref, r.bytes, "");  // its warning line is not printed: one summary at the end
}

std::vector<PairRecord> SweepBenchmark::report_records(const app::RunContext& context, int pass,
                                                       const std::vector<PairRecord>& records, RoundKind kind) {
  std::map<std::tuple<int, int, int, int, int, int>, PairRecord> merged;
  for (const auto& r : records) {
    auto [it, fresh] = merged.emplace(std::make_tuple(r.round, r.a, r.b, r.rail, r.metric, r.direction), r);
    if (fresh) continue;
    auto& m = it->second;
    m.wrong += r.wrong;
    m.hung = std::max(m.hung, r.hung);
    m.setup_s = std::max(m.setup_s, r.setup_s);
    m.measure_s = std::max(m.measure_s, r.measure_s);
    m.payload += r.payload;
    for (int end = 0; end < 2; ++end) {
      add(m.port_errors[end], r.port_errors[end]);
      add(m.xmit_wait[end], r.xmit_wait[end]);
      add(m.nvlink_errors[end], r.nvlink_errors[end]);
    }
    if (std::isnan(m.value) && !std::isnan(r.value)) {  // the leader's figures
      m.value = r.value, m.median_us = r.median_us, m.p99_us = r.p99_us;
      m.iterations = r.iterations, m.window = r.window, m.cut = r.cut, m.bytes = r.bytes;
    }
  }
  std::vector<PairRecord> out;
  std::vector<results::Row> rows;
  for (const auto& [key, r] : merged) {
    const auto& m = *opt_.metrics[r.metric];
    facts::CounterReading grown;
    std::vector<std::string> grew;
    for (int end = 0; end < 2; ++end) {
      grown += {r.port_errors[end], r.xmit_wait[end], r.nvlink_errors[end]};
      if (r.port_errors[end] > 0 || r.nvlink_errors[end] > 0) grew.push_back(hosts_[end == 0 ? r.a : r.b]);
    }
    results::Row row(tables_.pairs);
    row.set(tables_.pair_col.pass, pass)
        .set(tables_.pair_col.round, std::int64_t(r.round))
        .set(tables_.pair_col.kind, std::string(kind_name(kind)))
        .set(tables_.pair_col.host_a, hosts_[r.a])
        .set(tables_.pair_col.host_b, hosts_[r.b]);
    row.set(tables_.pair_col.metric, std::string(m.name))
        .set(tables_.pair_col.direction, std::string(r.direction_name()));
    const auto& nics = nics_of(m);
    const auto nic = [&](int host) {
      const auto i = static_cast<std::size_t>(host * opt_.rails + r.rail);
      return i < nics.size() ? nics[i] : std::string();
    };
    row.set(tables_.pair_col.rail, std::int64_t(r.rail))
        .set(tables_.pair_col.nic_a, nic(r.a))
        .set(tables_.pair_col.nic_b, nic(r.b));
    row.set(tables_.pair_col.bytes, std::int64_t(r.bytes))
        .set(tables_.pair_col.iterations, std::int64_t(r.iterations))
        .set(tables_.pair_col.value, r.value);
    row.set(tables_.pair_col.window, std::int64_t(r.window))
        .set(tables_.pair_col.cut, std::int64_t(r.cut))
        .set(tables_.pair_col.hung, std::int64_t(r.hung));
    row.set(tables_.pair_col.unit, std::string(m.unit))
        .set(tables_.pair_col.time_us_median, r.median_us)
        .set(tables_.pair_col.time_us_p99, r.p99_us);
    row.set(tables_.pair_col.setup_s, r.setup_s).set(tables_.pair_col.measure_s, r.measure_s);
    row.set(tables_.pair_col.wrong, std::int64_t(r.wrong))
        .set(tables_.pair_col.counters_host, fmt::format("{}", fmt::join(grew, ",")));
    facts::set_counters(row, grown);
    stamp_expected(context, row, r);
    rows.push_back(std::move(row));
    out.push_back(r);
  }
  context.out->rows(rows);  // the round's rows in one write and one flush
  return out;
}

void SweepBenchmark::write_judgement(const app::RunContext& context, const std::vector<PairRecord>& records,
                                     const Judgement& judgement, const Coverage& coverage) {
  context.out->declare(tables_.nodes);
  context.out->declare(tables_.verdicts);
  write_nodes(context, judgement);
  write_verdicts(context, judgement);
  note_below_expected(context, records);
  // The last line: the answer. No verdict is a pass only where the plan's every host and pair was tested.
  if (!coverage.complete())
    context.out->note(fmt::format("verdict: NOT A PASS: {}", coverage.text()));
  else if (!judgement.verdicts.empty())
    return;
  else if (coverage.pairs_tested == coverage.hosts_planned * (coverage.hosts_planned - 1) / 2)
    context.out->note(fmt::format("verdict: all {} hosts and their pairs pass", coverage.hosts_planned));
  else
    context.out->note(fmt::format("verdict: all {} hosts pass, in the {} of {} pairs tested", coverage.hosts_planned,
                                  coverage.pairs_tested, coverage.hosts_planned * (coverage.hosts_planned - 1) / 2));
}

void SweepBenchmark::write_nodes(const app::RunContext& context, const Judgement& judgement) {
  const int n = static_cast<int>(hosts_.size());
  for (auto matrix : judgement.matrices) context.out->matrix(std::move(matrix));
  if (n > 16)  // no matrix on the terminal: the worst pairs instead
    for (const auto& w : judgement.worst)
      context.out->note(fmt::format("worst {} pairs: {} - {}{}: {:.4g} {}", opt_.metrics[w.metric]->name, hosts_[w.a],
                                    hosts_[w.b], opt_.rails > 1 ? fmt::format(" rail {}", w.rail) : "", w.value,
                                    opt_.metrics[w.metric]->unit));
  if (opt_.rails > 1) {
    // Per rail: one line per metric, the median of its host medians and its suspect pairs (the terminal's summary
    // instead of N x N per rail).
    for (std::size_t k = 0; k < opt_.metrics.size(); ++k)
      for (int r = 0; r < opt_.rails; ++r) {
        std::vector<double> medians;
        std::int64_t suspect = 0, pairs = 0;
        for (const auto& s : judgement.nodes)
          if (s.metric == static_cast<int>(k) && s.rail == r) {
            if (!std::isnan(s.median)) medians.push_back(s.median);
            suspect += s.suspect_pairs, pairs += s.pairs;
          }
        context.out->note(fmt::format("rail {} {}: median host {:.4g} {}, {} of {} pairs suspect", r,
                                      opt_.metrics[k]->name,
                                      medians.empty() ? NAN : timing::SampleStats::of(medians).median,
                                      opt_.metrics[k]->unit, suspect / 2, pairs / 2));
      }
  }
  if (n * opt_.rails <= 64)
    context.out->section(tables_.nodes, "per-node medians (over the pairs of each node; best of re-tests)",
                         opt_.rails > 1
                             ? std::vector<results::TerminalColumn>{{"host"},
                                                                    {"rail"},
                                                                    {"nic"},
                                                                    {"metric"},
                                                                    {"median"},
                                                                    {"unit"},
                                                                    {"pairs"},
                                                                    {"suspect_pairs"}}
                             : std::vector<results::TerminalColumn>{
                                   {"host"}, {"metric"}, {"median"}, {"unit"}, {"pairs"}, {"suspect_pairs"}});
  else
    context.out->section(tables_.nodes, "", {});  // too many for the terminal: the file has them
  std::vector<results::Row> node_rows;
  for (const auto& s : judgement.nodes)
    node_rows.push_back(results::Row(tables_.nodes)
                            .set(tables_.node_col.host, hosts_[s.host])
                            .set(tables_.node_col.metric, std::string(opt_.metrics[s.metric]->name))
                            .set(tables_.node_col.rail, std::int64_t(s.rail))
                            .set(tables_.node_col.nic,
                                 [&] {
                                   const auto& nics = nics_of(*opt_.metrics[s.metric]);
                                   const auto i = static_cast<std::size_t>(s.host * opt_.rails + s.rail);
                                   return i < nics.size() ? nics[i] : std::string();
                                 }())
                            .set(tables_.node_col.median, s.median)
                            .set(tables_.node_col.unit, std::string(opt_.metrics[s.metric]->unit))
                            .set(tables_.node_col.pairs, s.pairs)
                            .set(tables_.node_col.suspect_pairs, s.suspect_pairs));
  context.out->rows(node_rows);
}

void SweepBenchmark::write_verdicts(const app::RunContext& context, const Judgement& judgement) {
  for (const auto& v : judgement.verdicts) {
    if (v.kind == VerdictKind::data) continue;  // the wrong-data line below says it
    const std::string kind(kind_name(v.kind));
    context.out->row(results::Row(tables_.verdicts)
                         .set(tables_.verdict_col.metric, v.metric)
                         .set(tables_.verdict_col.kind, kind)
                         .set(tables_.verdict_col.host_a, v.a >= 0 ? hosts_[v.a] : std::string())
                         .set(tables_.verdict_col.host_b, v.b >= 0 ? hosts_[v.b] : std::string())
                         .set(tables_.verdict_col.rail, std::int64_t(v.rail))
                         .set(tables_.verdict_col.nic, v.nic)
                         .set(tables_.verdict_col.switch_name, v.switch_name)
                         .set(tables_.verdict_col.reason, v.reason));
    if (v.kind == VerdictKind::untested || v.kind == VerdictKind::noise)  // about the run, not a bad part of the fabric
      context.out->note(fmt::format("VERDICT {}{}{}: {}", kind, v.metric.empty() ? "" : " (" + v.metric + ")",
                                    v.a >= 0 ? " " + hosts_[v.a] : "", v.reason));
    else
      context.out->note(fmt::format("VERDICT bad {} ({}): {}", kind, v.metric, v.reason));
  }
  if (judgement.wrong > 0) context.out->note(fmt::format("{} bytes failed the check", judgement.wrong));
}

void SweepBenchmark::note_below_expected(const app::RunContext& context, const std::vector<PairRecord>& records) {
  // The pair values below the "% of expected" rule: one summary line, with the lowest.
  int below = 0;
  double lowest = INFINITY, threshold = NAN;
  bool healthy_curve = false;
  std::string lowest_text;
  for (const auto& r : records) {
    const auto& m = *opt_.metrics[r.metric];
    const double value = facts::ExpectedShare::gbps(r.value, m.value_unit);
    const auto ref = reference_of(context, m, hosts_[r.a], hosts_[r.b], ranks_per_host_,
                                  opt_.backend == ops::BackendKind::nccl, opt_.rails, r.bytes);
    if (!std::isfinite(value) || !ref.known()) continue;
    const double percent = 100 * value / ref.gbps;
    if (!context.expected.below(percent, static_cast<std::uint64_t>(r.bytes), ref.kind)) continue;
    threshold = context.expected.threshold(ref.kind);
    healthy_curve = ref.kind == facts::Reference::Kind::calibrated;
    ++below;
    if (percent < lowest) {
      lowest = percent;
      lowest_text = fmt::format("{} - {} {} {:.0f}% of {:.2f} GB/s ({})", hosts_[r.a], hosts_[r.b], m.name, percent,
                                ref.gbps, ref.basis);
    }
  }
  if (below > 0) {
    const auto line =
        fmt::format("warning: {} pair value(s) below {:g}% of {}; lowest: {} (configs/expected.ini)", below, threshold,
                    healthy_curve ? "a healthy system's at their size" : "what the hardware should reach", lowest_text);
    context.out->note(line);
    if (context.options.quiet) fmt::print(stderr, "{}: {}\n", context.program, line);
  }
}

}  // namespace fabricbench::sweep
