// fabric-sweep's pass loop (pass_loop.hpp): the passes, each pass's rounds (fixed, adaptive, re-tests), the budget
// asked before each round, the hosts that rest after a hung pair, and the wait between a mesh's passes.
#include "fabricbench/tools/sweep/pass_loop.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <thread>

#include "fabricbench/sweep/adaptive_plan.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

PassLoop::Done PassLoop::run(const std::vector<Round>& rounds, int first_pass, int first_round,
                             const std::vector<PairRecord>& resumed) {
  Done done;
  done.passes = first_pass - 1;
  first_pass = context_.world.broadcast_value(first_pass, 0);
  int next_round = context_.world.broadcast_value(first_round, 0);
  const auto first_start = std::chrono::steady_clock::now();
  if (writer_) writer_->begin_passes();
  for (int number = first_pass;; ++number) {
    const auto planned = first_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(opt_.every_s * (number - first_pass)));
    if (number > first_pass && !wait_for_pass(planned)) break;
    const Pass pass{number, number == first_pass || (number - 1) % opt_.bw_every == 0};
    const auto pass_start = std::chrono::steady_clock::now();
    const auto started = results::utc_timestamp();
    auto tally = run_pass(pass, rounds, opt_.mesh ? std::vector<PairRecord>{} : resumed, next_round);
    done.records = std::move(tally.records);
    const auto traffic = std::move(tally.traffic);  // the data-path check of each pass reads its own rounds
    done.tally.add(tally);  // its counts and cost (its records and traffic are this pass's, above)
    done.passes = number;
    const bool stop = context_.world.all_sum(context_.watchdog.stop_requested() ? 1 : 0) > 0;
    const bool last = stop || (opt_.repeat > 0 && number >= opt_.repeat);
    if (writer_) {
      done.records = judged_records(pass, std::move(done.records));
      done.judgement = judge(done.records, metrics_, opt_.rules, job_.fabric(opt_), traffic, job_.nics.counters());
      done.any_verdict = done.any_verdict || !done.judgement.verdicts.empty();
      if (opt_.mesh)
        writer_->pass(number, tally, untested_, started,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count(),
                      static_cast<std::size_t>(next_round), done.records, done.judgement, last);
    }
    if (last) break;
  }
  done.untested = std::move(untested_);
  return done;
}

std::vector<PairRecord> PassLoop::judged_records(const Pass& pass, std::vector<PairRecord> records) {
  const auto is_bw = [&](const PairRecord& r) {
    return opt_.metrics[static_cast<std::size_t>(r.metric)]->better == results::Better::higher;
  };
  if (pass.bandwidth) {
    last_bw_records_.clear();
    std::copy_if(records.begin(), records.end(), std::back_inserter(last_bw_records_), is_bw);
  } else {  // between bandwidth passes the judge reads the last bandwidth figures beside this pass's latency ones
    records.insert(records.end(), last_bw_records_.begin(), last_bw_records_.end());
  }
  return records;
}

RoundTally PassLoop::run_pass(const Pass& pass, const std::vector<Round>& rounds,
                              const std::vector<PairRecord>& resumed, int& next_round) {
  RoundTally tally;
  if (context_.is_root()) tally.records = resumed;
  if (opt_.adaptive) {
    run_adaptive(pass, tally, next_round);
  } else {
    tally.add(run_rounds(pass, rounds, RoundKind::sweep, next_round));
    next_round += static_cast<int>(rounds.size());
  }
  run_retests(pass, tally, next_round);
  return tally;
}

