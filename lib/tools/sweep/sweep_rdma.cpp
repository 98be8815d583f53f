// fabric-sweep's rdma metrics: fabric-verbs' link between the first ranks of the two nodes, one per direction.
// Built with libibverbs only (sweep_benchmark.cpp refuses the metrics otherwise).
#include <fmt/format.h>

#include <cmath>

#include "fabricbench/tools/sweep/sweep_benchmark.hpp"
#include "fabricbench/timing/sample_stats.hpp"

namespace fabricbench::sweep {

PairRecord SweepBenchmark::measure_rdma(const app::RunContext& context, const runtime::Communicator& pair,
                                        std::size_t k, int direction, int round_index, const HostPair& hosts) {
  const auto& m = *metrics_[k];
  const auto& test = *verbs::find_verbs_test(m.verbs_test);
  const bool latency = test.pattern == verbs::Pattern::latency;
  const auto bytes = latency ? std::max<std::uint64_t>(lat_bytes_, 1) : bw_bytes_;
  const auto& options = context.options;
  // At least perftest's minimum of 5: the latency statistics drop the two largest round trips.
  const int iterations = std::max(5, m.defaults.iterations(bytes, options.iterations));
  const int warmup = m.defaults.warmup(bytes, options.warmup);
  const int me = pair.rank();
  const bool leader = me == direction;
  context.doing(fmt::format("pair {} - {}: {} {}", hosts_[hosts.a], hosts_[hosts.b], m.name,
                            m.both_directions ? (direction == 0 ? "a->b" : "b->a") : "both"));
  verbs::VerbsLink link(*rdma_device_, memory::MemoryKind::host, bytes, {}, pair.get(), 1 - me, leader);
  const auto r = link.run(test, bytes, iterations, warmup, options.check);
  PairRecord rec{round_index, hosts.a, hosts.b, static_cast<std::int32_t>(k), m.both_directions ? direction : 2,
                 iterations, static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(r.wrong), NAN, NAN, NAN, 0,
                 r.tx_depth, 0};
  if (r.timed) {
    rec.value = latency ? ops::perftest_latency(r.round_trips_us, test.latency_divisor).typical_us
                        : r.bandwidth.avg_mibps;
    const auto stats = timing::SampleStats::of(r.samples_us);
    rec.median_us = stats.median;
    rec.p99_us = stats.p99;
  }
  return rec;
}

}  // namespace fabricbench::sweep
