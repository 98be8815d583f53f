"""Bad input: one line naming the option and what is allowed, exit status 2, and no output file."""
import os
import subprocess
import unittest

from fbtest import BIN, LaunchTest

CASES = [
    (["--bogus"], "--bogus"),
    (["-b", "4Q"], "--min-bytes '4Q'"),
    (["-e", "-1"], "--max-bytes '-1'"),
    (["--sizes", ""], "--sizes ''"),
    (["-b", "1M", "-e", "1K"], "larger than --max-bytes"),
    (["-n", "0"], "--iters 0: must be at least 1"),
    (["--window", "0"], "--window 0: must be at least 1"),
    (["--window", "1000000000"], "--window 1000000000: must be at most 100000"),
    (["-n", "5000000000"], "--iters 5000000000: must be at most 1000000000"),
    (["--test", "bw", "--sizes", "0,8"], "--sizes 0: bw measures bandwidth, which needs messages of at least 1 byte"),
    (["--test", "pingpong"], "allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)"),
    (["--test", "nope"], "--test 'nope': allowed values are latency, bw, bibw, mbw_mr, all (comma-separated)"),
    (["--test", "latency,nope"], "--test 'nope': allowed values are"),
    (["--test", "latency,"], "--test '': allowed values are"),
    (["--memory", "device"], "--memory device"),
    (["--memory", "gpu"], "allowed values are host, pinned, device"),
    (["--output", "/nonexistent-dir/x.h5"], "does not exist"),
    (["--timeout", "soon"], "--timeout 'soon'"),
    (["--emulate-hosts", "0"], "--emulate-hosts 0: must be at least 1"),
    (["--emulate-hosts", "two"], "--emulate-hosts"),
    (["--min-time", "-1"], "--min-time -1: allowed values are 0 to 60 (seconds)"),
    (["--backend", "gpu"], "--backend 'gpu': allowed values are mpi, nccl"),
    (["--backend", "nccl", "--memory", "host"], "--memory host with --backend nccl: NCCL moves device memory only"),
    # Without a GPU (CI: "no GPU is visible"), or in a build without NCCL: one line, before NCCL is called.
    (["--backend", "nccl"], "fabric-p2p: --backend nccl: "),
    # Options the chosen tests never read (issue 48): refused, never ignored.
    (["--test", "latency", "--window", "16"],
     "--window with --test latency: the window applies to bw, bibw and mbw_mr; drop it"),
    (["--test", "latency", "-W", "64"], "--window with --test latency: the window applies to"),
    (["--sizes", "8", "-n", "10", "--min-time", "0.5"],
     "--min-time with --iters: -n times one block of that count; give one of them"),
]

# fabric-coll's options that no chosen operation or timing mode reads (issue 48).
COLL_UNUSED = [
    (["--op", "all_reduce", "--root", "1"], "--root with --op all_reduce: only broadcast and reduce have a root; drop it"),
    (["--op", "all_gather,reduce_scatter,alltoall,sendrecv", "-r", "all"],
     "--root with --op all_gather,reduce_scatter,alltoall,sendrecv: only broadcast and reduce have a root"),
    (["--op", "all_gather,broadcast", "--redop", "max"],
     "--redop with --op all_gather,broadcast: only all_reduce, reduce_scatter and reduce reduce; drop it"),
    (["--op", "all_reduce", "-n", "10", "--min-time", "0.5"], "--min-time with --iters: -n times one block"),
    (["--op", "all_reduce", "--per-iter", "--min-time", "0.5"],
     "--min-time with --per-iter: that timing mode times one block of nccl-tests' count; drop it"),
    (["--op", "all_reduce", "-G", "2", "--min-time", "0.5"], "--min-time with --graph: that timing mode"),
    (["--op", "all_reduce", "--backend", "mpi", "--per-rank"],
     "--per-rank reads NCCL's profiler events: it needs --backend nccl"),
]

# fabric-verbs' options that no chosen test reads (issue 48); refused before any RDMA device is opened.
VERBS_UNUSED = [
    (["--test", "write_lat", "--tx-depth", "16"],
     "--tx-depth with --test write_lat: it applies to the bandwidth tests (write_bw, read_bw, send_bw, atomic_bw) "
     "only; drop it"),
    (["--test", "read_lat,send_lat", "-Q", "10"], "--cq-mod with --test read_lat,send_lat: it applies to the bandwidth"),
    (["--test", "write_lat", "-q", "2"], "--qps with --test write_lat: it applies to the bandwidth tests"),
    (["--test", "send_lat", "-b"], "--bidirectional with --test send_lat: it applies to the bandwidth tests"),
    (["--test", "atomic_lat", "--report-gbits"], "--report-gbits with --test atomic_lat: it applies to the bandwidth"),
    (["--test", "write_bw,read_lat", "--rx-depth", "64"],
     "--rx-depth with --test write_bw,read_lat: receives are posted by send_bw and send_lat only; drop it"),
    (["--test", "write_bw", "-A", "cmp_swap"],
     "--atomic-type with --test write_bw: it applies to atomic_bw and atomic_lat only; drop it"),
    (["--test", "read_bw,atomic_lat", "-I", "64"],
     "--inline with --test read_bw,atomic_lat: only writes and sends carry inline data; drop it"),
    (["--test", "atomic_bw", "-s", "64"], "--size with --test atomic_bw: atomics move 8 bytes; drop it"),
    (["--test", "atomic_bw,atomic_lat", "--sizes", "8,16"], "--sizes with --test atomic_bw,atomic_lat: atomics move 8"),
    (["--test", "atomic_lat", "-a"], "--all-sizes with --test atomic_lat: atomics move 8 bytes"),
]


