// fabric-sweep's rank-0 writer (sweep_writer.hpp), as the run goes: the opening notes and tables, and after each round
// its NIC traffic, its pair rows (both ends of a test merged, each held against what the hardware should reach) and its
// cost. The end of the run: sweep_writer_end.cpp; a mesh's passes and the Prometheus file: sweep_writer_mesh.cpp.
#include "fabricbench/tools/sweep/sweep_writer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
namespace {

// NaN + x = x where only one end had the counter: NaN stays only where neither had it.
void add(double& into, double more) {
  if (std::isnan(more)) return;
  into = std::isnan(into) ? more : into + more;
}

// Both ends' records of each test as one (value from the leader, wrong bytes and each end's counters from both).
std::vector<PairRecord> merged(const std::vector<PairRecord>& records) {
  std::map<std::tuple<int, int, int, int, int, int>, PairRecord> by_test;
  for (const auto& r : records) {
    auto [it, fresh] = by_test.emplace(std::make_tuple(r.round, r.a, r.b, r.rail, r.metric, r.direction), r);
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
  for (auto& [key, r] : by_test) out.push_back(std::move(r));
  return out;
}

}  // namespace

void SweepWriter::start(const std::vector<Round>& rounds, std::size_t skipped) {
  const int n = static_cast<int>(job_.hosts.size());
  rounds_planned_ =
      static_cast<int>(std::count_if(rounds.begin(), rounds.end(), [](const Round& r) { return !r.pairs.empty(); }));
  if (!opt_.resume.empty())
    context_.out->note(fmt::format("resuming {}: {} pairs finished before are skipped", opt_.resume, skipped));
  if (opt_.resume.empty()) {  // what a --resume of this file must give again (configure_resume)
    context_.out->attribute("bw_bytes", static_cast<double>(opt_.bw_bytes));
    context_.out->attribute("lat_bytes", static_cast<double>(opt_.lat_bytes));
  }
  std::string metrics;
  for (const auto* m : opt_.metrics) metrics += (metrics.empty() ? "" : ", ") + std::string(m->name);
  context_.out->note(fmt::format(
      "{} hosts{}, pattern {}{}, {}; metrics: {}; bandwidth message {} B, latency {} B", n,
      opt_.rails > 1 ? fmt::format(" x {} rails", opt_.rails) : "", job_.schedule->pattern(),
      opt_.sequential ? " (sequential)" : "",
      opt_.adaptive ? std::string("rounds chosen from the results") : fmt::format("{} rounds", rounds.size()), metrics,
      opt_.bw_bytes, opt_.lat_bytes));
  context_.out->declare(tables_.schedule);
  context_.out->declare(tables_.rounds);
  if (opt_.rails > 1) {
    context_.out->declare(tables_.traffic);
    context_.out->attribute("rails", opt_.rails);
  }
  for (std::size_t r = 0; opt_.resume.empty() && r < rounds.size(); ++r)
    for (const auto& p : rounds[r].pairs)
      context_.out->row(results::Row(tables_.schedule)
                            .set(tables_.schedule_col.round, std::int64_t(r))
                            .set(tables_.schedule_col.kind, std::string(kind_name(RoundKind::sweep)))
                            .set(tables_.schedule_col.host_a, job_.hosts[p.a])
                            .set(tables_.schedule_col.host_b, job_.hosts[p.b]));
  if (!opt_.mesh && n <= 16) {  // a mesh's passes are a line each; its pair rows go to the file only
    std::vector<results::TerminalColumn> columns{{"round"}, {"host_a"}, {"host_b"},       {"metric"}, {"direction"},
                                                 {"value"}, {"unit"},   {"pct_expected"}, {"wrong"}};
    if (opt_.rails > 1) columns.insert(columns.begin() + 3, {"rail"});
    context_.out->section(tables_.pairs, "pair tests", columns);
  }
}

// Rank 0's view of a metric's value against the hardware (what stamp_expected writes and the summary counts).
// A collective pair test over GPU links is held against the healthy curve of its op for its communicator's ranks
// (both nodes' ranks; with rails, one rank of each node).
facts::Reference SweepWriter::reference_of(const PairRecord& r) const {
  const auto& m = *opt_.metrics[r.metric];
  const auto &a = job_.hosts[r.a], &b = job_.hosts[r.b];
  const auto& expected = context_.expected;
  if (m.collective())
    return expected.at_size(expected.per_rank({a, b}, job_.ranks_per_host, opt_.backend == ops::BackendKind::nccl),
                            m.op().name, opt_.rails > 1 ? 2 : 2 * job_.ranks_per_host,
                            static_cast<std::uint64_t>(r.bytes));
  auto ref = expected.stream(a, b, false);
  return m.family == MetricFamily::p2p && m.p2p().directions == 2 ? ref.scaled(2, "both directions of") : ref;
}

void SweepWriter::stamp_expected(results::Row& row, const PairRecord& r) const {
  const double value = facts::ExpectedShare::gbps(r.value, opt_.metrics[r.metric]->value_unit);
  if (std::isnan(value)) return;                                      // latency metrics
  context_.expected.stamp(row, value, reference_of(r), r.bytes, "");  // no warning line: one summary at the end
}

RoundTally SweepWriter::round_records(int pass, RoundKind kind, const RoundRunner::Result& measured) {
  RoundTally tally;
  std::vector<results::Row> rows;
  for (const auto& t : measured.traffic)
    rows.push_back(
        results::Row(tables_.traffic)
            .set(tables_.traffic_col.round, std::int64_t(t.round))
            .set(tables_.traffic_col.host, job_.hosts[t.host])
            .set(tables_.traffic_col.rail, std::int64_t(t.rail))
            .set(tables_.traffic_col.nic, job_.nics.counters()[static_cast<std::size_t>(t.host * opt_.rails + t.rail)])
            .set(tables_.traffic_col.bytes, t.bytes)
            .set(tables_.traffic_col.payload, t.payload));
  context_.out->rows(rows);
  tally.traffic = measured.traffic;
  // The round's longest pair test, and its longest setup of one metric.
  for (const auto& r : measured.records)
    tally.test_longest_s = std::max(tally.test_longest_s, r.test_s),
    tally.setup_longest_s = std::max(tally.setup_longest_s, r.setup_s);
  rows.clear();
  for (const auto& r : merged(measured.records)) {
    const auto& m = *opt_.metrics[r.metric];
    facts::CounterReading grown;
    std::vector<std::string> grew;
    for (int end = 0; end < 2; ++end) {
      grown += {r.port_errors[end], r.xmit_wait[end], r.nvlink_errors[end]};
      if (r.port_errors[end] > 0 || r.nvlink_errors[end] > 0) grew.push_back(job_.hosts[end == 0 ? r.a : r.b]);
    }
    results::Row row(tables_.pairs);
    row.set(tables_.pair_col.pass, pass)
        .set(tables_.pair_col.round, std::int64_t(r.round))
        .set(tables_.pair_col.kind, std::string(kind_name(kind)))
        .set(tables_.pair_col.host_a, job_.hosts[r.a])
        .set(tables_.pair_col.host_b, job_.hosts[r.b]);
    row.set(tables_.pair_col.metric, std::string(m.name))
        .set(tables_.pair_col.direction, std::string(r.direction_name()));
    row.set(tables_.pair_col.rail, std::int64_t(r.rail))
        .set(tables_.pair_col.nic_a, job_.nic_of(opt_, m, r.a, r.rail))
        .set(tables_.pair_col.nic_b, job_.nic_of(opt_, m, r.b, r.rail));
    row.set(tables_.pair_col.bytes, std::int64_t(r.bytes))
        .set(tables_.pair_col.iterations, std::int64_t(r.iterations))
        .set(tables_.pair_col.value, r.value);
    row.set(tables_.pair_col.window, std::int64_t(r.window))
        .set(tables_.pair_col.cut, std::int64_t(r.cut))
        .set(tables_.pair_col.hung, std::int64_t(r.hung));
    row.set(tables_.pair_col.unit, std::string(m.unit()))
        .set(tables_.pair_col.time_us_median, r.median_us)
        .set(tables_.pair_col.time_us_p99, r.p99_us);
    row.set(tables_.pair_col.setup_s, r.setup_s).set(tables_.pair_col.measure_s, r.measure_s);
    row.set(tables_.pair_col.wrong, std::int64_t(r.wrong))
        .set(tables_.pair_col.counters_host, fmt::format("{}", fmt::join(grew, ",")));
    facts::set_counters(row, grown);
    stamp_expected(row, r);
    rows.push_back(std::move(row));
    tally.pair_setup_s += r.setup_s, tally.pair_measure_s += r.measure_s;
    tally.records.push_back(r);
  }
  tally.pair_rows = static_cast<std::int64_t>(rows.size());
  context_.out->rows(rows);  // the round's rows in one write and one flush
  return tally;
}

void SweepWriter::round_row(int pass, int index, RoundKind kind, const Round& plan, double wall_s,
                            const RoundTally& round, const RoundRunner::Result& measured) {
  // The sweep's own cost in this round: everything but its longest pair test (splits, waiting, gathering).
  context_.out->row(
      results::Row(tables_.rounds)
          .set(tables_.round_col.pass, pass)
          .set(tables_.round_col.round, std::int64_t(index))
          .set(tables_.round_col.kind, std::string(kind_name(kind)))
          .set(tables_.round_col.pairs, std::int64_t(plan.pairs.size()))
          .set(tables_.round_col.duplex, std::int64_t(plan.duplex))
          .set(tables_.round_col.wall_s, wall_s)
          .set(tables_.round_col.longest_test_s, round.test_longest_s)
          .set(tables_.round_col.overhead_s, wall_s - round.test_longest_s)
          .set(tables_.round_col.setup_s, round.setup_longest_s)
          .set(tables_.round_col.r0_split_s, measured.split_s + measured.begin_s)
          .set(tables_.round_col.r0_test_s, measured.test_s)
          .set(tables_.round_col.r0_teardown_s, measured.teardown_s)
          .set(tables_.round_col.r0_wait_s, measured.wait_s)
          .set(tables_.round_col.r0_report_s,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - measured.measured_at).count()));
}

}  // namespace fabricbench::tools::sweep
