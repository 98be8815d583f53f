"""fabric-coll on the MPI back end under mpirun: every operation validated, the HDF5 rows consistent with
nccl-tests' formulas, corruption and stalls detected, bad input refused."""
import unittest

from fbtest import LaunchTest, collectives

# nccl-tests' factors (src/*.cu), written here independently of fabric-coll's table: a collective the table gains
# must be added here too (test_the_table_is_the_formulas_here).
FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
           "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}


class CollRuns(LaunchTest):
    def test_the_table_is_the_formulas_here(self):
        self.assertEqual(sorted(collectives()), sorted(FACTORS))

    def check_rows(self, rows, nranks, sizes):
        self.assertEqual(set(rows["op"]), set(collectives()))
        self.assertTrue((rows["wrong"] == 0).all(), rows[rows.wrong > 0])
        self.assertTrue((rows["ranks"] == nranks).all())
        for op, group in rows.groupby("op"):
            for case, part in group.groupby(["dtype", "redop", "root", "in_place"]):
                self.assertEqual(len(part), len(sizes), (op, case))
                self.assertTrue(part["bytes"].is_monotonic_increasing, (op, case, part["bytes"]))
            self.assertEqual(sorted(group["in_place"].unique()), [0, 1])
            timed = group[group.bytes > 0]
            self.assertTrue((timed["time_us"] > 0).all(), op)
            # algbw = bytes / time; busbw = algbw x the nccl-tests factor.
            alg = timed["bytes"] / timed["time_us"] / 1e3
            for got, want in zip(timed["algbw_gbps"], alg):
                self.assertAlmostEqual(got, want, delta=1e-9 + want * 1e-9)
            for got, want in zip(timed["busbw_gbps"], timed["algbw_gbps"] * FACTORS[op](nranks)):
                self.assertAlmostEqual(got, want, delta=1e-9 + want * 1e-9)
            self.assertTrue((timed["time_us_rank_min"] <= timed["time_us"] + 1e-9).all())
            self.assertTrue((timed["time_us"] <= timed["time_us_rank_max"] + 1e-9).all())

    def test_every_operation_on_two_ranks_over_shared_memory(self):
        r = self.mpirun(2, "fabric-coll", ["--op", "all", "--sizes", "8:64K:x16", "-n", "10", "-w", "2",
                                           "--output", "c2.h5", "--csv", "c2.csv"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("c2.h5")
        self.assertEqual(run.attrs["status"], "complete")
        # The shipped configs/expected.ini's rule, recorded with the rows (fabric-report judges by it).
        self.assertEqual((run.attrs["expected_warn_below_percent"], run.attrs["expected_calibrated_warn_below_percent"],
                          run.attrs["expected_min_bytes"]), (80, 70, 1 << 20))
        rows = run.tables["results/coll"]
        self.check_rows(rows, 2, [8, 128, 2048, 32768])
        self.assertTrue((rows["backend"] == "mpi").all())
        # MPI is synchronous: every iteration of every rank is a sample, and the time is the mean over ranks.
        samples = run.tables["samples/coll"]
        self.assertEqual(len(samples), len(rows) * 2 * 10)
        per_rank = samples.groupby(["row", "rank"])["time_us"].mean().groupby("row").mean()
        for index, row in rows.iterrows():
            self.assertAlmostEqual(per_rank[index], row["time_us"], delta=row["time_us"] * 0.02 + 1e-3)
        self.assertIn("oop_busbw_GB/s", r.stdout)
        self.assertIn("Avg bus bandwidth", r.stdout)
        self.assertIn("Out of bounds values : 0 OK", r.stdout)
        self.assertTrue((self.dir / "c2.csv").read_text().startswith("op,backend,dtype"))

    def test_every_operation_types_reductions_and_roots_on_four_ranks_over_tcp(self):
        r = self.mpirun(4, "fabric-coll", ["--op", "all", "--sizes", "1K,64K", "-n", "5", "-w", "1", "-d", "int8,int64,double",
                                           "-o", "all", "-r", "all", "--output", "c4.h5", "-q"], transport="tcp")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("c4.h5").tables["results/coll"]
        self.check_rows(rows, 4, [1024, 65536])
        self.assertEqual(set(rows[rows.op == "broadcast"]["root"]), {0, 1, 2, 3})
        self.assertEqual(set(rows[rows.op == "all_reduce"]["redop"]), {"sum", "prod", "min", "max"})
        self.assertEqual(set(rows["dtype"]), {"int8", "int64", "double"})
        self.assertEqual(set(rows[rows.op == "alltoall"]["root"]), {-1})

    def test_sizes_that_hold_no_element_per_rank_are_skipped_never_a_bandwidth_of_nothing(self):
        # 4 ranks, float: all_gather at 8 B is 0 elements per rank (nccl-tests prints 0 B and 0 GB/s).
        r = self.mpirun(4, "fabric-coll", ["--op", "all_gather,all_reduce", "--sizes", "8,64", "-n", "2", "-w", "0",
                                           "--in-place", "0", "--output", "z.h5"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("z.h5").tables["results/coll"]
        self.assertTrue((rows["bytes"] > 0).all(), rows)
        self.assertEqual(list(rows[rows.op == "all_gather"]["bytes"]), [64])
        self.assertEqual(list(rows[rows.op == "all_reduce"]["bytes"]), [8, 64])
        self.assertIn("all_gather float: 1 size(s) hold no whole float per rank on 4 ranks; skipped", r.stdout)

    def test_without_n_timed_blocks_repeat_for_the_time_budget_and_the_row_says_how_steady(self):
        import math
        # --min-time 60: a budget that asks for more blocks than the cap of 100 even when the first block of 20
        # iterations of 8 B, which sets the count, takes tens of milliseconds (two ranks on a loaded 2-core machine:
        # 2 blocks at the default 0.1 s, 63 at 5 s).
        r = self.mpirun(2, "fabric-coll", ["--op", "all_reduce", "--sizes", "8,4K", "--in-place", "0", "--min-time", "60",
                                           "--output", "b.h5"])
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.load("b.h5").tables["results/coll"]
        self.assertEqual(list(rows.blocks), [100, 100], rows)
        self.assertTrue((rows.iterations == 20).all())
        self.assertTrue(all(s >= 0 and not math.isnan(s) for s in rows.time_us_spread_pct), rows)
        samples = self.load("b.h5").tables["samples/coll"]
        self.assertEqual(len(samples[samples.row == 0]), 2 * 100 * 20, "every block's iterations, both ranks")
        # -n is a count, as in nccl-tests: one block, no spread; --min-time 0 likewise.
        for extra in (["-n", "20"], ["--min-time", "0"]):
            r = self.mpirun(2, "fabric-coll", ["--op", "all_reduce", "--sizes", "8", "--output", "n.h5", "--force"] + extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = self.load("n.h5").tables["results/coll"]
            self.assertTrue((rows.blocks == 1).all(), (extra, rows))
            self.assertTrue(rows.time_us_spread_pct.isna().all(), extra)

    def test_a_corrupted_result_counts_as_wrong_and_fails_the_run(self):
        r = self.mpirun(2, "fabric-coll", ["--op", "all_reduce,all_gather", "--sizes", "1K", "-n", "2", "--output", "bad.h5"],
                        env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.load("bad.h5").tables["results/coll"]
        self.assertTrue((rows["wrong"] > 0).all(), rows[["op", "in_place", "wrong"]])
        self.assertIn("FAILED", r.stdout)

    def test_check_off_counts_nothing(self):
        r = self.mpirun(2, "fabric-coll", ["--sizes", "1K", "-n", "2", "-c", "0", "--output", "off.h5", "-q"],
                        env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue((self.load("off.h5").tables["results/coll"]["wrong"] == 0).all())

    def test_a_stalled_rank_ends_the_run_with_status_3_naming_it(self):
        r = self.mpirun(4, "fabric-coll", ["--sizes", "8,16,32", "-n", "5", "--in-place", "0", "--timeout", "2",
                                           "--output", "stall.h5", "-q"], env={"FABRICBENCH_TEST_STALL": "2:1"})
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        run = self.load("stall.h5")
        self.assertTrue(run.attrs["status"].startswith(
            "failed: timeout: all_reduce out-of-place float sum at 16 B did not finish within 2 s; "
            "ranks not finished: 0,1,2,3; not started: 2; "), run.attrs["status"])
        ranks = run.tables["failure/ranks"]
        self.assertEqual(list(ranks["rank"]), [0, 1, 2, 3])
        self.assertIn("measuring", ranks[ranks["rank"] == 2]["backtrace"].iloc[0])
        self.assertEqual(list(run.tables["results/coll"]["bytes"]), [8])


class CollBadInput(LaunchTest):
    CASES = [
        (["--op", "allreduce"], "--op 'allreduce': allowed values are all_reduce, all_gather"),
        (["--dtype", "float128"], "--dtype 'float128': allowed values are int8"),
        (["--dtype", "half", "--backend", "mpi"], "--dtype half: MPI has no such type"),
        (["--redop", "avg", "--backend", "mpi"], "--redop avg: MPI has no average"),
        (["--redop", "xor"], "--redop 'xor': allowed values are sum, prod, min, max, avg, all"),
        (["--root", "2"], "--root '2': allowed values are 0 to 1"),
        (["--in-place", "maybe"], "--in-place 'maybe': allowed values are both, 0, 1"),
        (["--blocking", "2"], "--blocking 2: allowed values are 0 and 1"),
        (["--average", "7"], "--average 7: allowed values are 0, 1, 2, 3"),
        (["--per-iter", "--backend", "mpi"], "--per-iter and --graph time CUDA work"),
        (["--per-iter", "-z", "1"], "different timing modes"),
        (["--backend", "gloo"], "--backend 'gloo': allowed values are auto, nccl, mpi"),
        (["--backend", "nccl"], "--backend nccl"),
        (["-n", "0"], "--iters 0: must be at least 1"),
        (["--min-time", "-1"], "--min-time -1: allowed values are 0 to 60 (seconds)"),
        # MPI's counts are ints: refused when the options are read, never cut to a wrong count.
        (["--backend", "mpi", "--op", "all_reduce", "--dtype", "int8", "-b", "3G", "-e", "3G"],
         "--max-bytes 3G: all_reduce int8 passes 3221225472 elements per call and MPI's counts stop at 2147483647 "
         "(an int); use at most 1536M with --backend mpi"),
        (["--backend", "mpi", "--op", "all_gather", "--dtype", "uint8", "--sizes", "1K,5G"],
         "--sizes 5G: all_gather uint8 passes 2684354560 elements"),
    ]

    def test_each_bad_option(self):
        sized = [args + ([] if "-e" in args or "--sizes" in args else ["--sizes", "1K"]) for args, _ in self.CASES]
        for (args, expected), r in zip(self.CASES, self.mpiruns(2, "fabric-coll", sized, refused=True)):
            with self.subTest(args=args):
                self.assert_refused(r, "fabric-coll", expected)


if __name__ == "__main__":
    unittest.main()