void PassLoop::run_adaptive(const Pass& pass, RoundTally& tally, int& next_round) {
  const int n = static_cast<int>(job_.hosts.size());
  std::optional<AdaptivePlan> plan;
  int adaptive_rounds = 0;  // run in this pass
  AdaptiveOptions options;
  options.cover_pairs = !opt_.budget_given.empty();  // the rest of a --budget tests pairs never tested (links)
  options.duplex_cover = opt_.duplex_cover();        // N pairs a round instead of N / 2
  if (context_.is_root())
    plan.emplace(n, opt_.rails, opt_.topology ? &*opt_.topology : nullptr, metrics_, opt_.rules,
                 opt_.seed + static_cast<std::uint64_t>(pass.number - 1), options);
  int duplex_rounds = 0;
  while (true) {
    std::vector<HostPair> pairs;
    std::vector<int> duplex{0};
    if (context_.is_root())
      if (const auto round = plan->next(tally.records)) pairs = round->pairs, duplex[0] = round->duplex;
    pairs = context_.world.broadcast_array(pairs, 0);
    duplex = context_.world.broadcast_array(duplex, 0);
    if (pairs.empty()) break;
    auto round = Round::of(n, pairs);
    round.duplex = duplex[0] != 0;
    auto measured = run_rounds(pass, {round}, RoundKind::sweep, next_round++);
    const bool ran = measured.sweep_rounds > 0;
    tally.add(std::move(measured));
    if (!ran) break;  // the budget left it out
    ++adaptive_rounds;
    duplex_rounds += round.duplex;
  }
  if (context_.is_root()) {  // the plan read every record: the loop ends at its answer or at a round not run
    tally.adaptive_pairs_tested = plan->pairs_tested(), tally.adaptive_hosts_judged = plan->state().hosts_judged;
    const auto covering = !plan->state().covering ? std::string()
                          : duplex_rounds == 0
                              ? std::string("; then untested pairs while the budget lasted")
                              : fmt::format(
                                    "; then untested pairs while the budget lasted, {} rounds of them duplex "
                                    "(each host sending to one host while receiving from another)",
                                    duplex_rounds);
    context_.out->note(fmt::format("adaptive plan: {} rounds run, {} of {} hosts judged{}", adaptive_rounds,
                                   plan->state().hosts_judged, n, covering));
  }
}

void PassLoop::run_retests(const Pass& pass, RoundTally& tally, int& next_round) {
  RetestLedger ledger(opt_.adaptive ? 0 : opt_.retest);  // the adaptive plan confirms slow pairs itself
  while (true) {  // ends: each pass re-tests at least one pair, and each pair at most opt_.retest times
    std::vector<HostPair> suspects;
    if (context_.is_root())
      suspects = ledger.due(judge(tally.records, metrics_, opt_.rules, job_.fabric(opt_)).suspects);
    suspects = context_.world.broadcast_array(suspects, 0);
    if (suspects.empty()) break;
    const int hosts = static_cast<int>(job_.hosts.size());
    // --sequential holds for the re-tests too: measured beside another pair, a re-test is judged against a line drawn
    // from pairs measured alone (in a VM of 2 CPUs re-tests two at a time read 13-21 MiB/s against 30-39 alone).
    auto retests = plan_retests(hosts, suspects);
    if (opt_.sequential) retests = Round::one_by_one(hosts, retests);
    tally.add(run_rounds(pass, retests, RoundKind::retest, next_round));
    next_round += static_cast<int>(retests.size());
  }
}

