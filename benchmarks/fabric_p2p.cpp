// fabric-p2p: OSU-style point-to-point latency and bandwidth over MPI (see docs/fabric-p2p.md).
#include "fabricbench/tools/p2p/p2p_benchmark.hpp"

int main(int argc, char** argv) {
  fabricbench::tools::p2p::P2PBenchmark benchmark;
  return fabricbench::app::run_benchmark(benchmark, argc, argv);
}
