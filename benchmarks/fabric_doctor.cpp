// fabric-doctor: the hand-run diagnostics as findings, on every host of an mpirun/srun job (see docs/fabric-doctor.md).
#include "fabricbench/tools/doctor/doctor_benchmark.hpp"

int main(int argc, char** argv) {
  fabricbench::tools::doctor::DoctorBenchmark doctor;
  return fabricbench::app::run_benchmark(doctor, argc, argv);
}
