"""A run that is killed or hangs leaves the rows measured so far readable, and says it did not complete."""
import signal
import subprocess
import time
import unittest

from fbtest import LaunchTest, mpirun_command


class Interrupted(LaunchTest):
    def test_sigterm_to_mpirun_keeps_finished_rows(self):
        cmd = mpirun_command(2, "fabric-p2p", ["--test", "latency", "-n", "200000", "--output", "term.h5"])
        proc = subprocess.Popen(cmd, cwd=self.dir, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        rows_seen = 0
        deadline = time.time() + 120
        while rows_seen < 3 and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.strip() and not line.startswith("#"):
                rows_seen += 1
        self.assertEqual(rows_seen, 3, "the run printed rows before the signal")
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("mpirun did not stop after SIGTERM")
        self.assertNotEqual(proc.returncode, 0)
        run = self.load("term.h5")
        self.assertNotEqual(run.attrs["status"], "complete")
        self.assertTrue(run.attrs["status"].startswith("failed: terminated by signal"), run.attrs["status"])
        rows = run.tables["results/p2p"]
        self.assertGreaterEqual(len(rows), 3)
        self.assertTrue((rows["time_us_median"] > 0).all())

    def test_a_stalled_rank_is_a_timeout_with_exit_status_3(self):
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency", "--sizes", "8,16,32,64", "-n", "100", "--timeout", "2",
                                          "--output", "stall.h5"], env={"FABRICBENCH_TEST_STALL": "1:2"})
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        run = self.load("stall.h5")
        self.assertEqual(run.attrs["status"], "failed: timeout: latency at 32 B did not finish within 2 s; "
                                              "ranks not finished: 0,1; not started: 1")
        self.assertEqual(list(run.tables["results/p2p"]["bytes"]), [8, 16])
        self.assertIn("did not finish", r.stderr)


if __name__ == "__main__":
    unittest.main()
