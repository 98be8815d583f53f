// fabric-sweep's pass: the fixed plan's rounds or the adaptive plan's (one at a time), then the re-tests of suspect
// pairs; each round asked of the budget, measured by the RoundRunner, and its records written by rank 0 (the pair
// rows, the NIC traffic, the round's cost), all handed back as a RoundTally.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "fabricbench/sweep/adaptive_plan.hpp"
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

namespace fabricbench::sweep {

RoundTally SweepBenchmark::run_pass(const app::RunContext& context, const Pass& pass, const std::vector<Round>& rounds,
                                    const std::vector<JudgedMetric>& metrics, int& next_round) {
  const int n = static_cast<int>(hosts_.size());
  RoundTally tally;
  if (context.is_root() && !opt_.mesh) tally.records = resumed_records();
  if (opt_.adaptive) {
    // Rank 0 asks the plan for each round with every record of this pass; every rank runs what it broadcasts.
    std::optional<AdaptivePlan> plan;
    int adaptive_rounds = 0;  // run in this pass
    AdaptiveOptions options;
    options.cover_pairs = !opt_.budget_given.empty();  // the rest of a --budget tests pairs never tested (links)
    if (context.is_root())
      plan.emplace(n, opt_.rails, opt_.topology ? &*opt_.topology : nullptr, metrics, opt_.rules,
                   opt_.seed + static_cast<std::uint64_t>(pass.number - 1), options);
    while (true) {
      std::vector<HostPair> pairs;
      if (context.is_root())
        if (const auto round = plan->next(tally.records)) pairs = round->pairs;
      pairs = context.world.broadcast_array(pairs, 0);
      if (pairs.empty()) break;
      auto measured = run_rounds(context, pass, {Round::of(n, pairs)}, RoundKind::sweep, next_round++);
      const bool ran = measured.sweep_rounds > 0;
      tally.add(std::move(measured));
      if (!ran) break;  // the budget left it out
      ++adaptive_rounds;
    }
    if (context.is_root()) {  // the plan read every record: the loop ends at its answer or at a round not run
      tally.adaptive_pairs_tested = plan->pairs_tested(), tally.adaptive_hosts_judged = plan->state().hosts_judged;
      context.out->note(fmt::format("adaptive plan: {} rounds run, {} of {} hosts judged{}", adaptive_rounds,
                                    plan->state().hosts_judged, n,
                                    plan->state().covering ? "; then untested pairs while the budget lasted" : ""));
    }
  } else {
    tally.add(run_rounds(context, pass, rounds, RoundKind::sweep, next_round));
    next_round += static_cast<int>(rounds.size());
  }
  RetestLedger ledger(opt_.adaptive ? 0 : opt_.retest);  // the adaptive plan confirms slow pairs itself
  while (true) {  // ends: each pass re-tests at least one pair, and each pair at most opt_.retest times
    std::vector<HostPair> suspects;
    if (context.is_root()) suspects = ledger.due(judge(tally.records, metrics, opt_.rules, fabric()).suspects);
    suspects = context.world.broadcast_array(suspects, 0);
    if (suspects.empty()) break;
    const auto retests = plan_retests(n, suspects);
    tally.add(run_rounds(context, pass, retests, RoundKind::retest, next_round));
    next_round += static_cast<int>(retests.size());
  }
  return tally;
}

RoundTally SweepBenchmark::run_rounds(const app::RunContext& context, const Pass& pass, std::vector<Round> rounds,
                                      RoundKind kind, int first_round) {
  RoundTally tally;
  if (!opt_.adaptive)
    rest_hung_hosts(context, {}, rounds, 0);  // hosts that hung in an earlier pass rest in this one too
  const auto start = std::chrono::steady_clock::now();
  std::size_t pairs_total = 0, pairs_done = 0;
  for (const auto& r : rounds) pairs_total += r.pairs.size();
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const auto& round = rounds[i];
    const int index = first_round + static_cast<int>(i);
    if (round.pairs.empty()) continue;  // every pair of it finished before a --resume, or its hosts rest
    if (!round_fits(context, rounds, i, kind, first_round)) break;
    if (kind == RoundKind::sweep) ++tally.sweep_rounds;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opt_.adaptive &&
        kind == RoundKind::sweep)  // one round at a time: how many is the plan's answer, not known here
      context.progress(fmt::format("adaptive round {}: {} pairs now", index + 1, round.pairs.size()));
    else
      context.progress(fmt::format("{} round {} of {}: {} pairs now, {} of {} pairs done, {:.1f} s elapsed{}",
                                   kind_name(kind), i + 1, rounds.size(), round.pairs.size(), pairs_done, pairs_total,
                                   elapsed,
                                   i ? fmt::format(", about {:.1f} s left", elapsed / i * (rounds.size() - i)) : ""));
    pairs_done += round.pairs.size();
    context.measuring(fmt::format("{} round {} ({} pairs)", kind_name(kind), index, round.pairs.size()),
                      round_timeout_s(context));
    const auto round_start = std::chrono::steady_clock::now();
    auto measured = runner_->run(context, pass, round, index, kind);
    const auto& records = measured.records;
    const auto& traffic = measured.traffic;
    if (context.is_root()) {
      std::vector<results::Row> rows;
      for (const auto& t : traffic)
        rows.push_back(
            results::Row(tables_.traffic)
                .set(tables_.traffic_col.round, std::int64_t(t.round))
                .set(tables_.traffic_col.host, hosts_[t.host])
                .set(tables_.traffic_col.rail, std::int64_t(t.rail))
                .set(tables_.traffic_col.nic, nics_.counters()[static_cast<std::size_t>(t.host * opt_.rails + t.rail)])
                .set(tables_.traffic_col.bytes, t.bytes)
                .set(tables_.traffic_col.payload, t.payload));
      context.out->rows(rows);
      tally.traffic.insert(tally.traffic.end(), traffic.begin(), traffic.end());
      // The sweep's own cost in this round: everything but its longest pair test (splits, waiting, gathering).
      double longest = 0, setup = 0;  // the round's longest pair test, and its longest setup of one metric
      for (const auto& r : records) longest = std::max(longest, r.test_s), setup = std::max(setup, r.setup_s);
      const auto merged = report_records(context, pass.number, records, kind);
      tally.records.insert(tally.records.end(), merged.begin(), merged.end());
      for (const auto& r : merged) tally.pair_setup_s += r.setup_s, tally.pair_measure_s += r.measure_s;
      tally.pair_rows += static_cast<std::int64_t>(merged.size());
      // Rank 0's round ends once its rows are written: the other ranks wait for it at the next split.
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
      budget_.measured(wall);
      context.out->row(
          results::Row(tables_.rounds)
              .set(tables_.round_col.pass, pass.number)
              .set(tables_.round_col.round, std::int64_t(index))
              .set(tables_.round_col.kind, std::string(kind_name(kind)))
              .set(tables_.round_col.pairs, std::int64_t(round.pairs.size()))
              .set(tables_.round_col.wall_s, wall)
              .set(tables_.round_col.longest_test_s, longest)
              .set(tables_.round_col.overhead_s, wall - longest)
              .set(tables_.round_col.setup_s, setup)
              .set(tables_.round_col.r0_split_s, measured.split_s + measured.begin_s)
              .set(tables_.round_col.r0_test_s, measured.test_s)
              .set(tables_.round_col.r0_teardown_s, measured.teardown_s)
              .set(tables_.round_col.r0_wait_s, measured.wait_s)
              .set(tables_.round_col.r0_report_s,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - measured.measured_at).count()));
      tally.setup_longest_s += setup, tally.test_longest_s += longest;
    }
    if (!opt_.adaptive) rest_hung_hosts(context, tally.records, rounds, i + 1);  // the adaptive plan splits a hung pair
  }
  return tally;
}

}  // namespace fabricbench::sweep
