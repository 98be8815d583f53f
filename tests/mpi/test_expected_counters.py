"""What the doctor gives the measuring tools: "% of expected" in their rows (and the rule in configs/expected.ini
that warns), and the link error counters read around each measurement, on fake sysfs trees per host."""
import math
import pathlib
import shutil
import tempfile
import threading

from fbtest import LaunchTest
from mpi.test_doctor import fake_rdma_tree, write

PORT = "/sys/class/infiniband/mlx5_7/ports/1"
FAKE_HOSTS = ["--emulate-hosts", "1"]  # one fake host per rank


def rdma_host(root, rate="800 Gb/sec (8X NDR)"):
    fake_rdma_tree(root)
    write(root, f"{PORT}/rate", rate + "\n")
    for name in ("symbol_error", "link_downed", "port_rcv_errors", "port_xmit_wait"):
        write(root, f"{PORT}/counters/{name}", "0\n")


class ExpectedShare(LaunchTest):
    def setUp(self):
        super().setUp()
        # Outside the job's directory, which a refused run must leave empty.
        self.aux = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-aux-"))
        self.addCleanup(shutil.rmtree, self.aux, True)
        rdma_host(self.aux / "root")  # every fake host: one Active 800 Gb/s port, 100 GB/s
        self.hosts = {"FABRICBENCH_TEST_SYSROOT": str(self.aux / "root")}  # with FAKE_HOSTS

    def test_p2p_rows_carry_the_share_and_a_slow_largest_size_warns(self):
        r = self.mpirun(2, "fabric-p2p", FAKE_HOSTS + ["--sizes", "8,1M", "-n", "10", "--output", "p.h5"],
                        env=self.hosts)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("p.h5").tables["results/p2p"]
        bw = rows[rows.test == "bw"].set_index("bytes")
        self.assertEqual(list(bw.expected_gbps), [100.0, 100.0])
        for b, row in bw.iterrows():
            self.assertAlmostEqual(row.pct_expected, row.bw_mbps / 1e3 / 100.0 * 100, places=6)
        bibw = rows[rows.test == "bibw"]
        self.assertEqual(list(bibw.expected_gbps), [200.0, 200.0], "both directions: twice the port")
        self.assertTrue(rows[rows.test == "latency"].pct_expected.isna().all(), "latency has no share")
        # Shared memory reaches nothing like 100 GB/s at 1 MiB: the largest size warns, naming the port; 8 B does not.
        self.assertRegex(r.stdout, r"warning: bw at 1048576 B: [\d.]+ GB/s is \d+% of the 100.00 GB/s expected from "
                                   r"rdma_port mlx5_7/1 on node[01]: 800 Gb/s")
        self.assertNotIn("bw at 8 B", r.stdout)
        self.assertIn("%expect", r.stdout)
        # --quiet: no table, so the warning goes to stderr.
        r = self.mpirun(2, "fabric-p2p", FAKE_HOSTS + ["--test", "bw", "--sizes", "1M", "-n", "5", "-q", "--output",
                                                       "q.h5"], env=self.hosts)
        self.assertIn("fabric-p2p: warning: bw at 1048576 B", r.stderr)

    def test_the_rule_file_moves_the_threshold_and_bad_rules_are_refused(self):
        rule = self.aux / "rule.ini"
        rule.write_text("[expected]\nwarn_below_percent = 0\n")
        r = self.mpirun(2, "fabric-p2p", FAKE_HOSTS + ["--test", "bw", "--sizes", "1M", "-n", "5", "--output", "a.h5",
                                                       "--expected-rule", str(rule)], env=self.hosts)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("warning: bw", r.stdout + r.stderr)
        run = self.load("a.h5")
        self.assertGreater(run.tables["results/p2p"].pct_expected.iloc[0], 0)
        # The rule travels with the rows it judged (fabric-report reads it there, not the INI again).
        self.assertEqual(run.attrs["expected_warn_below_percent"], 0)
        self.assertEqual(run.attrs["expected_calibrated_warn_below_percent"], 70, "the key the file left out: default")
        self.assertEqual(run.attrs["expected_min_bytes"], 1 << 20)
        rule.write_text("[expected]\nwarn_below_percent = 120\n")
        (self.dir / "a.h5").unlink()
        r = self.mpirun(2, "fabric-p2p", FAKE_HOSTS + ["--test", "bw", "--sizes", "1M", "--output", "b.h5",
                                                       "--expected-rule", str(rule)], env=self.hosts)
        self.assert_refused(r, "fabric-p2p", "warn_below_percent = '120': allowed values are 0 to 100")

    def test_one_host_in_host_memory_has_no_reference(self):
        r = self.mpirun(2, "fabric-p2p", ["--test", "bw", "--sizes", "1M", "-n", "5", "--output", "h.h5"],
                        env={"FABRICBENCH_TEST_SYSROOT": str(self.aux / "root")})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(self.load("h.h5").tables["results/p2p"].pct_expected.isna().all())
        self.assertNotIn("%expect", r.stdout)

    def test_collective_bus_bandwidth_is_held_against_each_ranks_share_of_the_node(self):
        r = self.mpirun(4, "fabric-coll", ["--emulate-hosts", "2", "--backend", "mpi", "--sizes", "1K,1M", "-n", "5",
                                           "--output", "c.h5"], env=self.hosts)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("c.h5").tables["results/coll"]
        self.assertTrue((rows.expected_gbps == 50.0).all(), "100 GB/s node over 2 ranks per host")
        for row in rows.itertuples():
            self.assertAlmostEqual(row.pct_expected, row.busbw_gbps / 50.0 * 100, places=6)
        self.assertIn("expected bus bandwidth: 50.00 GB/s (1/2 of rdma_node node", r.stdout)

    def test_sweep_pairs_carry_the_share_and_one_summary_line(self):
        r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ["--metric", "p2p_bw,p2p_latency", "-n", "5", "--output",
                                                         "s.h5"], env=self.hosts)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)  # 1: a verdict on a noisy machine
        pairs = self.load("s.h5").tables["sweep/pairs"]
        bw = pairs[pairs.metric == "p2p_bw"]
        self.assertTrue((bw.expected_gbps == 100.0).all())
        for row in bw.itertuples():
            self.assertAlmostEqual(row.pct_expected, row.value / 1e3, places=6)
        self.assertTrue(pairs[pairs.metric == "p2p_latency"].pct_expected.isna().all())
        self.assertRegex(r.stdout, rf"warning: {len(bw)} pair value\(s\) below 80% of what the hardware should reach")


