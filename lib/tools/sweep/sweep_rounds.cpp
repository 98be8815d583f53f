// fabric-sweep's rounds: a pass (the fixed plan's rounds or the adaptive plan's, one at a time, then the re-tests of
// suspect pairs), each round's pair and rail communicators split from the job's, the pair tests of every metric on
// them, and rank 0's gathering of the round's records into rows, the round's cost and the budget's figures.
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
  if (context.is_root() && !mesh_) tally.records = resumed_records();
  if (adaptive_) {
    // Rank 0 asks the plan for each round with every record of this pass; every rank runs what it broadcasts.
    std::optional<AdaptivePlan> plan;
    int adaptive_rounds = 0;  // run in this pass
    AdaptiveOptions options;
    options.cover_pairs = !budget_given_.empty();  // the rest of a --budget tests pairs never tested (links)
    if (context.is_root())
      plan.emplace(n, rails_, topology_ ? &*topology_ : nullptr, metrics, rules_,
                   seed_ + static_cast<std::uint64_t>(pass.number - 1), options);
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
  RetestLedger ledger(adaptive_ ? 0 : retest_);  // the adaptive plan confirms slow pairs itself
  while (true) {  // ends: each pass re-tests at least one pair, and each pair at most retest_ times
    std::vector<HostPair> suspects;
    if (context.is_root()) suspects = ledger.due(judge(tally.records, metrics, rules_, fabric()).suspects);
    suspects = context.world.broadcast_array(suspects, 0);
    if (suspects.empty()) break;
    const auto retests = plan_retests(n, suspects);
    tally.add(run_rounds(context, pass, retests, RoundKind::retest, next_round));
    next_round += static_cast<int>(retests.size());
  }
  return tally;
}

std::vector<PairRecord> SweepBenchmark::measure_pair(const app::RunContext& context, const Pass& pass,
                                                     const runtime::Communicator& pair, int round_index,
                                                     const HostPair& hosts, bool host_level) {
  std::vector<PairRecord> out;
  // The first rank of each host reads its links around each metric: the records say on which end they grew.
  const int my_host = host_of_rank_[context.world.rank()];
  for (std::size_t k = 0; k < metrics_.size(); ++k) {
    const auto& m = *metrics_[k];
    if ((rails_ == 1 && on_gpus(m) == host_level) || pass.rests(m)) continue;
    PairTest& test = m.family == MetricFamily::rdma ? *rdma_ : on_gpus(m) ? *coll_ : static_cast<PairTest&>(*p2p_);
    const PairSlot slot{context, pair,  round_index, hosts, rails_ > 1 ? local_rank_ : 0, static_cast<int>(k),
                        m,       hosts_};
    auto [records, grown] = links_.around([&] { return test.run(slot); });
    // A reader whose rank holds no figure of the pair (the b end of a collective) still sends its links' growth.
    if (records.empty() && links_.reads()) records.push_back(slot.record(0));
    if (!records.empty()) {
      // One growth per metric, on its first record only, so that sums over records count it once.
      auto& first = records.front();
      const int end = first.end_of(my_host);
      first.port_errors[end] = grown.port_errors, first.xmit_wait[end] = grown.xmit_wait;
      first.nvlink_errors[end] = grown.nvlink_errors;
    }
    out.insert(out.end(), records.begin(), records.end());
    if (std::any_of(records.begin(), records.end(), [](const PairRecord& r) { return r.hung; }))
      break;  // the pair's other metrics would hang the same way
  }
  return out;
}

