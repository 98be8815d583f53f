// fabric-sweep: every node pair of the job, round by round (all pairs of a round at once, each on its own
// communicator), with pair tests that reuse fabric-p2p's, fabric-coll's and fabric-verbs' measurements; the records
// go to rank 0, which writes them and hands them to the pure judge (sweep/judge.hpp) for matrices, per-node medians
// and verdicts, with the rules of configs/sweep.ini. Its parts, each a value or an owner of its own: SweepOptions
// (what was asked), SweepJob (the hosts, ranks, schedule and NIC book), SweepTables (what it writes), PassLoop (the
// passes and their rounds), RoundRunner (one round measured), Pass and RoundTally (what a pass hands down and gets
// back, round_runner.hpp), SweepWriter (rank 0's rows, notes and judgement). This class configures them from the
// command line and runs them in order.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/sweep/round_budget.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"
#include "fabricbench/tools/sweep/pass_loop.hpp"
#include "fabricbench/tools/sweep/round_runner.hpp"
#include "fabricbench/tools/sweep/sweep_job.hpp"
#include "fabricbench/tools/sweep/sweep_options.hpp"
#include "fabricbench/tools/sweep/sweep_tables.hpp"
#include "fabricbench/tools/sweep/sweep_writer.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::HostPair;
using fabricbench::sweep::PairRecord;
using fabricbench::sweep::Round;
using fabricbench::sweep::RoundBudget;

class SweepBenchmark : public app::Benchmark {
 public:
  SweepBenchmark() = default;
  std::string program() const override { return "fabric-sweep"; }
  std::string summary() const override;
  cli::OptionGroups option_groups() const override { return {cli::SizeOptions{{4u << 20, 4u << 20, 2}, false}, ""}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return tables_.pairs; }
  int gpu() const override { return gpu_; }
  app::HarnessRequest request() const override { return {dry_run_answer(), opt_.resume}; }
  ExitStatus run(const app::RunContext& context) override;

 private:
  std::string dry_run_answer() const;  // --dry-run: the plan and its estimated time; empty without it
  // The run in three steps. start: every rank's NICs gathered (/sweep/nics, the job's book), the round runner
  // started, the rounds to run (less what a --resume finished), rank 0's opening tables and notes. The pass loop
  // (pass_loop.hpp) then runs the passes, handing each round to the rank-0 writer. finish, rank 0: the topology, what
  // was not tested, the cost, the coverage and the judgement written; returns the verdicts and changes that fail the
  // run.
  std::vector<Round> start(const app::RunContext& context, SweepWriter* writer);
  std::int64_t finish(const app::RunContext& context, SweepWriter& writer, PassLoop::Done& done);
  // configure's steps, in order. The job: its hosts (the placement's, or --hosts/--hostfile for a --dry-run) and
  // each rank's host.
  void configure_job(const cli::po::variables_map& values, const runtime::Placement& placement);
  // The plan: --plan/--pattern or --pairs-file, --metric, --seed, and what a plan and the metrics allow together.
  void configure_plan(const cli::po::variables_map& values);
  // The sizes, --window, --pair-time, --retest, --qp-timeout and --rules (with --baseline).
  void configure_measures(const cli::po::variables_map& values, const cli::CommonOptions& common);
  // --backend and --nccl-comms, and what the collective metrics need of them.
  void configure_backend(const cli::po::variables_map& values, const cli::CommonOptions& common);
  // The GPU (NCCL) and the pair tests of the metrics asked for, in a round runner. The rdma test opens the rank's
  // port now: no RDMA device, a port that is not Active or a build without libibverbs is exit 2, before any output.
  void make_runner(const runtime::Placement& placement, int qp_timeout);
  // --rails, --rail-map, --topology: read and checked against the placement (sweep_rails.cpp).
  void configure_rails(const cli::po::variables_map& values, const runtime::Placement& placement);
  // The rdma pair test on this rank's rail device: the rail map's, else the one the launcher chose (nearest the
  // rank's GPU, FABRICBENCH_RAIL_NIC), else (with --rails) the rail-th Active port, else the Active port on the
  // rank's NUMA node.
  std::unique_ptr<PairTest> make_rail_rdma_test(const std::string& host, int qp_timeout) const;
  // The fixed plan's rounds as they run: with --sequential each pair in a round of its own.
  std::vector<Round> rounds_to_run() const;
  // --hosts N or --hostfile FILE (sweep_plan.cpp).
  static std::vector<std::string> planned_hosts(const cli::po::variables_map& values);
  // --resume FILE and --exclude: the file's hosts less the excluded (given, or named hung in the file) must be the
  // job's; rank 0 reads the rows the earlier part measured.
  void configure_resume(const cli::po::variables_map& values, const runtime::Placement& placement,
                        const std::string& sizes_option);
  void check_resumed_sizes(const std::string& sizes_option) const;
  // Options the mode asked for does not use (sweep_unused.cpp): Error::usage naming the option.
  void refuse_unused(const cli::po::variables_map& values) const;
  // --budget and --pair-time-estimate.
  void configure_budget(const cli::po::variables_map& values);
  // Rank 0: what the earlier part measured, as records (its sweep rounds; with `pass` >= 1, every row of that pass);
  // the unordered pairs it finished (none for a mesh: its unfinished pass runs again whole).
  std::vector<PairRecord> resumed_records(int pass = 0) const;
  std::vector<HostPair> finished_pairs() const;

  // The continuous mesh (sweep_mesh.cpp): --repeat, --every, --prometheus; with --resume, the passes it continues.
  void configure_mesh(const cli::po::variables_map& values, bool root);
  SweepOptions opt_;    // what the command line asked for (sweep_options.hpp), set by configure
  SweepJob job_;        // the hosts, ranks and schedule (set by configure), the NIC book (by start)
  SweepTables tables_;  // the tables it writes, with their columns' handles (sweep_tables.hpp)
  RoundBudget budget_;  // --budget, as configured (the pass loop measures its rounds)
  int gpu_ = -1;
  // --resume: (rank 0) the pair rows the file holds from the run it continues; with a mesh, the pass (> 1) and the
  // round number it goes on from.
  std::vector<results::Row> resumed_rows_;
  int first_pass_ = 1, first_round_ = 0;
  // The round runner with the pair tests of the metrics asked for (made by configure, but for --dry-run).
  std::optional<RoundRunner> runner_;
};

}  // namespace fabricbench::tools::sweep
