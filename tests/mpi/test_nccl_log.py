"""fabric-doctor --nccl-log from the command line: the GPU machine's logs and a generated job's log read without
mpirun and under it (rank 0 reads), --json as one document, the HDF5 tables through fabricbench_analysis.load, and bad
input refused in one line with exit status 2 and no file."""
import json
import pathlib
import subprocess
import sys
import unittest

from fbtest import BIN, LaunchTest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "gpu-h200x2"
GENERATOR = pathlib.Path(__file__).resolve().parents[1] / "perf" / "make_nccl_log.py"
MARKER = "iteration +[0-9]+"


class NcclLog(LaunchTest):
    def doctor(self, args, timeout=120):
        return subprocess.run(["timeout", str(timeout), str(BIN / "fabric-doctor")] + [str(a) for a in args],
                              cwd=self.dir, env=self.env(), capture_output=True, text=True)

    def generated(self, size="256K"):
        r = subprocess.run([sys.executable, str(GENERATOR), "--bytes", size, "--ranks", "8", "--hosts", "2",
                            "--output", str(self.dir / "job.log")], capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    def test_fixture_without_mpirun(self):
        log = FIXTURES / "nccl-info-p2p.log"
        r = self.doctor(["--nccl-log", log, "--output", "f.h5"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("nccl.transport of ranks 0-1", r.stdout)
        self.assertIn("2.28.3+cuda13.0", r.stdout)
        self.assertNotIn("warning", r.stderr)  # this machine's cheap checks are not the log's
        run = self.load("f.h5")
        self.assertEqual(run.attrs["status"], "complete")
        ranks = run.tables["doctor/nccl_ranks"]
        self.assertEqual(sorted(ranks["rank"]), [0, 1])
        self.assertEqual(set(ranks["network"]), {"Socket"})
        findings = run.tables["doctor/findings"]
        self.assertEqual(set(findings["check"]), {"nccl.transport"})
        self.assertTrue((findings["status"] == "ok").all(), findings)

    def test_generated_job_counts_per_rank_and_iteration(self):
        expected = self.generated()
        r = self.doctor(["--nccl-log", "job.log", "--iteration-marker", MARKER, "--output", "g.h5"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("g.h5")
        calls = run.tables["doctor/nccl_calls"]
        total = calls[calls["iteration"] == -1]
        self.assertEqual(sorted(set(total["rank"])), list(range(8)))
        for kind, want in expected["per_rank"].items():
            rows = total[total["kind"] == kind]
            self.assertEqual(set(rows["calls"]), {want["calls"]}, kind)
            self.assertEqual(set(rows["bytes"]), {want["bytes"]}, kind)
            self.assertEqual(set(rows["alike"]), {"0-7"})
        pieces = calls[(calls["rank"] == 3) & (calls["kind"] == "AllReduce")]
        self.assertEqual(len(pieces), 1 + expected["iterations"] + 1)  # total + pieces 0..iterations
        iterations = run.tables["doctor/nccl_iterations"]
        ar = iterations[(iterations["rank"] == 0) & (iterations["kind"] == "AllReduce")].iloc[0]
        self.assertEqual(ar["iterations"], expected["iterations"] - 1)
        self.assertEqual(ar["median_calls"], 8)
        self.assertEqual(ar["differing"], 0)
        sizes = run.tables["doctor/nccl_sizes"]
        self.assertEqual(set(sizes[sizes["kind"] == "AllReduce"]["range"]), {"512K-1M", "16M-32M"})
        self.assertIn("0-7", r.stdout)

    def test_json_is_one_document(self):
        expected = self.generated("64K")
        r = self.doctor(["--nccl-log", "job.log", "--rank", "5", "--json", "--output", "j.h5"])
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["run"]["status"], "complete")
        calls = doc["tables"]["/doctor/nccl_calls"]
        self.assertEqual({c["rank"] for c in calls}, {5})
        ar = [c for c in calls if c["kind"] == "AllReduce"][0]
        self.assertEqual(ar["calls"], expected["per_rank"]["AllReduce"]["calls"])
        self.assertTrue((self.dir / "j.h5").exists())

    def test_several_files_and_rank_zero_reads_under_mpirun(self):
        logs = ",".join(str(FIXTURES / n) for n in ("nccl-info-socket.log", "nccl-info-socket-lo.log"))
        r = self.mpirun(2, "fabric-doctor", ["--nccl-log", logs, "--output", "m.h5"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("# read 2 file(s)"), 1)
        ranks = self.load("m.h5").tables["doctor/nccl_ranks"]
        self.assertEqual(len(ranks), 4)  # two runs of two ranks
        self.assertIn("warn", set(self.load("m.h5").tables["doctor/findings"]["status"]))

    def test_bad_input_is_one_line_and_no_file(self):
        (self.dir / "empty.log").write_text("")
        (self.dir / "binary.log").write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 100)
        (self.dir / "prose.log").write_text("epoch 1 loss 2.3\nepoch 2 loss 2.1\n")
        fixture = FIXTURES / "nccl-info-p2p.log"
        cases = [
            (["--nccl-log", "empty.log"],
             "fabric-doctor: --nccl-log empty.log: empty; expected an NCCL log (a job's output with NCCL_DEBUG=INFO)"),
            (["--nccl-log", "binary.log"],
             "fabric-doctor: --nccl-log binary.log: not text (a NUL byte in the first 64 KiB); expected an NCCL log as "
             "written by NCCL_DEBUG=INFO (decompress a .gz first)"),
            (["--nccl-log", "prose.log"],
             "fabric-doctor: --nccl-log prose.log: no NCCL line in 2 line(s) (none with 'NCCL INFO' or 'NCCL WARN'); "
             "expected the output of a job run with NCCL_DEBUG=INFO"),
            (["--nccl-log", "missing.log"],
             "fabric-doctor: --nccl-log missing.log: cannot read the file (No such file or directory)"),
            (["--nccl-log", "."], "fabric-doctor: --nccl-log .: a directory; give a file"),
            (["--nccl-log", fixture, "--iteration-marker", "iteration ("],
             "fabric-doctor: --iteration-marker 'iteration (': not a regular expression"),
            (["--nccl-log", fixture, "--rank", "7"],
             "fabric-doctor: --rank 7: no process of the logs has that rank (ranks: 0-1)"),
            (["--nccl-log", fixture, "--rank", "-1"], "fabric-doctor: --rank -1: must be at least 0"),
            (["--iteration-marker", "x"],
             "fabric-doctor: --iteration-marker reads with --nccl-log only; give the logs with --nccl-log LOG"),
            (["--nccl-log", fixture, "--checks", "rdma"],
             "fabric-doctor: --checks with --nccl-log: the log mode reads logs and checks nothing on this host; drop one "
             "of them"),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                r = self.doctor(args + ["--output", "bad.h5"])
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertEqual(r.stdout, "")
                lines = r.stderr.splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith(expected), lines[0])
                self.assertFalse((self.dir / "bad.h5").exists())


if __name__ == "__main__":
    unittest.main()
