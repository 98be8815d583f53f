// fabric-sweep's pass loop, collective over the job: one pass (a mesh's --repeat passes, spaced by --every and
// stopped by a signal), each the fixed plan's rounds or the adaptive plan's (rank 0 asks the plan, every rank runs what
// it broadcasts), then the re-tests of the suspect pairs, each pass judged on rank 0. Each round is asked of the
// budget, measured by the RoundRunner and handed to the rank-0 writer; the loop keeps what a run learns as it goes
// (the hosts resting after a hung pair, the pairs the budget left out, the budget's measured rounds, a mesh's last
// bandwidth figures) and hands it back with the last pass's records and judgement.
#pragma once
#include <chrono>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/tools/sweep/round_runner.hpp"
#include "fabricbench/tools/sweep/sweep_job.hpp"
#include "fabricbench/tools/sweep/sweep_options.hpp"
#include "fabricbench/tools/sweep/sweep_writer.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::JudgedMetric;
using fabricbench::sweep::Judgement;
using fabricbench::sweep::PairRecord;
using fabricbench::sweep::Round;
using fabricbench::sweep::RoundKind;

class PassLoop {
 public:
  // What the passes left.
  struct Done {
    std::vector<PairRecord> records;  // rank 0: the last pass's (between bandwidth passes, with the last bandwidth's)
    Judgement judgement;              // rank 0: of those
    RoundTally tally;                 // every pass's counts and cost
    Untested untested;                // rank 0: what the run left untested, and why
    int passes = 0;                   // rank 0: the last pass run
    bool any_verdict = false;         // rank 0: a verdict in any pass
  };
  // `writer`: rank 0's (null on the other ranks); `untested`: the budget as configured, when the run started, and
  // (rank 0) the pairs a --resume's excluded hosts leave out.
  PassLoop(const app::RunContext& context, const SweepOptions& opt, const SweepJob& job, RoundRunner& runner,
           SweepWriter* writer, std::vector<JudgedMetric> metrics, Untested untested)
      : context_(context),
        opt_(opt),
        job_(job),
        runner_(runner),
        writer_(writer),
        metrics_(std::move(metrics)),
        untested_(std::move(untested)) {}

  // The passes over `rounds` (the fixed plan's, less what a --resume finished), from pass `first_pass` and round
  // number `first_round` (rank 0's: a resumed mesh goes on from the file's); `resumed` (rank 0, a resumed sweep of
  // one pass): the earlier part's records, which its judgement reads with the new ones.
  Done run(const std::vector<Round>& rounds, int first_pass, int first_round, const std::vector<PairRecord>& resumed);

 private:
  // One pass; its tally's records (rank 0) start with `resumed`. Round numbers go on from `next_round`, which it
  // advances.
  RoundTally run_pass(const Pass& pass, const std::vector<Round>& rounds, const std::vector<PairRecord>& resumed,
                      int& next_round);
  // The adaptive plan's rounds, one at a time until it has judged every host (or the budget ends it).
  void run_adaptive(const Pass& pass, RoundTally& tally, int& next_round);
  // The re-tests of the pairs the judge finds suspect in `tally`'s records, each at most --retest times.
  void run_retests(const Pass& pass, RoundTally& tally, int& next_round);
  // Runs the rounds; its tally's records (rank 0) are every record measured, merged per test.
  RoundTally run_rounds(const Pass& pass, std::vector<Round> rounds, RoundKind kind, int first_round);
  // Rank 0: the records a pass is judged on (between a mesh's bandwidth passes, the last bandwidth figures join).
  std::vector<PairRecord> judged_records(const Pass& pass, std::vector<PairRecord> records);
  // Collective, before round `i` of `rounds`: whether it fits the budget. When it does not, rank 0 records its pairs
  // and every later round's as not covered.
  bool round_fits(const std::vector<Round>& rounds, std::size_t i, RoundKind kind, int first_round);
  // After a round: the hosts of every hung pair so far rest; their pairs leave rounds[from...]. Collective.
  void rest_hung_hosts(const std::vector<PairRecord>& records, std::vector<Round>& rounds, std::size_t from);
  // Collective: waits without spinning until `when` on rank 0's clock; false as soon as any rank was asked to stop
  // (a signal: Watchdog::stop_after_signal).
  bool wait_for_pass(std::chrono::steady_clock::time_point when) const;
  double round_timeout_s() const;

  const app::RunContext& context_;
  const SweepOptions& opt_;
  const SweepJob& job_;
  RoundRunner& runner_;
  SweepWriter* writer_;
  std::vector<JudgedMetric> metrics_;
  Untested untested_;
  std::vector<PairRecord> last_bw_records_;  // rank 0: the bandwidth records of the last pass that measured them
};

}  // namespace fabricbench::tools::sweep
