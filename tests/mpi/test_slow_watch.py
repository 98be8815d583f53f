"""fabric-watchdog --slow (issue 45) on CPU: a stand-in job (tests/mpi/fake_nccl_job.cpp) loads the profiler plugin the
way NCCL does and calls it as NCCL would for a communicator of 4 processes. A rank that makes the others wait is named
within seconds, with its pid and host, and named no more once it recovers; healthy, nothing is named; the report holds
the findings, the ranks against time, the per-rank, per-collective rows and the processes; the textfile and the action
get the rank. Failure: an NCCL that does not load the plugin (said once; the job runs as before), the judge killed
(the job goes on), a rank that exits early (said, counted in the report). Bad options: one line, exit 2."""
import os
import pathlib
import json
import re
import resource
import shutil
import signal
import socket
import stat
import struct
import subprocess
import threading
import time
import unittest

from fbtest import BIN, LaunchTest

FAKE = BIN.parent / "tests" / "fake_nccl_job"


class SlowWatch(LaunchTest):
    def start(self, args, job):
        """The watchdog with `args` in front of the fake job (`job`: its options); stderr lines kept with the seconds
        since the start, read as they come."""
        self.lines = []
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([str(BIN / "fabric-watchdog")] + args + ["--", str(FAKE)] + job, cwd=self.dir,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def read():
            for line in self.proc.stderr:
                self.lines.append((time.monotonic() - self.t0, line.rstrip("\n")))

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def finish(self, timeout=90):
        out = self.proc.stdout.read()  # not communicate(): it would read stderr too, beside the reader thread
        self.proc.wait(timeout=timeout)
        self.reader.join(timeout)
        return self.proc.returncode, out

    def judge_pid(self):
        """The judge's process (fabric-watchdog --judge DIR, started by --slow), within 10 s; None if none."""
        for _ in range(100):
            out = subprocess.run(["pgrep", "-f", f"fabric-watchdog --judge {self.dir}/slow"], capture_output=True,
                                 text=True).stdout.split()
            if out:
                return int(out[0])
            time.sleep(0.1)
        return None

    def said(self, pattern):
        return [(t, line) for t, line in self.lines if re.search(pattern, line)]

    def test_a_rank_that_makes_the_others_wait_is_named_while_it_runs(self):
        action = self.dir / "act.sh"
        action.write_text("#!/bin/sh\nenv | grep ^FABRIC_WATCHDOG_SLOW > \"$(dirname \"$0\")/acted.txt\"\n")
        action.chmod(0o755)
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s", "--slow-prometheus", "slow.prom",
                    "--slow-exec", str(action)],
                   ["--ranks", "4", "--slow-rank", "2", "--slow-from", "3", "--slow-to", "8", "--seconds", "13"])
        rc, out = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        self.assertIn("fake job: 4 ranks done", out)
        named = self.said(r"slow rank: rank \d")
        self.assertEqual(len(named), 1, text)
        t, line = named[0]
        host = socket.gethostname()
        self.assertRegex(line, rf"rank 2 \(pid \d+, GPU \? on host {re.escape(host)}\) of communicator 0xabc0fb "
                               r"arrives last at \d+% of its AllReduce calls of the last 2 s; the others wait (19|20)\.\d\d ms")
        # Slow from 3 s of the job (which starts about 0.5 s after the watchdog): named within 4 s of it (its second
        # look in a row).
        self.assertLess(t, 3.5 + 4, text)
        gone = self.said(r"gone: rank 2 ")
        self.assertEqual(len(gone), 1, text)
        self.assertGreater(gone[0][0], 8, text)
        self.assertEqual(self.said(r"^fabric-watchdog: slow collective:"), [], text)
        run = self.load("slow/slow-report.h5")
        self.assertEqual(run.attrs["status"], "complete")
        found = run.tables["slow/findings"]
        self.assertEqual(list(zip(found.kind, found["rank"])), [("late", 2)])
        self.assertEqual(found.host.iloc[0], host)
        # 20 ms waited at each 50 ms all-reduce: 40% of the time.
        self.assertTrue(30 <= found.loss_pct.iloc[0] <= 45, found.loss_pct.iloc[0])
        procs = run.tables["slow/processes"]
        self.assertEqual(len(procs), 4)
        self.assertIn(int(re.search(r"pid (\d+)", line).group(1)), set(procs.pid))
        rows = run.tables["slow/collectives"]
        self.assertEqual(sorted(set(rows["rank"])), [0, 1, 2, 3])
        waited = set(rows[rows.wait_ms > 15].seq)  # collectives where a rank waited: rank 2 was the last at each
        self.assertGreater(len(waited), 50)
        self.assertEqual(set(rows[rows.seq.isin(waited) & (rows["last"] == 1)]["rank"]), {2})
        windows = run.tables["slow/windows"]
        self.assertGreater(windows[windows["rank"] == 2].loss_pct.max(), 30)
        prom = (self.dir / "slow.prom").read_text()
        self.assertIn('fabricbench_slow_rank_loss_ratio{', prom)
        self.assertRegex(prom, r'fabricbench_slow_rank_late_ratio\{[^}]*rank="2"')
        acted = (self.dir / "acted.txt").read_text()
        self.assertIn("FABRIC_WATCHDOG_SLOW_RANK=2", acted)
        self.assertIn("FABRIC_WATCHDOG_SLOW_COMM=0xabc0fb", acted)

    def test_a_stopped_rank_is_named_with_what_its_host_saw(self):
        """Rank 2's process is stopped 100 ms of every 200 from 2 s to 12 s (SIGSTOP, SIGCONT from outside) while it
        makes the others wait (from 3 s of the job, which starts about 0.5 s after the watchdog): the naming says its
        host saw it stopped (the watchdog's host sampler), the report keeps it, --slow-exec gets it. (--slow-loss 30:
        named a few seconds into the stop, whose last 5 s, the evidence, then hold enough looks; named at 10%, 2 s in,
        on a busy machine it saw too few: CI, 2026-11-29. The fake job's waiting is its own, not the stop's: the stop
        begins a second before it, as a stopped rank's evidence begins with the others' waiting; begun with it, the
        naming two looks on came before the sampler's looks held the stop's floor, 1 run in 3 idle here.)"""
        action = self.dir / "act.sh"
        action.write_text("#!/bin/sh\nenv | grep ^FABRIC_WATCHDOG_SLOW > \"$(dirname \"$0\")/acted.txt\"\n")
        action.chmod(0o755)
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "4s", "--slow-settle", "1s", "--slow-loss", "30",
                    "--slow-exec", str(action), "--slow-prometheus", "slow.prom"],
                   ["--ranks", "4", "--slow-rank", "2", "--slow-from", "3", "--slow-to", "12", "--seconds", "16"])
        pid = None
        for _ in range(50):  # rank 2's process, from its record file (a record's rank at byte 48)
            for f in (self.dir / "slow").glob("*.fbslow"):
                b = f.read_bytes()
                if len(b) >= 320 and struct.unpack_from("<i", b, 256 + 48)[0] == 2 and \
                        struct.unpack_from("<i", b, 32 + 4)[0] == 0:  # (a rank's file: writer 0)
                    pid = struct.unpack_from("<i", b, 16)[0]
            if pid:
                break
            time.sleep(0.1)
        self.assertIsNotNone(pid)
        time.sleep(max(0.0, 2.0 - (time.monotonic() - self.t0)))
        end = self.t0 + 12
        causes = set()  # the textfile's cause labels while it is named
        while time.monotonic() < end:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.1)
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.1)
            prom = self.dir / "slow.prom"
            text = prom.read_text() if prom.exists() else ""
            causes |= set(re.findall(r'fabricbench_slow_finding_cause\{[^}]*rank="2"[^}]*cause="(\w+)"', text))
        rc, out = self.finish()
        text = "\n".join(f"{t:5.1f} s {line}" for t, line in self.lines)
        self.assertEqual(rc, 0, text)
        named = self.said(r"slow rank: rank 2 ")
        # Named once; on a loaded machine (CI's, the sanitizer build beside it) the judge may let it go for a look and
        # name it again: every naming says why.
        self.assertGreaterEqual(len(named), 1, text)
        for _, line in named[1:]:
            self.assertIn("because: its process was found stopped", line)
        # Said at the naming, or where the sampler's looks came in after it, in the one "still named" line.
        told = [line for _, line in named[:1] + self.said(r"still named: rank 2 ")]
        m = next((m for m in (re.search(r"; because: .*its process was found stopped at (\d+)% of the looks "
                                        r"\((\d+)% before\)", line) for line in told) if m), None)
        self.assertIsNotNone(m, text)
        self.assertTrue(20 <= int(m.group(1)) <= 80, text)
        # At most half of it before (the rule's factor of 2): on a loaded machine the naming comes late, and the job's
        # life before the stop is a second or two, so its quietest 5 s may hold the stop's first looks.
        self.assertLessEqual(int(m.group(2)), int(m.group(1)) / 2, text)
        run = self.load("slow/slow-report.h5")
        found = run.tables["slow/findings"]
        self.assertIn("its process was found stopped", found.evidence.iloc[0], text)
        self.assertEqual(len(run.tables["slow/processes"]), 4)  # the ranks; the sampler is not a process of the job
        # The action, at the naming, is told what the naming line said (named again, the last action's file stands).
        said = re.search(r"; (because: .*|no evidence on its host)$", named[-1][1]).group(1)
        self.assertIn(f"FABRIC_WATCHDOG_SLOW_EVIDENCE={said}\n", (self.dir / "acted.txt").read_text())
        self.assertIn("stopped", causes)

    def test_a_rank_named_again_stands_against_its_host_before_its_first_naming(self):
        """A stopped rank named, let go while it was well, and named again (fixtures/slow/stopped-twice: recorded live
        here; a loaded judge that loses a naming for a few looks does the same): the second naming says why too. Its
        host's "before" ends before the first naming, not in the stop itself (CI, 2026-11-29: "no evidence on its host"
        at the second naming, the stop's own looks taken as the rank's usual)."""
        folder = self.dir / "records"
        folder.mkdir(mode=0o700)
        for f in (FIXTURES / "stopped-twice").glob("*.fbslow"):
            shutil.copy(f, folder / f.name)
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(folder), "--replay", "--slow-window", "4s",
                            "--slow-settle", "1s", "--slow-loss", "30", "--slow-report", "report.h5"], cwd=self.dir,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        named = [int(t) for t in re.findall(r"at \+(\d+) s: slow rank: rank 2 ", r.stderr)]
        gone = [int(t) for t in re.findall(r"at \+(\d+) s: gone: rank 2 ", r.stderr)]
        self.assertEqual(len(named), 2, r.stderr)
        self.assertTrue(gone and named[0] < gone[0] < named[1], r.stderr)
        stopped = re.findall(r"slow rank: rank 2 .*; because: its process was found stopped at (\d+)% of the looks "
                             r"\((\d+)% before\)", r.stderr)
        self.assertEqual(len(stopped), 2, r.stderr)
        for now, before in stopped:
            self.assertGreaterEqual(int(now), 30, r.stderr)
            self.assertLessEqual(int(before), 5, r.stderr)
        self.assertNotIn("slow rank: rank 0", r.stderr)
        self.assertNotIn("slow rank: rank 1", r.stderr)
        self.assertNotIn("slow rank: rank 3", r.stderr)
        run = self.load("report.h5")
        found = run.tables["slow/findings"]
        self.assertEqual(list(found["rank"]), [2, 2])
        for evidence in found.evidence:
            self.assertIn("its process was found stopped", evidence)

    def test_one_watchdog_per_rank_under_mpirun_and_one_judge(self):
        """mpirun starts a watchdog per rank, each in front of one rank of the job (as srun or torchrun across nodes):
        all write to one folder, only the first task's judge names the slow rank and writes the report."""
        r = self.mpirun(4, "fabric-watchdog", ["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s", "--", str(FAKE),
                                               "--one-rank", "--ranks", "4", "--slow-rank", "3", "--slow-from", "3",
                                               "--slow-to", "20", "--seconds", "8"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(re.findall(r"fake job: rank (\d) done", r.stdout)), ["0", "1", "2", "3"])
        named = re.findall(r"slow rank: rank (\d) \(pid (\d+)", r.stderr)
        self.assertEqual([rank for rank, _ in named], ["3"], r.stderr)  # one judge: one line
        run = self.load("slow/slow-report.h5")
        procs = run.tables["slow/processes"]
        self.assertEqual(sorted(procs.launcher_rank), ["0", "1", "2", "3"])
        self.assertIn(int(named[0][1]), set(procs.pid))
        self.assertEqual(list(run.tables["slow/findings"]["rank"]), [3])

    def test_healthy_ranks_are_not_named(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s"],
                   ["--ranks", "4", "--seconds", "8", "--api", "4"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.said(r"^fabric-watchdog: slow (rank|collective|link|network):"), [], text)
        run = self.load("slow/slow-report.h5")
        self.assertEqual(len(run.tables["slow/findings"]), 0)
        self.assertGreater(len(run.tables["slow/collectives"]), 4 * 100)
        self.assertEqual(len(run.tables["slow/connections"]), 8)  # 4 ranks: a send and a receive each
        self.assertTrue((run.tables["slow/processes"].profiler_api == 4).all())

    def test_an_nccl_that_does_not_load_the_plugin_is_said_once_and_the_job_runs(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "1s", "--slow-settle", "1s"], ["--ranks", "2", "--seconds", "9", "--api", "0"])
        rc, out = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        self.assertIn("fake job: 2 ranks done", out)
        self.assertEqual(len(self.said(r"no rank has written to .* in 6 s")), 1, text)

    def test_the_judge_killed_leaves_the_job_running(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s"], ["--ranks", "2", "--seconds", "8"])
        judge = self.judge_pid()
        self.assertIsNotNone(judge, "the judge runs as its own process")
        time.sleep(2)
        os.kill(judge, signal.SIGKILL)
        rc, out = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        self.assertIn("fake job: 2 ranks done", out)
        self.assertEqual(len(self.said(r"--slow: the judge \(pid \d+\) ended with status 137; the job goes on")), 1,
                         text)

    def test_the_watchdog_stopped_ends_its_judge_after_the_report(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s"], ["--ranks", "2", "--seconds", "60"])
        judge = self.judge_pid()
        self.assertIsNotNone(judge)
        time.sleep(3)
        self.proc.send_signal(signal.SIGTERM)
        rc, _ = self.finish(timeout=60)
        self.assertEqual(rc, 128 + signal.SIGTERM, "\n".join(l for _, l in self.lines))
        self.assertFalse(pathlib.Path(f"/proc/{judge}").exists(), "the judge ended with the watchdog")
        run = self.load("slow/slow-report.h5")
        self.assertGreater(len(run.tables["slow/collectives"]), 0)
        self.assertRegex(run.attrs["status"], r"^failed: Interrupt: stopped while the job still ran")

    def test_a_judge_killed_mid_run_leaves_its_last_report_saying_so(self):
        """The report is rewritten every 30 s while the job runs: SIGKILL to the judge after that leaves it, readable,
        its status "running" (the suite's mark of a run that did not complete)."""
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s"],
                   ["--ranks", "2", "--seconds", "40", "--slow-rank", "1", "--slow-from", "2", "--slow-to", "40"])
        judge = self.judge_pid()
        self.assertIsNotNone(judge)
        report = self.dir / "slow" / "slow-report.h5"
        for _ in range(400):
            if report.exists():
                break
            time.sleep(0.1)
        self.assertTrue(report.exists(), "written within 40 s of the judge's start")
        os.kill(judge, signal.SIGKILL)
        rc, _ = self.finish()
        self.assertEqual(rc, 0)
        run = self.load("slow/slow-report.h5")
        self.assertEqual(run.attrs["status"], "running")
        # Rank 1 and only it (a loaded machine's judge may lose it for over 2 s of looks and name it again: two rows,
        # a clean-clone check beside a build, 2026-11-29).
        findings = run.tables["slow/findings"]
        self.assertGreaterEqual(len(findings), 1)
        self.assertEqual(set(findings["rank"]), {1})
        self.assertGreater(len(run.tables["slow/collectives"]), 100)
        self.assertFalse((self.dir / "slow" / "slow-report.h5.partial").exists())

    def test_a_slow_link_is_named_from_rank_to_peer_and_a_slow_nic_by_its_rank(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s", "--slow-prometheus", "slow.prom"],
                   ["--ranks", "4", "--link-rank", "2", "--slow-from", "3", "--slow-to", "10", "--seconds", "13"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        named = self.said(r"^fabric-watchdog: slow (rank|collective|link|network):")
        self.assertEqual(len(named), 1, text)
        self.assertRegex(named[0][1], r"slow link: the link from rank 2 \(pid \d+, GPU \? on host .*\) to rank 3 of "
                                      r"communicator 0xabc0fb: its sends take \d+\.\dx the usual network time per byte "
                                      r"of their size: the job loses \d+% of its time there .*named by its sends, the "
                                      r"connections beside it as usual")
        # A link waits for the connections beside it to lean to one end: named at its fifth look in a row.
        self.assertLess(named[0][0], 3.5 + 7, text)
        self.assertEqual(len(self.said(r"gone: the link from rank 2 ")), 1, text)
        run = self.load("slow/slow-report.h5")
        found = run.tables["slow/findings"]
        self.assertEqual(list(zip(found.kind, found["rank"], found.peer)), [("link", 2, 3)])
        conns = run.tables["slow/connections"]
        sends = conns[conns.direction == "send"]
        self.assertEqual(sorted(zip(sends["rank"], sends.peer)), [(0, 1), (1, 2), (2, 3), (3, 0)])
        self.assertEqual(set(sends.channels), {2})
        worst = sends.sort_values("ratio").iloc[-1]
        self.assertEqual((worst["rank"], worst.peer), (2, 3))
        self.assertGreater(worst.ratio, 3)  # 5 ms steps against 0.5 (the judge's line: 2.5)
        self.assertEqual(len(conns[conns.direction == "recv"]), 4)

        self.tearDown()
        self.setUp()
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "1s", "--slow-prometheus", "slow.prom"],
                   ["--ranks", "4", "--nic-rank", "1", "--slow-from", "3", "--slow-to", "20", "--seconds", "8"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        named = self.said(r"^fabric-watchdog: slow (rank|collective|link|network):")
        self.assertEqual(len(named), 1, text)
        self.assertRegex(named[0][1], r"slow network: the network of rank 1 \(pid \d+, GPU \? on host .*\) in "
                                      r"communicator 0xabc0fb: its connections 0->1, 1->2 take up to")
        found = self.load("slow/slow-report.h5").tables["slow/findings"]
        self.assertEqual(list(zip(found.kind, found["rank"])), [("network", 1)])
        # Still slow at the job's end: the textfile's last look has it.
        self.assertRegex((self.dir / "slow.prom").read_text(),
                         r'fabricbench_slow_link_loss_ratio\{[^}]*kind="network"[^}]*rank="1"')

    def test_the_jobs_start_names_nobody(self):
        """Rank 2 late by 20 ms at every collective of the job's first 4 s (as where NCCL connects its ranks): the
        communicator's first 5 s (--slow-settle) are not judged; with --slow-settle 0s the same start names it."""
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s"],
                   ["--ranks", "4", "--slow-rank", "2", "--slow-from", "0", "--slow-to", "4", "--seconds", "9"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.said(r"^fabric-watchdog: slow (rank|collective|link|network):"), [], text)
        self.assertRegex(text, r"--slow-settle 5s")
        self.tearDown()
        self.setUp()
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "2s", "--slow-settle", "0s"],
                   ["--ranks", "4", "--slow-rank", "2", "--slow-from", "0", "--slow-to", "4", "--seconds", "9"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(len(self.said(r"^fabric-watchdog: slow rank: rank 2 ")), 1, text)

    def test_a_rank_that_exits_early_is_said_and_counted(self):
        self.start(["--no-ras", "--slow", "slow", "--slow-window", "1s", "--slow-settle", "1s"],
                   ["--ranks", "3", "--seconds", "6", "--exit-rank", "1", "--exit-at", "2"])
        rc, _ = self.finish()
        text = "\n".join(line for _, line in self.lines)
        self.assertEqual(rc, 0, text)
        quiet = self.said(r"rank 1 \(pid \d+ on host .*\) of communicator 0xabc0fb reported nothing for 1 s while the "
                          r"others went on")
        self.assertEqual(len(quiet), 1, text)
        self.assertEqual(self.said(r"^fabric-watchdog: slow rank:"), [], text)
        self.assertEqual(len(self.said(r"rank 1 of communicator 0xabc0fb: \d+ collective\(s\) never reported by it")),
                         1, text)
        missing = self.load("slow/slow-report.h5").tables["slow/missing"]
        self.assertEqual(list(zip(missing.comm, missing["rank"])), [("0xabc0fb", 1)])
        self.assertGreater(missing.collectives.iloc[0], 10)

    def test_bad_options_are_one_line(self):
        loose = self.dir / "loose"
        loose.mkdir()
        loose.chmod(0o777)
        (self.dir / "exists.h5").write_text("x")
        cases = [
            (["--slow", "s"], [], "--slow DIR: give the command to watch after --"),
            (["--judge", "s"], ["true"], "--judge judges a folder alone"),
            (["--slow", "s", "--slow-window", "0.5s"], ["true"], "--slow-window 0.5s: allowed 1s to 1h"),
            (["--slow", "s", "--slow-settle", "11min"], ["true"], "--slow-settle 11min: allowed 0s to 10min"),
            (["--slow-settle", "5s"], ["true"], "--slow-settle belongs to --slow DIR (or --judge DIR)"),
            (["--slow", "s", "--slow-loss", "0"], ["true"], "--slow-loss 0: allowed above 0 and below 100"),
            (["--slow", "s", "--slow-report", "exists.h5"], ["true"], "--slow-report exists.h5: file exists"),
            (["--slow", "s", "--slow-exec", "nowhere.sh"], ["true"], "--slow-exec nowhere.sh: not an executable"),
            (["--slow", "s", "--slow-exec", "/tmp"], ["true"], "--slow-exec /tmp: not an executable file"),
            (["--no-ras", "--actions", "stacks", "--action-timeout", "5s"], ["true"],
             "--action-timeout bounds the exec: and scancel actions and --slow-exec, none of which is given"),
            (["--slow-window", "5s"], ["true"], "--slow-window belongs to --slow DIR"),
            (["--slow", str(loose)], ["true"], "the folder must be this user's and writable by it alone"),
            (["--slow", "s", "--judge", "s"], ["true"], "--slow and --judge"),
            (["--judge", "s", "--timeout", "1m"], [], "--timeout: --judge only judges the folder"),
            (["--replay"], ["true"], "--replay belongs to --slow DIR (or --judge DIR)"),
            (["--judge", "nowhere"], [], "--judge " + str(self.dir / "nowhere") + ": No such file or directory"),
            (["--slow", "s", "--slow-prometheus", "no/such/dir/x.prom"], ["true"], "--prometheus no/such/dir/x.prom"),
        ]
        for args, command, expected in cases:
            with self.subTest(args=args):
                r = subprocess.run([str(BIN / "fabric-watchdog")] + args + (["--"] + command if command else []),
                                   cwd=self.dir, capture_output=True, text=True, timeout=30,
                                   env=self.env() | {"NCCL_PROFILER_PLUGIN": ""})
                ours = [l for l in r.stderr.splitlines() if l.startswith("fabric-watchdog:")]
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(ours), 1, r.stderr)
                self.assertIn(expected, ours[0])
        # --action-timeout bounds --slow-exec's action too (its help says so): taken.
        action = self.dir / "act.sh"
        action.write_text("#!/bin/sh\nexit 0\n")
        action.chmod(0o755)
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--no-ras", "--slow", "s3", "--slow-exec", str(action),
                            "--action-timeout", "5s", "--", "true"], cwd=self.dir, capture_output=True, text=True,
                           timeout=60, env=self.env() | {"NCCL_PROFILER_PLUGIN": ""})
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--slow", "s2", "--", "true"], cwd=self.dir,
                           capture_output=True, text=True, env=self.env() | {"NCCL_PROFILER_PLUGIN": "/x/other.so"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("NCCL_PROFILER_PLUGIN is already set (/x/other.so)", r.stderr)


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "slow"


class RecordedOnTheGpus(LaunchTest):
    """The plugin's own files from real PyTorch jobs on 2 and 4 x H100 (NCCL 2.28.9, tests/gpu/slow_rank_proof.py,
    2026-11-27; `t0` is when the job's loop started, `sleeps.json` its injections; network-4gpu: the `network` mode,
    record files version 2 with proxy operations) judged again with --replay."""

    def replay(self, name):
        folder = self.dir / "records"
        folder.mkdir(mode=0o700)
        for f in (FIXTURES / name).iterdir():
            shutil.copy(f, folder / f.name)
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(folder), "--replay", "--slow-report",
                            "report.h5"], cwd=self.dir, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = min(struct.unpack_from("<q", f.read_bytes(), 256 + 24)[0] for f in folder.glob("*.fbslow")) / 1e9
        t0 = float((folder / "t0").read_text()) - first  # the loop's start, in the replay's seconds
        named = [(int(m.group(2)), float(m.group(1)) - t0)  # (rank, seconds into the loop)
                 for m in re.finditer(r"at \+(\d+) s: slow rank: rank (\d+) ", r.stderr)]
        return r, named

    def test_neighbours_name_their_rank_each_time(self):
        """Another process's matmuls on GPU 1 (twice), then on GPU 0 (twice), as each really ran (neighbours.json)."""
        r, named = self.replay("neighbours-2gpu")
        spans = json.loads((FIXTURES / "neighbours-2gpu" / "neighbours.json").read_text())
        for s in spans:  # each named within 5 s of its start, or still named from the one before on its rank
            self.assertTrue(any(rank == s["rank"] and s["start"] - 12 <= at <= s["start"] + 5 for rank, at in named),
                            (s, named))
        for rank, at in named:  # and nobody named outside a neighbour's span on its GPU
            self.assertTrue(any(rank == s["rank"] and s["start"] <= at <= s["end"] for s in spans), (rank, at, spans))
        # GPUs 2 and 3 of the machine (CUDA_VISIBLE_DEVICES=2,3): rank 1 is its CUDA device 1, bus 00:09.0.
        self.assertIn("rank 1 (pid 1079, GPU 1 (0000:00:09.0) on host vm)", r.stderr)
        self.assertEqual(len(re.findall(r"slow rank: rank \d .* the others wait 2\d\.\d\d ms", r.stderr)), len(named))
        found = self.load("report.h5").tables["slow/findings"]
        self.assertEqual(list(found["rank"]), [rank for rank, _ in named], "one row per naming, a rank named twice too")
        self.assertGreaterEqual(len(found), 3)

    def test_host_delays_name_each_delayed_rank_in_turn(self):
        r, named = self.replay("sleeps-4gpu")
        sleeps = [s for s in json.loads((FIXTURES / "sleeps-4gpu" / "sleeps.json").read_text()) if s["start"] < 60]
        self.assertEqual([rank for rank, _ in named], [s["rank"] for s in sleeps], r.stderr)
        for (rank, at), s in zip(named, sleeps):
            self.assertTrue(s["start"] <= at <= s["start"] + 5, (rank, at, s))
        self.assertIn("slow before the collective", r.stderr)
        found = self.load("report.h5").tables["slow/findings"]
        self.assertEqual(list(found["rank"]), [s["rank"] for s in sleeps])

    def test_a_starved_network_names_its_rank_and_nothing_before_or_after(self):
        """4 GPUs over sockets on the loopback (NCCL's proxy moves the data, as between nodes); from 20 s to 40 s rank
        2's NCCL proxy thread shared a CPU with 3 busy processes (starved.json): steps 59 ms, then 217 ms. Its sends
        to rank 3 spent 8-14x the others' network time per byte, and the sends into it slowed beside them (1.6x): rank
        2's network is named ("its host starved of CPU") within 7 s, gone after; before and after, nothing."""
        r, _ = self.replay("network-4gpu")
        folder = self.dir / "records"
        first = min(struct.unpack_from("<q", f.read_bytes(), 256 + 24)[0] for f in folder.glob("*.fbslow")) / 1e9
        t0 = float((folder / "t0").read_text()) - first
        named = [(float(m.group(1)) - t0, m.group(2)) for m in
                 re.finditer(r"at \+(\d+) s: slow (rank|collective|link|network):", r.stderr)]
        self.assertEqual([kind for _, kind in named], ["network"], r.stderr)
        self.assertTrue(20 <= named[0][0] <= 27, named)
        self.assertRegex(r.stderr, r"slow network: the network of rank 2 \(pid 1170, GPU 2 \(0000:00:08\.0\) on host "
                                   r"vm\) in communicator 0x5f4b6470cdbe0e9: its sends wait, and the sends into it "
                                   r"beside them \(2->3 \d+\.\dx, 1->2 1\.\dx .*its host starved of CPU")
        gone = [float(m.group(1)) - t0 for m in re.finditer(r"at \+(\d+) s: gone: the network of rank 2 ", r.stderr)]
        self.assertEqual(len(gone), 1, r.stderr)
        self.assertTrue(40 <= gone[0] <= 52, gone)
        run = self.load("report.h5")
        found = run.tables["slow/findings"]
        self.assertEqual(list(zip(found.kind, found["rank"], found.peer)), [("network", 2, -1)])
        self.assertTrue((found.loss_pct <= 100).all())
        conns = run.tables["slow/connections"]
        sends = conns[(conns.direction == "send") & (conns.ops >= 10)].set_index(["rank", "peer"])
        self.assertEqual(sorted(sends.index), [(0, 1), (1, 2), (2, 3), (3, 0)])  # the ring
        self.assertEqual(sends.ratio.idxmax(), (2, 3))
        self.assertGreater(sends.ratio.max(), 1.8)  # over the whole run, a third of it slowed
        self.assertEqual(set(sends.channels), {2})

    def test_a_record_years_off_or_without_a_time_is_crossed_at_once(self):
        """One record at 2^63-1 ns (a clock years off) and one of zeros (a hole a crash left) in a real run's files:
        the replay stepped through the span one second at a time without end. Now it crosses the gap, and the run's
        lines are those it gives without them."""
        clean, _ = self.replay("network-4gpu")
        self.tearDown()
        self.setUp()
        folder = self.dir / "records"
        folder.mkdir(mode=0o700)
        files = sorted((FIXTURES / "network-4gpu").glob("*.fbslow"))
        for f in (FIXTURES / "network-4gpu").iterdir():
            shutil.copy(f, folder / f.name)
        far = bytearray(files[0].read_bytes()[256:320])  # its first record, moved to the end of time
        struct.pack_into("<q", far, 24, 2**63 - 1)
        with open(folder / files[0].name, "ab") as out:
            out.write(bytes(far))
        with open(folder / files[1].name, "ab") as out:
            out.write(bytes(64))
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(folder), "--replay", "--slow-report",
                            "report.h5"], cwd=self.dir, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.splitlines() if re.match(r"fabric-watchdog: at \+\d+ s: slow ", l)]
        self.assertEqual(lines, [l for l in clean.stderr.splitlines() if re.match(r"fabric-watchdog: at \+\d+ s: slow ", l)])
        self.assertEqual(self.load("report.h5").attrs["status"], "complete")

    def test_hostile_headers_and_a_sparse_hole_in_a_replay(self):
        """Escape sequences in a header's GPU bus id are shown as text, never sent to the terminal (the host name's
        always were); a file with a 1 GiB hole (sparse, all zeros: a crash's) is crossed without holding it (before:
        every record of it in memory, 3.5 GB for a 2 GB file)."""
        clean, _ = self.replay("network-4gpu")
        self.tearDown()
        self.setUp()
        folder = self.dir / "records"
        folder.mkdir(mode=0o700)
        for f in (FIXTURES / "network-4gpu").iterdir():
            shutil.copy(f, folder / f.name)
        files = sorted(folder.glob("*.fbslow"))
        for f in files:
            b = bytearray(f.read_bytes())
            bus = b"\x1b]0;owned\x07\x1b[2J:06.0"
            b[104:136] = bus + bytes(32 - len(bus))  # FileHeader::gpu_bus_id
            f.write_bytes(bytes(b))
        with open(files[0], "r+b") as out:
            out.truncate(files[0].stat().st_size + (1 << 30))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(folder), "--replay", "--slow-report",
                            "report.h5"], cwd=self.dir, capture_output=True, text=True, timeout=120)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stderr)
        self.assertIn("\\x1b]0;owned\\x07", r.stderr)
        slow = [l for l in r.stderr.splitlines() if re.match(r"fabric-watchdog: at \+\d+ s: slow ", l)]
        self.assertTrue(slow)
        self.assertEqual(len(slow), len([l for l in clean.stderr.splitlines()
                                         if re.match(r"fabric-watchdog: at \+\d+ s: slow ", l)]))
        if peak_kib > before:  # (the largest child so far: this one, when it is the largest)
            self.assertLess(peak_kib, 512 << 10, "the replay held the hole")

    def test_a_healthy_minute_names_nobody(self):
        r, named = self.replay("healthy-2gpu")
        self.assertEqual(named, [], r.stderr)
        run = self.load("report.h5")
        self.assertEqual(len(run.tables["slow/findings"]), 0)
        self.assertEqual(sorted(set(run.tables["slow/collectives"]["rank"])), [0, 1])


if __name__ == "__main__":
    unittest.main()
