// What fabric-sweep's command line asked for, as one value: set by SweepBenchmark::configure (and its
// configure_rails, configure_budget, configure_mesh, configure_resume) and only read afterwards, by the pass loop,
// the round runner's setup and the writers. What the job is (its hosts, ranks, schedule) and what a run learns as it
// goes (hung hosts, the budget's measured rounds, a mesh's history) stay in the tool.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/facts/rail_nic.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "fabricbench/sweep/topology.hpp"
#include "fabricbench/sweep/verdict.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {
// What it takes from lib/sweep/ (this namespace hides that one's name).
using fabricbench::sweep::Rules;
using fabricbench::sweep::Topology;

struct SweepOptions {
  std::vector<const SweepMetric*> metrics;  // --metric
  bool adaptive = false;                    // --plan adaptive: each round from AdaptivePlan, asked by rank 0
  std::uint64_t seed = 1;                   // --seed
  bool sequential = false;                  // --sequential: one pair per round
  int retest = 1;                           // --retest
  std::uint64_t bw_bytes = 0, lat_bytes = 8;
  int window = 64;
  double pair_time_s = 2, pair_time_relative = 1.5;  // --pair-time
  Rules rules;                                       // --rules
  ops::BackendKind backend = ops::BackendKind::mpi;  // --backend
  bool gpu_p2p = false;                     // --backend nccl given: the p2p metrics measure GPU to GPU (runs_on_gpus)
  NcclComms nccl_comms = NcclComms::split;  // --nccl-comms
  // The continuous mesh: --repeat given, passes in all (0: until stopped), --bw-every (the bandwidth metrics in every
  // K-th pass and the first of a run), --every, --prometheus.
  bool mesh = false;
  int repeat = 1, bw_every = 1;
  double every_s = 0;
  std::string prometheus;
  // --rails: local rank i of every host is rail i and tests local rank i of the other host (1: no rails);
  // --rail-map, --topology.
  int rails = 1;
  std::optional<facts::RailMap> rail_map;
  std::optional<Topology> topology;
  // --dry-run (with --hosts/--hostfile: `planned`, the hosts are not the job's).
  bool dry_run = false, planned = false;
  std::string budget_given, estimate_source;  // --budget as given; where the pair-time estimate came from
  std::string resume;                         // --resume FILE

  // Whether metric `m` runs on the GPUs (SweepMetric::runs_on_gpus with this --backend), and whether any asked for
  // does.
  bool on_gpus(const SweepMetric& m) const;
  bool any_on_gpus() const;
  // --plan adaptive with --budget covers untested pairs in duplex rounds (AdaptiveOptions::duplex_cover) where the one
  // metric is a one-way p2p figure, which the shift pattern's exchange measures (over MPI, or with --backend nccl
  // GPU to GPU).
  bool duplex_cover() const;
};

}  // namespace fabricbench::tools::sweep
