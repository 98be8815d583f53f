// fabric-sweep's rank-0 writer: everything the sweep puts in its file and on the terminal, from the values the pass
// loop hands it. At the start the run's notes and declared tables (the fixed plan's /sweep/schedule); after each round
// the NIC traffic, the pair rows (both ends' records merged, each stamped against what the hardware should reach) and
// the round's cost; after a mesh's pass its /sweep/passes row, its changes and the Prometheus file; at the end the
// switch tree, what was not tested (/sweep/untested, the budget's note), and the judgement (matrices, per-node
// medians, verdicts, the last line's answer). It reads the options, the job and the tables and owns only what a mesh
// keeps between passes: the history its changes are held against.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/sweep/coverage.hpp"
#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/mesh_history.hpp"
#include "fabricbench/sweep/round_budget.hpp"
#include "fabricbench/tools/sweep/round_runner.hpp"
#include "fabricbench/tools/sweep/sweep_job.hpp"
#include "fabricbench/tools/sweep/sweep_options.hpp"
#include "fabricbench/tools/sweep/sweep_tables.hpp"

namespace fabricbench::results {
class Exposition;
}  // namespace fabricbench::results

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::Coverage;
using fabricbench::sweep::JudgedMetric;
using fabricbench::sweep::Judgement;
using fabricbench::sweep::MeshHistory;
using fabricbench::sweep::PairRecord;
using fabricbench::sweep::Round;
using fabricbench::sweep::RoundBudget;
using fabricbench::sweep::RoundKind;

// What a run left untested, as the pass loop hands it over: the pairs (cut by --budget, or of an excluded host), the
// hosts that rested after a hung pair, and the budget with the rounds it measured.
struct Untested {
  std::vector<UntestedPair> pairs;
  std::vector<int> resting;
  RoundBudget budget;
  std::chrono::steady_clock::time_point started;  // --budget counts from here
  bool budget_cut() const;                        // a pair left out by the budget
};

class SweepWriter {
 public:
  SweepWriter(const app::RunContext& context, const SweepOptions& opt, const SweepJob& job, const SweepTables& tables)
      : context_(context), opt_(opt), job_(job), tables_(tables) {}

  // Before the first round: the run's notes (what is swept, what a --resume skips), the tables it declares, the
  // fixed plan's rounds (/sweep/schedule) and, up to 16 hosts, the pair rows' section on the terminal.
  void start(const std::vector<Round>& rounds, std::size_t skipped);
  // A mesh's tables, and the history its changes are held against (`resumed`: a resumed mesh's last pass done,
  // judged, numbered `resumed_pass`).
  void start_mesh(const std::vector<JudgedMetric>& metrics, const Judgement* resumed, int resumed_pass);

  // After a round: its NIC traffic rows and its pair rows (both ends' records merged: value from the leader, wrong
  // bytes and each end's counters from both); returns the merged records, the traffic, and the pair rows' setup and
  // measure sums with the round's longest test and setup.
  RoundTally round_records(int pass, RoundKind kind, const RoundRunner::Result& measured);
  // The round's /sweep/rounds row (`plan`: its pairs and whether it ran duplex): `wall_s` from the round's start to
  // its rows written.
  void round_row(int pass, int index, RoundKind kind, const Round& plan, double wall_s, const RoundTally& round,
                 const RoundRunner::Result& measured);

  // As the first pass starts: the time a mesh's start_s and the Prometheus file's run start count from.
  void begin_passes() { mesh_start_epoch_ = static_cast<double>(std::time(nullptr)); }
  // After a mesh's pass: its /sweep/passes row, its changes (/sweep/changes and one line each), the Prometheus file.
  // `tally`: the pass's rounds (for what an adaptive plan reached); `rounds`: round numbers used so far.
  void pass(int pass, const RoundTally& tally, const Untested& untested, const std::string& started, double wall_s,
            std::size_t rounds, const std::vector<PairRecord>& records, const Judgement& judgement, bool last);
  // The Prometheus file, replaced whole (a mesh's after each pass; a single sweep's once, at the end).
  void prometheus(int pass, const RoundTally& tally, const Untested& untested, const std::string& started,
                  const std::vector<PairRecord>& records, const Judgement& judgement, bool last) const;
  // Change verdicts so far (a mesh's).
  std::int64_t changes() const { return changes_; }

  // What the records tested of what the plan asked for.
  Coverage coverage(const std::vector<PairRecord>& records, const RoundTally& tally, const Untested& untested) const;
  // The switch tree's rows (/sweep/topology) and the per-leaf summaries (/sweep/switches).
  void topology(const Judgement& judgement);
  // /sweep/untested and the budget's note and attributes (`tally`: the rounds of the whole run).
  void untested(const RoundTally& tally, const Untested& untested);
  // The judge's matrices, per-node medians, verdicts and notes; the values of `records` below the "% of expected"
  // rule in one summary line; the last line's answer.
  void judgement(const std::vector<PairRecord>& records, const Judgement& judgement, const Coverage& coverage);

 private:
  // judgement's parts: the matrices (or the worst pairs), each rail's summary and the per-node medians
  // (/sweep/nodes); the verdicts (/sweep/verdicts) and their lines; the one line on the values below expected.
  void nodes(const Judgement& judgement);
  void verdicts(const Judgement& judgement);
  void below_expected(const std::vector<PairRecord>& records);
  // prometheus' parts: each pair's last figure and each node's median and suspect pairs; the coverage and verdicts.
  void prometheus_figures(results::Exposition& e, const std::vector<PairRecord>& records,
                          const Judgement& judgement) const;
  void prometheus_answer(results::Exposition& e, const Coverage& covered, const Judgement& judgement) const;
  // A pair row's expected_gbps and pct_expected.
  void stamp_expected(results::Row& row, const PairRecord& record) const;
  facts::Reference reference_of(const PairRecord& record) const;

  const app::RunContext& context_;
  const SweepOptions& opt_;
  const SweepJob& job_;
  const SweepTables& tables_;
  int rounds_planned_ = 0;                   // the fixed plan's rounds with a pair to test (start)
  std::optional<MeshHistory> mesh_history_;  // a mesh's verdicts, pass by pass
  std::int64_t changes_ = 0;
  double mesh_start_epoch_ = NAN;  // the first pass's start (Unix time)
};

}  // namespace fabricbench::tools::sweep