RoundTally SweepBenchmark::run_rounds(const app::RunContext& context, const Pass& pass, std::vector<Round> rounds,
                                      RoundKind kind, int first_round) {
  const auto& world = context.world;
  const int me = world.rank(), h = host_of_rank_[me];
  const bool host_leader = context.placement.me().local_rank == 0;
  const bool any_host_level = std::any_of(metrics_.begin(), metrics_.end(), [&](auto* m) { return !on_gpus(*m); });
  // Whether this pass runs collectives (between a mesh's bandwidth passes they rest): then each round prepares them.
  const bool collectives =
      coll_ && std::any_of(metrics_.begin(), metrics_.end(), [&](auto* m) { return on_gpus(*m) && !pass.rests(*m); });
  RoundTally tally;
  if (!adaptive_) rest_hung_hosts(context, {}, rounds, 0);  // hosts that hung in an earlier pass rest in this one too
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
    if (adaptive_ && kind == RoundKind::sweep)  // one round at a time: how many is the plan's answer, not known here
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
    std::vector<PairRecord> mine;
    std::vector<NicTraffic> my_traffic;
    double test_s = 0;                   // this rank's pair tests only (not the splits, waiting or gathering)
    double split_s = 0;                  // this rank's pair (and rail) communicators' splits: setup
    double begin_s = 0, teardown_s = 0;  // the back end's round communicator made (NCCL: split) and released
    const auto clocked = [](double& into, auto&& step) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      into += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const auto split = [&](auto&& make) {
      const auto t0 = std::chrono::steady_clock::now();
      auto comm = make();
      split_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return comm;
    };
    const auto timed = [&](auto&& measure) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = measure();
      test_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      mine.insert(mine.end(), r.begin(), r.end());
    };
    if (schedule_->directed() && kind == RoundKind::sweep) {
      const auto leaders = split([&] { return world.split(host_leader ? 0 : MPI_UNDEFINED, h); });
      if (!leaders.empty()) {
        int to = -1, from = -1;
        for (const auto& p : round.pairs) {
          if (p.a == h) to = p.b;
          if (p.b == h) from = p.a;
        }
        timed([&] { return std::vector<PairRecord>{p2p_->shift(context, leaders, index, h, to, from)}; });
      }
    } else if (rails_ > 1) {
      // Rails: the pair's communicator (every rank of both nodes) split by local rank, as nccl-tests'
      // NCCL_TESTS_SPLIT_MASK does: rail i's two ranks run every metric, all rails at once.
      int k = -1, role = 0;
      for (std::size_t p = 0; p < round.pairs.size(); ++p)
        if (round.pairs[p].a == h || round.pairs[p].b == h)
          k = static_cast<int>(p), role = round.pairs[p].a == h ? 0 : 1;
      const auto pair = split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
      runtime::Communicator rail;
      if (!pair.empty()) rail = split([&] { return pair.split(local_rank_, role); });
      if (p2p_) p2p_->plan_round(world, rail.empty() ? nullptr : &rail);
      // The rail's collective communicator: the pair's and rail's color, in the rail communicator's order.
      if (collectives)
        clocked(begin_s, [&] {
          coll_->begin_round(context, rail.empty() ? nullptr : &rail, rail.empty() ? -1 : k * rails_ + local_rank_,
                             role);
        });
      if (!rail.empty()) {
        if (p2p_) test_s += p2p_->probing_s();
        timed([&] { return measure_rail(context, pass, rail, index, round.pairs[k], my_traffic); });
      }
      if (collectives) clocked(teardown_s, [&] { coll_->end_round(); });
    } else {
      int k = -1, role = 0;
      for (std::size_t p = 0; p < round.pairs.size(); ++p)
        if (round.pairs[p].a == h || round.pairs[p].b == h) {
          k = static_cast<int>(p);
          role = round.pairs[p].a == h ? 0 : 1;
        }
      if (any_host_level) {  // one rank per node
        const auto pair = split([&] { return world.split(k >= 0 && host_leader ? k : MPI_UNDEFINED, role); });
        if (p2p_) p2p_->plan_round(world, pair.empty() ? nullptr : &pair);
        if (!pair.empty()) {
          if (p2p_) test_s += p2p_->probing_s();  // the probes are link time, part of the pair's test
          timed([&] { return measure_pair(context, pass, pair, index, round.pairs[k], true); });
        }
      }
      if (coll_) {  // every rank of both nodes
        const auto pair = split([&] { return world.split(k >= 0 ? k : MPI_UNDEFINED, role * world.size() + me); });
        // The same color and key for the back end's own communicator (NCCL: split from one parent, collective).
        if (collectives)
          clocked(begin_s,
                  [&] { coll_->begin_round(context, pair.empty() ? nullptr : &pair, k, role * world.size() + me); });
        if (!pair.empty()) timed([&] { return measure_pair(context, pass, pair, index, round.pairs[k], false); });
        clocked(teardown_s, [&] { coll_->end_round(); });
      }
    }
    for (auto& r : mine) r.test_s = test_s;
    if (!mine.empty()) mine.front().setup_s += split_s;  // the splits are the pair's, paid once
    context.doing("waiting for the round's other pairs");
    double wait_s = 0;
    clocked(wait_s, [&] { runtime::idle_barrier(world.get()); });
    const auto report_start = std::chrono::steady_clock::now();
    context.measured();
    std::vector<PairRecord> records;
    for (const auto& theirs : world.gather_arrays(mine, 0)) records.insert(records.end(), theirs.begin(), theirs.end());
    std::vector<NicTraffic> traffic;
    if (rails_ > 1)
      for (const auto& theirs : world.gather_arrays(my_traffic, 0))
        traffic.insert(traffic.end(), theirs.begin(), theirs.end());
    if (context.is_root()) {
      std::vector<results::Row> rows;
      for (const auto& t : traffic)
        rows.push_back(results::Row(traffic_table_)
                           .set(traffic_col_.round, std::int64_t(t.round))
                           .set(traffic_col_.host, hosts_[t.host])
                           .set(traffic_col_.rail, std::int64_t(t.rail))
                           .set(traffic_col_.nic, nics_.counters()[static_cast<std::size_t>(t.host * rails_ + t.rail)])
                           .set(traffic_col_.bytes, t.bytes)
                           .set(traffic_col_.payload, t.payload));
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
          results::Row(rounds_table_)
              .set(round_col_.pass, pass.number)
              .set(round_col_.round, std::int64_t(index))
              .set(round_col_.kind, std::string(kind_name(kind)))
              .set(round_col_.pairs, std::int64_t(round.pairs.size()))
              .set(round_col_.wall_s, wall)
              .set(round_col_.longest_test_s, longest)
              .set(round_col_.overhead_s, wall - longest)
              .set(round_col_.setup_s, setup)
              .set(round_col_.r0_split_s, split_s + begin_s)
              .set(round_col_.r0_test_s, test_s)
              .set(round_col_.r0_teardown_s, teardown_s)
              .set(round_col_.r0_wait_s, wait_s)
              .set(round_col_.r0_report_s,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - report_start).count()));
      tally.setup_longest_s += setup, tally.test_longest_s += longest;
    }
    if (!adaptive_) rest_hung_hosts(context, tally.records, rounds, i + 1);  // the adaptive plan splits a hung pair
  }
  return tally;
}

}  // namespace fabricbench::sweep
