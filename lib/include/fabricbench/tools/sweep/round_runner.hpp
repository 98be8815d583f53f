// One round of fabric-sweep on this rank, collective over the job: the round's pair (and, with --rails, rail)
// communicators split from the job's, every metric's pair test on them with this host's links read around each, and
// the round's records gathered to rank 0 with what each step cost this rank. It owns the pair tests (one per family
// of metrics asked for), the link watch and, with --rails, the host communicator whose ranks start and end a round
// together so that each rail NIC's byte counters cover it. The tool's pass loop (sweep_rounds.cpp) hands it a Pass
// and a Round, and rank 0 writes what it returns. Also here, as values: the pass in flight (`Pass`) and what a run of
// rounds hands back (`RoundTally`); the loop (SweepBenchmark::run_passes) adds up its passes' tallies.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/facts/link_counters.hpp"
#include "fabricbench/sweep/judge.hpp"
#include "fabricbench/sweep/pair_schedule.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::HostPair;
using fabricbench::sweep::NicTraffic;
using fabricbench::sweep::PairRecord;
using fabricbench::sweep::Round;
using fabricbench::sweep::RoundKind;

// The pass in flight: its number (from 1; a resumed mesh goes on from the file's) and whether its bandwidth metrics
// run (between a mesh's --bw-every passes they rest).
struct Pass {
  int number = 1;
  bool bandwidth = true;
  bool rests(const SweepMetric& m) const { return !bandwidth && m.better == results::Better::higher; }
};

// What a run of rounds gave. On rank 0: the merged records (a pass's start with a --resume's earlier ones), the NIC
// traffic read around them (--rails), and what they cost; on every rank: how many sweep rounds ran (a --budget may
// stop them early).
struct RoundTally {
  std::vector<PairRecord> records;
  std::vector<NicTraffic> traffic;
  int sweep_rounds = 0;
  // Each round's longest pair test and longest setup, summed; every pair row's setup_s and measure_s, summed.
  double test_longest_s = 0, setup_longest_s = 0, pair_setup_s = 0, pair_measure_s = 0;
  std::int64_t pair_rows = 0;
  // --plan adaptive: the unordered pairs tested and the hosts judged when the plan ended (-1: a fixed plan).
  long long adaptive_pairs_tested = -1;
  int adaptive_hosts_judged = -1;

  // `more` after these: its records and traffic appended, its counts and times added, its plan's reach kept.
  void add(RoundTally more) {
    records.insert(records.end(), more.records.begin(), more.records.end());
    traffic.insert(traffic.end(), more.traffic.begin(), more.traffic.end());
    sweep_rounds += more.sweep_rounds;
    test_longest_s += more.test_longest_s, setup_longest_s += more.setup_longest_s;
    pair_setup_s += more.pair_setup_s, pair_measure_s += more.pair_measure_s, pair_rows += more.pair_rows;
    if (more.adaptive_pairs_tested >= 0)
      adaptive_pairs_tested = more.adaptive_pairs_tested, adaptive_hosts_judged = more.adaptive_hosts_judged;
  }
};

class RoundRunner {
 public:
  // What the runner knows of the job.
  struct Job {
    std::vector<const SweepMetric*> metrics;
    std::vector<std::string> hosts;
    std::vector<int> host_of_rank;
    int rails = 1, local_rank = 0;  // --rails: local rank i of every host is rail i (1: no rails)
    bool gpu_p2p = false;           // SweepMetric::runs_on_gpus
    bool directed = false;          // the shift pattern: a host's first rank sends to one host, receives from another
  };
  // The pair tests of the metrics asked for, null where none was.
  struct Tests {
    std::unique_ptr<P2PPairTest> p2p;
    std::unique_ptr<PairTest> coll, rdma;
  };
  RoundRunner(Job job, Tests tests) : job_(std::move(job)), tests_(std::move(tests)) {}

  // The NIC the rdma pair test opened ("" none).
  std::string rdma_nic() const { return tests_.rdma ? tests_.rdma->nic() : ""; }
  // Collective, before the first round: the link watch (NVLink counters too where `nvlink`), with --rails the host
  // communicator, and the NIC whose byte counters this rank reads around each round (`counter_nic`).
  void start(const app::RunContext& context, bool nvlink, const std::string& counter_nic);

  struct Result {
    std::vector<PairRecord> records;  // rank 0: every rank's, as each end measured them (not yet merged)
    std::vector<NicTraffic> traffic;  // rank 0, --rails: each host-rail NIC's bytes around the round
    // This rank's steps: the pair (and rail) communicators' splits, the back end's round communicator made and
    // released, its pair tests, and the wait for the round's other pairs.
    double split_s = 0, begin_s = 0, test_s = 0, teardown_s = 0, wait_s = 0;
    std::chrono::steady_clock::time_point measured_at;  // the round's pairs all done (before the gathering)
  };
  // Round `index` of `kind` (collective; rank 0 gets every rank's records).
  Result run(const app::RunContext& context, const Pass& pass, const Round& round, int index, RoundKind kind);
  // Releases the collective back end (NCCL's parent communicator, if any) on every rank at once.
  void finish() { tests_.coll.reset(); }

 private:
  bool on_gpus(const SweepMetric& m) const { return m.runs_on_gpus(job_.gpu_p2p); }
  // Whether this pass runs collectives (between a mesh's bandwidth passes they rest): then the round prepares them.
  bool collectives_run(const Pass& pass) const;
  // run's three kinds of round, each adding this rank's records and step times to `step`: the shift pattern's (one
  // rank per host sends to one host and receives from another); --rails' (rail i's two ranks run every metric, all
  // rails at once); and by host (the host-level metrics on one rank per host, the collective ones on every rank).
  struct Step;
  // A ring: one rank per host and rail (without --rails each host's first) sends to the host it leads in a pair while
  // it receives from the host that leads it (MPI_PROC_NULL where it has none); a duplex round (Round::duplex) then
  // turns every pair around. The shift pattern's step is its first phase.
  void run_ring(const app::RunContext& context, const Round& round, int index, Step& step);
  void run_rails(const app::RunContext& context, const Pass& pass, const Round& round, int index, Step& step);
  void run_hosts(const app::RunContext& context, const Pass& pass, const Round& round, int index, Step& step);
  // This rank's records of one pair: the metrics of `host_level` (one rank per node) or the collective ones. With
  // --rails every metric runs on the rail's two ranks (`host_level` is ignored).
  std::vector<PairRecord> measure_pair(const app::RunContext& context, const Pass& pass,
                                       const runtime::Communicator& pair, int round_index, const HostPair& hosts,
                                       bool host_level);
  // With --rails: this rank's rail NIC's byte counters around measure_pair (the host's ranks start and end together).
  std::vector<PairRecord> measure_rail(const app::RunContext& context, const Pass& pass,
                                       const runtime::Communicator& rail, int round_index, const HostPair& hosts,
                                       std::vector<NicTraffic>& traffic);

  Job job_;
  Tests tests_;
  // This host's links, read around each metric of a pair test by the host's first rank (facts::LinkWatch: the
  // other ranks of a collective pair test read nothing, so a host's growth is counted once).
  facts::LinkWatch links_;
  runtime::Communicator host_comm_;  // --rails: this host's ranks
  std::string counter_nic_;          // this rank's
};

}  // namespace fabricbench::tools::sweep
