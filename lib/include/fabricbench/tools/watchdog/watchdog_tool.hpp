// fabric-watchdog: the seeds' hang watchdog (io-watchdog + STAT: no output for a while -> stacks -> scancel) for any
// job, in front of its command under srun or mpirun:
//   srun fabric-watchdog --timeout 20m --actions stacks,kill -- python train.py
// It runs the command in its own process group and passes its output through. After --timeout without output it asks
// the node's NCCL RAS service twice, 2 s apart: collectives still being launched mean the job is only quiet; none
// means a hang. Then one report (the doctor's HDF5 layout: /doctor/findings with the laggard ranks and dead
// processes, /doctor/ras_*, and /watchdog/stacks of the job's processes on this node, the laggard's first; a short
// text on stderr) and the actions: kill (the command's process group), scancel ($SLURM_JOB_ID), exec:PATH.
#pragma once

namespace fabricbench::tools::watchdog {

// The whole tool: exit status the command's, 2 for bad options (one line), 3 when it ended a hung job.
int main(int argc, char** argv);

}  // namespace fabricbench::tools::watchdog
