"""fabric-sweep --rails on an emulated two-level fabric with rails (tests/rigs/rails_fabric.sh): 8 hosts x 2 rails,
per rail leaf bridges under a spine bridge, each rank's MPI on its rail's subnet. Each test injects one fault and
checks that exactly it is named: a host's rail-1 NIC -> nic; a leaf's rail-1 uplink -> uplink; a whole host ->
node; one host pair on one rail -> link; a link, a NIC and a node at once under --plan adaptive --budget, its
covering in duplex rounds -> all three; nothing -> no verdict; the uplink without --topology -> the slow pairs as
links, no node or NIC blamed; a rank whose rail-1 traffic leaves by the rail-0 NIC -> path. Relative assertions
only: the machine is noisy. Needs root."""
import os
import pathlib
import subprocess
import time
import unittest

from rigs import free_net
from fbtest import BIN, LaunchTest

RIG_SCRIPT = pathlib.Path(__file__).resolve().parent / "rails_fabric.sh"
RULES = pathlib.Path(__file__).resolve().parents[2] / "configs" / "rigs" / "netns-sweep.ini"
ARGS = ["--sizes", "128K", "-W", "4", "-n", "4", "-w", "1", "--rules", str(RULES), "--retest", "1",
        "--metric", "p2p_bw", "--rails"]
SLOW = "100mbit"  # 11-12 MB/s measured (12.5 on the wire); unshaped pairs here read 25-640 MB/s (16 ranks, 2 cores)
# Two or three faults at once under the adaptive plan: after its two screening rounds each host-rail has two pairs,
# and the faults' pairs pull the median host-rail (the judge's reference) down, on a loaded run to ~50 MB/s and its
# line (0.2 x) to ~10, the 100 Mbit/s pairs at 11 above it. Run 10 times on 2026-11-30 (after a CI failure): 2 named
# nothing, 1 was called noise (the slowest healthy-looking pair at 24.7, 2.1x from the faults). At 50 Mbit/s (6.25
# on the wire) 12 of 12, then 6 of 6, named both. Every fault at that rate made the rails tests 46% longer (151 ->
# 221 s): only these two use it.
SLOWER = "50mbit"


def rig(*args, check=True):
    return subprocess.run([str(RIG_SCRIPT)] + [str(a) for a in args], capture_output=True, text=True, check=check)


