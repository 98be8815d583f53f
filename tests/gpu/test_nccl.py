"""fabric-coll and fabric-p2p on GPUs (label gpu; needs NCCL). On any number of GPUs, one rank per GPU (one GPU: one
rank, a valid NCCL communicator): every operation validated on the device, in and out of place, every timing mode,
every type and reduction, a count above INT_MAX, corruption caught, a stalled launch ended by --timeout; fabric-p2p
with pinned buffers on two ranks (sharing the GPU where there is one), device buffers only where MPI is CUDA-aware.
On two GPUs or more: a hung rank named, and fabric-sweep's NCCL pair tests, their communicators split from one parent
against a fresh one per pair (--nccl-comms). fabric-sweep --rails: the rail-aligned split with the MPI back end on any
GPU count, with NCCL where each of two fake hosts has a GPU of its own."""
import os
import subprocess
import time
import unittest

from fbtest import BIN, LaunchTest, collectives, mpirun_command

def _gpu_count():
    if os.environ.get("FABRICBENCH_GPUS"):
        return int(os.environ["FABRICBENCH_GPUS"])
    try:
        return len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines())
    except OSError:
        return 0


def _mpi_is_cuda_aware():
    """What Open MPI says of itself (ompi_info), independent of the tools' own detection."""
    try:
        out = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "mpi_built_with_cuda_support:value:true" in out


GPUS = _gpu_count()
# Factors of nccl-tests' bus bandwidth on one rank: nothing crosses a link for these, their busbw is 0.
ZERO_BUSBW_ON_ONE_RANK = {"all_reduce", "all_gather", "reduce_scatter", "alltoall"}


class CollTest(LaunchTest):
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


