"""fabric-watchdog --slow under a real Slurm (tests/rigs/slurm_cluster.sh: 4 namespace hosts, each its own host name):
`srun -N 4` starts a watchdog per host in front of one rank each of a job (tests/mpi/fake_nccl_job.cpp --one-rank, the
profiler plugin loaded as NCCL does); their records meet in one folder every host sees, the first task's judge names
the slow rank with its host, once, and writes the report with every host's process. Needs root, slurm-wlm and munge."""
import re
import subprocess
import unittest

from fbtest import BIN
from rigs.test_slurm_sweep import SlurmRig, needs_slurm

FAKE = BIN.parent / "tests" / "fake_nccl_job"


@needs_slurm
class SlurmSlowWatch(SlurmRig):
    PREFIX = "w"

    def test_srun_across_hosts_names_the_slow_rank_and_its_host(self):
        env = self.env(**self.slurm_env)
        r = subprocess.run(["timeout", "120", "srun", "-N", "4", "--ntasks-per-node", "1", "--mpi=none",
                            str(BIN / "fabric-watchdog"), "--no-ras", "--slow", str(self.dir / "slow"),
                            "--slow-window", "2s", "--", str(FAKE), "--one-rank", "--ranks", "4", "--slow-rank", "2",
                            "--slow-from", "3", "--slow-to", "20", "--seconds", "9"],
                           capture_output=True, text=True, env=env, cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(re.findall(r"fake job: rank (\d) done", r.stdout)), ["0", "1", "2", "3"], r.stdout)
        named = re.findall(r"slow rank: rank (\d) \(pid \d+, GPU \? on host (\S+)\)", r.stderr)
        self.assertEqual(named, [("2", self.hosts[2])], r.stderr)
        run = self.load("slow/slow-report.h5")
        self.assertEqual(run.attrs["status"], "complete")
        procs = run.tables["slow/processes"]
        self.assertEqual(sorted(procs.host), sorted(self.hosts))
        self.assertEqual(sorted(procs.launcher_rank), ["0", "1", "2", "3"])
        found = run.tables["slow/findings"]
        self.assertEqual(list(zip(found["rank"], found.host)), [(2, self.hosts[2])])


if __name__ == "__main__":
    unittest.main()
