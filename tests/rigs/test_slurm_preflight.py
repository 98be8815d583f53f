"""launch/sbatch/preflight.sbatch on a real Slurm (tests/rigs/slurm_cluster.sh on the emulated cluster of 4 hosts):
with one host shaped, the job fails (what `sbatch --wait` returns), the workload never starts, and the job's output and HDF5 file name the
host as a bad node; unshaped, the job passes and the workload runs. Either way the sweep stays within its budget.
The preflight's own defaults (quick plan, --retest 1, 60 s, p2p_bw + p2p_latency); the rig's sizes and rules come
in FABRICBENCH_PREFLIGHT_ARGS. Needs root, slurm-wlm and munge."""
import pathlib
import unittest

import h5py

from fbtest import BIN
from rigs.test_netns_sweep import SLOW, SWEEP_ARGS, rig
from rigs.test_slurm_sweep import SlurmRig, needs_slurm

PREFLIGHT = pathlib.Path(__file__).resolve().parents[2] / "launch" / "sbatch" / "preflight.sbatch"
# The rig's sizes and rules, not its iteration counts (4 latency round trips are one scheduler hiccup away from a
# latency verdict on two shared cores) nor its re-tests (the preflight's own default is under test).
RIG_ARGS = [a for k, v in zip(SWEEP_ARGS[::2], SWEEP_ARGS[1::2]) if k not in ("-n", "-w", "--retest") for a in (k, v)]


@needs_slurm
class SlurmPreflight(SlurmRig):
    PREFIX = "p"

    def submit(self):
        self.tmp = self.dir / "tmp"  # the script's TMPDIR: it must leave nothing there, whichever way it ends
        self.tmp.mkdir()
        env = self.env(**self.slurm_env, FABRICBENCH_BIN=str(BIN), FABRICBENCH_OUT=str(self.dir),
                       FABRICBENCH_PREFLIGHT_ARGS=" ".join(RIG_ARGS), TMPDIR=str(self.tmp))
        self.marker = self.dir / "workload-ran"
        r = self.sbatch_wait(["-N", "4", "-o", str(self.dir / "job-%j.out"), str(PREFLIGHT), "--", "touch",
                              str(self.marker)], env, 170)
        outputs = list(self.dir.glob("job-*.out"))
        self.assertEqual(len(outputs), 1, self.files())
        files = list(self.dir.glob("preflight-*.h5"))
        self.assertEqual(len(files), 1, self.files())
        self.assertEqual(list(self.tmp.glob("fabricbench-preflight.*")), [], "the sweep's log left behind")
        return r, outputs[0].read_text(), files[0]

    def assert_within_budget(self, h5):
        with h5py.File(h5) as f:
            self.assertEqual(f.attrs["budget_s"], 60.0)
            self.assertLessEqual(f["sweep/rounds"]["wall_s"].sum(), f.attrs["budget_s"])
            return {(bytes(r["kind"]).decode(), bytes(r["host_a"]).decode()) for r in f["sweep/verdicts"][:]}

    def test_a_slow_host_fails_the_job_named_and_the_workload_does_not_start(self):
        slow = self.hosts[2]
        rig("shape-host", self.rig, slow, SLOW)
        r, log, h5 = self.submit()
        self.assertNotEqual(r.returncode, 0, log)
        self.assertFalse(self.marker.exists(), log)
        self.assertIn(f"fabricbench-preflight: VERDICT bad node (p2p_bw): {slow}:", log)
        self.assertIn(f"resubmit without them: sbatch --exclude={slow} ...", log)
        self.assertIn("fabricbench-preflight: the workload did not start", log)
        verdicts = self.assert_within_budget(h5)
        self.assertIn(("node", slow), verdicts)
        self.assertEqual({host for kind, host in verdicts if kind == "node"}, {slow}, log)

    def test_a_healthy_allocation_passes_and_the_workload_runs(self):
        r, log, h5 = self.submit()
        self.assertEqual(r.returncode, 0, log)
        self.assertTrue(self.marker.exists(), log)
        self.assertIn("fabricbench-preflight: passed in", log)
        self.assertNotIn("VERDICT", log)
        self.assertEqual(self.assert_within_budget(h5), set())


if __name__ == "__main__":
    unittest.main()
