"""fabric-doctor under mpirun, and the cheap checks every other tool runs at start (/env/checks)."""
import pathlib
import re
import unittest

from fbtest import LaunchTest


def kernel_thp(name):
    line = pathlib.Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text()
    return re.search(r"\[([^\]]+)\]", line).group(1)


def write(root, path, text):
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def fake_rdma_tree(root, state="4: ACTIVE", gid_type="RoCE v2"):
    """One RoCE port as sysfs shows it, under a root the tools take through FABRICBENCH_TEST_SYSROOT."""
    d = "/sys/class/infiniband/mlx5_7/ports/1"
    write(root, "/sys/class/infiniband/mlx5_7/fw_ver", "28.39.1002\n")
    for name, text in [("state", state), ("phys_state", "5: LinkUp"), ("link_layer", "Ethernet"),
                       ("rate", "100 Gb/sec (4X EDR)"), ("gids/1", "0000:0000:0000:0000:0000:ffff:0a00:0001"),
                       ("gid_attrs/types/1", gid_type), ("gid_attrs/ndevs/0", "eth7")]:
        write(root, f"{d}/{name}", text + "\n")
    write(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n")
    write(root, "/sys/kernel/mm/transparent_hugepage/defrag", "[always] defer madvise never\n")


class Doctor(LaunchTest):
    def findings(self, name, table="doctor/findings"):
        return self.load(name).tables[table]

    def test_two_ranks_here_skip_what_is_absent_and_read_the_kernel(self):
        r = self.mpirun(2, "fabric-doctor", ["--output", "d.h5"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = self.load("d.h5")
        self.assertEqual(run.attrs["status"], "complete")
        f = run.tables["doctor/findings"]
        by = {(row.check, row.subject): row for row in f.itertuples()}
        self.assertEqual(by[("host.thp", "enabled")].value, kernel_thp("enabled"))
        self.assertEqual(by[("host.thp", "defrag")].value, kernel_thp("defrag"))
        # No RDMA device and no GPU on this machine: those checks skip with the reason, never fail.
        self.assertEqual(by[("rdma.devices", "devices")].status, "skip")
        self.assertIn("no RDMA device", by[("rdma.devices", "devices")].hint)
        gpu = f[f.check.str.startswith("gpu.")]
        self.assertTrue(len(gpu) == 8 and (gpu.status == "skip").all(), gpu)
        # Rank-scope checks run on both ranks; host-scope ones once for the host.
        self.assertEqual(sorted(f[f.check == "limits.memlock"]["rank"]), [0, 1])
        self.assertEqual(list(f[f.check == "host.thp"]["rank"].unique()), [-1])
        self.assertIn("# host", r.stdout)
        self.assertIn("host.thp", r.stdout)

    def test_list_and_bad_checks(self):
        r = self.mpirun(1, "fabric-doctor", ["--list"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("gpu.remapped_rows", r.stdout)
        self.assertIn("job.consistency", r.stdout)
        self.assertEqual(self.files(), [], "--list writes no file")
        r = self.mpirun(2, "fabric-doctor", ["--checks", "rdma,nope"])
        self.assert_refused(r, "fabric-doctor", "--checks 'nope': allowed values are rdma.devices, ")
        self.assertIn(", all, cheap, rdma, limits, nccl, gpu, host, job (comma-separated)", r.stderr)
        # An option of a run given with --list was ignored without a word (issue 48: refused, not ignored).
        for extra in (["--nccl-ras"], ["--strict"], ["--checks", "rdma"]):
            with self.subTest(extra=extra):
                r = self.mpirun(1, "fabric-doctor", ["--list"] + extra, refused=True)
                self.assert_refused(r, "fabric-doctor", f"{extra[0]} with --list: --list only prints the checks")

    def test_a_down_port_warns_and_strict_fails(self):
        root = self.dir / "root"
        fake_rdma_tree(root, state="1: DOWN")
        env = {"FABRICBENCH_TEST_SYSROOT": str(root)}
        r = self.mpirun(2, "fabric-doctor", ["--checks", "rdma,host.thp", "--output", "w.h5"], env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        f = self.findings("w.h5")
        port = f[(f.check == "rdma.port_state") & (f.subject == "mlx5_7/1")].iloc[0]
        self.assertEqual((port.status, port.value), ("warn", "DOWN/LinkUp"))
        self.assertEqual(f[(f.check == "host.thp") & (f.subject == "defrag")].iloc[0].status, "warn")
        # The terminal puts the host's problems first.
        table = r.stdout[r.stdout.index("# host"):]
        self.assertLess(table.index("warn"), table.index("ok "))
        r = self.mpirun(2, "fabric-doctor", ["--checks", "rdma", "--strict", "--output", "s.h5"], env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)

    def test_a_roce_port_without_v2_gid_fails(self):
        root = self.dir / "root"
        fake_rdma_tree(root, gid_type="IB/RoCE v1")
        r = self.mpirun(1, "fabric-doctor", ["--checks", "rdma.link", "--output", "f.h5"],
                        env={"FABRICBENCH_TEST_SYSROOT": str(root)})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        row = self.findings("f.h5").query("check == 'rdma.link'").iloc[0]
        self.assertEqual(row.status, "fail")
        self.assertIn("eth7", row.hint)

    def test_consistency_names_the_host_that_differs(self):
        env = {"FABRICBENCH_TEST_HOST_FACT": "node2:kernel=Linux 9.9.9 x86_64"}
        r = self.mpirun(3, "fabric-doctor", ["--emulate-hosts", "1", "--checks", "job", "--output", "c.h5"], env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        f = self.findings("c.h5")
        kernel = f[(f.check == "job.consistency") & (f.subject == "kernel")].iloc[0]
        self.assertEqual(kernel.status, "warn")
        self.assertEqual(kernel.value, "node2 has 'Linux 9.9.9 x86_64'")
        self.assertIn("on 2 of 3 hosts", kernel.expected)
        self.assertEqual(f[(f.check == "job.consistency") & (f.subject == "mpi")].iloc[0].status, "ok")
        # An NCCL or driver mismatch fails the run.
        env["FABRICBENCH_TEST_HOST_FACT"] = "node0:driver=535.1"
        r = self.mpirun(3, "fabric-doctor", ["--emulate-hosts", "1", "--checks", "job", "--output", "c2.h5"], env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("node0 has '535.1'", r.stdout)


class CheapChecksInEveryTool(LaunchTest):
    def test_p2p_records_env_checks_and_warns_once_per_problem(self):
        root = self.dir / "root"
        fake_rdma_tree(root, state="1: DOWN")
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency", "--sizes", "8", "-n", "10", "--output", "p.h5"],
                        env={"FABRICBENCH_TEST_SYSROOT": str(root)})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        warnings = [l for l in r.stderr.splitlines() if l.startswith("fabric-p2p: warning:")]
        self.assertEqual(len([l for l in warnings if "rdma.port_state mlx5_7/1: DOWN/LinkUp" in l]), 1, r.stderr)
        self.assertTrue(any("host.thp defrag" in l for l in warnings), r.stderr)
        run = self.load("p.h5")
        checks = run.tables["env/checks"]
        self.assertEqual(set(checks.check) - {"job.consistency"},
                         {"rdma.devices", "rdma.port_state", "limits.memlock", "limits.shm", "nccl.variables", "host.thp"})
        # The expected bandwidth of what was found: the Active port is Down, so no RDMA figure.
        self.assertEqual(len(run.tables["env/expected"]), 0)
        self.assertEqual(run.tables["env/hosts"].iloc[0]["hca_count"], "1")

    def test_expected_bandwidth_of_an_active_port_and_no_checks(self):
        root = self.dir / "root"
        fake_rdma_tree(root)
        env = {"FABRICBENCH_TEST_SYSROOT": str(root)}
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency", "--sizes", "8", "-n", "10", "--no-checks", "--output", "n.h5"],
                        env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("warning:", r.stderr)
        run = self.load("n.h5")
        self.assertNotIn("env/checks", run.tables)
        expected = run.tables["env/expected"]
        port = expected[expected.kind == "rdma_port"].iloc[0]
        self.assertEqual(port.subject, "mlx5_7/1")
        self.assertAlmostEqual(port.gbps, 12.5)  # 100 Gb/s / 8
        self.assertEqual(expected[expected.kind == "rdma_node"].iloc[0].gbps, 12.5)


if __name__ == "__main__":
    unittest.main()
