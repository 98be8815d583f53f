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
  healthy-ddp, healthy-fsdp-capped   300 s each from the job's start, nothing injected
  healthy-fsdp-beside  300 s of a healthy FSDP job (capped buffers) beside inject-fsdp-capped on the same GPU: eight
                       processes time-slicing it; recorded before the plugin wrote the machine's boot id
  live-inject-ddp, live-inject-fsdp-capped   the proof of 2026-11-29 (second session), the plugin writing the boot
                       id: 10 faults each (the FSDP job over send buffers capped at 512 KB), a healthy job beside each
  final-inject-fsdp-capped   the same FSDP proof run again with the final judge (each connection against its own
                       past too): 10 of 10 named live, nothing wrong"""
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
    BOOT_ID_AT = 256 - 40  # FileHeader::boot_id (slow_record.hpp): 36 bytes, then 4 of padding

    def replay(self, name, boot_id=None):
        """The fixture judged again: (what was named, per fault and the wrong namings, the judge's stderr). With
        `boot_id`, each file's header says that machine, as the plugin writes it now."""
        run = self.dir / (name + ("-boot" if boot_id else ""))
        with tarfile.open(FIXTURES / f"{name}.tar.xz") as t:
            t.extractall(run)  # the project's own fixture
        (run / "slow").chmod(0o700)
        for f in (run / "slow").glob("*.fbslow") if boot_id else []:
            b = bytearray(f.read_bytes())
            self.assertEqual(b[self.BOOT_ID_AT:256], bytes(40))  # recorded without one
            b[self.BOOT_ID_AT:self.BOOT_ID_AT + 36] = boot_id.encode()
            f.write_bytes(bytes(b))
        r = subprocess.run([str(BIN / "fabric-watchdog"), "--judge", str(run / "slow"), "--replay", "--slow-report",
                            str(run) + ".h5"], capture_output=True, text=True, timeout=300)
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
        self.assertEqual([f["found"] for f in j["faults"]], [True] * 10, j["faults"])  # each within 10 s
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
            run = self.load(str(self.dir / name) + ".h5")
            self.assertEqual(len(run.tables["slow/findings"]), 0)
            self.assertEqual(sorted(set(run.tables["slow/collectives"]["rank"])), [0, 1, 2, 3])

    def test_the_proofs_reading_of_the_lines(self):
        """hosts.namings: a slow collective is open until its "gone" line, whatever unit its size is said in."""
        w = "fabric-watchdog: "
        lines = [(10, w + "slow collective: AllReduce of 4102 KiB on communicator 0x1: 126 ms ..."),
                 (12, w + "gone: AllReduce of 4102 KiB on communicator 0x1, named for 2 s (...)"),
                 (20, w + "slow network: the network of rank 3 (pid 5 ...) in communicator 0x1: ..."),
                 (30, w + "gone: the network of rank 3 (pid 5 ...) in communicator 0x1, named for 10 s"),
                 (40, w + "slow rank: rank 2 (pid 7 ...) of communicator 0x1 arrives last ...")]
        self.assertEqual(hosts.namings(lines, 50), [("collective", -1, -1, 10, 12), ("network", 3, -1, 20, 30),
                                                    ("rank", 2, -1, 40, 50)])

    def test_the_live_proof_each_fault_within_10_s(self):
        """Each fault named right within 10 s. One wrong naming in the FSDP run: as rank 3's host stopped, the link
        into it (2->3) for 7 s before its network."""
        for name in ("live-inject-ddp", "live-inject-fsdp-capped", "final-inject-fsdp-capped"):
            named, j, text = self.replay(name)
            self.assertEqual([f["found"] for f in j["faults"]], [True] * 10, (name, j["faults"]))
            self.assertLessEqual(len(j["false"]), 1, (name, j["false"]))
            self.assertGreaterEqual(1 - len(j["false"]) / len(named), 0.9, (name, named))
            self.assertIn("share a GPU", text)  # the headers name one machine and one bus id
            if name.startswith("final"):  # run live with this judge: what it said then, read by the proof's rules
                self.assertEqual(j["false"], [], text)
                t0 = float((self.dir / name / "t0").read_text())
                live = [(float(t) - t0, rest.split(" ", 1)[1]) for t, rest in
                        (line.split(" ", 1) for line in (self.dir / name / "log").read_text().splitlines())
                        if "fabric-watchdog: " in rest]
                lj = hosts.judged(json.loads((self.dir / name / "plan.json").read_text()),
                                  hosts.namings(live, live[-1][0]))
                self.assertEqual([f["found"] for f in lj["faults"]], [True] * 10, lj["faults"])
                self.assertEqual(lj["false"], [])

    def test_ranks_time_slicing_one_gpu_are_not_named_by_their_kernels(self):
        """Eight processes on one GPU: rank 1's all-gathers started last at ~38% (the order the GPU served the
        processes in), and the kernels' rule named it for most of 300 s, "the job loses 19-22%", while the steps stayed
        as they were. The same records with the machine's boot id in their headers (four host names, one bus id, one
        machine): the judge says the ranks share the GPU and names nobody."""
        named, j, text = self.replay("healthy-fsdp-beside")
        self.assertTrue(any(k == "rank" and r == 1 and e - s >= 30 for k, r, p, s, e in named), (named, text))
        self.assertRegex(text, r"slow rank: rank 1 .* arrives last .* named by its kernels")
        boot = "1f0c2a7e-5b43-4d0e-9a36-0c8f2e6d4b19"
        named, j, text = self.replay("healthy-fsdp-beside", boot_id=boot)
        self.assertEqual(named, [], text)
        self.assertRegex(text, r"--slow: ranks 0, 1, 2, 3 of communicator 0x[0-9a-f]+ share a GPU with another of its "
                               r"ranks \(the same bus id on one machine\)")
        self.assertEqual(text.count("share a GPU"), 1, text)
        run = self.load(str(self.dir / "healthy-fsdp-beside-boot") + ".h5")
        self.assertEqual(sorted(set(run.tables["slow/processes"]["boot_id"])), [boot])
        # The faults of the job beside it, judged with the boot id too: every one still named right, nothing wrong
        # (the network names a stalled or starved host on this rig; the kernels named none of them first).
        named, j, text = self.replay("inject-fsdp-capped", boot_id=boot)
        self.assertEqual(j["false"], [], text)
        self.assertEqual([f["found"] for f in j["faults"]], [True] * 8, j["faults"])


if __name__ == "__main__":
    unittest.main()
