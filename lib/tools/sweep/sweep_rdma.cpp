// fabric-sweep's rdma metrics: fabric-verbs' link between the first ranks of the two nodes, one per direction.
// Built with libibverbs only; sweep_rdma_none.cpp stands in for it otherwise.
#include <fmt/format.h>

#include <algorithm>

#include "fabricbench/timing/sample_stats.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"
#include "fabricbench/verbs/verbs_link.hpp"

namespace fabricbench::sweep {
namespace {

class RdmaPairTest : public PairTest {
 public:
  RdmaPairTest(const std::string& host, std::uint64_t bw_bytes, std::uint64_t lat_bytes)
      : device_(verbs::Device::open({}, host)), bw_bytes_(bw_bytes), lat_bytes_(std::max<std::uint64_t>(lat_bytes, 1)) {}

  std::vector<PairRecord> run(const PairSlot& s) override {
    const auto& test = *verbs::find_verbs_test(s.m.verbs_test);
    const bool latency = test.pattern == verbs::Pattern::latency;
    const auto bytes = latency ? lat_bytes_ : bw_bytes_;
    const auto& options = s.context.options;
    // At least perftest's minimum of 5: the latency statistics drop the two largest round trips.
    const int iterations = std::max(5, s.m.defaults.iterations(bytes, options.iterations));
    const int warmup = s.m.defaults.warmup(bytes, options.warmup);
    const int me = s.pair.rank();
    std::vector<PairRecord> out;
    for (int direction = 0; direction < s.m.directions(); ++direction) {
      s.context.doing(s.doing(direction));
      verbs::VerbsLink link(device_, memory::MemoryKind::host, bytes, {}, s.pair.get(), 1 - me, me == direction);
      const auto r = link.run(test, bytes, iterations, warmup, options.check);
      auto rec = s.record(direction);
      rec.iterations = iterations, rec.bytes = static_cast<std::int64_t>(bytes), rec.wrong = static_cast<std::int64_t>(r.wrong);
      rec.window = r.tx_depth;
      rec.value = r.figure(test);
      if (r.timed) {
        const auto stats = timing::SampleStats::of(r.samples_us);
        rec.median_us = stats.median, rec.p99_us = stats.p99;
      }
      out.push_back(rec);
    }
    return out;
  }

 private:
  verbs::Device device_;
  std::uint64_t bw_bytes_, lat_bytes_;
};

}  // namespace

std::unique_ptr<PairTest> make_rdma_pair_test(const std::string& host, std::uint64_t bw_bytes, std::uint64_t lat_bytes) {
  return std::make_unique<RdmaPairTest>(host, bw_bytes, lat_bytes);
}

}  // namespace fabricbench::sweep
