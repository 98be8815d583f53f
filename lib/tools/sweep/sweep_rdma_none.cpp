// fabric-sweep's rdma metrics in a build without libibverbs: asking for them is a usage error.
#include "fabricbench/error.hpp"
#include "fabricbench/tools/sweep/pair_test.hpp"

namespace fabricbench::tools::sweep {
using namespace fabricbench::sweep;  // lib/sweep: what this tool runs

std::unique_ptr<PairTest> make_rdma_pair_test(const std::string&, const RdmaPairSettings&) {
  throw Error::usage("--metric rdma_bw/rdma_lat: this build has no libibverbs (rebuild with libibverbs-dev)");
}

}  // namespace fabricbench::tools::sweep
