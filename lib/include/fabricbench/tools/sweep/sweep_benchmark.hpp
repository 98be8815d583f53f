// fabric-sweep: every node pair of the job, round by round (all pairs of a round at once, each on its own
// communicator), with point-to-point and collective metrics reused from fabric-p2p and fabric-coll; matrices,
// per-node medians and verdicts (bad node or bad link) from the rules in configs/sweep.ini.
#pragma once
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fabricbench/app/benchmark.hpp"
#include "fabricbench/facts/link_counters.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/ops/iteration_defaults.hpp"
#include "fabricbench/ops/p2p_test.hpp"
#ifdef FABRICBENCH_HAVE_VERBS
#include "fabricbench/verbs/verbs_link.hpp"
#endif
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/sweep/verdict.hpp"

namespace fabricbench::sweep {

// A metric as data: which p2p test or collective it runs and over which ranks.
struct SweepMetric {
  std::string_view name;
  std::string_view unit;
  std::string_view description;
  std::string_view p2p_test;  // "bw", "bibw", "latency"; empty for collectives and verbs metrics
  bool both_directions;       // measured a->b and b->a separately
  ops::CollKind coll;         // collectives: over every rank of both nodes
  ops::IterationDefaults defaults;
  results::Unit value_unit;
  results::Better better;
  std::string_view verbs_test = {};  // fabric-verbs' test ("write_bw", "write_lat") for the rdma metrics
  // Over every rank of both nodes (else one rank per node).
  bool collective() const { return p2p_test.empty() && verbs_test.empty(); }
};
const std::vector<SweepMetric>& sweep_metrics();

// One measured value of one pair (what ranks send to rank 0 after each round).
struct PairRecord {
  std::int32_t round, a, b, metric, direction;  // direction: 0 a->b, 1 b->a, 2 both
  std::int32_t iterations;  // done (the pair-time budget may cut the requested count)
  std::int64_t bytes, wrong;
  double value, median_us, p99_us;
  double test_s;  // wall time of this rank's part of the pair test (all its metrics)
  std::int32_t window = 0, cut = 0;  // messages in flight used; 1 when the budget cut the counts
  std::int32_t hung = 0;             // 1: the pair did not finish within --timeout (NCCL: communicator aborted)
  // Growth of the writing rank's host link counters during this metric (facts::LinkCounters), and that host.
  double port_errors = NAN, xmit_wait = NAN, nvlink_errors = NAN;
  std::int32_t reporter = -1;
};

// One round's plan for this rank's p2p pair tests, per (metric, direction) slot.
struct PairBudgets {
  std::vector<double> budget_s;  // the time budget (0: none)
  std::vector<double> probe_s;   // the probe of one message (or round trip) taken for it; 0 where nothing was probed
  double probing_s = 0;          // how long this rank's probes took
};

class SweepBenchmark : public app::Benchmark {
 public:
  SweepBenchmark();
  std::string program() const override { return "fabric-sweep"; }
  std::string summary() const override;
  cli::OptionGroups option_groups() const override { return {cli::SizeOptions{{4u << 20, 4u << 20, 2}, false}, ""}; }
  void add_options(cli::po::options_description& options) override;
  void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                 const runtime::Placement& placement) override;
  const results::TableSpec& table() const override { return pairs_table_; }
  int gpu() const override { return gpu_; }
  std::string resume_file() const override { return resume_; }
  ExitStatus run(const app::RunContext& context) override;

