// fabric-coll: NCCL and MPI collectives with nccl-tests' algbw/busbw (see docs/fabric-coll.md).
#include "fabricbench/tools/coll/coll_benchmark.hpp"

int main(int argc, char** argv) {
  fabricbench::tools::coll::CollBenchmark benchmark;
  return fabricbench::app::run_benchmark(benchmark, argc, argv);
}
