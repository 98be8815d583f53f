// fabric-sweep's metrics: one entry each, with its family and the family's own test (pair_test.hpp). A new metric of
// an existing family is one entry here and a section in configs/sweep.ini.
#include <fmt/format.h>

#include "fabricbench/error.hpp"
#include "fabricbench/ops/collective.hpp"
#include "fabricbench/ops/p2p_test.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

const std::vector<SweepMetric>& sweep_metrics() {
  using results::Better;
  using results::Unit;
  // Fewer iterations than fabric-p2p's OSU defaults: a sweep runs N-1 rounds and wants a value per pair, not a curve.
  constexpr auto bandwidth = ops::IterationDefaults::fixed(20, 2);
  constexpr auto latency = ops::IterationDefaults::fixed(1000, 100);
  static const std::vector<SweepMetric> metrics{
      {"p2p_bw", "one direction at a time, a->b then b->a (osu_bw), one rank per node", MetricFamily::p2p, "bw", true,
       bandwidth, Unit::mbps, Better::higher},
      {"p2p_bibw", "both directions at once (osu_bibw), one rank per node", MetricFamily::p2p, "bibw", false, bandwidth,
       Unit::mbps, Better::higher},
      {"p2p_latency", "ping-pong, half the round trip (osu_latency), one rank per node", MetricFamily::p2p, "latency",
       false, latency, Unit::us, Better::lower},
      {"allreduce", "all_reduce bus bandwidth over every rank of both nodes (NCCL on GPUs, else MPI)",
       MetricFamily::collective, "all_reduce", false, ops::nccl_tests_iterations, Unit::gbps, Better::higher},
      {"sendrecv", "sendrecv ring over every rank of both nodes (NCCL on GPUs, else MPI)", MetricFamily::collective,
       "sendrecv", false, ops::nccl_tests_iterations, Unit::gbps, Better::higher},
      {"rdma_bw", "RDMA write bandwidth, a->b then b->a (ib_write_bw; fabric-verbs' options), one rank per node",
       MetricFamily::rdma, "write_bw", true, ops::IterationDefaults::fixed(1000, 50), Unit::mibps, Better::higher},
      {"rdma_lat", "RDMA write ping-pong, half the round trip, typical (ib_write_lat), one rank per node",
       MetricFamily::rdma, "write_lat", false, ops::IterationDefaults::fixed(1000, 100), Unit::us, Better::lower},
  };
  return metrics;
}

std::string metric_names(bool (*has)(const SweepMetric& m)) {
  std::string out;
  for (const auto& m : sweep_metrics())
    if (has(m)) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

const ops::P2PTest& SweepMetric::p2p() const {
  const auto* t = family == MetricFamily::p2p ? ops::find_p2p_test(test) : nullptr;
  if (!t) throw Error::internal(fmt::format("sweep metric {} has no fabric-p2p test", name));
  return *t;
}

const ops::CollectiveOp& SweepMetric::op() const {
  const auto* op = family == MetricFamily::collective ? ops::find_collective(test) : nullptr;
  if (!op) throw Error::internal(fmt::format("sweep metric {} has no fabric-coll operation", name));
  return *op;
}

}  // namespace fabricbench::tools::sweep
