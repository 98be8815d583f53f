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

from fbtest import BIN, LaunchTest
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


@unittest.skipIf(GPUS < 2 or not HAVE_TORCH, "skipped: needs 2 GPUs and PyTorch")
class WatchdogOnAJob(LaunchTest):
    """fabric-watchdog in front of torchrun (the job prints nothing): silent past --timeout while its collectives
    advance, it watches on; once rank 1 stops calling collectives, it reports the hang (rank 1 the laggard), takes the
    stacks of the job's processes (torchrun and both ranks) and ends the job, exit 3."""

    def test_a_quiet_job_lives_and_a_hung_one_is_reported_and_ended(self):
        spec = importlib.util.spec_from_file_location("record", RECORDER)
        record = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(record)
        work = self.dir / "job"
        work.mkdir()
        (work / "worker.py").write_text(record.WORKER)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="0,1", NCCL_NVLS_ENABLE="0")
        proc = subprocess.Popen([str(BIN / "fabric-watchdog"), "--timeout", "8s", "--actions", "stacks,kill",
                                 "--report", "hang.h5", "--", sys.executable, "-m", "torch.distributed.run",
                                 "--nproc_per_node", "2", str(work / "worker.py"), str(work)],
                                cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        seen = []
        try:
            for line in proc.stderr:
                seen.append(line)
                if "not hung" in line and not (work / "stop").exists():
                    (work / "stop").write_text("")  # rank 1 stops calling collectives
            proc.wait(timeout=120)
        finally:
            proc.stderr.close()
            if proc.poll() is None:
                proc.kill()
            for name in ("pid0", "pid1"):
                try:
                    os.kill(int((work / name).read_text()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        self.assertEqual(proc.returncode, 3, "".join(seen))
        run = self.load("hang.h5")
        found = run.tables["doctor/findings"]
        fails = found[found.status == "fail"]
        self.assertEqual(sorted(fails.check), ["nccl.ras.laggard", "watchdog.no_progress"], fails)
        pid1 = int((work / "pid1").read_text())
        self.assertIn(f"rank 1 (pid {pid1}, GPU 1", fails[fails.check == "nccl.ras.laggard"].value.iloc[0])
        stacks = run.tables["watchdog/stacks"]
        pid0 = int((work / "pid0").read_text())
        self.assertTrue({pid0, pid1} <= set(stacks.pid), stacks[["pid", "tool", "command"]])
        self.assertEqual(int(stacks.pid.iloc[0]), pid1, "the laggard's stack first")
        for pid in (pid0, pid1):  # Python frames: py-spy where installed, else the watchdog's faulthandler hook
            mine = stacks[stacks.pid == pid]
            self.assertRegex(mine.tool.iloc[0], "^(py-spy|faulthandler[+])", mine)
            self.assertIn("worker.py", "\n".join(mine.text))
        rank1 = "\n".join(stacks[stacks.pid == pid1].text)
        sleep = next(n for n, line in enumerate(record.WORKER.split("\n"), 1) if "time.sleep(3600)" in line)
        self.assertRegex(rank1, rf'worker\.py(", line |:){sleep}\b', "rank 1 waits in its sleep, not in a collective")
        for pid in (int((work / "pid0").read_text()), pid1):
            self.assertFalse(pathlib.Path(f"/proc/{pid}").exists(), f"pid {pid} ended")
        for pid in stacks.pid.unique():  # the evidence: each process's first lines
            print(f"pid {pid}:", " | ".join(stacks[stacks.pid == pid].text.iloc[:3]))
        print("\n" + "".join(seen[-3:]))


if __name__ == "__main__":
    unittest.main()
