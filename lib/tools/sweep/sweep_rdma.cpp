// fabric-sweep's rdma metrics: fabric-verbs' link between the first ranks of the two nodes, one per direction.
// Built with libibverbs only; sweep_rdma_none.cpp stands in for it otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "fabricbench/error.hpp"
#include "fabricbench/facts/host_files.hpp"
#include "fabricbench/facts/rail_binding.hpp"
#include "fabricbench/timing/sample_stats.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"
#include "fabricbench/verbs/verbs_link.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs
namespace {

class RdmaPairTest : public PairTest {
 public:
  RdmaPairTest(const std::string& host, const verbs::PortRequest& request, const RdmaPairSettings& settings)
      : device_(verbs::Device::open(request, host)),
        bw_bytes_(settings.bw_bytes),
        lat_bytes_(std::max<std::uint64_t>(settings.lat_bytes, 1)) {
    link_.qp_timeout = settings.qp_timeout;
  }
  std::string nic() const override { return fmt::format("{}:{}", device_.port().device, device_.port().port); }

  std::vector<PairRecord> run(const PairSlot& s) override {
    const auto& test = *verbs::find_verbs_test(s.m.test);
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
      const auto setup_start = std::chrono::steady_clock::now();
      verbs::VerbsLink link(device_, memory::MemoryKind::host, bytes, link_, s.pair.get(), 1 - me, me == direction);
      const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
      const auto measure_start = std::chrono::steady_clock::now();
      const auto r = link.run(test, bytes, iterations, warmup, options.check);
      auto rec = s.record(direction);
      rec.measure_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - measure_start).count();
      rec.iterations = iterations, rec.bytes = static_cast<std::int64_t>(bytes),
      rec.wrong = static_cast<std::int64_t>(r.wrong);
      rec.window = r.tx_depth, rec.setup_s = setup_s;
      rec.payload = static_cast<double>(bytes) * iterations * (latency ? 2.0 : 1.0);
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
  verbs::VerbsSettings link_;  // perftest's defaults but the ACK timeout
};

}  // namespace

std::unique_ptr<PairTest> make_rdma_pair_test(const std::string& host, const RdmaPairSettings& settings) {
  const int rail = settings.rail;
  verbs::PortRequest request;
  request.device = settings.device, request.port = settings.device.empty() ? 0 : settings.port;
  if (settings.device.empty() && rail >= 0) {  // rails without a map or a launcher's choice: the binder's rule
    try {
      const auto b = facts::RailBinding::choose(facts::HostFiles::for_host(host), rail, nullptr,
                                                std::getenv("CUDA_VISIBLE_DEVICES"));
      request.device = b.nic.rdma, request.port = b.nic.port;
    } catch (const Error& e) {
      throw Error::usage(fmt::format("--rails on host {}: {}", host, e.what()));
    }
  }
  return std::make_unique<RdmaPairTest>(host, request, settings);
}

}  // namespace fabricbench::tools::sweep
