// fabric-verbs: perftest-style RDMA verbs tests launched by mpirun/srun (see docs/fabric-verbs.md).
#include "fabricbench/tools/verbs/verbs_benchmark.hpp"

int main(int argc, char** argv) {
  fabricbench::tools::verbs::VerbsBenchmark benchmark;
  return fabricbench::app::run_benchmark(benchmark, argc, argv);
}
