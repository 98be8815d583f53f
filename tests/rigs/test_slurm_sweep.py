"""fabric-sweep under a real Slurm (tests/rigs/slurm_cluster.sh on the emulated cluster): launched by
`srun --mpi=pmix` and by launch/sbatch/sweep.sbatch, it reaches the same verdict. Needs root and slurm-wlm."""
import os
import pathlib
import re
import shutil
import subprocess
import time
import unittest

from rigs import free_net  # noqa: F401 (test_slurm_healthcheck imports it from here)
from fbtest import BIN, LaunchTest
from rigs.test_netns_sweep import SWEEP_ARGS, rig

RIGS = pathlib.Path(__file__).resolve().parent
SBATCH = RIGS.parents[1] / "launch" / "sbatch" / "sweep.sbatch"


def slurm(*args, check=True):
    return subprocess.run([str(RIGS / "slurm_cluster.sh")] + [str(a) for a in args], capture_output=True, text=True,
                          check=check)


needs_slurm = unittest.skipUnless(os.geteuid() == 0 and shutil.which("slurmctld") and shutil.which("munged"),
                                  "skipped: needs root and slurm-wlm + munge")


class SlurmRig(LaunchTest):
    """Four namespace hosts RIG-h1..h4, each with its slurmd, up for each test; self.slurm_env points srun/sbatch at
    them. Subclasses name their rig's first letter (PREFIX) and add @needs_slurm."""
    PREFIX = "s"

    def setUp(self):
        super().setUp()
        self.rig = f"{self.PREFIX}{os.getpid() % 100000}"
        slurm("down", self.rig, check=False)
        rig("down", self.rig, check=False)
        rig("up", self.rig, free_net(), 4)
        up = slurm("up", self.rig, check=False)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
        self.hosts = [f"{self.rig}-h{i}" for i in range(1, 5)]
        self.slurm_env = dict(line.split("=", 1) for line in slurm("env", self.rig).stdout.split())

    def tearDown(self):
        slurm("down", self.rig, check=False)
        rig("down", self.rig, check=False)
        super().tearDown()

    def sbatch_wait(self, args, env, timeout):
        """What `sbatch --wait ARGS` tells (returncode: the job's exit code, or 128 + its signal), read each 0.2 s:
        sbatch's own wait polls at 2 s and then 8 s, and took 10.0 s for jobs of 1, 3 and 6 s on this rig."""
        submit = subprocess.run(["sbatch", "--parsable"] + args, capture_output=True, text=True, env=env,
                                cwd=self.dir)
        self.assertEqual(submit.returncode, 0, submit.stdout + submit.stderr)
        job = submit.stdout.strip().split(";")[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            show = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, env=env)
            fields = dict(f.split("=", 1) for f in show.stdout.split() if "=" in f)
            if fields.get("JobState", "PENDING") not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING",
                                                         "SUSPENDED", "REQUEUED", "RESIZING"):
                code, signal = (int(x) for x in fields["ExitCode"].split(":"))
                return subprocess.CompletedProcess(submit.args, 128 + signal if signal else code,
                                                   submit.stdout, show.stdout)
            time.sleep(0.2)
        subprocess.run(["scancel", job], env=env)
        self.fail(f"job {job} of sbatch {' '.join(args)} did not end within {timeout} s")


# 20 Mbit/s (about 2.4 MB/s), not the netns tests' 100 (11.7 MB/s): under srun the median host's pairs read 107 MB/s
# on an idle machine here, so the line (0.2 x) sat at 21, under 2x above the slowed host. In CI, right after the
# Soft-RoCE guest with the sanitizer tree compiling beside, the sbatch sweep then named nothing (exit 0: the healthy
# pairs had halved) and once it was "too noisy to judge". At 20 Mbit/s the healthy pairs may fall to 12 MB/s. A
# slowed pair's round takes 2.6 s: the tool's own --retest 1, not the netns tests' 2 (the test 61-71 s with 2).
# At 40 Mbit/s one run of three hung: Open MPI's TCP connect from the slowed host failed ("Operation now in
# progress") and rank 0 crashed inside Open MPI; not seen at 20 or 100.
SLURM_SLOW = "20mbit"
SLURM_SWEEP_ARGS = [a for k, v in zip(SWEEP_ARGS[::2], SWEEP_ARGS[1::2]) for a in (k, "1" if k == "--retest" else v)]


@needs_slurm
class SlurmSweep(SlurmRig):
    def setUp(self):
        super().setUp()
        rig("shape-host", self.rig, self.hosts[2], SLURM_SLOW)

    def verdicts(self, name):
        v = self.load(name).tables.get("sweep/verdicts")
        return [] if v is None else [(r.kind, r.host_a) for r in v.itertuples()]

    def story(self, name):
        """What a failed assertion shows: the job's output, the verdicts and each pair's value."""
        text = "".join(p.read_text() for p in self.dir.glob("fabric-sweep-*.out"))
        if (self.dir / name).exists():
            run = self.load(name)
            for key in ("sweep/verdicts", "sweep/pairs"):
                if key in run.tables:
                    text += f"\n{key}:\n" + run.tables[key].to_string(max_colwidth=300)
        return text

    def test_srun_and_sbatch_name_the_same_slow_node(self):
        env = self.env(**self.slurm_env)
        args = SLURM_SWEEP_ARGS + ["--metric", "p2p_bw"]
        # Open MPI 4.1.4 (Debian's) segfaults in start-up about once in 20 jobs on this rig (docs/operations.md; a
        # clean-clone run of 2026-11-30: rank 0 dead of SIGSEGV, no file written, srun ended by the timeout). Such a
        # start, before the sweep wrote anything, is run once more; a crash after the file exists, or twice, fails.
        for attempt in range(2):
            r = subprocess.run(["timeout", "300", "srun", "-N", "4", "--ntasks-per-node", "1", "--mpi=pmix",
                                str(BIN / "fabric-sweep"), "--output", str(self.dir / "srun.h5"), "-q"] + args,
                               capture_output=True, text=True, env=env, cwd=self.dir)
            if "Segmentation fault" not in r.stderr or (self.dir / "srun.h5").exists():
                break
            print(f"attempt {attempt}: a rank segfaulted before srun.h5 was written; once more", flush=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr + self.story("srun.h5"))
        self.assertEqual(self.verdicts("srun.h5"), [("node", self.hosts[2])], self.story("srun.h5"))

        env.update(FABRICBENCH_BIN=str(BIN), FABRICBENCH_OUT=str(self.dir), FABRICBENCH_SWEEP_ARGS=" ".join(args))
        r = self.sbatch_wait(["-N", "4", str(SBATCH)], env, 300)
        outputs = list(self.dir.glob("sweep-*.h5"))
        self.assertEqual(len(outputs), 1, self.files())
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr + self.story(outputs[0].name))
        self.assertEqual(self.verdicts(outputs[0].name), [("node", self.hosts[2])], self.story(outputs[0].name))
        log = next(self.dir.glob("fabric-sweep-*.out")).read_text()
        self.assertIn(f"VERDICT bad node (p2p_bw): {self.hosts[2]}", log)


if __name__ == "__main__":
    unittest.main()
