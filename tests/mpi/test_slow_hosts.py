"""The slow-rank judge across hosts, on the plugin's own records of real jobs on the GPU machine's multi-host rig
(tests/gpu/hosts.py, tests/gpu/hosts_proof.py, 2026-11-29, one H200 shared by 4 "hosts", NCCL 2.28.9 over its socket
transport through veths): faults from outside the job, judged again with --replay and held to the proof's rules
(tests/gpu/hosts.py: `right`, `judged`). Each fixture is a tar.xz of the run's folder: the records (slow/), t0 (the
loop's start), plan.json (the faults as they ran), the live judge's lines (log) and each rank's steps.

  inject-ddp           DDP, the kernel's TCP send buffers: 10 faults (NIC both ways, its sends, a stalled and a
                       starved host), 20 s each
  inject-fsdp-capped   FSDP, send buffers capped at 512 KB (a send completes when the wire took it, as over RDMA): 8
  inject-fsdp          FSDP, the kernel's send buffers: what the sends cannot show (a NIC slowed: only a slow
                       collective, placed nowhere)
  healthy-ddp, healthy-fsdp-capped   300 s each from the job's start, nothing injected"""
import json
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "gpu"))
import hosts  # noqa: E402  (the proof's rules: stdlib only)
from fbtest import BIN, LaunchTest  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "slow" / "hosts"


class AcrossHosts(LaunchTest):
    def replay(self, name):
        """The fixture judged again: (what was named, per fault and the wrong namings, the judge's stderr)."""
        run = self.dir / name
        with tarfile.open(FIXTURES / f"{name}.tar.xz") as t:
            t.extractall(run)  # the project's own fixture
        (run / "slow").chmod(0o700)
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(run / "slow"), "--replay", "--slow-report",
                            str(self.dir / f"{name}.h5")], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = min(struct.unpack_from("<q", f.read_bytes(), 256 + 24)[0] for f in (run / "slow").glob("*.fbslow"))
        t0 = float((run / "t0").read_text()) - first / 1e9  # the loop's start, in the replay's seconds
        lines = [(float(m.group(1)) - t0, "fabric-watchdog: " + m.group(2))
                 for m in re.finditer(r"at \+(\d+) s: (.*)", r.stderr)]
        named = hosts.namings(lines, lines[-1][0] if lines else 0)
        return named, hosts.judged(json.loads((run / "plan.json").read_text()), named), r.stderr

    def test_ddp_each_fault_named_as_its_host_and_nothing_else(self):
        named, j, text = self.replay("inject-ddp")
        self.assertEqual(j["false"], [], text)
        found = [f for f in j["faults"] if f["found"]]
        self.assertGreaterEqual(len(found), 9, j["faults"])  # the last stall: at 11 s
        for f in j["faults"]:  # every fault named right, the slowest 11.4 s in
            self.assertIsNotNone(f["after_s"], f)
            self.assertLessEqual(f["after_s"], 12, f)
        # A stalled host by the sends into it and its own (not the neighbour sending to it).
        self.assertRegex(text, r"slow network: the network of rank 1 .* the sends into it wait, and its own sends "
                               r"beside them \(0->1 \d+\.\dx, 1->2 \d\.\dx .*its host stopped or starved of CPU")

    def test_fsdp_over_capped_send_buffers_every_fault_within_10_s(self):
        named, j, text = self.replay("inject-fsdp-capped")
        self.assertEqual(j["false"], [], text)
        self.assertEqual([f["found"] for f in j["faults"]], [True] * 8, j["faults"])
        self.assertLessEqual(max(f["after_s"] for f in j["faults"]), 10)

    def test_fsdp_over_the_kernels_buffers_a_slowed_nic_is_a_slow_collective_and_nothing_wrong(self):
        """With 4 MB send buffers, FSDP's 4.6 MB operations leave the sender at once: a NIC slowed both ways slows
        every receive alike and hardly a send; the judge says the collective is slow (placed nowhere), and names
        nobody wrongly (once, 13.6 s in, the host's network: right, but late)."""
        named, j, text = self.replay("inject-fsdp")
        self.assertEqual(j["false"], [], text)
        stalls = [f for f in j["faults"] if f["kind"] == "stall"]
        self.assertGreaterEqual(sum(f["found"] for f in stalls), 2, stalls)
        for f in j["faults"]:
            if f["kind"] != "nic-both":
                continue
            self.assertTrue(any(k == "collective" and s <= f["end"] and e >= f["start"] for k, r, p, s, e in named),
                            (f, named))

    def test_healthy_jobs_from_their_start_name_nobody(self):
        for name in ("healthy-ddp", "healthy-fsdp-capped"):
            named, j, text = self.replay(name)
            self.assertEqual(named, [], text)
            run = self.load(str(self.dir / f"{name}.h5"))
            self.assertEqual(len(run.tables["slow/findings"]), 0)
            self.assertEqual(sorted(set(run.tables["slow/collectives"]["rank"])), [0, 1, 2, 3])


if __name__ == "__main__":
    unittest.main()