@unittest.skipIf(GPUS < 1, "needs a GPU")
class NcclOnEveryGpu(CollTest):
    """One rank per GPU, however many there are (one is enough)."""

    def test_every_operation_in_and_out_of_place_short_sweep(self):
        r, run = self.coll(["--op", "all", "-b", "8", "-e", "64M", "-f", "8", "-n", "10", "-w", "2"], "ops.h5")
        rows = self.assert_clean(r, run)
        self.assertEqual(set(rows["op"]), set(collectives()))
        self.assertTrue((rows["ranks"] == GPUS).all())
        self.assertEqual(sorted(rows["in_place"].unique()), [0, 1])
        p2p_based = rows[rows.op.isin(["alltoall", "sendrecv"])]
        self.assertTrue((p2p_based["in_place"] == 0).all(), "NCCL point-to-point is not defined in place")
        big = rows[(rows.bytes == 16 << 20) & (rows.in_place == 0)]  # the largest size of 8 x 8^k up to 64M
        self.assertEqual(len(big), len(collectives()))
        self.assertTrue((big["algbw_gbps"] > 1).all(), big[["op", "algbw_gbps"]])
        if GPUS > 1:
            self.assertTrue((big["busbw_gbps"] > 1).all(), big[["op", "busbw_gbps"]])
        else:  # one rank: nccl-tests' factors, and nothing to hold them against
            zero = big.op.isin(ZERO_BUSBW_ON_ONE_RANK)
            self.assertTrue((big[zero]["busbw_gbps"] == 0).all(), big[["op", "busbw_gbps"]])
            self.assertTrue((big[~zero]["busbw_gbps"] == big[~zero]["algbw_gbps"]).all(), big[["op", "busbw_gbps"]])

    def test_one_rank_is_held_against_no_link(self):
        # One rank moves nothing over PCIe or NVLink: a 0 GB/s all_reduce is no "% of expected" warning.
        r, run = self.coll(["--op", "all_reduce,broadcast", "--sizes", "64M", "-n", "5", "--in-place", "0"], "one.h5",
                           np=1)
        rows = self.assert_clean(r, run)
        self.assertNotIn("% of the", r.stderr)
        self.assertTrue(rows["pct_expected"].isna().all(), rows[["op", "busbw_gbps", "pct_expected"]])

    def test_counts_above_int_max_go_whole_to_nccl(self):
        # NCCL counts are size_t: 2 GiB + 256 int8 elements per call, where an int would have wrapped.
        size = 2 ** 31 + 256
        r, run = self.coll(["--op", "all_reduce,broadcast", "--dtype", "int8", "--sizes", str(size), "-n", "2", "-w", "1",
                            "--in-place", "0"], "big.h5", np=min(GPUS, 2))
        rows = self.assert_clean(r, run)
        self.assertEqual(list(rows["count"]), [size, size])
        self.assertTrue((rows["algbw_gbps"] > 0).all(), rows[["op", "algbw_gbps"]])
        if len(rows) and rows["ranks"].iloc[0] > 1:
            self.assertTrue((rows["busbw_gbps"] < 2000).all(), rows[["op", "busbw_gbps"]])  # NV18 carries ~480 GB/s
        else:  # one rank: a copy within the GPU's memory (H200: 2.1 TB/s), which reads and writes every byte
            self.assertTrue((rows["algbw_gbps"] < 4800 / 2).all(), rows[["op", "algbw_gbps"]])  # HBM3e: 4.8 TB/s

    def test_every_type_and_reduction(self):
        r, run = self.coll(["--op", "all_reduce,reduce_scatter,reduce", "-d", "all", "-o", "all", "--sizes", "1K,1M",
                            "-n", "3", "-w", "1"], "types.h5")
        rows = self.assert_clean(r, run)
        self.assertEqual(len(set(rows["dtype"])), 10)
        self.assertEqual(len(set(rows[rows.op == "all_reduce"]["redop"])), 5)
        self.assertIn("avg", set(rows[rows.dtype == "bfloat16"]["redop"]))

    def test_graph_events_and_blocking_modes(self):
        for mode, args in (("graph", ["-G", "2"]), ("events", ["--per-iter"]), ("blocking", ["-z", "1"])):
            with self.subTest(mode=mode):
                r, run = self.coll(["--op", "all", "--sizes", "1M,16M", "-n", "8", "-w", "2"] + args, mode + ".h5")
                rows = self.assert_clean(r, run)
                self.assertTrue((rows["timing"] == mode).all())
                self.assertTrue((rows["time_us"] > 0).all())
                if mode != "graph":
                    samples = run.tables["samples/coll"]
                    self.assertEqual(len(samples), len(rows) * GPUS * 8, "one sample per iteration and rank")
                    self.assertTrue(rows["iter_us_median"].notna().all())

    def test_device_check_catches_a_corrupted_byte(self):
        r, run = self.coll(["--op", "all_reduce,all_gather", "--sizes", "1M", "-n", "2"], "bad.h5",
                           env={"FABRICBENCH_TEST_FLIP_BYTE": "1"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertTrue((run.tables["results/coll"]["wrong"] > 0).all())

    def test_a_stalled_launch_ends_at_the_timeout_and_leaves_no_nccl_log(self):
        # FABRICBENCH_TEST_STALL_NCCL=0: rank 0's NCCL operations never start, as on a stuck GPU. With no peer to
        # wait for it (one GPU), only --timeout can end the run: exit 3, the step named, no row. The folder where NCCL
        # writes the log of the path (runtime::TempDir, in TMPDIR) is seen while the run hangs and gone after its
        # watchdog's _exit (before 2026-11-28 it stayed).
        tmp = self.dir / "tmp"
        tmp.mkdir()
        args = ["--backend", "nccl", "--output", "stall.h5", "-q", "--sizes", "1K", "-n", "5", "--in-place", "0",
                "--timeout", "3"]
        env = {"FABRICBENCH_TEST_STALL_NCCL": "0", "TMPDIR": str(tmp)}
        proc = subprocess.Popen(mpirun_command(GPUS, "fabric-coll", args, env_names=env.keys()), cwd=self.dir,
                                env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen, deadline = set(), time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            seen |= {p.name for p in tmp.glob("fabricbench-coll-*")}
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()  # mpirun: its ranks go with it
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 3, out + err)
        run = self.load("stall.h5")
        self.assertIn("timeout: all_reduce out-of-place float sum at 1024 B did not finish",
                      run.attrs["status"])
        self.assertEqual(len(run.tables["results/coll"]), 0)
        self.assertEqual(len(seen), GPUS, "a log folder per rank made while it ran")
        self.assertEqual(sorted(p.name for p in tmp.iterdir()), [], "left in TMPDIR")

    def test_mpi_back_end_with_device_buffers_only_where_mpi_is_cuda_aware(self):
        r = self.mpirun(1, "fabric-coll", ["--backend", "mpi", "--memory", "device", "--sizes", "8,1M", "-n", "5",
                                           "--output", "mpi.h5", "-q"], timeout=120)
        if _mpi_is_cuda_aware():
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue((self.load("mpi.h5").tables["results/coll"]["wrong"] == 0).all())
        else:
            self.assert_refused(r, "fabric-coll", "--memory device: this MPI library is not CUDA-aware")

    def test_p2p_with_device_buffers_only_where_mpi_is_cuda_aware(self):
        r = self.mpirun(2, "fabric-p2p", ["--memory", "device", "--sizes", "8,1M", "-n", "20", "--check", "--output",
                                          "p2p.h5", "-q"], timeout=120)
        if not _mpi_is_cuda_aware():
            self.assert_refused(r, "fabric-p2p", "--memory device: this MPI library is not CUDA-aware")
            return
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.load("p2p.h5").tables["results/p2p"]
        self.assertTrue((rows["wrong"] == 0).all())
        self.assertTrue((rows["memory"] == "device").all())

    def test_p2p_with_pinned_buffers(self):
        # Two ranks, on two GPUs or sharing the one there is.
        r = self.mpirun(2, "fabric-p2p", ["--memory", "pinned", "--sizes", "8,1M", "-n", "20", "--check", "--output",
                                          "pinned.h5", "-q"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("pinned.h5")
        rows = run.tables["results/p2p"]
        self.assertTrue((rows["wrong"] == 0).all())
        self.assertTrue((rows["memory"] == "pinned").all())
        self.assertTrue((run.tables["env/ranks"]["gpu_name"].str.len() > 0).all())


@unittest.skipIf(GPUS < 2, "needs at least 2 GPUs")
class NcclOnGpuPairs(CollTest):
    """A peer that waits, and pairs of GPUs: what one GPU cannot show."""

    def test_a_hung_rank_aborts_nccl_and_names_it(self):
        r, run = self.coll(["--sizes", "1K,2K,4K", "-n", "5", "--in-place", "0", "--timeout", "3"], "hang.h5",
                           env={"FABRICBENCH_TEST_STALL": "1:1"})
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("timeout: all_reduce out-of-place float sum at 2048 B", run.attrs["status"])
        self.assertIn("not started: 1", run.attrs["status"])
        self.assertEqual(list(run.tables["results/coll"]["bytes"]), [1024])

    def test_sweep_allreduce_over_gpu_pairs_with_nccl(self):
        # One GPU per (fake) host: each round's pairs run NCCL all_reduce on their own communicators at once.
        r = self.mpirun(GPUS, "fabric-sweep", ["--emulate-hosts", "1", "--metric", "allreduce,sendrecv", "--backend",
                                               "nccl", "--sizes", "64M", "-n", "10", "--check", "--retest", "0",
                                               "--output", "sweep.h5", "-q"], timeout=300)
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
        env = {"FABRICBENCH_TEST_STALL_NCCL": "1"}
        r = self.mpirun(GPUS, "fabric-sweep", ["--emulate-hosts", "1", "--metric", "allreduce", "--backend", "nccl",
                                               "--sizes", "16M", "-n", "5", "--timeout", "5", "--retest", "0",
                                               "--output", "hung.h5", "-q"], env=env, timeout=300)
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


@unittest.skipIf(GPUS < 2, "skipped: needs 2 GPUs (one per fake host: NCCL refuses two ranks of one communicator "
                           "on one GPU, and the parent communicator holds every rank)")
class SweepCommunicatorCost(CollTest):
    """fabric-sweep's NCCL pair communicators split each round from one parent over the job (--nccl-comms split)
    against a fresh ncclCommInitRank per pair (init), on 2 fake hosts with a GPU each; 5 passes (--repeat), so that
    the one pair has 5 rows each way and a median."""
    PASSES = 5

    def sweep(self, comms, name, extra=()):
        r = self.mpirun(2, "fabric-sweep", ["--emulate-hosts", "1", "--metric", "allreduce", "--backend", "nccl",
                                            "--nccl-comms", comms, "--sizes", "16M", "-n", "5", "--check", "--retest",
                                            "0", "--repeat", str(self.PASSES), "--output", name] + list(extra),
                        timeout=300)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        run = self.load(name)
        self.assertEqual(run.attrs["status"], "complete")
        rows = run.tables["sweep/pairs"]
        self.assertEqual(len(rows), self.PASSES, rows)
        self.assertTrue((rows["wrong"] == 0).all() and (rows["value"] > 10).all(), rows)
        self.assertTrue((rows["setup_s"] > 0).all() and (rows["measure_s"] > 0).all(), rows)
        return r.stdout + r.stderr, run, rows

    def test_split_pairs_cost_less_setup_than_a_fresh_communicator_each(self):
        # Without --timeout the children share the parent's resources (splitShare 1).
        said_init, run_init, init = self.sweep("init", "init.h5")
        said_split, run_split, split = self.sweep("split", "split.h5")
        self.assertIn("ncclCommInitRank per pair, metric and round (--nccl-comms init)", said_init)
        self.assertNotIn("nccl_parent_s", run_init.attrs)
        self.assertGreater(run_split.attrs["nccl_parent_s"], 0, "the parent's creation is recorded once")
        self.assertIn("NCCL parent communicator over all 2 ranks: created once", said_split)
        self.assertIn("splitShare 1", said_split)
        print(f"\nsetup_s per pair, median of {self.PASSES}: init {init.setup_s.median():.4f} s, split "
              f"{split.setup_s.median():.4f} s; parent {run_split.attrs['nccl_parent_s']:.4f} s once")
        self.assertLess(split.setup_s.median(), init.setup_s.median(), (init.setup_s, split.setup_s))

    def test_abortable_pairs_split_without_sharing_and_still_measure(self):
        # With --timeout the children share nothing with the parent: aborting a hung one must not abort the others.
        _, run_init, init = self.sweep("init", "init.h5", ["--timeout", "60"])
        said, run, split = self.sweep("split", "split.h5", ["--timeout", "60"])
        self.assertIn("splitShare 0", said)
        self.assertGreater(run.attrs["nccl_parent_s"], 0)
        print(f"\nwith --timeout, setup_s per pair, median of {self.PASSES}: init {init.setup_s.median():.4f} s, "
              f"split {split.setup_s.median():.4f} s; parent {run.attrs['nccl_parent_s']:.4f} s once")


@unittest.skipIf(GPUS < 1, "needs a GPU")
class RailAlignedSplit(CollTest):
    """fabric-sweep --rails on two fake hosts of two ranks each (local rank i is rail i): each pair's ranks split into
    two-rank rail communicators, as nccl-tests' NCCL_TESTS_SPLIT_MASK does."""
    RAILS = 2
    # Fake host h's ranks see GPU h only: each rail's communicator then has one rank on each GPU (NCCL refuses two
    # ranks of one communicator on one GPU), and the two rails' communicators share the GPUs as two jobs would.
    GPU_PER_HOST = ('#!/bin/sh\nh=$((OMPI_COMM_WORLD_RANK / {rails}))\n'
                    'if [ -n "$CUDA_VISIBLE_DEVICES" ]; then h=$(echo "$CUDA_VISIBLE_DEVICES" | cut -d, -f$((h + 1))); fi\n'
                    'CUDA_VISIBLE_DEVICES=$h exec "$@"\n')

    def sweep(self, backend, name, metrics=("allreduce", "sendrecv")):
        wrapper = self.dir / "gpu-per-host.sh"
        wrapper.write_text(self.GPU_PER_HOST.format(rails=self.RAILS))
        wrapper.chmod(0o755)
        # The wrapper execs fabric-sweep: --emulate-hosts is fabric-sweep's own option, after its path.
        r = self.mpirun(2 * self.RAILS, str(wrapper),
                        [BIN / "fabric-sweep", "--emulate-hosts", self.RAILS, "--rails", "--metric", ",".join(metrics),
                         "--backend", backend, "--sizes", "16M", "-n", "5", "--check", "--retest", "0", "--output",
                         name, "-q"], timeout=300)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        run = self.load(name)
        self.assertEqual(run.attrs["status"], "complete")
        self.assertEqual(run.attrs["rails"], self.RAILS)
        rows = run.tables["sweep/pairs"]
        for metric in metrics:
            mine = rows[rows.metric == metric]
            self.assertEqual(sorted(set(mine.rail)), list(range(self.RAILS)), metric)
        self.assertTrue((rows["wrong"] == 0).all(), rows)
        # A rail's collective is over its two ranks: sendrecv moves its whole buffer each way.
        self.assertTrue((rows[rows.metric == "sendrecv"].bytes == 16 << 20).all())
        return rows

    def test_the_split_plan_with_the_mpi_back_end(self):
        # Host buffers: what one GPU allows; the plan (which ranks form each rail's communicator) is NCCL's.
        rows = self.sweep("mpi", "split-mpi.h5")
        self.assertTrue((rows["value"] > 0).all(), rows)

    @unittest.skipIf(GPUS < 2, "skipped: the NCCL split needs 2 GPUs (one per fake host: NCCL refuses two ranks of "
                               "one communicator on one GPU)")
    def test_rail_aligned_nccl_split(self):
        rows = self.sweep("nccl", "split-nccl.h5")
        # Each rail's two GPUs talk over NVLink here: many GB/s, far above any host path.
        self.assertTrue((rows["value"] > 10).all(), rows[["host_a", "host_b", "rail", "metric", "value"]])
        self.assertTrue((rows["setup_s"] > 0).all(), "each rail's NCCL communicator is set up and timed")

    @unittest.skipIf(GPUS < 2, "skipped: needs 2 GPUs (one per fake host)")
    def test_rail_aligned_gpu_p2p_over_nccl(self):
        # With --backend nccl the p2p metrics run on each rail's NCCL communicator, GPU to GPU, both directions.
        rows = self.sweep("nccl", "p2p-nccl.h5", ("p2p_bw", "p2p_latency"))
        bw = rows[rows.metric == "p2p_bw"]
        self.assertEqual(sorted(bw.direction.unique()), ["a->b", "b->a"])
        self.assertTrue((bw["value"] > 5000).all(), bw[["rail", "direction", "value"]])  # MB/s over NVLink

if __name__ == "__main__":
    unittest.main()
