"""fabric-watchdog --slow on a real PyTorch job (issue 45): 2 GPUs, another process running matmuls on GPU 1 for
15 s: rank 1 named within 10 s of the neighbour's real start, nothing else named, and the plugin's report read back.
The full proof (20 injections, 5 healthy minutes, the cost a step) is tests/gpu/slow_rank_proof.py full / overhead."""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

from fbtest import BIN, LaunchTest
from gpu.slow_rank_proof import NEIGHBOUR

HERE = pathlib.Path(__file__).resolve().parent


def gpus():
    try:
        return len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines())
    except FileNotFoundError:
        return 0


def torch_here():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


@unittest.skipUnless(gpus() >= 2 and shutil.which("torchrun") and torch_here(), "skipped: needs 2 GPUs and PyTorch")
class SlowRankOnGpus(unittest.TestCase):
    def test_a_neighbour_on_gpu_1_names_rank_1_alone(self):
        out = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-slow-"))
        try:
            r = subprocess.run([sys.executable, str(HERE / "slow_rank_proof.py"), "smoke", str(out)], capture_output=True,
                               text=True, timeout=300,
                               env={**__import__("os").environ, "FABRICBENCH_BIN": str(BIN),
                                    "SLOW_PROOF_WORK": str(out / "work")})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            smoke = json.loads((out / "smoke.json").read_text())["smoke"]
            [inj] = smoke["injections"]
            self.assertTrue(inj["found"], smoke)
            self.assertLessEqual(inj["after_s"], 10, smoke)
            self.assertEqual(smoke["false"], [], smoke)
            self.assertEqual({n[0] for n in smoke["namings"]}, {1}, smoke)
            self.assertTrue((out / "work" / "smoke" / "slow" / "slow-report.h5").exists())
        finally:
            shutil.rmtree(out, ignore_errors=True)


@unittest.skipUnless(gpus() >= 4 and shutil.which("torchrun") and torch_here(), "skipped: needs 4 GPUs and PyTorch")
class SlowNetworkOnGpus(unittest.TestCase):
    def test_a_starved_network_rank_names_its_link_alone(self):
        """NCCL over sockets on the loopback (its proxy moves the data, as between nodes): 40 s healthy name nobody;
        rank 2's network threads starved from 20 s to 40 s of a 60 s job: a link from or to rank 2 named within 10 s,
        nothing else."""
        out = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-slownet-"))
        try:
            r = subprocess.run([sys.executable, str(HERE / "slow_rank_proof.py"), "network", str(out)],
                               capture_output=True, text=True, timeout=400,
                               env={**__import__("os").environ, "FABRICBENCH_BIN": str(BIN),
                                    "SLOW_PROOF_WORK": str(out / "work")})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            summary = json.loads((out / "network.json").read_text())
            self.assertEqual(summary["net-healthy"]["namings"], [], summary["net-healthy"])
            starved = summary["net-starved"]
            [inj] = starved["injections"]
            self.assertTrue(inj["found"], starved)
            self.assertLessEqual(inj["after_s"], 10, starved)
            self.assertEqual(starved["false"], [], starved)
            self.assertTrue(all(2 in (n[0], n[3]) for n in starved["namings"]), starved)
            self.assertTrue(any("slow link: " in l or "slow network: " in l for l in starved["lines"]), starved)
        finally:
            shutil.rmtree(out, ignore_errors=True)


@unittest.skipUnless(gpus() >= 2 and torch_here(), "skipped: needs 2 GPUs and PyTorch")
class FabricCollPerRank(LaunchTest):
    """fabric-coll --per-rank reads every rank's kernel times of its own run. Healthy, nobody is named. With another
    process's matmuls on GPU 1 the collectives themselves run slow on both GPUs (seen on 2 x H100: 121.6 GB/s, 45% of
    expected, both ranks' kernels 0.25 ms on median, the waiting split 60/40, 7% of the run: not named): the
    expected-bandwidth warning says so; the per-rank table is there for both ranks."""

    def coll(self, name):
        return self.mpirun(2, "fabric-coll", ["--backend", "nccl", "--per-rank", "-b", "64M", "-e", "64M", "-n", "300",
                                              "-w", "20", "--output", name], timeout=300)

    def test_healthy_then_a_neighbour_on_gpu_1(self):
        r = self.coll("healthy.h5")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("per rank: no rank made the others wait", r.stdout + r.stderr)
        rows = self.load("healthy.h5").tables["coll/per_rank"]
        self.assertEqual(list(rows["rank"]), [0, 1])
        self.assertTrue((rows["collectives"] >= 2 * 300).all(), rows)  # out of place and in place, warm-up too
        self.assertTrue((rows["kernel_median_ms"] > 0).all(), rows)
        neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, "8192", "60", str(self.dir / "neighbour")],
                                     env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": "1"})
        try:
            import time
            time.sleep(12)  # its CUDA start-up
            r = self.coll("slowed.h5")
        finally:
            neighbour.kill()
            neighbour.wait()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr,
                         r"warning: all_reduce out-of-place busbw at 67108864 B \(NCCL path: P2P/[^)]*\): .* of the")
        rows = self.load("slowed.h5").tables["coll/per_rank"]
        self.assertEqual(list(rows["rank"]), [0, 1])


if __name__ == "__main__":
    unittest.main()
