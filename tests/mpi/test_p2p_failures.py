"""A run that is killed or hangs leaves the rows measured so far readable, and says it did not complete."""
import os
import pathlib
import signal
import subprocess
import time
import unittest

from fbtest import LaunchTest, mpirun_command


def rank_pid(mpirun_pid, rank):
    """The pid of MPI rank `rank` among mpirun's descendants (from OMPI_COMM_WORLD_RANK in its environment)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = pathlib.Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        if exe.endswith("fabric-p2p") and f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ and \
                f"OMPI_MCA_orte_hnp_uri".encode() in b"".join(environ) and is_descendant(int(entry), mpirun_pid):
            return int(entry)
    return None


def is_descendant(pid, ancestor):
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
    return False


class Interrupted(LaunchTest):
    def start_until_rows(self, output, rows, session=False):
        """A long fabric-p2p latency run under mpirun, returned once it has printed `rows` table rows. `session`:
        mpirun leads a process group of its own, as in a terminal (Ctrl-C reaches the whole group)."""
        cmd = mpirun_command(2, "fabric-p2p", ["--test", "latency", "-n", "200000", "--output", output])
        proc = subprocess.Popen(cmd, cwd=self.dir, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=session)
        rows_seen = 0
        deadline = time.time() + 120
        while rows_seen < rows and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.strip() and not line.startswith("#"):
                rows_seen += 1
        self.assertEqual(rows_seen, rows, "the run printed rows before it was interrupted")
        return proc

    def test_sigterm_to_mpirun_keeps_finished_rows(self):
        proc = self.start_until_rows("term.h5", 3)
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

    def test_ctrl_c_keeps_finished_rows_and_names_the_termination(self):
        # Ctrl-C in a terminal: SIGINT to mpirun's whole process group (mpirun passes it on to the ranks).
        proc = self.start_until_rows("int.h5", 3, session=True)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            self.fail("mpirun did not stop after Ctrl-C")
        self.assertNotEqual(proc.returncode, 0)
        run = self.load("int.h5")
        self.assertTrue(run.attrs["status"].startswith("failed: terminated by signal"), run.attrs["status"])
        rows = run.tables["results/p2p"]
        self.assertGreaterEqual(len(rows), 3)
        self.assertTrue((rows["time_us_median"] > 0).all())

    def test_a_stalled_rank_is_a_timeout_with_exit_status_3(self):
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency", "--sizes", "8,16,32,64", "-n", "100", "--timeout", "2",
                                          "--output", "stall.h5"], env={"FABRICBENCH_TEST_STALL": "1:2"})
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        run = self.load("stall.h5")
        status = run.attrs["status"]
        self.assertTrue(status.startswith("failed: timeout: latency at 32 B did not finish within 2 s; "
                                          "ranks not finished: 0,1; not started: 1; "), status)
        self.assertEqual(list(run.tables["results/p2p"]["bytes"]), [8, 16])
        self.assertIn("did not finish", r.stderr)
        # Every rank said where it was: the stalled one in the harness's stall, the other in MPI waiting for it.
        ranks = run.tables["failure/ranks"].set_index("rank")
        self.assertEqual(list(ranks.index), [0, 1])
        self.assertTrue((ranks["answered"] == 1).all(), ranks)
        self.assertTrue((ranks["host"].str.len() > 0).all())
        self.assertEqual(set(ranks["step"]), {"latency at 32 B"})
        self.assertIn("measuring", ranks.loc[1, "backtrace"], "the stalled rank's main thread, from inside")
        self.assertRegex(ranks.loc[0, "last_call"], r"^P?MPI_", ranks.loc[0, "backtrace"])
        self.assertIn("rank 0 (", status)
        self.assertIn("in " + ranks.loc[0, "last_call"], status)

    def test_a_killed_rank_is_named(self):
        proc = self.start_until_rows("kill.h5", 2)
        victim = rank_pid(proc.pid, 1)
        self.assertIsNotNone(victim, "rank 1's process")
        os.kill(victim, signal.SIGKILL)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("mpirun did not stop after a rank was killed")
        self.assertNotEqual(proc.returncode, 0)
        run = self.load("kill.h5")
        status = run.attrs["status"]
        self.assertTrue(status.startswith("failed: "), status)
        self.assertIn("rank 1 (", status)
        self.assertIn("no answer (dead or unreachable)", status)
        ranks = run.tables["failure/ranks"].set_index("rank")
        self.assertEqual(ranks.loc[1, "answered"], 0)
        self.assertEqual(ranks.loc[0, "answered"], 1)


if __name__ == "__main__":
    unittest.main()
