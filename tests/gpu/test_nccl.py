"""fabric-coll and fabric-p2p on GPUs (label gpu; needs NCCL and at least 2 GPUs): every operation validated on the
device, in and out of place, every timing mode, every type and reduction, corruption and a hung rank detected."""
import os
import subprocess
import unittest

from fbtest import LaunchTest

def _gpu_count():
    if os.environ.get("FABRICBENCH_GPUS"):
        return int(os.environ["FABRICBENCH_GPUS"])
    try:
        return len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines())
    except OSError:
        return 0


GPUS = _gpu_count()


@unittest.skipIf(GPUS < 2, "needs at least 2 GPUs")
class Nccl(LaunchTest):
    def coll(self, args, name, env=None, np=GPUS):
        r = self.mpirun(np, "fabric-coll", ["--backend", "nccl", "--output", name, "-q"] + args, env=env, timeout=300)
        return r, (self.load(name) if (self.dir / name).exists() else None)

    def assert_clean(self, r, run):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(run.attrs["status"], "complete")
        rows = run.tables["results/coll"]
        self.assertTrue((rows["wrong"] == 0).all(), rows[rows.wrong > 0])
        self.assertTrue((rows["backend"] == "nccl").all())
        return rows

    def test_every_operation_in_and_out_of_place_short_sweep(self):
        r, run = self.coll(["--op", "all", "-b", "8", "-e", "64M", "-f", "8", "-n", "10", "-w", "2"], "ops.h5")
        rows = self.assert_clean(r, run)
        self.assertEqual(len(set(rows["op"])), 7)
        self.assertEqual(sorted(rows["in_place"].unique()), [0, 1])
        p2p_based = rows[rows.op.isin(["alltoall", "sendrecv"])]
        self.assertTrue((p2p_based["in_place"] == 0).all(), "NCCL point-to-point is not defined in place")
        big = rows[rows.bytes == 64 << 20]
        self.assertTrue((big["busbw_gbps"] > 1).all(), big[["op", "busbw_gbps"]])

    def test_counts_above_int_max_go_whole_to_nccl(self):
        # NCCL counts are size_t: 2 GiB + 256 int8 elements per call, where an int would have wrapped.
        size = 2 ** 31 + 256
        r, run = self.coll(["--op", "all_reduce,broadcast", "--dtype", "int8", "--sizes", str(size), "-n", "2", "-w", "1",
                            "--in-place", "0"], "big.h5", np=2)
        rows = self.assert_clean(r, run)
        self.assertEqual(list(rows["count"]), [size, size])
        self.assertTrue((rows["busbw_gbps"] < 2000).all(), rows[["op", "busbw_gbps"]])  # NV18 carries ~480 GB/s

    def test_every_type_and_reduction(self):
        r, run = self.coll(["--op", "all_reduce,reduce_scatter,reduce", "-d", "all", "-o", "all", "--sizes", "1K,1M",
                            "-n", "3", "-w", "1"], "types.h5")
        rows = self.assert_clean(r, run)
        self.assertEqual(len(set(rows["dtype"])), 10)
        self.assertIn("avg", set(rows[rows.dtype == "bfloat16"]["redop"]))

    def test_graph_events_and_blocking_modes(self):
        for mode, args in (("graph", ["-G", "2"]), ("events", ["--per-iter"]), ("blocking", ["-z", "1"])):
            with self.subTest(mode=mode):
                r, run = self.coll(["--op", "all", "--sizes", "1M,16M", "-n", "8", "-w", "2"] + args, mode + ".h5")
                rows = self.assert_clean(r, run)
                self.assertTrue((rows["timing"] == mode).all())
                if mode != "graph":
                    samples = run.tables["samples/coll"]
                    self.assertEqual(len(samples), len(rows) * GPUS * 8, "one sample per iteration and rank")
                    self.assertTrue(rows["iter_us_median"].notna().all())

    def test_device_check_catches_a_corrupted_byte(self):
        r, run = self.coll(["--op", "all_reduce,all_gather", "--sizes", "1M", "-n", "2"], "bad.h5",
                           env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertTrue((run.tables["results/coll"]["wrong"] > 0).all())

    def test_a_hung_rank_aborts_nccl_and_names_it(self):
        r, run = self.coll(["--sizes", "1K,2K,4K", "-n", "5", "--in-place", "0", "--timeout", "3"], "hang.h5",
                           env={"FABRICBENCH_TEST_STALL": "1:1"})
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("timeout: all_reduce out-of-place float sum at 2048 B", run.attrs["status"])
        self.assertIn("not started: 1", run.attrs["status"])
        self.assertEqual(list(run.tables["results/coll"]["bytes"]), [1024])

    def test_sweep_allreduce_over_gpu_pairs_with_nccl(self):
        # One GPU per (fake) host: each round's pairs run NCCL all_reduce on their own communicators at once.
        env = {"FABRICBENCH_TEST_RANKS_PER_HOST": "1"}
        r = self.mpirun(GPUS, "fabric-sweep", ["--metric", "allreduce,sendrecv", "--backend", "nccl", "--sizes", "64M",
                                               "-n", "10", "--check", "--retest", "0", "--output", "sweep.h5", "-q"],
                        env=env, timeout=300)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        run = self.load("sweep.h5")
        rows = run.tables["sweep/pairs"]
        pairs = GPUS * (GPUS - 1) // 2
        self.assertEqual(len(rows[rows.metric == "allreduce"]), pairs)
        self.assertTrue((rows["wrong"] == 0).all(), rows)
        self.assertTrue((rows["value"] > 10).all(), rows[["host_a", "host_b", "metric", "value"]])

    def test_a_hung_nccl_pair_in_a_sweep_is_a_verdict_and_the_sweep_completes(self):
        # FABRICBENCH_TEST_STALL_NCCL=1: rank 1 (node1) never launches its NCCL operations, as a stuck GPU or link
        # would leave its peers waiting. Its pair passes --timeout, the communicator is aborted, the pair is a
        # "hung" verdict, both its hosts rest, and every pair of the other hosts is still measured.
        env = {"FABRICBENCH_TEST_RANKS_PER_HOST": "1", "FABRICBENCH_TEST_STALL_NCCL": "1"}
        r = self.mpirun(GPUS, "fabric-sweep", ["--metric", "allreduce", "--backend", "nccl", "--sizes", "16M", "-n", "5",
                                               "--timeout", "5", "--retest", "0", "--output", "hung.h5", "-q"],
                        env=env, timeout=300)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        run = self.load("hung.h5")
        self.assertEqual(run.attrs["status"], "complete")
        verdicts = run.tables["sweep/verdicts"]
        hung = verdicts[verdicts.kind == "hung"]
        self.assertEqual(len(hung), 1, verdicts)
        resting = {hung.host_a.iloc[0], hung.host_b.iloc[0]}
        self.assertIn("node1", resting)
        rows = run.tables["sweep/pairs"]
        involved = rows[rows.host_a.isin(resting) | rows.host_b.isin(resting)]
        self.assertEqual(list(involved["hung"]), [1], "one hung pair, then both its hosts rest")
        others = rows[~rows.host_a.isin(resting) & ~rows.host_b.isin(resting)]
        self.assertEqual(len(others), (GPUS - 2) * (GPUS - 3) // 2, "every pair of the other hosts is measured")
        self.assertTrue((others["hung"] == 0).all() and (others["value"] > 10).all(), others)

    def test_p2p_with_device_buffers_when_mpi_is_cuda_aware(self):
        r = self.mpirun(2, "fabric-p2p", ["--memory", "device", "--sizes", "8,1M", "-n", "20", "--check", "--output",
                                          "p2p.h5", "-q"], timeout=120)
        if r.returncode == 2 and "not CUDA-aware" in r.stderr:
            self.skipTest("this MPI is not CUDA-aware")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("p2p.h5").tables["results/p2p"]
        self.assertTrue((rows["wrong"] == 0).all())
        self.assertTrue((rows["memory"] == "device").all())

    def test_p2p_with_pinned_buffers(self):
        r = self.mpirun(2, "fabric-p2p", ["--memory", "pinned", "--sizes", "8,1M", "-n", "20", "--check", "--output",
                                          "pinned.h5", "-q"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("pinned.h5")
        self.assertTrue((run.tables["results/p2p"]["wrong"] == 0).all())
        self.assertTrue((run.tables["env/ranks"]["gpu_name"].str.len() > 0).all())


if __name__ == "__main__":
    unittest.main()
