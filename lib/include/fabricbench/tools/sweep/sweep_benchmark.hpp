// fabric-sweep: every node pair of the job, round by round (all pairs of a round at once, each on its own
// communicator), with pair tests that reuse fabric-p2p's, fabric-coll's and fabric-verbs' measurements; the records
// go to rank 0, which writes them and hands them to the pure judge (sweep/judge.hpp) for matrices, per-node medians
// and verdicts, with the rules of configs/sweep.ini. Its parts, each a value or an owner of its own: SweepOptions
// (what was asked), SweepTables (what it writes), RoundRunner (one round measured), Pass and RoundTally (what a pass
// hands down and gets back, round_runner.hpp), NicBook (which NIC each host-rail used). This class configures them,
// runs the passes and writes on rank 0.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/facts/link_counters.hpp"
#include "fabricbench/facts/rail_nic.hpp"
#include "fabricbench/sweep/coverage.hpp"
#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/mesh_history.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/sweep/round_budget.hpp"
#include "fabricbench/sweep/topology.hpp"
#include "fabricbench/tools/sweep/nic_book.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"
#include "fabricbench/tools/sweep/round_runner.hpp"
#include "fabricbench/tools/sweep/sweep_options.hpp"
#include "fabricbench/tools/sweep/sweep_tables.hpp"

namespace fabricbench::sweep {

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
  std::string resume_file() const override { return opt_.resume; }
  std::string answer_without_run() const override;  // --dry-run: the plan and its estimated time
  ExitStatus run(const app::RunContext& context) override;

 private:
  // The run in three steps. start: every rank's NICs gathered (/sweep/nics), the round runner started, the rounds to
  // run (less what a --resume finished), rank 0's opening tables and notes. A mesh's tables and history then follow
  // (start_mesh), with the judged metrics, which name each metric's NICs from the book start gathered.
  std::vector<Round> start(const app::RunContext& context);
  void start_mesh(const app::RunContext& context, const std::vector<JudgedMetric>& metrics);
  // run_passes: the passes, each judged on rank 0 (a mesh's written as it ends); what the last one left.
  struct PassesDone {
    std::vector<PairRecord> records;  // rank 0: the last pass's (between bandwidth passes, with the last bandwidth's)
    Judgement judgement;              // rank 0: of those
    RoundTally tally;                 // every pass's counts and cost
    int passes = 0;                   // the last pass run
    bool any_verdict = false;         // rank 0: a verdict in any pass
  };
  PassesDone run_passes(const app::RunContext& context, const std::vector<Round>& rounds,
                        const std::vector<JudgedMetric>& metrics);
  // finish, rank 0: the topology, what was not tested, the cost, the coverage and the judgement written; returns the
  // verdicts and changes that fail the run.
  std::int64_t finish(const app::RunContext& context, PassesDone& done);
  // One pass of the sweep (sweep_rounds.cpp): the fixed plan's `rounds` or the adaptive plan's, then the re-tests of
  // the suspect pairs; its tally's records (rank 0) start with a --resume's earlier ones. Round numbers go on from
  // `next_round`, which it advances.
  RoundTally run_pass(const app::RunContext& context, const Pass& pass, const std::vector<Round>& rounds,
                      const std::vector<JudgedMetric>& metrics, int& next_round);
  // Runs the rounds; its tally's records (rank 0) are every record measured, merged per test.
  RoundTally run_rounds(const app::RunContext& context, const Pass& pass, std::vector<Round> rounds, RoundKind kind,
                        int first_round);
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
  // What the judge knows of the hardware.
  Fabric fabric() const;
  // Rank 0: the NIC each host-rail used for metric `m` (per host * rails + rail).
  const std::vector<std::string>& nics_of(const SweepMetric& m) const;
  // Rank 0: merges the two ends' records of each test (value from the leader, wrong bytes and each end's counters
  // from both), writes the rows, returns the merged records.
  std::vector<PairRecord> report_records(const app::RunContext& context, int pass,
                                         const std::vector<PairRecord>& records, RoundKind kind);
  // Rank 0, before the first round: the run's notes (what is swept, what a --resume skips), the tables it declares,
  // the fixed plan's rounds (/sweep/schedule) and, up to 16 hosts, the pair rows' section on the terminal.
  void write_start(const app::RunContext& context, const std::vector<Round>& rounds, std::size_t skipped);
  // Rank 0: a pair row's expected_gbps and pct_expected.
  void stamp_expected(const app::RunContext& context, results::Row& row, const PairRecord& record);
  // Rank 0: the judge's matrices, per-node medians, verdicts and notes, written; the values of `records` below the
  // "% of expected" rule in one summary line.
  void write_judgement(const app::RunContext& context, const std::vector<PairRecord>& records,
                       const Judgement& judgement, const Coverage& coverage);
  // Its parts: the matrices (or the worst pairs), each rail's summary and the per-node medians (/sweep/nodes); the
  // verdicts (/sweep/verdicts) and their lines; the one line on the pair values below the "% of expected" rule.
  void write_nodes(const app::RunContext& context, const Judgement& judgement);
  void write_verdicts(const app::RunContext& context, const Judgement& judgement);
  void note_below_expected(const app::RunContext& context, const std::vector<PairRecord>& records);
  // Rank 0: what the records tested of what the plan asked for (sweep_plan.cpp).
  Coverage coverage_of(const std::vector<PairRecord>& records, const RoundTally& tally) const;
  // Rank 0: the switch tree's rows (/sweep/topology) and the per-leaf summaries (/sweep/switches).
  void write_topology(const app::RunContext& context, const Judgement& judgement);
  std::vector<JudgedMetric> judged_metrics() const;
  // The fixed plan's rounds as they run: with --sequential each pair in a round of its own.
  std::vector<Round> rounds_to_run() const;
  double round_timeout_s(const app::RunContext& context) const;
  // After a round: the hosts of every hung pair so far rest; their pairs leave rounds[from...]. Collective.
  void rest_hung_hosts(const app::RunContext& context, const std::vector<PairRecord>& records,
                       std::vector<Round>& rounds, std::size_t from);
  // --hosts N or --hostfile FILE (sweep_plan.cpp).
  static std::vector<std::string> planned_hosts(const cli::po::variables_map& values);
  // --resume FILE and --exclude: the file's hosts less the excluded (given, or named hung in the file) must be the
  // job's; rank 0 reads the rows the earlier part measured.
  void configure_resume(const cli::po::variables_map& values, const runtime::Placement& placement);
  // --budget and --pair-time-estimate.
  void configure_budget(const cli::po::variables_map& values);
  // Collective, before round `i` of `rounds`: whether it fits the budget. When it does not, rank 0 records its pairs
  // and every later round's as not covered.
  bool round_fits(const app::RunContext& context, const std::vector<Round>& rounds, std::size_t i, RoundKind kind,
                  int first_round);
  // Rank 0: /sweep/untested and the budget's note and attributes (`tally`: the rounds of the whole run).
  void write_untested(const app::RunContext& context, const RoundTally& tally);
  // Rank 0: what the earlier part measured, as records (its sweep rounds; with `pass` >= 1, every row of that pass);
  // the unordered pairs it finished (none for a mesh: its unfinished pass runs again whole).
  std::vector<PairRecord> resumed_records(int pass = 0) const;
  std::vector<HostPair> finished_pairs() const;

