"""fabric-verbs and fabric-sweep's rdma metrics on real verbs traffic: Soft-RoCE (rdma_rxe) inside a QEMU guest
(tests/rigs/rxe_vm.sh), all cases in one boot. Every test type with --check and zero wrong bytes; several QPs and
both directions; fabric-doctor's view of the rxe ports; a bad device name and a port that is not Active give exit 2;
a QP moved to the error state mid-run and a hung peer give exit 3 with a status that says why; -D; the rdma_bw and
rdma_lat sweep metrics. (fabric-sweep's verdicts over rails of rxe devices: test_rails_rxe.py.)
Needs root (the image is built with mmdebstrap); says 'skipped: needs root' otherwise."""
import os
import pathlib
import shutil
import sys
import tempfile
import unittest

import fabricbench_analysis
from fbtest import BIN
from rigs.rxe_guest import MPIRUN, run_guest

# For the jobs refused with exit 2 (nothing to write): mpirun need not wait between the SIGTERM and the SIGKILL it
# sends the other rank (fbtest.QUICK_ABORT). In the guest each refused job took 4.0 s with the wait, 1.9 s without.
REFUSED = MPIRUN + " --mca odls_base_sigkill_timeout 0"


@unittest.skipUnless(os.geteuid() == 0, "skipped: needs root")
@unittest.skipUnless(shutil.which("qemu-system-x86_64") and shutil.which("mmdebstrap"),
                     "skipped: needs qemu-system-x86 and mmdebstrap (ci/install-deps.sh installs them as root)")
