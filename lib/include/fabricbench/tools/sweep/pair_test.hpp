// A sweep's pair tests: one kind per family of metrics (point-to-point over MPI, collectives through fabric-coll's
// back ends, RDMA writes through fabric-verbs' link), each computing its figure with the same function as the tool
// it comes from. The rdma kind lives in a translation unit CMake selects (sweep_rdma.cpp with libibverbs,
// sweep_rdma_none.cpp without): nothing here depends on how the library was built.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/cli/choice.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/ops/collective.hpp"
#include "fabricbench/ops/iteration_defaults.hpp"
#include "fabricbench/ops/p2p_test.hpp"
#include "fabricbench/sweep/pair_record.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::HostPair;
using fabricbench::sweep::PairRecord;

// Which tool's measurement a metric reuses, and over which ranks.
enum class MetricFamily {
  p2p,         // fabric-p2p's test between the nodes' first ranks over MPI (with --backend nccl: GPU to GPU)
  collective,  // fabric-coll's operation over every rank of both nodes (NCCL on GPUs, else MPI)
  rdma,        // fabric-verbs' test between the nodes' first ranks (with --rails: between each rail's ranks)
};

// A metric as data: its family, and the test it runs as its family's table names it. A new metric of an existing
// family is one entry of sweep_metrics() (sweep_metrics.cpp).
struct SweepMetric {
  std::string_view name;
  std::string_view description;
  MetricFamily family;
  std::string_view
      test;              // fabric-p2p's test ("bw"), fabric-coll's operation ("all_reduce"), fabric-verbs' ("write_bw")
  bool both_directions;  // measured a->b and b->a separately
  ops::IterationDefaults defaults;
  results::Unit value_unit;
  results::Better better;
  bool collective() const { return family == MetricFamily::collective; }
  // Whether it runs on every rank's GPU over the pair's collective communicator (the collective metrics; with an
  // explicit --backend nccl, `gpu_p2p`, the p2p ones too, GPU to GPU) rather than between the nodes' first ranks.
  bool runs_on_gpus(bool gpu_p2p) const { return collective() || (gpu_p2p && family == MetricFamily::p2p); }
  // The family's table entry (the unit test checks that every metric has one): p2p and collective only.
  const ops::P2PTest& p2p() const;
  const ops::CollectiveOp& op() const;
  int directions() const { return both_directions ? 2 : 1; }
  std::string_view unit() const { return results::to_string(value_unit); }  // "MB/s"
};
const std::vector<SweepMetric>& sweep_metrics();
// "p2p_bw, p2p_bibw, rdma_bw": the metrics for which `has` holds, for help and messages.
std::string metric_names(bool (*has)(const SweepMetric& m));
inline bool is_bandwidth(const SweepMetric& m) { return m.better == results::Better::higher; }
inline bool is_latency(const SweepMetric& m) { return m.better == results::Better::lower; }
inline bool is_collective(const SweepMetric& m) { return m.collective(); }
// A p2p metric measured one direction at a time: what --pattern shift (each node sends to one and receives from
// another at once) can measure.
inline bool is_one_way_p2p(const SweepMetric& m) { return m.family == MetricFamily::p2p && m.both_directions; }

// One metric of one pair in one round, as this rank sees it.
struct PairSlot {
  const app::RunContext& context;
  const runtime::Communicator& pair;  // host level: the two nodes' first ranks; collectives: every rank of both
  int round;
  HostPair hosts;
  int rail;    // the local rank of both ends (0 without --rails)
  int metric;  // index into the sweep's metrics
  const SweepMetric& m;
  const std::vector<std::string>& host_names;
  // A record of this slot, direction 0/1 for metrics measured each way, 2 otherwise.
  PairRecord record(int direction) const {
    auto r = PairRecord::of(round, hosts, metric, m.both_directions ? direction : 2);
    r.rail = rail;
    return r;
  }
  // "pair h1 - h2: p2p_bw a->b", what this rank is doing (for a failure report).
  std::string doing(int direction) const;
};

// One host's part of a ring step: whom it sends to and receives from (host indices = ring ranks; MPI_PROC_NULL: none)
// and, on GPUs, the lanes (Round::lanes) its sends and its receives go on, of `lanes` in the round.
struct ShiftStep {
  int host, to, from;
  int send_lane = 0, receive_lane = 0, lanes = 1;
};