RoundTally PassLoop::run_rounds(const Pass& pass, std::vector<Round> rounds, RoundKind kind, int first_round) {
  RoundTally tally;
  if (!opt_.adaptive) rest_hung_hosts({}, rounds, 0);  // hosts that hung in an earlier pass rest in this one too
  const auto start = std::chrono::steady_clock::now();
  std::size_t pairs_total = 0, pairs_done = 0;
  for (const auto& r : rounds) pairs_total += r.pairs.size();
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const auto& round = rounds[i];
    const int index = first_round + static_cast<int>(i);
    if (round.pairs.empty()) continue;  // every pair of it finished before a --resume, or its hosts rest
    if (!round_fits(rounds, i, kind, first_round)) break;
    if (kind == RoundKind::sweep) ++tally.sweep_rounds;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opt_.adaptive && kind == RoundKind::sweep)  // one round at a time: how many is the plan's answer
      context_.progress(fmt::format("adaptive round {}: {} pairs now", index + 1, round.pairs.size()));
    else
      context_.progress(fmt::format("{} round {} of {}: {} pairs now, {} of {} pairs done, {:.1f} s elapsed{}",
                                    kind_name(kind), i + 1, rounds.size(), round.pairs.size(), pairs_done, pairs_total,
                                    elapsed,
                                    i ? fmt::format(", about {:.1f} s left", elapsed / i * (rounds.size() - i)) : ""));
    pairs_done += round.pairs.size();
    context_.measuring(fmt::format("{} round {} ({} pairs)", kind_name(kind), index, round.pairs.size()),
                       round_timeout_s());
    const auto round_start = std::chrono::steady_clock::now();
    const auto measured = runner_.run(context_, pass, round, index, kind);
    if (writer_) {
      auto written = writer_->round_records(pass.number, kind, measured);
      // Rank 0's round ends once its rows are written: the other ranks wait for it at the next split.
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
      untested_.budget.measured(wall);
      writer_->round_row(pass.number, index, kind, round, wall, written, measured);
      tally.add(std::move(written));
    }
    if (!opt_.adaptive) rest_hung_hosts(tally.records, rounds, i + 1);  // the adaptive plan splits a hung pair
  }
  return tally;
}

bool PassLoop::round_fits(const std::vector<Round>& rounds, std::size_t i, RoundKind kind, int first_round) {
  if (!untested_.budget.limited()) return true;
  std::int64_t fits = 1;
  if (context_.is_root()) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - untested_.started).count();
    fits = untested_.budget.fits(spent) ? 1 : 0;
    if (!fits)
      for (std::size_t j = i; j < rounds.size(); ++j)
        for (const auto& p : rounds[j].pairs)
          untested_.pairs.push_back({first_round + static_cast<int>(j), kind, job_.hosts[static_cast<std::size_t>(p.a)],
                                     job_.hosts[static_cast<std::size_t>(p.b)], UntestedReason::budget});
  }
  return context_.world.broadcast_value(fits, 0) == 1;
}

void PassLoop::rest_hung_hosts(const std::vector<PairRecord>& records, std::vector<Round>& rounds, std::size_t from) {
  auto& resting = untested_.resting;
  std::vector<int> hung;
  if (context_.is_root())
    for (const auto& r : records)
      if (r.hung) hung.insert(hung.end(), {r.a, r.b});
  for (int h : context_.world.broadcast_array(hung, 0))
    if (std::find(resting.begin(), resting.end(), h) == resting.end()) resting.push_back(h);
  if (resting.empty()) return;
  const auto rests = [&](const HostPair& p) {
    return std::find(resting.begin(), resting.end(), p.a) != resting.end() ||
           std::find(resting.begin(), resting.end(), p.b) != resting.end();
  };
  for (std::size_t i = from; i < rounds.size(); ++i)
    rounds[i].pairs.erase(std::remove_if(rounds[i].pairs.begin(), rounds[i].pairs.end(), rests), rounds[i].pairs.end());
}

bool PassLoop::wait_for_pass(std::chrono::steady_clock::time_point when) const {
  const bool root = context_.is_root();
  while (true) {
    const auto left = when - std::chrono::steady_clock::now();
    // {a rank was asked to stop, rank 0 waits on}: MAX over ranks, without spinning between tests.
    int mine[2] = {context_.watchdog.stop_requested() ? 1 : 0, root && left > std::chrono::milliseconds(0) ? 1 : 0};
    int all[2] = {0, 0};
    MPI_Request request;
    MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, context_.world.get(), &request);
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

double PassLoop::round_timeout_s() const {
  // A round holds one bounded test per collective metric (each within --timeout when the back end can abort it):
  // the round's own limit leaves room for all of them before the run ends.
  const double t = context_.options.timeout_s;
  if (t <= 0 || opt_.backend != ops::BackendKind::nccl) return t;
  const auto collectives =
      std::count_if(opt_.metrics.begin(), opt_.metrics.end(), [&](auto* m) { return opt_.on_gpus(*m); });
  return t * static_cast<double>(collectives + 1) + 10;
}

}  // namespace fabricbench::tools::sweep