class LinkCountersAround(LaunchTest):
    """Each host has its own tree (FABRICBENCH_TEST_SYSROOT with %h); a thread makes node2's symbol errors grow."""

    def grow_while(self, run, host="node2", every_s=0.01):
        stop = threading.Event()
        path = self.dir / f"root-{host}" / PORT.lstrip("/") / "counters" / "symbol_error"

        def grow():
            n = 0
            while not stop.wait(every_s):
                n += 1
                tmp = path.with_suffix(".tmp")
                tmp.write_text(f"{n}\n")
                tmp.replace(path)
        t = threading.Thread(target=grow)
        t.start()
        try:
            return run()
        finally:
            stop.set()
            t.join()

    def setUp(self):
        super().setUp()
        for h in range(4):
            rdma_host(self.dir / f"root-node{h}")
        self.env_ = {"FABRICBENCH_TEST_SYSROOT": str(self.dir / "root-%h")}  # with FAKE_HOSTS or --emulate-hosts 2

    def test_the_sweep_names_the_host_whose_counters_grew(self):
        r = self.grow_while(lambda: self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ["--metric", "p2p_bw", "--sizes", "1M",
                                                                                 "-n", "20", "--output", "s.h5"],
                                                env=self.env_))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        run = self.load("s.h5")
        verdicts = run.tables["sweep/verdicts"]
        named = verdicts[verdicts.metric == "port_errors"]
        self.assertEqual(list(named.host_a), ["node2"], verdicts)
        self.assertEqual(list(named.kind), ["node"])
        self.assertIn("RDMA port error counters grew", named.reason.iloc[0])
        pairs = run.tables["sweep/pairs"]
        with_node2 = pairs[(pairs.host_a == "node2") | (pairs.host_b == "node2")]
        self.assertGreater(with_node2.port_errors.sum(), 0)
        others = pairs[(pairs.host_a != "node2") & (pairs.host_b != "node2")]
        self.assertEqual(others.port_errors.sum(), 0, "the other hosts' counters stayed at 0")
        # The counters cover a pair's whole metric (both directions) and sit on its first row.
        self.assertTrue((pairs[pairs.direction == "a->b"].xmit_wait == 0).all(), pairs)
        self.assertTrue(pairs[pairs.direction == "b->a"].xmit_wait.isna().all(), pairs)

    def test_a_collective_metric_credits_each_hosts_links_to_its_own_end(self):
        # Two ranks per host, the collective over all four; only node1's counter grows (the pair's b end, whose ranks
        # hold no figure of the pair). The first rank of each host reads its links and sends them even without a
        # figure: the row names node1 alone. (Before: b's growth was dropped, and a's second rank credited b.)
        r = self.grow_while(lambda: self.mpirun(4, "fabric-sweep", ["--emulate-hosts", "2", "--metric", "allreduce",
                                                                    "--backend", "mpi", "--sizes", "4M", "-n", "20",
                                                                    "--output", "c.h5"],
                                                env=self.env_), host="node1")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        pairs = self.load("c.h5").tables["sweep/pairs"]
        self.assertEqual(len(pairs), 1, pairs)
        self.assertGreater(pairs.port_errors.iloc[0], 0, pairs)
        self.assertEqual(list(pairs.counters_host), ["node1"], pairs)

    def test_p2p_rows_record_the_growth_of_each_size(self):
        # Ranks 0 and 1 on node0 and node1; node1's counter grows. Each size takes well over the growth period.
        r = self.grow_while(lambda: self.mpirun(2, "fabric-p2p", FAKE_HOSTS + ["--test", "bw", "--sizes", "512K,1M",
                                                                               "-n", "20", "--output", "p.h5"],
                                                env=self.env_),
                            host="node1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("p.h5").tables["results/p2p"]
        self.assertTrue((rows.port_errors > 0).all(), rows.port_errors)
        self.assertTrue(all(not math.isnan(v) for v in rows.xmit_wait), "the fake port has port_xmit_wait")
        self.assertTrue(rows.nvlink_errors.isna().all(), "no NVML here")


if __name__ == "__main__":
    import unittest
    unittest.main()
