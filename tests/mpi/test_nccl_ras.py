"""fabric-doctor --nccl-ras against a fake NCCL RAS service (tests/fixtures/ras/fake_ras.py) that answers with replies
recorded from a real NCCL 2.28.9 job on 2 x H200: the laggard, the dead process and a healthy job named as such,
the two looks, a version without JSON, and every refusal in one line with exit status 2 and no file."""
import os
import pathlib
import shutil
import subprocess
import sys
import time
import unittest

from fbtest import BIN, LaunchTest

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "ras"
RECORDED = FIXTURES / "nccl-2.28.9-h200x2"
PROMTOOL = shutil.which("promtool")


class FakeRas:
    """The fake service on a free port of 127.0.0.1, for one test."""

    def __init__(self, folder, states, *flags, replies=RECORDED):
        self.portfile = folder / f"ras-{time.monotonic_ns()}.port"
        self.proc = subprocess.Popen([sys.executable, str(FIXTURES / "fake_ras.py"), str(self.portfile), str(replies),
                                      states, *flags])
        for _ in range(100):
            if self.portfile.exists() and self.portfile.read_text():
                break
            time.sleep(0.05)
        self.address = f"127.0.0.1:{self.portfile.read_text()}"
        self.portfile.unlink()

    def close(self):
        self.proc.kill()
        self.proc.wait()


