"""fabric-sweep's duplex covering on GPUs (issue 60): --plan adaptive with --budget and the one-way GPU metric p2p_bw
over NCCL covers the untested pairs in duplex rounds, every host's GPU sending to one host while it receives from
another (mpiGraph's steps over NCCL), as the MPI back end does. Hosts are network and UTS namespaces on a bridge
(tests/rigs/netns_cluster.sh, Open MPI across them by its rsh agent), each with its own host name, so NCCL treats each
as a node and moves every byte over its socket transport through the veths, however many GPUs there are (hosts share
them; RIGS.md "Several hosts on the GPU machine"). Unshaped: every pair covered, no verdict. One link shaped (HTB + u32
on both ends, 200 Mbit/s) where the plan covers it in a duplex round: exactly that link is named, and no other link
of that round read slow (each host's sends and receives on communicators of their own). The shift pattern over NCCL
measures every ordered pair. Needs root and the carried iproute2 (launch/carry-gpu-build.sh)."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

from fbtest import BIN, LaunchTest
from gpu.test_nccl import GPUS

ROOT = pathlib.Path(__file__).resolve().parents[2]
RIG_SCRIPT = ROOT / "tests" / "rigs" / "netns_cluster.sh"
IPROUTE = pathlib.Path(os.environ.get("FABRICBENCH_IPROUTE", ROOT / ".carry" / "iproute2"))
RULES = ROOT / "configs" / "rigs" / "netns-sweep.ini"
HOSTS = 6
SLOW = "200mbit"  # 25 MB/s on the wire; NCCL's sockets between two namespaces carry ~1 GB/s and more here
ARGS = ["--backend", "nccl", "--metric", "p2p_bw", "--sizes", "1M", "-W", "8", "-n", "4", "-w", "1", "--check",
        "--rules", str(RULES)]
# Each host's rank: its own GPU where there are enough (else shared), NCCL's host id its host name, sockets on eth0.
PER_HOST = ('#!/bin/sh\nh=$(hostname); i=${h##*-h}\n'
            'export CUDA_VISIBLE_DEVICES=$(( (i - 1) % ' + str(max(GPUS, 1)) + ' )) NCCL_HOSTID=$h\n'
            'exec "$@"\n')
# The GPU machine's environment sets OMPI_MCA_plm=isolated (launch on this machine only): the rig's hosts are launched
# by its rsh agent.
NCCL_ENV = {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_NVLS_ENABLE": "0", "OMPI_MCA_plm": "rsh"}


def iproute_on_path():
    """`ip` and `tc` on the PATH: the machine's, or the carried ones behind wrappers that give them their libraries
    alone (the rig's ranks must not inherit them)."""
    if subprocess.run(["sh", "-c", "command -v ip && command -v tc"], capture_output=True).returncode == 0:
        return True
    if not (IPROUTE / "bin" / "ip").exists():
        return False
    wrappers = pathlib.Path(tempfile.mkdtemp(prefix="fb-iproute-"))
    for name in ("ip", "tc"):
        w = wrappers / name
        w.write_text(f'#!/bin/sh\nLD_LIBRARY_PATH={IPROUTE / "lib"} exec {IPROUTE / "bin" / name} "$@"\n')
        w.chmod(0o755)
    os.environ["PATH"] = f"{wrappers}:{os.environ['PATH']}"
    return True


def rig(*args, check=True):
    return subprocess.run([str(RIG_SCRIPT)] + [str(a) for a in args], capture_output=True, text=True, check=check)


@unittest.skipUnless(os.geteuid() == 0 and GPUS >= 1 and iproute_on_path(), "skipped: needs root, a GPU and iproute2")
class DuplexOnGpus(LaunchTest):
    def setUp(self):
        super().setUp()
        from rigs import free_net
        self.rig = f"g{os.getpid() % 100000}"
        rig("down", self.rig, check=False)
        rig("up", self.rig, free_net(), HOSTS)
        self.hosts = [f"{self.rig}-h{i}" for i in range(1, HOSTS + 1)]
        self.wrapper = self.dir / "per-host.sh"
        self.wrapper.write_text(PER_HOST)
        self.wrapper.chmod(0o755)

    def tearDown(self):
        rig("down", self.rig, check=False)
        super().tearDown()

    def sweep(self, name, extra, env=None):
        cmd = ["timeout", "400", str(RIG_SCRIPT), "mpirun", self.rig, str(HOSTS), ",".join(self.hosts), "--",
               str(self.wrapper), str(BIN / "fabric-sweep"), "--output", str(self.dir / name)] + ARGS + extra
        if "--timeout" not in extra:
            cmd += ["--timeout", "60"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env(**NCCL_ENV, **(env or {})))
        return r, (self.load(name) if (self.dir / name).exists() else None)

    def verdicts(self, run):
        v = run.tables.get("sweep/verdicts")
        return [] if v is None else [(r.kind, r.host_a, r.host_b) for r in v.itertuples()]

    def covered_in_duplex(self, r, run):
        """The run judged every host, then covered in duplex rounds: each host sends once in each phase; returns the
        pairs table."""
        text = r.stdout + r.stderr
        self.assertEqual(run.attrs["status"], "complete", text)
        self.assertRegex(text, rf"{HOSTS} of {HOSTS} hosts judged; then untested pairs while the budget lasted, "
                               r"[1-9]\d* rounds of them duplex")
        pairs, rounds = run.tables["sweep/pairs"], run.tables["sweep/rounds"]
        self.assertEqual(len({tuple(sorted(p)) for p in zip(pairs.host_a, pairs.host_b)}), HOSTS * (HOSTS - 1) // 2,
                         "every pair")
        self.assertTrue((pairs.wrong == 0).all() and (pairs.hung == 0).all(), pairs.to_string())
        self.assertTrue((pairs.value > 0).all(), pairs.to_string())
        duplex = pairs[pairs["round"].isin(rounds[rounds.duplex == 1]["round"])]
        self.assertGreater(len(duplex), 0, rounds.to_string())
        for _, part in duplex.groupby("round"):
            for way, sender in (("a->b", "host_a"), ("b->a", "host_b")):
                senders = part[part.direction == way][sender]
                self.assertEqual(len(set(senders)), len(senders), part.to_string())
        return pairs

    def test_unshaped_hosts_pass_and_a_link_covered_in_a_duplex_round_is_named_alone(self):
        plan = ["--plan", "adaptive", "--budget", "150s", "--seed", "3"]
        r, run = self.sweep("healthy.h5", plan)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + str(run and self.verdicts(run)))
        pairs = self.covered_in_duplex(r, run)
        self.assertEqual(self.verdicts(run), [])
        # The same plan (its seed; no pair slow while judging) covers the same pairs in its duplex round: shape one.
        rounds = run.tables["sweep/rounds"]
        duplex = pairs[pairs["round"].isin(rounds[rounds.duplex == 1]["round"])]
        a, b = sorted([duplex.host_a.iloc[0], duplex.host_b.iloc[0]])
        rig("shape-link", self.rig, a, b, SLOW)
        r, run = self.sweep("link.h5", plan)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        pairs = self.covered_in_duplex(r, run)
        self.assertEqual(self.verdicts(run), [("link", a, b)], r.stdout)
        rounds = run.tables["sweep/rounds"]
        duplex = pairs[pairs["round"].isin(rounds[rounds.duplex == 1]["round"])]
        link = lambda rows: rows.host_a.isin([a, b]) & rows.host_b.isin([a, b])
        self.assertTrue(link(duplex).any(), "the shaped link was covered in a duplex round")
        good = pairs[~link(pairs)]
        self.assertLess(pairs[link(pairs)].value.max() * 5, good.value.median(),
                        pairs[["round", "host_a", "host_b", "direction", "value"]].to_string())
        # Beside it in its duplex round no link read slow: a host's sends and receives go on different communicators
        # (Round::lanes). On one, NCCL ended them together and the whole ring read slow.
        slow = duplex[~link(duplex) & (duplex.value * 5 < good.value.median())]
        self.assertTrue(slow.empty, duplex.to_string())

    def test_the_shift_pattern_over_nccl_measures_every_ordered_pair(self):
        r, run = self.sweep("shift.h5", ["--pattern", "shift", "--retest", "0"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(len(set(zip(pairs.host_a, pairs.host_b))), HOSTS * (HOSTS - 1), pairs.to_string())
        self.assertTrue((pairs.value > 0).all() and (pairs.wrong == 0).all(), pairs.to_string())

    def test_a_stalled_gpu_in_a_ring_step_is_a_hung_verdict_and_the_sweep_completes(self):
        # FABRICBENCH_TEST_STALL_NCCL: host 3's rank never launches its sends and receives, as a stuck GPU would leave
        # its ring neighbours waiting. With --timeout each step has a deadline: the ranks past it say so at the next
        # barrier, every rank of the ring aborts the round's communicators, the links into and out of host 3 are hung
        # records, and the plan rests the hung pair's hosts for the rest of it.
        stalled = self.hosts[2]
        r, run = self.sweep("hung.h5", ["--pattern", "shift", "--retest", "0", "--timeout", "5"],
                            env={"FABRICBENCH_TEST_STALL_NCCL": "2"})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(run.attrs["status"], "complete")
        pairs = run.tables["sweep/pairs"]
        hung = pairs[pairs.hung == 1]
        self.assertGreater(len(hung), 0, pairs.to_string())
        self.assertTrue(((hung.host_a == stalled) | (hung.host_b == stalled)).all(), hung.to_string())
        fine = pairs[(pairs.hung == 0) & (pairs.host_a != stalled) & (pairs.host_b != stalled)]
        self.assertTrue((fine.value > 0).all() and len(fine) > 0, pairs.to_string())
        verdicts = self.verdicts(run)
        self.assertTrue(any(kind == "hung" and stalled in (a, b) for kind, a, b in verdicts), verdicts)


if __name__ == "__main__":
    unittest.main()