class PairTest {
 public:
  virtual ~PairTest() = default;
  // This rank's records of one metric on one pair: each end returns its own, rank 0 merges them. A pair that did
  // not finish within --timeout (where the back end can abort it) gives a record with `hung` set.
  virtual std::vector<PairRecord> run(const PairSlot& slot) = 0;
  // The NIC this rank's test opened itself ("mlx5_0:1"; "" where the transport chose it).
  virtual std::string nic() const { return {}; }
  // Collective over the world, on every rank (resting ones too), before a round's tests of this family: `group` is
  // this rank's communicator for them (null: it rests), split by `color` (its pair, and rail; < 0 resting) and `key`;
  // `comms` of them (a ring round's lanes, Round::lanes). What it prepares for the round (the collectives'
  // communicators split from one parent) is released by end_round.
  virtual void begin_round(const app::RunContext& /*context*/, const runtime::Communicator* /*group*/, int /*color*/,
                           int /*key*/, int /*comms*/ = 1) {}
  virtual void end_round() {}
  // mpiGraph's shift, a step of the shift pattern or a duplex round's phase: this node sends metric `m` (a one-way p2p
  // figure) to `step.to` while it receives from `step.from`, on `ring` (one rank per node: its first, or with --rails
  // its rail's; ring rank = host index; every rank of it in the call). Either may be MPI_PROC_NULL. The record of the
  // link to `to` (none where `to` is MPI_PROC_NULL, or where a step past --timeout elsewhere in the ring stopped its
  // steps before one ended). Over MPI (P2PPairTest) and, with --backend nccl, GPU to GPU over the round's
  // communicators (begin_round with the ring as `group` and the round's lanes), the sends on one lane and the
  // receives on another; Error::internal elsewhere.
  virtual std::optional<PairRecord> shift(const app::RunContext& context, const runtime::Communicator& ring,
                                          const SweepMetric& m, int round, const ShiftStep& step);
};

// One round's plan for this rank's p2p pair tests, per (metric, direction) slot.
struct PairBudgets {
  std::vector<double> budget_s;  // the time budget (0: none)
  std::vector<double> probe_s;   // the probe of one message (or round trip) taken for it; 0 where nothing was probed
  double probing_s = 0;          // how long this rank's probes took
};

// fabric-p2p's exchanges between the first ranks of two nodes, each bounded by a time budget.
class P2PPairTest : public PairTest {
 public:
  P2PPairTest(const std::vector<const SweepMetric*>& metrics, std::uint64_t bw_bytes, std::uint64_t lat_bytes,
              int window, double pair_time_s, double pair_time_relative);
  std::vector<PairRecord> run(const PairSlot& slot) override;
  // The round's budget per slot, agreed over the world: --pair-time in the first round, then max(--pair-time,
  // --pair-time-relative x the fastest pair measured so far, scaled to the requested counts). Also probes this
  // rank's pair (if any). Collective over the world.
  void plan_round(const runtime::Communicator& world, const runtime::Communicator* pair);
  double probing_s() const { return budgets_.probing_s; }
  std::optional<PairRecord> shift(const app::RunContext& context, const runtime::Communicator& ring,
                                  const SweepMetric& m, int round, const ShiftStep& step) override;
  std::uint64_t bytes_of(const SweepMetric& m) const;

 private:
  std::size_t slot(int metric, int direction) const { return static_cast<std::size_t>(metric) * 2 + direction; }
  std::vector<const SweepMetric*> metrics_;
  std::uint64_t bw_bytes_, lat_bytes_;
  int window_;
  double pair_time_s_, pair_time_relative_;
  memory::Buffer send_, recv_;
  PairBudgets budgets_;
  std::vector<double> fastest_;   // per slot: the fastest pair's full-test time measured so far (world)
  std::vector<double> measured_;  // per slot: the fastest full-test time this rank led so far
  // Test hook FABRICBENCH_TEST_LATE_RECEIVES=HOST:MS: in shift, the host of that index posts each step's receives
  // MS ms after its sends (Exchanger::late_receives_s).
  int late_host_ = -1;
  double late_receives_s_ = 0;
};

// How the NCCL back end gets each pair's communicator (--nccl-comms): split each round from one parent over the
// job (ncclCommSplit), or a fresh one per pair, metric and round (ncclCommInitRank, as before the split).
enum class NcclComms { split, init };
inline constexpr cli::Choice<NcclComms> kNcclComms[] = {{"split", NcclComms::split}, {"init", NcclComms::init}};

// fabric-coll's back ends over every rank of both nodes (NCCL communicators abortable under --timeout).
// The collective metrics over the pair's communicator (`bytes`), and with NCCL the p2p metrics between the pair's
// GPUs on the same communicators (`bytes`, `latency_bytes` for ping-pong, OSU's `window`).
std::unique_ptr<PairTest> make_coll_pair_test(ops::BackendKind backend, int gpu, std::uint64_t bytes,
                                              std::uint64_t latency_bytes, int window, NcclComms comms);

// What the rdma metrics open and send.
struct RdmaPairSettings {
  std::string device;  // "" the Active port on the rank's NUMA node; with `rail` >= 0, facts::rail_rdma_port's
  int port = 1;
  int rail = -1;  // this rank's rail under --rails, else -1
  std::uint64_t bw_bytes = 0, lat_bytes = 0;
  int qp_timeout = 14;  // --qp-timeout (perftest -u)
};

// fabric-verbs' link between the first ranks of both nodes (with --rails: between the ranks of each rail). Opens
// this rank's RDMA port now; exit 2 where there is none, or where the library was built without libibverbs.
std::unique_ptr<PairTest> make_rdma_pair_test(const std::string& host, const RdmaPairSettings& settings);

}  // namespace fabricbench::tools::sweep
