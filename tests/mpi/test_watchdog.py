"""fabric-watchdog (issue 36): a command's output and exit status passed through; a command silent past --timeout
whose NCCL collectives do not advance (a fake RAS service with replies recorded from a real NCCL 2.28.9 job) is
reported (findings, RAS tables, stacks) and stopped with exit 3; collectives that advance keep a quiet job alive;
bad options are one line, exit 2. Under hostile conditions (issue 48): the watchdog killed, interrupted or hung up on
ends its whole job (grandchildren too) and removes its hook folder; a job that closes its output and hangs is still
reported; actions run without a shell and are bounded."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock

from fbtest import BIN, LaunchTest
from mpi.test_nccl_ras import FakeRas

SILENT = [sys.executable, "-c", "import time; print('step 1', flush=True); time.sleep(120)"]
# A job whose shell starts a grandchild, writes its pid and waits: what a launcher script does.
FAMILY = ["sh", "-c", "sleep 300 & echo $! > grandchild.pid; echo started; wait"]


def gone(pid, within=10.0):
    """True once `pid` has exited (absent, or a zombie waiting for its reaper) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat[stat.rfind(")") + 2] == "Z":
            return True
        time.sleep(0.05)
    return False


class Watchdog(LaunchTest):
    def setUp(self):
        super().setUp()
        # The watchdog makes its hook's folder under TMPDIR: a folder of this test's own, so that tests run side by side
        # (ci/test.sh runs the label waits several at once) each see only the folders their own watchdogs made.
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-tmp-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        tmpdir = unittest.mock.patch.dict(os.environ, {"TMPDIR": str(self.tmp)})
        tmpdir.start()
        self.addCleanup(tmpdir.stop)

    def hooks(self):
        """The hook folders this test's watchdogs made and have not removed."""
        return set(self.tmp.glob("fabric-watchdog-*"))

    def watch(self, args, command, timeout=120):
        start = time.monotonic()
        r = subprocess.run([str(BIN / "fabric-watchdog")] + args + ["--"] + command, cwd=self.dir, capture_output=True,
                           text=True, timeout=timeout)
        return r, time.monotonic() - start

    def watch_silent_with_ras(self, states, report):
        """SILENT under the watchdog (--timeout 2s) with the fake RAS service answering `states`; exit 3 expected."""
        ras = FakeRas(self.dir.parent, states)
        try:
            r, _ = self.watch(["--timeout", "2s", "--ras", ras.address, "--report", report], SILENT)
        finally:
            ras.close()
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        return r

    def test_output_and_exit_status_pass_through(self):
        r, _ = self.watch(["--timeout", "30s", "--no-ras"], ["sh", "-c", "echo out; echo err >&2; exit 5"])
        self.assertEqual((r.returncode, r.stdout, r.stderr), (5, "out\n", "err\n"))
        self.assertEqual(self.files(), [], "no hang, no report")

    def test_a_silent_job_without_nccl_is_reported_with_its_stacks_and_stopped(self):
        r, took = self.watch(["--timeout", "2s", "--no-ras", "--report", "hang.h5"], SILENT)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertLess(took, 30, "the hang found after --timeout, the job stopped")
        self.assertIn("step 1", r.stdout)
        run = self.load("hang.h5")
        found = run.tables["doctor/findings"]
        self.assertEqual(list(found.check), ["watchdog.no_progress"], found)
        self.assertIn("kill", found.hint.iloc[0])
        stacks = run.tables["watchdog/stacks"]
        self.assertGreater(len(stacks), 0)
        pid = int(stacks.pid.iloc[0])
        self.assertIn("python", stacks.command.iloc[0])
        self.assertFalse(pathlib.Path(f"/proc/{pid}").exists(), "the watched process is gone")

    def test_without_stack_tools_the_python_tracebacks_come_from_the_hook(self):
        """No py-spy, gdb or eu-stack on PATH: the watchdog's faulthandler hook gives each Python process's tracebacks
        (the blocked function named, in the main thread and another), /proc its threads; a sitecustomize of the
        user's still runs, and the hook's folder is gone afterwards. --no-python-hook: the threads only."""
        tools = self.dir / "tools"
        tools.mkdir()
        os.symlink(subprocess.check_output(["which", "timeout"], text=True).strip(), tools / "timeout")
        user_site = self.dir / "site"
        user_site.mkdir()
        (user_site / "sitecustomize.py").write_text("print('user sitecustomize ran', flush=True)\n")
        job = ("import threading, time\n"
               "def wait_for_peer():\n    time.sleep(120)\n"
               "threading.Thread(target=wait_for_peer, name='peer', daemon=True).start()\n"
               "def all_reduce_step():\n    print('step 1', flush=True); time.sleep(120)\n"
               "all_reduce_step()\n")
        env = dict(os.environ, PATH=str(tools), PYTHONPATH=str(user_site))
        before = self.hooks()
        for hook, report in ((True, "hook.h5"), (False, "nohook.h5")):
            args = ["--timeout", "2s", "--no-ras", "--report", report] + ([] if hook else ["--no-python-hook"])
            r = subprocess.run([str(BIN / "fabric-watchdog")] + args + ["--", sys.executable, "-c", job], cwd=self.dir,
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn("user sitecustomize ran", r.stdout)
            stacks = self.load(report).tables["watchdog/stacks"]
            text = "\n".join(stacks.text)
            self.assertIn("thread ", text)
            self.assertIn("run 'py-spy dump --native --pid", text)
            if hook:
                self.assertEqual(set(stacks.tool), {"faulthandler+proc"}, stacks)
                self.assertIn("in all_reduce_step", text)
                self.assertIn("in wait_for_peer", text)
            else:
                self.assertEqual(set(stacks.tool), {"proc"}, stacks)
                self.assertNotIn("all_reduce_step", text)
        self.assertEqual(self.hooks() - before, set(), "the hook's folder removed")

    def test_a_laggard_named_from_nccl_ras_when_collectives_stop(self):
        r = self.watch_silent_with_ras("mismatch", "ras.h5")
        self.assertIn("no collective launched", r.stderr)
        found = self.load("ras.h5").tables["doctor/findings"]
        self.assertEqual(sorted(found[found.status == "fail"].check), ["nccl.ras.laggard", "watchdog.no_progress"])
        laggard = found[found.check == "nccl.ras.laggard"].value.iloc[0]
        self.assertIn("rank 1 (pid 724, GPU 1 on host 192.0.2.2)", laggard)

    def test_collectives_that_advance_keep_a_quiet_job_alive(self):
        # Looks 1 and 2: AllReduce counts 156 then 157 (advancing: not hung); looks 3 and 4: 157 and 157 (hung).
        r = self.watch_silent_with_ras("healthy,mismatch", "later.h5")
        self.assertIn("but the job's collectives advance (NCCL RAS): not hung", r.stderr)
        self.assertEqual(r.stderr.count("the job looks hung"), 1, r.stderr)

    def test_without_kill_the_job_goes_on_after_one_report(self):
        # Silent for 2 s, then it finishes: reported once (stacks only), its exit status kept.
        r, _ = self.watch(["--timeout", "1s", "--no-ras", "--actions", "stacks", "--report", "once.h5"],
                          [sys.executable, "-c", "import time; time.sleep(2.5); print('done')"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "done\n")
        self.assertEqual(r.stderr.count("the job looks hung"), 1, r.stderr)
        self.assertIn("watching on without reporting again", r.stderr)
        self.assertEqual(list(self.load("once.h5").tables["doctor/findings"].check), ["watchdog.no_progress"])

    def test_an_exec_action_gets_the_report(self):
        script = self.dir / "on-hang.sh"
        script.write_text("#!/bin/sh\necho \"$FABRIC_WATCHDOG_REPORT $FABRIC_WATCHDOG_PID\" > got.txt\n")
        script.chmod(0o755)
        r, _ = self.watch(["--timeout", "1s", "--no-ras", "--actions", f"exec:{script},kill", "--report", "x.h5"],
                          SILENT)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        report, pid = (self.dir / "got.txt").read_text().split()
        self.assertEqual(report, "x.h5")
        self.assertGreater(int(pid), 0)

    def start_family(self, args=()):
        """FAMILY under the watchdog, started: the watchdog's Popen and the grandchild's pid."""
        proc = subprocess.Popen([str(BIN / "fabric-watchdog"), "--timeout", "5m", "--no-ras", *args, "--"] + FAMILY,
                                cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pidfile = self.dir / "grandchild.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(pidfile.exists(), "the job started")
        return proc, int(pidfile.read_text())

    def test_sigterm_sigint_and_sighup_end_the_whole_job_and_the_hook_folder(self):
        """Before: the watchdog died at once, its job's grandchild ran on and the hook's 0700 folder stayed."""
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                before = self.hooks()
                proc, grandchild = self.start_family()
                self.assertGreater(len(self.hooks() - before), 0, "hook made")
                proc.send_signal(sig)
                out, err = proc.communicate(timeout=30)
                self.assertEqual(proc.returncode, 128 + sig, err)
                self.assertIn("passed to the job", err)
                self.assertTrue(gone(grandchild), f"the job's grandchild {grandchild} still runs")
                self.assertEqual(self.hooks() - before, set(),
                                 "the hook's folder removed")
                (self.dir / "grandchild.pid").unlink()

    def test_ctrl_c_reaches_the_job(self):
        """The job has its own process group, so the terminal's SIGINT reached only the watchdog: now it is passed on
        and the job's own handler decides (here: a message and exit status 7)."""
        job = ["sh", "-c", "trap 'echo got INT; exit 7' INT; echo started; while :; do sleep 0.1; done"]
        proc = subprocess.Popen([str(BIN / "fabric-watchdog"), "--timeout", "5m", "--no-ras", "--"] + job,
                                cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline(), "started\n")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual((proc.returncode, out), (7, "got INT\n"), err)

    def test_sigkill_of_the_watchdog_still_ends_its_job_and_the_hook_folder(self):
        """No handler runs on SIGKILL: the guard process sees the watchdog gone, ends the job's process group and
        removes the hook's folder (before, every such run left one in /tmp)."""
        before = self.hooks()
        proc, grandchild = self.start_family()
        made = self.hooks() - before
        self.assertGreater(len(made), 0, "hook made")
        proc.kill()
        proc.communicate(timeout=30)
        self.assertTrue(gone(grandchild), f"the job's grandchild {grandchild} still runs")
        deadline = time.monotonic() + 10  # the guard gives the group 2 s after its SIGTERM
        while any(p.exists() for p in made) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([p for p in made if p.exists()], [], "the hook's folder removed")

    def test_a_job_that_closes_its_output_and_hangs_is_reported(self):
        """Before: once both pipes closed the watchdog blocked in waitpid until the job ended, and wrote no report."""
        r, took = self.watch(["--timeout", "2s", "--no-ras", "--actions", "kill", "--report", "closed.h5"],
                             ["sh", "-c", "echo bye; exec >&- 2>&-; sleep 60"], timeout=50)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertLess(took, 30)
        self.assertEqual(list(self.load("closed.h5").tables["doctor/findings"].check), ["watchdog.no_progress"])

    def test_the_exec_action_takes_any_report_path_without_a_shell(self):
        """Before: the path went into a shell command inside single quotes; a quote broke it and a ';' ran a command."""
        script = self.dir / "on-hang.sh"
        script.write_text("#!/bin/sh\nprintf '%s' \"$FABRIC_WATCHDOG_REPORT\" > got.txt\n")
        script.chmod(0o755)
        report = "it's; touch injected #.h5"
        r, _ = self.watch(["--timeout", "1s", "--no-ras", "--actions", f"exec:{script},kill", "--report", report],
                          SILENT)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertEqual((self.dir / "got.txt").read_text(), report)
        self.assertFalse((self.dir / "injected").exists())
        self.assertTrue((self.dir / report).exists())

    def test_an_action_that_ignores_sigterm_is_killed_at_its_bound(self):
        script = self.dir / "stubborn.sh"
        script.write_text("#!/bin/sh\ntrap '' TERM\necho $$ > action.pid\nsleep 300 & wait; sleep 300\n")
        script.chmod(0o755)
        r, took = self.watch(["--timeout", "1s", "--no-ras", "--actions", f"exec:{script},kill",
                              "--action-timeout", "1s", "--report", "s.h5"], SILENT, timeout=60)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertLess(took, 30, "SIGKILL 5 s after the bound's SIGTERM")
        self.assertIn("still running after 1 s: stopped", r.stderr)
        self.assertTrue(gone(int((self.dir / "action.pid").read_text())))

    def test_watch_keeps_a_prometheus_textfile_without_a_command(self):
        # Looks: healthy (156 AllReduce in all), then rank 0 at 79 and rank 1 still at 78: a laggard on the 2nd look.
        ras = FakeRas(self.dir.parent, "healthy,mismatch")
        prom = self.dir / "nccl.prom"
        try:
            proc = subprocess.Popen([str(BIN / "fabric-watchdog"), "--watch", "1s", "--prometheus", str(prom), "--ras",
                                     ras.address], cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            deadline = time.monotonic() + 30
            text = ""
            while "laggard_ranks{tool=\"fabric-watchdog\"} 1" not in text and time.monotonic() < deadline:
                time.sleep(0.2)
                text = prom.read_text() if prom.exists() else ""
            proc.terminate()
            out, err = proc.communicate(timeout=30)
        finally:
            ras.close()
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn('fabricbench_nccl_ras_laggard_ranks{tool="fabric-watchdog"} 1', text)
        self.assertIn('fabricbench_nccl_ras_up{tool="fabric-watchdog"} 1', text)
        self.assertIn('fabricbench_nccl_ras_op_spread{tool="fabric-watchdog",communicator="0xc04513ef3a63ea2e"} 1',
                      text)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["nccl.prom"], "written whole, no temporary left")

    def test_bad_options_are_one_line_and_no_report(self):
        for args, expected in [([], "give the command to watch after --"),
                               (["--actions", "boom", "--", "true"], "--actions 'boom': allowed values are stacks"),
                               (["--timeout", "0", "--", "true"], "--timeout '0'"),
                               (["--ras", "x:http", "--", "true"], "--ras 'x:http': the port must be a number"),
                               (["--actions", "exec:/nonexistent", "--", "true"], "exec:/nonexistent: not an exec"),
                               (["--", "/nonexistent/cmd"], "cannot run '/nonexistent/cmd'"),
                               (["--report", "/nonexistent/r.h5", "--", "true"],
                                "--report /nonexistent/r.h5: its folder /nonexistent is not writable"),
                               (["--watch", "1s", "--", "true"], "--watch: give --prometheus FILE"),
                               (["--prometheus", "x.prom", "--", "true"], "--prometheus is written by --watch"),
                               (["--watch", "1s", "--prometheus", "/proc/x.prom"], "--prometheus /proc/x.prom"),
                               (["--watch", "1s", "--prometheus", "x.prom", "--no-ras"], "drop --no-ras"),
                               (["--report", "/proc/r.h5", "--", "true"], "its folder /proc is not writable"),
                               (["--report", ".", "--force", "--", "true"], "--report .: not a regular file"),
                               (["--watch", "1s", "--prometheus", "x.prom", "--timeout", "1m"],
                                "--timeout: there is no command to watch"),
                               (["--ras", "127.0.0.1:1", "--no-ras", "--", "true"], "--ras with --no-ras"),
                               (["--actions", "kill", "--no-python-hook", "--", "true"], "--no-python-hook: the hook"),
                               (["--force", "--", "true"], "--force overwrites the --report (or --slow-report) file"),
                               (["--actions", "kill,stacks,kill", "--", "true"], "kill given twice"),
                               (["--action-timeout", "5s", "--", "true"], "--action-timeout bounds the exec: and scancel actions and --slow-exec")]:
            with self.subTest(args=args):
                r = subprocess.run([str(BIN / "fabric-watchdog")] + args, cwd=self.dir, capture_output=True,
                                   text=True, timeout=30)
                ours = [line for line in r.stderr.splitlines() if line.startswith("fabric-watchdog:")]
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(ours), 1, r.stderr)
                self.assertIn(expected, ours[0])
                self.assertEqual(self.files(), [])


if __name__ == "__main__":
    unittest.main()
