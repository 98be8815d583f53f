"""fabric-doctor --nccl-ras on a real NCCL job (issue 36): a PyTorch job of 2 ranks on 2 GPUs where rank 1 stops
calling collectives, then is frozen with SIGSTOP. Within 60 s of each, the doctor names that rank, its pid and its GPU,
and nothing else. Each rank has its own RAS port (NCCL_RAS_ADDR 28028 + rank; the doctor asks rank 0's): with the one
default port, whichever process bound it first answers for the node, and a frozen holder answered nothing (seen)."""
import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import time
import unittest

from fbtest import LaunchTest
from gpu.test_nccl import GPUS

RECORDER = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "ras" / "record.py"
HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipIf(GPUS < 2 or not HAVE_TORCH, "skipped: needs 2 GPUs and PyTorch")
class NcclRasOnAJob(LaunchTest):
    def setUp(self):
        super().setUp()
        spec = importlib.util.spec_from_file_location("record", RECORDER)
        record = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(record)
        self.work = self.dir / "job"
        self.work.mkdir()
        (self.work / "worker.py").write_text(record.WORKER)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1", NCCL_NVLS_ENABLE="0")
        self.job = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                                     str(self.work / "worker.py"), str(self.work)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True, env=env)
        deadline = time.monotonic() + 120
        while not (self.work / "pid1").exists():
            self.assertLess(time.monotonic(), deadline, "the job did not start")
            time.sleep(0.5)
        time.sleep(3)
        self.pid1 = int((self.work / "pid1").read_text())

    def tearDown(self):
        # The workers by pid too: torchrun's workers need not share its process group, and a frozen one left behind
        # would hold the node's RAS port for the next job.
        for name in ("pid0", "pid1"):
            try:
                os.kill(int((self.work / name).read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        os.killpg(self.job.pid, signal.SIGKILL)
        self.job.wait()
        super().tearDown()

    def doctor(self, name, timeout="20"):
        r = self.mpirun(1, "fabric-doctor", ["--nccl-ras", "--timeout", timeout, "--output", name], timeout=120)
        found = self.load(name).tables["doctor/findings"] if (self.dir / name).exists() else None
        return r, found

    def until_named(self, kinds, limit_s=60):
        """Asks until a failure names rank 1; returns (seconds, findings)."""
        start = time.monotonic()
        for attempt in range(100):
            r, found = self.doctor(f"{kinds}{attempt}.h5")
            if r.returncode == 1:
                return time.monotonic() - start, found
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertLess(time.monotonic() - start, limit_s, r.stdout)
            time.sleep(2)

    def test_a_healthy_job_then_a_laggard_then_a_frozen_process(self):
        r, found = self.doctor("healthy.h5")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(list(found.check), ["nccl.ras.healthy"], found)

        (self.work / "stop").write_text("")
        took, found = self.until_named("laggard")
        fails = found[found.status == "fail"]
        self.assertEqual(list(fails.check), ["nccl.ras.laggard"], fails)
        value = fails.value.iloc[0]
        self.assertIn(f"rank 1 (pid {self.pid1}, GPU 1 on host", value)
        self.assertIn("it never entered the collective", value)
        print(f"\nlaggard named {took:.1f} s after rank 1 stopped: {value}")

        os.kill(self.pid1, signal.SIGSTOP)
        took, found = self.until_named("dead")
        fails = found[found.status == "fail"]
        self.assertEqual(len(fails), 1, fails)
        self.assertIn(fails.check.iloc[0], ("nccl.ras.dead", "nccl.ras.missing"), fails)
        self.assertIn(f"{self.pid1}", fails.value.iloc[0])
        self.assertIn("GPU 1", fails.value.iloc[0])
        print(f"frozen process named {took:.1f} s after SIGSTOP: {fails.check.iloc[0]}: {fails.value.iloc[0]}")


if __name__ == "__main__":
    unittest.main()