  // The continuous mesh (sweep_mesh.cpp): --repeat, --every, --prometheus; with --resume, the passes it continues.
  void configure_mesh(const cli::po::variables_map& values, bool root);
  // Collective: waits without spinning until `when` on rank 0's clock; false as soon as any rank was asked to stop
  // (a signal: Watchdog::stop_after_signal).
  bool wait_for_pass(const app::RunContext& context, std::chrono::steady_clock::time_point when) const;
  // Rank 0, after a pass: its /sweep/passes row, its changes (/sweep/changes and one line each), the Prometheus file.
  // `tally`: the pass's rounds (for what an adaptive plan reached), or the whole run's.
  void write_pass(const app::RunContext& context, int pass, const RoundTally& tally, const std::string& started,
                  double wall_s, std::size_t rounds, const std::vector<PairRecord>& records, const Judgement& judgement,
                  bool last);
  void write_prometheus(const app::RunContext& context, int pass, const RoundTally& tally, const std::string& started,
                        const std::vector<PairRecord>& records, const Judgement& judgement, bool last) const;

  SweepOptions opt_;                         // what the command line asked for (sweep_options.hpp), set by configure
  SweepTables tables_;                       // the tables it writes, with their columns' handles (sweep_tables.hpp)
  std::vector<PairRecord> last_bw_records_;  // rank 0: the bandwidth records of the last pass that measured them
  bool on_gpus(const SweepMetric& m) const { return opt_.on_gpus(m); }
  int first_pass_ = 1;   // > 1: a --resume of a mesh goes on from here
  int first_round_ = 0;  // the first round number of this run (a resumed mesh continues the file's numbering)
  std::optional<MeshHistory> mesh_history_;  // rank 0
  std::int64_t changes_ = 0;                 // rank 0: change verdicts so far
  double mesh_start_epoch_ = NAN;            // rank 0: the first pass's start (Unix time)
  std::optional<PairSchedule> schedule_;
  std::vector<std::string> hosts_;
  std::vector<int> host_of_rank_;
  int gpu_ = -1;
  int ranks_per_host_ = 1;  // the most ranks any host has
  int local_rank_ = 0;
  NicBook nics_;  // rank 0: the NIC of each host-rail, per family of traffic (nic_book.hpp)
  RoundBudget budget_;
  std::chrono::steady_clock::time_point started_;
  struct Untested {
    int round;  // -1: a pair of an excluded host
    RoundKind kind;
    std::string host_a, host_b, reason;
  };
  std::vector<Untested> untested_;  // rank 0
  int sweep_rounds_planned_ = 0;
  // --resume: (rank 0) the pair rows the file holds from the run it continues.
  std::vector<results::Row> resumed_rows_;
  // Rank 0: hosts of the file this run goes on without, with why ("--exclude", "hung in the earlier part").
  std::vector<std::pair<std::string, std::string>> excluded_;
  std::vector<int> resting_;  // hosts of a hung pair: they rest for the rest of the sweep
  // The round runner with the pair tests of the metrics asked for (made by configure, but for --dry-run).
  std::optional<RoundRunner> runner_;
};

}  // namespace fabricbench::sweep
