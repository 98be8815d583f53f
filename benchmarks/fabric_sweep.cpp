// fabric-sweep: every node pair, the bad node or link named (see docs/fabric-sweep.md).
#include "fabricbench/tools/sweep/sweep_benchmark.hpp"

int main(int argc, char** argv) {
  fabricbench::tools::sweep::SweepBenchmark benchmark;
  return fabricbench::app::run_benchmark(benchmark, argc, argv);
}
