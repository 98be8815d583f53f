// fabric-rail-exec: bind one rank to its rail's NIC and NUMA node, then run the tool in its place. What
// fabric-mpirun --rails and fabric-srun --rails put in front of each rank, because MPI, UCX and NCCL read the NIC
// variables in MPI_Init and ncclCommInit, before the tool could set them:
//   mpirun ... fabric-rail-exec [--rail-map FILE] [--no-numa] -- EXE [ARGS]
//   fabric-rail-exec [--rail-map FILE] [--no-numa] [--local-rank N] --dry-run   (print the binding, run nothing)
//   fabric-rail-exec --check-map FILE                                           (validate a map, print its rails)
// The rail is the rank's local rank (OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID, else PMIX_LOCAL_RANK); its NIC
// and NUMA node follow facts::RailBinding, the rule fabric-sweep --rails follows too. It sets the binding's
// variables that the environment does not already hold (a user's or mpirun's -x/--mca value is kept), always
// FABRICBENCH_RAIL and FABRICBENCH_RAIL_NIC; unless --no-numa it binds the CPUs (sched_setaffinity) and the memory
// (set_mempolicy MPOL_BIND) to the NUMA node, a binding that fails being a warning. FABRICBENCH_RAIL_DRY_RUN=1 makes
// every rank print its line and exit 0. It never starts MPI.
#pragma once

namespace fabricbench::tools::rail_exec {

// The whole tool: no return when the command runs (exec); 0 after --dry-run or --check-map; 2 for bad input (one
// line), a command that cannot run included.
int main(int argc, char** argv);

}  // namespace fabricbench::tools::rail_exec
