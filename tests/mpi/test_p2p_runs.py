"""fabric-p2p under mpirun: the HDF5 and CSV it writes hold what was measured."""
import unittest

import pandas as pd

from fbtest import LaunchTest

SIZES = [1, 16, 256, 4096, 65536]


class P2PTwoRanks(LaunchTest):
    def test_a_message_over_2_gib_is_sent_whole_and_checked(self):
        # 2 GiB + 3 bytes: more than an int counts, so it travels as one derived datatype (1 GiB blocks and the
        # rest). Before, the count was the size cut to an int: 4 GiB sent nothing and read 36,692,500 MB/s.
        size = 2 ** 31 + 3
        r = self.mpirun(2, "fabric-p2p", ["--test", "bw", "--sizes", str(size), "-n", "1", "-w", "0", "-W", "1",
                                          "--check", "--output", "big.h5", "-q"], timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        row = self.load("big.h5").tables["results/p2p"].iloc[0]
        self.assertEqual(row["bytes"], size)
        self.assertEqual(row["wrong"], 0, "every byte arrived, the last 3 included")
        # Shared memory on this machine moves ~12 GB/s (RIGS.md); no path here moves 100 GB/s.
        self.assertGreater(row["bw_mbps"], 0)
        self.assertLess(row["bw_mbps"], 100_000)
        self.assertGreater(row["time_us_median"], size / 100e3, "the time is that of moving 2 GiB")

    def test_without_n_timed_blocks_repeat_for_the_time_budget_and_the_row_says_how_steady(self):
        import math
        r = self.mpirun(2, "fabric-p2p", ["--sizes", "8", "--output", "b.h5", "--min-time", "0.05"])
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.load("b.h5").tables["results/p2p"].set_index("test")
        # OSU's counts per block (latency 10000, bandwidth 100 windows), repeated while 0.05 s was not yet timed:
        # a 100-window block of 8 B takes well under 5 ms on shared memory, so bw gets several blocks.
        self.assertEqual(rows.loc["latency", "iterations"], 10000)
        self.assertEqual(rows.loc["bw", "iterations"], 100)
        for test in ("bw", "bibw"):
            self.assertGreater(rows.loc[test, "blocks"], 1, rows)
            self.assertLessEqual(rows.loc[test, "blocks"], 100)
            self.assertFalse(math.isnan(rows.loc[test, "time_us_spread_pct"]), rows)
        samples = self.load("b.h5").tables["samples/p2p"]
        for index, test in enumerate(rows.index):
            self.assertEqual(len(samples[samples.row == index]), rows.loc[test, "blocks"] * rows.loc[test, "iterations"],
                             f"{test}: every block's iterations")
        # -n is a count, as OSU's -i: one block, no spread; --min-time 0 likewise.
        for extra in (["-n", "100"], ["--min-time", "0"]):
            r = self.mpirun(2, "fabric-p2p", ["--test", "bw", "--sizes", "8", "--output", "n.h5", "--force"] + extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = self.load("n.h5").tables["results/p2p"]
            self.assertTrue((rows.blocks == 1).all(), (extra, rows))
            self.assertTrue(rows.time_us_spread_pct.isna().all(), extra)

    def test_all_tests_over_shared_memory_write_complete_results(self):
        secrets = {"AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "SOME_TOKEN": "tok-value", "NCCL_DEBUG": "WARN"}
        r = self.mpirun(2, "fabric-p2p", ["--sizes", "1:64K:x16", "-n", "40", "-w", "4", "--check",
                                          "--output", "p2p.h5", "--csv", "p2p.csv"], env=secrets)
        self.assertEqual(r.returncode, 0, r.stderr)
        run = self.load("p2p.h5")
        self.assertEqual(run.attrs["status"], "complete")
        self.assertEqual(run.attrs["world_size"], 2)
        self.assertEqual(run.attrs["schema_version"], 2)
        rows = run.tables["results/p2p"]
        self.assertEqual(list(rows["test"].unique()), ["latency", "bw", "bibw"])
        for test, group in rows.groupby("test", sort=False):
            self.assertEqual(list(group["bytes"]), SIZES, test)
            self.assertTrue((group["time_us_min"] > 0).all(), test)
            self.assertTrue((group["time_us_min"] <= group["time_us_median"]).all(), test)
            self.assertTrue((group["time_us_median"] <= group["time_us_max"]).all(), test)
            self.assertTrue((group["iterations"] == 40).all())
            self.assertTrue((group["wrong"] == 0).all())
        lat = rows[rows.test == "latency"]
        self.assertTrue((lat["latency_us"] > 0).all())
        self.assertTrue(lat["bw_mbps"].isna().all())
        bw = rows[rows.test != "latency"]
        self.assertTrue((bw["bw_mbps"] > 0).all())
        # Samples: one per timed iteration of the one pair, tied to their rows; latency samples average to the row.
        samples = run.tables["samples/p2p"]
        self.assertEqual(len(samples), 40 * len(rows))
        per_row = samples.groupby("row")["time_us"].mean()
        for index in lat.index:
            self.assertAlmostEqual(per_row[index], lat.loc[index, "latency_us"], delta=lat.loc[index, "latency_us"] * 0.02)
        # CSV: the same rows.
        csv = pd.read_csv(self.dir / "p2p.csv")
        self.assertEqual(list(csv.columns), list(rows.columns))
        self.assertEqual(list(csv["bytes"]), list(rows["bytes"]))
        self.assertEqual(list(csv["test"]), list(rows["test"]))
        # Environment: allowlisted variables only.
        variables = run.tables["env/variables"]
        self.assertIn("NCCL_DEBUG", set(variables["name"]))
        blob = run.tables["env/variables"].to_string() + str(run.attrs)
        for name, value in secrets.items():
            if name != "NCCL_DEBUG":
                self.assertNotIn(name, blob)
                self.assertNotIn(value, blob)
        self.assertEqual(len(run.tables["env/ranks"]), 2)
        self.assertEqual(len(run.tables["env/hosts"]), 1)
        # The terminal table.
        self.assertIn("latency_us", r.stdout)
        self.assertIn("bw_MB/s", r.stdout)
        self.assertIn("pair 0: rank 0", r.stdout)

    def test_a_comma_list_of_tests_runs_each_in_the_order_given(self):
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency,bw", "--sizes", "8,64", "-n", "10", "-w", "1",
                                          "--output", "list.h5", "-q"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("list.h5").tables["results/p2p"]
        self.assertEqual(list(rows["test"]), ["latency", "latency", "bw", "bw"])
        self.assertTrue((rows[rows.test == "latency"]["latency_us"] > 0).all(), rows)
        self.assertTrue((rows[rows.test == "bw"]["bw_mbps"] > 0).all(), rows)
        # The order given, not the table's; a name given twice runs once.
        r = self.mpirun(2, "fabric-p2p", ["--test", "bw,latency,bw", "--sizes", "8", "-n", "10", "-w", "1",
                                          "--output", "order.h5", "-q"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(list(self.load("order.h5").tables["results/p2p"]["test"]), ["bw", "latency"])

    def test_check_catches_a_corrupted_byte(self):
        r = self.mpirun(2, "fabric-p2p", ["--sizes", "8,1K", "-n", "5", "--check", "--output", "bad.h5"],
                        env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.load("bad.h5").tables["results/p2p"]
        self.assertTrue((rows["wrong"] > 0).all(), rows[["test", "bytes", "wrong"]])
        self.assertIn("failed the check", r.stdout)

    def test_without_check_nothing_is_counted(self):
        r = self.mpirun(2, "fabric-p2p", ["--sizes", "8,1K", "-n", "5", "--output", "nocheck.h5"],
                        env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue((self.load("nocheck.h5").tables["results/p2p"]["wrong"] == 0).all())


class P2PFourRanks(LaunchTest):
    def test_two_pairs_over_tcp_with_message_rate(self):
        r = self.mpirun(4, "fabric-p2p", ["--sizes", "8,4K,64K", "-n", "20", "-w", "2", "--check", "-q",
                                          "--output", "four.h5"], transport="tcp")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "", "--quiet prints no table")
        run = self.load("four.h5")
        self.assertEqual(run.attrs["status"], "complete")
        rows = run.tables["results/p2p"]
        self.assertEqual(list(rows["test"].unique()), ["latency", "bw", "bibw", "mbw_mr"])
        self.assertTrue((rows["pairs"] == 2).all())
        self.assertTrue((rows["wrong"] == 0).all())
        for test, group in rows.groupby("test"):
            self.assertEqual(list(group["bytes"]), [8, 4096, 65536], test)
        mr = rows[rows.test == "mbw_mr"]
        self.assertTrue((mr["msg_rate_mps"] > 0).all())
        # The aggregate of two pairs is at least the slowest pair (it is the sum of both).
        self.assertTrue((mr["bw_mbps"] >= mr["bw_min_pair_mbps"]).all())
        samples = run.tables["samples/p2p"]
        self.assertEqual(sorted(samples["rank"].unique()), [0, 1], "the two leaders timed")

    def test_pairs_are_announced(self):
        r = self.mpirun(4, "fabric-p2p", ["--test", "latency", "--sizes", "8", "-n", "10", "--output", "a.h5"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pair 0: rank 0", r.stdout)
        self.assertIn("<-> rank 2", r.stdout)
        self.assertIn("pair 1: rank 1", r.stdout)
        self.assertIn("<-> rank 3", r.stdout)


if __name__ == "__main__":
    unittest.main()