class NcclRas(LaunchTest):
    def ask(self, states, *flags, args=(), name="ras.h5"):
        with_files = pathlib.Path(self.dir)
        ras = FakeRas(with_files.parent, states, *flags)
        try:
            start = time.monotonic()
            r = self.mpirun(1, "fabric-doctor", ["--nccl-ras", ras.address, "--output", name] + list(args),
                            timeout=120)
            return r, time.monotonic() - start, ras.address
        finally:
            ras.close()

    def findings(self, name="ras.h5"):
        return self.load(name).tables["doctor/findings"]

    def test_a_rank_that_stopped_calling_collectives_is_named_after_two_looks(self):
        r, took, _ = self.ask("mismatch")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        first = [line for line in r.stdout.splitlines() if line.startswith("# answer:")]
        self.assertEqual(len(first), 1, r.stdout)
        self.assertIn("rank 1 (pid 724, GPU 1 on host 192.0.2.2) launched AllReduce up to op 78 while 1 peer reached "
                      "op 79 (unchanged between two looks): it never entered the collective", first[0])
        found = self.findings()
        fails = found[found.status == "fail"]
        self.assertEqual(list(fails.check), ["nccl.ras.laggard"], found)
        self.assertEqual(int(fails["rank"].iloc[0]), 1)
        self.assertGreaterEqual(took, 2.0, "a second look 2 s after the first")
        run = self.load("ras.h5")
        ranks = run.tables["doctor/ras_ranks"]
        self.assertEqual(sorted(ranks.all_reduce), [78, 79])
        self.assertEqual(list(run.tables["doctor/ras_communicators"].state), ["mismatch"])
        self.assertEqual("\n".join(run.tables["doctor/ras_reply"].text) + "\n", (RECORDED / "mismatch.json").read_text(),
                         "the reply kept verbatim, line by line")

    def test_a_rank_that_moved_between_the_looks_is_no_laggard(self):
        # The first look catches rank 1 one operation behind, the second sees the job in step: a healthy job
        # sampled between two ranks' launches.
        r, _, _ = self.ask("mismatch,healthy")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue((self.findings().status == "ok").all(), self.findings())

    def test_a_frozen_process_is_dead_with_its_pid_gpu_and_rank(self):
        r, _, _ = self.ask("dead")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        found = self.findings()
        fails = found[found.status == "fail"]
        self.assertEqual(list(fails.check), ["nccl.ras.dead"], found)
        self.assertIn("process 724 on host 192.0.2.2 (GPU 1) is considered dead", fails.value.iloc[0])
        self.assertIn("ps -o stat,etime,cmd -p 724", fails.hint.iloc[0])
        self.assertIn("lacked 1 comma", r.stdout)

    def test_a_healthy_job_passes_with_what_was_seen(self):
        r, took, _ = self.ask("healthy")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("# answer: 1 communicator(s), 2 rank(s) in 2 process(es) on 1 host(s)", r.stdout)
        self.assertLess(took, 30, "one look only")

    def test_a_version_without_json_keeps_the_text_and_reads_its_errors(self):
        r, _, _ = self.ask("mismatch", "--no-json")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        found = self.findings()
        self.assertEqual(list(found.check), ["nccl.ras.text"])
        self.assertIn("Rank 1 has launched up to operation 78", found.value.iloc[0])
        reply = self.load("ras.h5").tables["doctor/ras_reply"]
        self.assertEqual("\n".join(reply.text) + "\n", (RECORDED / "mismatch.txt").read_text())

    def test_what_is_not_a_ras_service_is_refused_in_one_line(self):
        r, _, address = self.ask("healthy", "--not-ras")
        self.assert_refused(r, "fabric-doctor", f"--nccl-ras {address}: not an NCCL RAS service")

    def test_a_service_that_never_answers_is_bounded_by_the_timeout(self):
        r, took, address = self.ask("healthy", "--mute", args=["--timeout", "2"])
        self.assert_refused(r, "fabric-doctor", f"--nccl-ras {address}: no answer within 2 s (--timeout)")
        self.assertLess(took, 20)

    def test_stacks_of_a_laggard_here_and_its_leaf_and_nic(self):
        # The recorded mismatch with its laggard (rank 1, GPU 1) made a process of this host: 127.0.0.1 and the pid of
        # a sleeping child. --stacks takes that process's stack into /doctor/ras_stacks; --topology and --rail-map name
        # its host's leaf and its GPU's NIC.
        sleeper = subprocess.Popen(["sleep", "120"])
        replies = self.dir.parent / f"replies-{sleeper.pid}"
        replies.mkdir()
        text = (RECORDED / "mismatch.json").read_text().replace("192.0.2.2", "127.0.0.1")
        (replies / "here.json").write_text(text.replace('"pid": 724', f'"pid": {sleeper.pid}'))
        (self.dir / "topo.conf").write_text("SwitchName=leafA Nodes=localhost\nSwitchName=spineA Switches=leafA\n")
        (self.dir / "rails.map").write_text("# RAIL NIC\n0 rdma=mlx5_0:1\n1 rdma=mlx5_1:1\n")
        ras = FakeRas(self.dir.parent, "here", replies=replies)
        try:
            r = self.mpirun(1, "fabric-doctor", ["--nccl-ras", ras.address, "--stacks", "--topology", "topo.conf",
                                                 "--rail-map", "rails.map", "--output", "here.h5"], timeout=120)
        finally:
            ras.close()
            sleeper.kill()
            sleeper.wait()
            for f in replies.iterdir():
                f.unlink()
            replies.rmdir()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        run = self.load("here.h5")
        laggard = run.tables["doctor/findings"].value.iloc[0]
        self.assertIn(f"rank 1 (pid {sleeper.pid}, GPU 1 on host 127.0.0.1)", laggard)
        self.assertIn("(host localhost: leaf leafA under spineA; GPU 1 on rail 1: NIC mlx5_1:1)", laggard)
        stacks = run.tables["doctor/ras_stacks"]
        self.assertEqual(set(stacks.pid), {sleeper.pid})
        self.assertIn("sleep 120", stacks.command.iloc[0])
        if stacks.tool.iloc[0] == "":  # no py-spy, gdb or eu-stack on this machine: the command to run
            self.assertIn(f"gdb -p {sleeper.pid}", stacks.text.iloc[0])
        self.assertIn(f"stack of pid {sleeper.pid}", r.stdout)

    def test_stacks_of_a_process_elsewhere_are_the_command_to_run_there(self):
        # The recorded reply moved to a documentation address (the GPU machine's 192.0.2.2 may be this one's too).
        replies = self.dir.parent / f"replies-away-{os.getpid()}"
        replies.mkdir(exist_ok=True)
        (replies / "away.json").write_text((RECORDED / "mismatch.json").read_text().replace("192.0.2.2", "198.51.100.7"))
        ras = FakeRas(self.dir.parent, "away", replies=replies)
        try:
            r = self.mpirun(1, "fabric-doctor", ["--nccl-ras", ras.address, "--stacks", "--output", "away.h5"],
                            timeout=120)
        finally:
            ras.close()
            (replies / "away.json").unlink()
            replies.rmdir()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("pid 724 runs on host 198.51.100.7, not here: there, look at where that process stands", r.stdout)
        self.assertEqual(len(self.load("away.h5").tables["doctor/ras_stacks"]), 0)

    def test_what_a_server_names_reaches_no_terminal_or_textfile_raw(self):
        """A reply whose host name carries terminal escapes (set the title, clear the screen) and a newline followed by
        a forged line of our own, and whose communicator hash has bytes that are not UTF-8. Before: the escapes reached
        the terminal through the findings and the answer line, the forged line began a line of output, and the
        watchdog's Prometheus textfile was invalid."""
        hostile = b'\x1b]0;pwned\x07\x1b[2J\\nFORGED fabric-doctor: every rank healthy'  # raw bytes, then JSON's \n
        text = (RECORDED / "mismatch.json").read_bytes()
        text = text.replace(b'"host": "192.0.2.2",\n          "pid": 724', b'"host": "' + hostile + b'",\n          "pid": 724')
        text = text.replace(b"0xc04513ef3a63ea2e", b"0x\xff\xfe3f")
        self.assertIn(b"FORGED", text)
        replies = self.dir.parent / f"replies-hostile-{os.getpid()}"
        replies.mkdir(exist_ok=True)
        (replies / "hostile.json").write_bytes(text)
        prom = self.dir / "w.prom"
        ras = FakeRas(self.dir.parent, "hostile", replies=replies)
        try:
            r = self.mpirun(1, "fabric-doctor", ["--nccl-ras", ras.address, "--output", "h.h5"], timeout=120)
            watch = subprocess.Popen([str(BIN / "fabric-watchdog"), "--watch", "1s", "--prometheus", str(prom),
                                      "--ras", ras.address], cwd=self.dir, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
            deadline = time.monotonic() + 90  # one look; generous for a loaded machine
            while not prom.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            watch.terminate()
            watch.communicate(timeout=30)
        finally:
            ras.close()
            (replies / "hostile.json").unlink()
            replies.rmdir()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        shown = r.stdout + r.stderr
        for raw in ("\x1b", "\x07"):
            self.assertNotIn(raw, shown)
        self.assertEqual([line for line in shown.splitlines() if line.startswith("FORGED")], [], shown)
        self.assertIn("\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor", shown)
        self.assertIn("0x\\xff\\xfe3f", shown)
        metrics = prom.read_bytes().decode("utf-8")  # valid UTF-8, or this raises
        self.assertIn('communicator="0x\\\\xff\\\\xfe3f"', metrics)
        if PROMTOOL:
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=metrics, capture_output=True, text=True)
            self.assertNotIn("error", (check.stdout + check.stderr).lower(), check.stdout + check.stderr)

    def test_nothing_listening_and_bad_addresses_are_refused(self):
        for args, expected in [(["--nccl-ras", "127.0.0.1:1"], "--nccl-ras 127.0.0.1:1: Connection refused"),
                               (["--nccl-ras", "node:http"], "--nccl-ras 'node:http': the port must be a number"),
                               (["--nccl-ras", ":1", "--nccl-log", "x.log"], "--nccl-ras and --nccl-log"),
                               (["--nccl-ras", ":1", "--rank", "1"], "--rank reads with --nccl-log only"),
                               (["--stacks"], "--stacks goes with --nccl-ras"),
                               (["--nccl-ras", ":1", "--topology", "/nonexistent/t.conf"], "/nonexistent/t.conf"),
                               (["--nccl-ras", ":1", "--rail-map", "/nonexistent/r.map"], "/nonexistent/r.map")]:
            with self.subTest(args=args):
                self.assert_refused(self.mpirun(1, "fabric-doctor", args + ["--output", "bad.h5"], refused=True),
                                    "fabric-doctor", expected)


if __name__ == "__main__":
    unittest.main()