 private:
  // Runs the rounds; returns (on rank 0) every record measured.
  std::vector<PairRecord> run_rounds(const app::RunContext& context, std::vector<Round> rounds,
                                     const std::string& kind, int first_round);
  std::vector<PairRecord> measure_pair(const app::RunContext& context, const runtime::Communicator& pair,
                                       const Round& round, int round_index, const HostPair& hosts, bool host_level,
                                       const PairBudgets& budgets);
  // The round's budget per (metric, direction) slot, agreed over the world: --pair-time in the first round, then
  // max(--pair-time, --pair-time-relative x the fastest pair measured so far, scaled to the requested counts).
  // Also probes this rank's pair (if any) for run_exchange's plan. Collective over the world.
  PairBudgets pair_budgets(const app::RunContext& context, const runtime::Communicator* pair);
  std::size_t slot(std::size_t metric, int direction) const { return metric * 2 + static_cast<std::size_t>(direction); }
  const ops::P2PTest& p2p_test_of(const SweepMetric& m) const;
  std::uint64_t bytes_of(const SweepMetric& m) const;
  std::vector<PairRecord> measure_shift(const app::RunContext& context, const Round& round, int round_index);
  // Rank 0: merges the two ends' records of each test (value from the leader, wrong bytes from both), writes the
  // rows, returns the merged records.
  std::vector<PairRecord> report_records(const app::RunContext& context, const std::vector<PairRecord>& records,
                                         const std::string& kind);
  // Rank 0: a pair row's expected_gbps and pct_expected; counts the values below the rule.
  void stamp_expected(const app::RunContext& context, results::Row& row, const PairRecord& record);
  // Rank 0: verdicts of every metric, and the suspect pairs to re-test. With `final`: writes matrices, per-node
  // medians and verdicts.
  std::vector<Verdict> judge(const app::RunContext& context, const std::vector<PairRecord>& records, bool final,
                             std::vector<HostPair>* suspects);

  results::TableSpec pairs_table_, verdicts_table_, nodes_table_, schedule_table_, rounds_table_;
  std::optional<PairSchedule> schedule_;
  std::vector<const SweepMetric*> metrics_;
  std::vector<std::string> hosts_;
  std::vector<int> host_of_rank_;
  int ranks_per_host_ = 1;  // the most ranks any host has
  Rules rules_;
  std::uint64_t bw_bytes_ = 0, lat_bytes_ = 8;
  int window_ = 64, retest_ = 1, gpu_ = -1;
  double pair_time_s_ = 2, pair_time_relative_ = 1.5;
  std::vector<double> fastest_;   // per slot: the fastest pair's full-test time measured so far (world)
  std::vector<double> measured_;  // per slot: the fastest full-test time this rank led so far
  // --resume: the file, and (rank 0) the pair rows it holds from the run it continues.
  std::string resume_;
  std::vector<int> resting_;  // hosts of a hung pair: they rest for the rest of the sweep
  std::vector<results::Row> resumed_rows_;
  double round_timeout_s(const app::RunContext& context) const;
  // After a round: the hosts of every hung pair so far rest; their pairs leave rounds[from...]. Collective.
  void rest_hung_hosts(const app::RunContext& context, const std::vector<PairRecord>& records,
                       std::vector<Round>& rounds, std::size_t from);
  // Rank 0: what the earlier part measured, as records; the unordered pairs it finished ("a:b" per line).
  std::vector<PairRecord> resumed_records() const;
  std::string finished_pairs() const;
  bool sequential_ = false;
  ops::BackendKind backend_ = ops::BackendKind::mpi;
  std::optional<memory::Buffer> send_, recv_;
#ifdef FABRICBENCH_HAVE_VERBS
  // The rdma metrics: fabric-verbs' link between the two nodes' first ranks, one per direction.
  std::unique_ptr<verbs::Device> rdma_device_;
  facts::LinkCounters counters_;  // this host's links, read around each metric of a pair test
  // Rank 0: per host, its link counters' growth over its pair tests and the hosts it was tested with.
  std::map<int, std::pair<facts::CounterReading, std::set<int>>> counter_growth_;
  // Rank 0: the pair values below the "% of expected" rule, and the lowest of them.
  int below_expected_ = 0;
  std::string lowest_expected_;
  double lowest_percent_ = INFINITY;
  PairRecord measure_rdma(const app::RunContext& context, const runtime::Communicator& pair, std::size_t k,
                          int direction, int round_index, const HostPair& hosts);
#endif
};

}  // namespace fabricbench::sweep