@unittest.skipUnless(os.geteuid() == 0, "skipped: needs root")
class RailsFabric(LaunchTest):
    def setUp(self):
        super().setUp()
        self.rig = f"q{os.getpid() % 100000}"
        self.net = free_net()  # tests of this class run side by side (ctest -j)
        rig("down", self.rig, check=False)

    def tearDown(self):
        rig("down", self.rig, check=False)
        super().tearDown()

    def up(self, leaves="4,4"):
        rig("up", self.rig, self.net, 8, 2, leaves)
        (self.dir / "topology.conf").write_text(rig("topology", self.rig).stdout)
        (self.dir / "rails.map").write_text(rig("rail-map", self.rig).stdout)
        return [f"{self.rig}-h{i}" for i in range(1, 9)]

    def sweep(self, hosts, topology=True, extra=(), name="s.h5"):
        args = ARGS + ["--rail-map", str(self.dir / "rails.map")] + list(extra)
        if topology:
            args += ["--topology", str(self.dir / "topology.conf")]
        start = time.monotonic()
        cmd = ["timeout", "170", str(RIG_SCRIPT), "mpirun", self.rig, ",".join(hosts), "--",
               str(BIN / "fabric-sweep"), "--output", str(self.dir / name), "-q"] + args
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env())
        self.assertLess(time.monotonic() - start, 180, "each test under 3 minutes")
        run = self.load(name) if (self.dir / name).exists() else None
        self.assertIsNotNone(run, r.stdout + r.stderr)
        self.assertEqual(run.attrs["status"], "complete", r.stdout + r.stderr)
        return r, run

    def verdicts(self, run):
        v = run.tables.get("sweep/verdicts")
        return [] if v is None else [(x.kind, x.host_a, x.host_b, int(x.rail), x.nic, x["switch"]) for _, x in v.iterrows()]

    def test_nothing_shaped_no_verdict_and_every_rail_measured(self):
        hosts = self.up()
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 0, r.stderr + str(self.verdicts(run)))
        self.assertEqual(self.verdicts(run), [])
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(sorted(pairs.rail.unique()), [0, 1])
        self.assertEqual(len(pairs[(pairs.kind == "sweep") & (pairs.rail == 1)]), 28 * 2, "every pair, both directions")
        self.assertTrue(pairs[pairs.rail == 1].nic_a.str.startswith("eth1").all(), pairs.nic_a.unique())
        self.assertTrue({"sweep/matrices/p2p_bw_rail0", "sweep/matrices/p2p_bw_rail1"} <= set(run.matrices))
        self.assertEqual(run.attrs["leaf_pair_coverage"], 1.0)
        # The data path: each rail's NIC carried at least what its tests moved.
        t = run.tables["sweep/nic_traffic"]
        self.assertEqual(len(t), 7 * 8 * 2, "every round, host and rail")
        self.assertTrue((t.bytes >= t.payload).all(), t[t.bytes < t.payload])

    def test_a_hosts_rail1_nic_is_named(self):
        hosts = self.up()
        rig("shape-nic", self.rig, hosts[2], 1, SLOW)
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 1, r.stderr)
        v = self.verdicts(run)
        self.assertEqual([x[:4] for x in v], [("nic", hosts[2], "", 1)], v)
        self.assertTrue(v[0][4].startswith("eth1"), v)

    def test_a_whole_host_is_a_node(self):
        hosts = self.up()
        rig("shape-host", self.rig, hosts[5], SLOW)
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual([x[:4] for x in self.verdicts(run)], [("node", hosts[5], "", -1)])

    def test_the_adaptive_plan_names_a_nic_and_a_node_in_fewer_rounds_than_all_pairs(self):
        # Two faults at once: host 3's rail-1 NIC and all of host 6. All-pairs takes 7 rounds (and re-tests); the
        # adaptive plan picks its rounds from the results and must name exactly these two in fewer.
        hosts = self.up()
        rig("shape-nic", self.rig, hosts[2], 1, SLOWER)
        rig("shape-host", self.rig, hosts[5], SLOWER)
        r, run = self.sweep(hosts, extra=["--plan", "adaptive"])
        self.assertEqual(r.returncode, 1, r.stderr + (str((self.verdicts(run), run.tables["sweep/pairs"][
            ["round", "host_a", "host_b", "rail", "value"]].to_string())) if run else ""))
        self.assertEqual(sorted(x[:4] for x in self.verdicts(run)), [("nic", hosts[2], "", 1), ("node", hosts[5], "", -1)],
                         self.verdicts(run))
        rounds = run.tables["sweep/rounds"]
        self.assertLess(len(rounds), 7, rounds[["round", "kind", "pairs"]])
        self.assertEqual(set(rounds.kind), {"sweep"}, "the plan re-tests by itself")

    def test_the_adaptive_plan_with_a_budget_covers_in_duplex_rounds_and_names_a_link_a_nic_and_a_node(self):
        # Three faults at once: the pair h1-h7 on rail 1, host 3's rail-1 NIC, all of host 6. With --budget the plan
        # goes on, once every host is judged, with the pairs never tested, in duplex rounds (each host sending to one
        # host while receiving from another, then the reverse): every pair on every rail, the link named too.
        hosts = self.up()
        rig("shape-link", self.rig, hosts[0], hosts[6], 1, SLOWER)
        rig("shape-nic", self.rig, hosts[2], 1, SLOWER)
        rig("shape-host", self.rig, hosts[5], SLOWER)
        # Covering begins once every host is judged; on these two cores the judging rounds sometimes test all 28 pairs
        # first (a clean-clone run of 2026-11-30: 7 rounds of 4 pairs, then re-tests only; the verdicts right), and
        # then there is nothing left to cover: up to 3 runs, each held to the verdicts.
        for attempt in range(3):
            r, run = self.sweep(hosts, extra=["--plan", "adaptive", "--budget", "2m"], name=f"duplex{attempt}.h5")
            pairs = run.tables["sweep/pairs"]
            detail = r.stderr + str(self.verdicts(run)) + pairs[["round", "host_a", "host_b", "rail", "direction",
                                                                  "value"]].to_string()
            self.assertEqual(r.returncode, 1, detail)
            self.assertEqual(sorted(x[:4] for x in self.verdicts(run)),
                             [("link", hosts[0], hosts[6], 1), ("nic", hosts[2], "", 1), ("node", hosts[5], "", -1)],
                             detail)
            rounds = run.tables["sweep/rounds"]
            if rounds.duplex.sum() > 0:
                break
        # A duplex round holds more pairs than 8 hosts can make disjoint (4); only duplex rounds do.
        self.assertGreater(rounds.pairs.max(), 4, rounds[["round", "kind", "pairs", "duplex"]])
        self.assertTrue((rounds[rounds.pairs > 4].duplex == 1).all(), rounds[["round", "pairs", "duplex"]])
        measured = {(min(a, b), max(a, b), int(rail)) for a, b, rail in zip(pairs.host_a, pairs.host_b, pairs.rail)}
        self.assertEqual(len(measured), 28 * 2, "every pair of the 8 hosts on both rails")
        for direction in ("a->b", "b->a"):
            self.assertIn(direction, set(pairs.direction))

    def test_one_pair_on_one_rail_is_a_link(self):
        hosts = self.up()
        rig("shape-link", self.rig, hosts[0], hosts[6], 1, SLOW)
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual([x[:4] for x in self.verdicts(run)], [("link", hosts[0], hosts[6], 1)])

    def test_a_leafs_rail1_uplink_is_named(self):
        # Three leaves (3, 3 and 2 hosts): with two, every pair crossing one uplink crosses the other too and the
        # judge names both (see test_two_leaves_name_both_uplinks).
        hosts = self.up("3,3,2")
        rig("shape-uplink", self.rig, 1, 2, SLOW)
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual([(x[0], x[3], x[5]) for x in self.verdicts(run)], [("uplink", 1, "rail1-leaf2")])
        s = run.tables["sweep/switches"].set_index(["switch"])
        self.assertGreaterEqual(s.loc["rail1-leaf2", "crossing_suspect"], 0.75 * s.loc["rail1-leaf2", "crossing_pairs"])
        self.assertEqual(s.loc["rail1-leaf2", "inside_suspect"], 0)

    def test_two_leaves_name_both_uplinks(self):
        hosts = self.up("4,4")
        rig("shape-uplink", self.rig, 1, 2, SLOW)
        r, run = self.sweep(hosts)
        self.assertEqual(r.returncode, 1, r.stderr)
        v = self.verdicts(run)
        self.assertEqual([(x[0], x[3], x[5]) for x in v], [("uplink", 1, "rail1-leaf1,rail1-leaf2")])

    def test_the_uplink_without_a_topology_blames_no_node_or_nic(self):
        hosts = self.up("4,4")
        rig("shape-uplink", self.rig, 1, 2, SLOW)
        r, run = self.sweep(hosts, topology=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        v = self.verdicts(run)
        self.assertEqual({x[0] for x in v}, {"link"}, v)
        crossing = {(a, b) for a in hosts[:4] for b in hosts[4:]}
        self.assertEqual({(x[1], x[2]) for x in v}, crossing, "exactly the 16 pairs crossing the leaves, on rail 1")
        self.assertEqual({x[3] for x in v}, {1})

    def test_rail1_traffic_leaving_by_the_rail0_nic_is_named(self):
        hosts = self.up()
        rig("misbind", self.rig, hosts[3])
        r, run = self.sweep(hosts)
        v = self.verdicts(run)
        paths = [x for x in v if x[0] == "path"]
        self.assertEqual([(x[1], x[3]) for x in paths], [(hosts[3], 1)], v)
        reason = run.tables["sweep/verdicts"].query("kind == 'path'").reason.iloc[0]
        self.assertIn("left by eth0", reason)
        nics = run.tables["sweep/nics"]
        given = nics[(nics.host == hosts[3]) & (nics.rail == 1)].mpi_nic.iloc[0]
        self.assertTrue(given.startswith("eth0"), "the nic column shows what the rank was given")


if __name__ == "__main__":
    unittest.main()