class SoftRoceGuest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-rxe-"))
        v = f"{BIN}/fabric-verbs"
        cls.cases = run_guest(cls.out, [
            ("all", f"{MPIRUN} {v} --test all --check -n 200 --output all.h5"),
            ("multi", f"{MPIRUN} {v} --test write_bw,read_bw,send_bw,atomic_bw -b -q 2 --sizes 1K:64K:x4 --check "
                      f"-n 100 --output multi.h5"),
            ("events", f"{MPIRUN} {v} --test send_bw,send_lat -e --check -n 100 -s 4K --output events.h5"),
            ("baddev", f"{REFUSED} {v} --ib-dev mlx5_9 --output baddev.h5"),
            ("down", f"{REFUSED} {v} --ib-dev rxe1 --output down.h5"),
            ("qperr", f"{MPIRUN} -x FABRICBENCH_TEST_QP_ERROR=1 {v} --test write_bw --sizes 4K,64K -n 50 "
                      f"--output qperr.h5"),
            ("hang", f"{MPIRUN} -x FABRICBENCH_TEST_STALL=1:0 {v} --test write_lat --timeout 4 --output hang.h5"),
            ("duration", f"{MPIRUN} {v} --test write_bw,write_lat -D 0.5 --output duration.h5"),
            ("sweep", f"{MPIRUN} {BIN}/fabric-sweep --emulate-hosts 1 --metric rdma_bw,rdma_lat "
                      f"--sizes 64K -n 100 --check --output sweep.h5"),
            ("doctor", f"{MPIRUN} {BIN}/fabric-doctor --checks rdma,limits,host --output doctor.h5"),
            ("badtimeout", f"{REFUSED} {v} --qp-timeout 32 --output badtimeout.h5"),
        ], BIN)
        print("guest seconds per case: " + ", ".join(f"{c.name} {c.seconds:.1f}" for c in cls.cases.values()),
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def load(self, name):
        return fabricbench_analysis.load(self.out / name)

    def test_every_test_type_checks_every_byte(self):
        c = self.cases["all"]
        self.assertEqual(c.rc, 0, c)
        run = self.load("all.h5")
        self.assertEqual(run.attrs["status"], "complete")
        rows = run.tables["results/verbs"]
        self.assertEqual(sorted(rows["test"]), sorted(["write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat",
                                                        "read_lat", "send_lat", "atomic_lat"]))
        self.assertTrue((rows["wrong"] == 0).all())
        self.assertTrue((rows["device"] == "rxe0").all())
        self.assertTrue((rows["link_layer"] == "Ethernet").all())
        self.assertTrue((rows["gid_index"] == 1).all(), "the IPv4 RoCE v2 entry is detected")
        bw = rows[rows["test"].str.endswith("_bw")]
        self.assertTrue((bw["bw_avg_mibps"] > 0).all())
        # Under emulation the link moves tens of MB/s: anything near a real HCA's figure is wrong.
        self.assertTrue((bw["bw_avg_mibps"] < 5000).all(), bw)
        self.assertTrue((bw[bw["bytes"] == 65536]["bytes"] == 65536).all())
        lat = rows[rows["test"].str.endswith("_lat")]
        self.assertTrue((lat["latency_us"] > 0).all())
        self.assertTrue((lat["time_us_min"] <= lat["latency_us"]).all())
        self.assertTrue((lat["latency_us"] <= lat["time_us_p99"]).all())
        # perftest's inline default for write_lat, or none where the device refuses inline data.
        self.assertIn(int(lat[lat["test"] == "write_lat"]["inline_bytes"].iloc[0]), (0, 220))
        samples = run.tables["samples/verbs"]
        write_lat_row = int(rows.index[rows["test"] == "write_lat"][0])
        self.assertEqual(len(samples[samples["row"] == write_lat_row]), 199,
                         "one sample per round trip: 200 iterations, 199 between posts")
        self.assertIn("pair 0: rank 0", c.stdout)
        self.assertIn("BW_average[MB/sec]", c.stdout)
        self.assertIn("t_typical[usec]", c.stdout)

    def test_doctor_sees_the_rxe_port_active_on_ethernet_with_a_roce_v2_gid(self):
        c = self.cases["doctor"]
        self.assertIn(c.rc, (0, 1), c)  # 1 only if a check failed; the rows below say which
        f = self.load("doctor.h5").tables["doctor/findings"]
        by = {(row.check, row.subject): row for row in f.itertuples()}
        state = by[("rdma.port_state", "rxe0/1")]
        self.assertEqual((state.status, state.value), ("ok", "ACTIVE/LinkUp"))
        self.assertEqual(by[("rdma.port_state", "rxe1/1")].status, "warn")  # its netdev is down
        link = by[("rdma.link", "rxe0/1")]
        self.assertIn("Ethernet", link.value)
        self.assertIn("RoCE v2 GID", link.value)
        self.assertNotIn("no RoCE v2 GID", link.value)
        self.assertIn("MTU 1024", link.value)  # libibverbs' active MTU of rxe on a 1500-byte netdev
        self.assertEqual(by[("rdma.devices", "rxe0")].status, "ok")
        self.assertIn(("limits.memlock", "memlock"), by)
        # The rig's own jobs run with the limit the docs ask for: no failed check of the project's making.
        self.assertTrue(all(row.status == "ok" for row in f.itertuples() if row.check == "limits.memlock"), f)
        self.assertFalse((f.status == "fail").any(), f[f.status == "fail"])

    def test_several_qps_both_directions(self):
        c = self.cases["multi"]
        self.assertEqual(c.rc, 0, c)
        rows = self.load("multi.h5").tables["results/verbs"]
        self.assertEqual(len(rows), 3 * 4 + 1)
        self.assertTrue((rows["wrong"] == 0).all())
        self.assertTrue((rows["qps"] == 2).all())
        self.assertTrue((rows["bw_avg_mibps"] > 0).all())

    def test_completion_events_instead_of_polling(self):
        c = self.cases["events"]
        self.assertEqual(c.rc, 0, c)
        rows = self.load("events.h5").tables["results/verbs"]
        self.assertTrue((rows["wrong"] == 0).all())
        # perftest keeps completion moderation with events (100, capped to the 100 iterations); latency signals each.
        self.assertEqual(list(rows["cq_mod"]), [100, 1])

    def test_bad_device_and_down_port_are_usage_errors(self):
        for name, expected in (("baddev", "--ib-dev mlx5_9: no such RDMA device on host fbguest (devices: rxe0, rxe1)"),
                               ("down", "--ib-dev rxe1: rxe1 port 1 DOWN on host fbguest is not Active")):
            c = self.cases[name]
            self.assertEqual(c.rc, 2, c)
            ours = sorted(set(line for line in c.stderr.splitlines() if line.startswith("fabric-verbs:")))
            self.assertEqual(ours, [f"fabric-verbs: {expected}"], c)
            self.assertFalse((self.out / f"{name}.h5").exists(), "nothing written")

    def test_queue_pair_error_mid_run_is_exit_3_with_the_qp_state(self):
        c = self.cases["qperr"]
        self.assertEqual(c.rc, 3, c)
        run = self.load("qperr.h5")
        status = run.attrs["status"]
        self.assertTrue(status.startswith("failed"), status)
        self.assertIn("ERR", status, "the QP state")
        self.assertIn("Flushed", status, "the work completion's status string")
        rows = run.tables["results/verbs"]
        self.assertEqual(list(rows["bytes"]), [4096], "the size measured before the error is kept")

    def test_hung_peer_times_out_with_exit_3(self):
        c = self.cases["hang"]
        self.assertEqual(c.rc, 3, c)
        status = self.load("hang.h5").attrs["status"]
        self.assertTrue(status.startswith("failed"), status)
        self.assertIn("timeout", status)

    def test_duration_sets_the_iterations(self):
        c = self.cases["duration"]
        self.assertEqual(c.rc, 0, c)
        rows = self.load("duration.h5").tables["results/verbs"]
        self.assertTrue((rows["iterations"] > 5).all(), rows)

    def test_rdma_sweep_metrics(self):
        c = self.cases["sweep"]
        self.assertEqual(c.rc, 0, c)
        run = self.load("sweep.h5")
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(sorted(pairs["metric"].unique()), ["rdma_bw", "rdma_lat"])
        bw = pairs[pairs["metric"] == "rdma_bw"]
        self.assertEqual(sorted(bw["direction"]), ["a->b", "b->a"])
        self.assertTrue((pairs["value"] > 0).all(), pairs)
        self.assertTrue((pairs["wrong"] == 0).all())
        self.assertEqual(set(pairs["unit"]), {"MiB/s", "us"})

    def test_qp_timeout_out_of_range_is_a_usage_error(self):
        c = self.cases["badtimeout"]
        self.assertEqual(c.rc, 2, c)
        self.assertIn("--qp-timeout", c.stderr)
        self.assertFalse((self.out / "badtimeout.h5").exists())


if __name__ == "__main__":
    unittest.main()
