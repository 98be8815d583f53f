"""fabric-doctor on the GPU machine (label gpu; 2 x H200 over NVLink, no RDMA device): NVML's view of P2P, NVLink
links and counters, remapped rows, and the transport NCCL chose, with and without P2P/SHM disabled."""
import unittest

from fbtest import LaunchTest
from gpu.test_nccl import GPUS


@unittest.skipIf(GPUS < 2, "needs at least 2 GPUs")
class DoctorOnGpus(LaunchTest):
    def doctor(self, name, env=None):
        r = self.mpirun(GPUS, "fabric-doctor", ["--output", name], env=env, timeout=300)
        print(r.stdout)  # the per-host table, kept in the GPU log
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)  # 1: a check failed (shown above), not a crash
        run = self.load(name)
        self.assertEqual(run.attrs["status"], "complete")
        f = run.tables["doctor/findings"]
        return run, {(row.check, row.subject, row.rank): row for row in f.itertuples()}

    def test_p2p_nvlink_counters_remapped_rows_and_nccl_over_p2p(self):
        run, by = self.doctor("gpu.h5")
        for a in range(GPUS):
            for b in range(a + 1, GPUS):
                p2p = by[("gpu.p2p", f"GPU{a}-GPU{b}", -1)]
                self.assertEqual((p2p.status, p2p.value), ("ok", "read OK, write OK, nvlink OK"))
        for g in range(GPUS):
            link = by[("gpu.nvlink", f"GPU{g}", -1)]
            self.assertEqual((link.status, link.value), ("ok", "18/18 links active, 26.56 GB/s each"))
            errors = by[("gpu.nvlink_errors", f"GPU{g}", -1)]
            # As nvidia-smi nvlink -e; corrected data CRC (lane ECC) may follow in brackets, not counted.
            self.assertEqual(errors.status, "ok")
            self.assertTrue(errors.value.startswith("replay 0, recovery 0, CRC 0"), errors.value)
            rows = by[("gpu.remapped_rows", f"GPU{g}", -1)]
            self.assertEqual(rows.status, "ok")
            self.assertEqual(rows.value, "pending no, failure no, correctable 0, uncorrectable 0")
            self.assertEqual(by[("gpu.ecc", f"GPU{g}", -1)].status, "ok")
        for rank in range(GPUS):
            self.assertEqual(by[("nccl.transport", "channels", rank)].status, "ok")
            self.assertIn("P2P/", by[("nccl.transport", "channels", rank)].value)
        expected = run.tables["env/expected"]
        nvlink = expected[expected.kind == "nvlink"]
        self.assertEqual(len(nvlink), GPUS)
        for gbps in nvlink.gbps:
            self.assertAlmostEqual(gbps, 18 * 26.562, delta=0.1)

    def test_bus_bandwidth_is_held_against_the_nvlink_figure(self):
        r = self.mpirun(GPUS, "fabric-coll", ["--backend", "nccl", "--op", "all_reduce", "-b", "1G", "-e", "1G",
                                              "-n", "10", "--output", "coll.h5"], timeout=300)
        print(r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("coll.h5")
        nvlink = run.tables["env/expected"]
        nvlink = nvlink[nvlink.kind == "nvlink"].gbps.min()
        rows = run.tables["results/coll"]
        self.assertTrue((rows.expected_gbps == nvlink).all(), rows)
        for row in rows.itertuples():
            self.assertAlmostEqual(row.pct_expected, row.busbw_gbps / nvlink * 100, places=6)
            self.assertLess(row.pct_expected, 100, "no bus bandwidth above the links' figure")
        self.assertIn("expected bus bandwidth", r.stdout)

    def test_p2p_and_shm_disabled_routes_through_sockets_and_names_the_variables(self):
        run, by = self.doctor("socket.h5", env={"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"})
        for rank in range(GPUS):
            channels = by[("nccl.transport", "channels", rank)]
            self.assertEqual(channels.status, "warn")
            self.assertIn("NET/Socket", channels.value)
            self.assertIn("NCCL_P2P_DISABLE", channels.hint)
            self.assertIn("NCCL_SHM_DISABLE", channels.hint)
            self.assertEqual(by[("nccl.transport", "network", rank)].value, "Socket")
            self.assertEqual(by[("nccl.variables", "NCCL_P2P_DISABLE", rank)].status, "warn")


if __name__ == "__main__":
    unittest.main()