class BadInput(LaunchTest):
    def test_each_bad_option_under_mpirun(self):
        runs = self.mpiruns(2, "fabric-p2p", [args + ["--csv", "out.csv"] for args, _ in CASES], refused=True)
        for (args, expected), r in zip(CASES, runs):
            with self.subTest(args=args):
                self.assert_refused(r, "fabric-p2p", expected)

    def test_each_unused_coll_option_under_mpirun(self):
        runs = self.mpiruns(2, "fabric-coll", [args + ["--sizes", "64", "--csv", "out.csv"] for args, _ in COLL_UNUSED],
                            refused=True)
        for (args, expected), r in zip(COLL_UNUSED, runs):
            with self.subTest(args=args):
                self.assert_refused(r, "fabric-coll", expected)

    @unittest.skipUnless((BIN / "fabric-verbs").exists(), "this build has no libibverbs")
    def test_each_unused_verbs_option_under_mpirun(self):
        runs = self.mpiruns(2, "fabric-verbs", [args + ["--csv", "out.csv"] for args, _ in VERBS_UNUSED], refused=True)
        for (args, expected), r in zip(VERBS_UNUSED, runs):
            with self.subTest(args=args):
                self.assert_refused(r, "fabric-verbs", expected)

    def test_an_option_is_refused_only_where_no_chosen_mode_uses_it(self):
        # A test list with one bandwidth test uses the window; a preset (--config) sets the window for every test,
        # latency too: neither is refused. --min-time 0 with -n says what -n does.
        (self.dir / "preset.ini").write_text("window = 16\n")
        for args in (["--test", "latency,bw", "-W", "8"], ["--test", "latency", "--config", "preset.ini"],
                     ["--test", "latency", "--min-time", "0"]):
            with self.subTest(args=args):
                r = self.mpirun(2, "fabric-p2p", args + ["--sizes", "8", "-n", "2", "-w", "0", "-q", "--no-checks",
                                                         "--output", "ok.h5", "--force"])
                self.assertEqual(r.returncode, 0, r.stderr)
        r = self.mpirun(2, "fabric-coll", ["--op", "all_gather,broadcast", "--root", "1", "--sizes", "64", "-n", "2",
                                           "-w", "0", "-q", "--no-checks", "--output", "coll.h5"])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_existing_output_is_refused_unless_forced(self):
        (self.dir / "old.h5").write_text("precious")
        r = self.mpirun(2, "fabric-p2p", ["--output", "old.h5", "--sizes", "8", "-n", "2"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("fabric-p2p: --output old.h5: file exists", r.stderr)
        self.assertEqual((self.dir / "old.h5").read_text(), "precious")
        r = self.mpirun(2, "fabric-p2p", ["--output", "old.h5", "--sizes", "8", "-n", "2", "--force", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.load("old.h5").attrs["status"], "complete")

    def test_odd_rank_count_for_a_pairing_test(self):
        r = self.mpirun(3, "fabric-p2p", ["--sizes", "8"])
        self.assert_refused(r, "fabric-p2p", "even number of ranks")
        self.assertIn("got 3", r.stderr)

    def test_without_mpirun_the_error_is_exactly_one_line(self):
        r = subprocess.run([str(BIN / "fabric-p2p"), "--window", "0"], cwd=self.dir, env=self.env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip().splitlines(), ["fabric-p2p: --window 0: must be at least 1"])
        self.assertEqual(self.files(), [])

    def test_help_lists_the_familiar_flags(self):
        r = subprocess.run([str(BIN / "fabric-p2p"), "--help"], cwd=self.dir, env=self.env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for flag in ("--min-bytes", "-b", "--iters", "-n", "--warmup", "OSU -i", "-W", "--window", "--memory", "--csv"):
            self.assertIn(flag, r.stdout)
        self.assertEqual(self.files(), [])

    @unittest.skipUnless((BIN / "fabric-verbs").exists(), "this build has no libibverbs")
    @unittest.skipIf(os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"),
                     "this machine has RDMA devices")
    def test_verbs_without_an_rdma_device_names_the_host(self):
        r = self.mpirun(2, "fabric-verbs", ["--test", "write_bw"])
        self.assert_refused(r, "fabric-verbs", "no RDMA device on host ")
        self.assertIn("libibverbs lists none", r.stderr)

    @unittest.skipUnless((BIN / "fabric-verbs").exists(), "this build has no libibverbs")
    def test_verbs_help_uses_perftest_letters(self):
        r = subprocess.run([str(BIN / "fabric-verbs"), "--help"], cwd=self.dir, env=self.env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for flag in ("-a [ --all-sizes ]", "-b [ --bidirectional ]", "-q [ --qps ]", "-x [ --gid-index ]",
                     "-D [ --duration ]", "-t [ --tx-depth ]", "--report-gbits", "--max-bytes", "--quiet"):
            self.assertIn(flag, r.stdout)
        self.assertNotIn("-b [ --min-bytes ]", r.stdout)


if __name__ == "__main__":
    unittest.main()
