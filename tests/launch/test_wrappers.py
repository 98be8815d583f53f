"""launch/fabric-mpirun and launch/fabric-srun: the commands they build, and host names that never reach a shell;
launch/fabric-rail-exec: rail maps, the NIC nearest each GPU in a fake sysfs, the variables and NUMA binding each
rank really gets, and the wrappers' --rails."""
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

LAUNCH = pathlib.Path(__file__).resolve().parents[2] / "launch"


def run(tool, *args):
    return subprocess.run([str(LAUNCH / tool)] + list(args), capture_output=True, text=True, timeout=60)


class MpirunWrapper(unittest.TestCase):
    def test_builds_the_mapping_from_a_host_list(self):
        r = run("fabric-mpirun", "--hosts", "gpu-01,gpu-02", "--ranks-per-node", "8", "--dry-run", "--", "fabric-coll", "-b", "8")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("mpirun -np 16 --host gpu-01:8,gpu-02:8 --map-by ppr:8:node --bind-to none", r.stdout)
        self.assertTrue(r.stdout.strip().endswith("fabric-coll -b 8"))

    def test_reads_a_hostfile(self):
        with tempfile.NamedTemporaryFile("w", prefix="fabricbench-hostfile-") as f:
            f.write("# nodes\nn1 slots=8\n\nn2\n")
            f.flush()
            r = run("fabric-mpirun", "--hostfile", f.name, "--ranks-per-node", "2", "--dry-run", "--", "x")
        self.assertIn("-np 4 --host n1:2,n2:2", r.stdout)

    def test_rejects_hostile_or_bad_input(self):
        for args, message in ((["--hosts", "a;rm -rf /,b"], "host name 'a;rm -rf /'"),
                              (["--hosts", "$(reboot)"], "host name '$(reboot)'"),
                              (["--hosts", "a,a"], "listed twice"),
                              (["--hosts", "a", "--hostfile", "f"], "exactly one of"),
                              (["--hostfile", "/nonexistent"], "--hostfile /nonexistent")):
            r = run("fabric-mpirun", *args, "--ranks-per-node", "1", "--", "x")
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(message, r.stderr)
        r = run("fabric-mpirun", "--hosts", "a", "--ranks-per-node", "0", "--", "x")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(run("fabric-mpirun", "--hosts", "a", "--ranks-per-node", "1").returncode, 2)

    def test_really_launches_locally(self):
        r = subprocess.run([str(LAUNCH / "fabric-mpirun"), "--hosts", "localhost", "--ranks-per-node", "2",
                            "--mpirun-opt=--oversubscribe", "--", "hostname"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.split()), 2)


class SrunWrapper(unittest.TestCase):
    def test_builds_a_pmix_srun(self):
        r = run("fabric-srun", "--nodes", "2", "--ranks-per-node", "8", "--gpus-per-node", "8", "--dry-run", "--", "fabric-coll")
        self.assertEqual(r.stdout.strip(), "srun -N 2 --ntasks-per-node 8 --mpi=pmix --gpus-per-node 8 fabric-coll")

    def test_rejects_bad_numbers_and_options(self):
        for args in (["--nodes", "x", "--ranks-per-node", "1"], ["--nodes", "2", "--ranks-per-node", "0"],
                     ["--bogus"], ["--nodes", "1", "--ranks-per-node", "1", "--gpus-per-node", "-1"]):
            r = run("fabric-srun", *args, "--", "x")
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("fabric-srun: "), r.stderr)


# --- Rails: launch/fabric-rail-exec and the wrappers' --rails ---------------------------------------------------
RAIL_VARIABLES = ("UCX_NET_DEVICES", "NCCL_IB_HCA", "OMPI_MCA_btl_openib_if_include", "OMPI_MCA_btl_tcp_if_include",
                  "NCCL_SOCKET_IFNAME", "FABRICBENCH_RAIL", "FABRICBENCH_RAIL_NIC", "FABRICBENCH_RAIL_DRY_RUN",
                  "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "PMIX_LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                  "SLURM_PROCID", "PMIX_RANK", "CUDA_VISIBLE_DEVICES", "FABRICBENCH_TEST_SYSROOT")
GOOD_MAP = "# one line per rail\n0 rdma=mlx5_0:1 net=ib0\n\n1 rdma=mlx5_1 net=10.91.0.0/24   # a subnet, port 1\n"
# Each rank writes its line to its own file under $PRINT_DIR: two ranks printing to mpirun's forwarded stdout at once
# were seen interleaving within a line (about 1 run in 5).
PRINT_ENV = ("import os; open(os.path.join(os.environ['PRINT_DIR'], os.environ['OMPI_COMM_WORLD_RANK']), 'w').write("
             "' '.join(f'{k}={os.environ.get(k)}' for k in ('OMPI_COMM_WORLD_LOCAL_RANK', "
             "'FABRICBENCH_RAIL', 'FABRICBENCH_RAIL_NIC', 'NCCL_IB_HCA', 'UCX_NET_DEVICES')))")


def rail_env(sysfs=None, **extra):
    """The test's environment without any variable a launcher or the shim sets, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in RAIL_VARIABLES}
    if sysfs is not None:
        env["FABRICBENCH_TEST_SYSROOT"] = str(sysfs)  # the host's files under this root: ROOT/sys/...
    env.update(extra)
    return env


def rail_exec(*args, env):
    return subprocess.run([str(LAUNCH / "fabric-rail-exec")] + list(args), capture_output=True, text=True, timeout=60,
                          env=env)


def make_sysfs(root, nics=None, cpulists=("0", "1")):
    """A fake sysfs: GPU 0000:03:00.0 (NUMA 0, behind bridge 0000:02:00.0 of root complex pci0000:00) and GPU
    0000:83:00.0 (NUMA 1, root complex pci0000:80), an NVIDIA audio function that is no GPU, and RDMA devices with a
    net device and an Active port 1 each. By default mlx5_1 sits beside GPU 0 and mlx5_0 beside GPU 1, so pairing by
    name fails. The tree is ROOT/sys (FABRICBENCH_TEST_SYSROOT=ROOT); returns ROOT."""
    top = pathlib.Path(root)
    root = top / "sys"

    def write(path, text):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    def link(at, target):
        at.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(target, at.parent), at)  # sysfs' links are relative

    def pci(parts, vendor, klass, numa):
        d = root / "devices" / pathlib.Path(*parts)
        write(d / "vendor", vendor)
        write(d / "class", klass)
        write(d / "numa_node", str(numa))
        link(root / "bus/pci/devices" / parts[-1], d)
        return d

    a = ["pci0000:00", "0000:00:01.0", "0000:01:00.0"]
    b = ["pci0000:80", "0000:80:01.0", "0000:81:00.0"]
    pci(a + ["0000:02:00.0", "0000:03:00.0"], "0x10de", "0x030200", 0)  # 3D controller
    pci(a + ["0000:02:00.0", "0000:03:00.1"], "0x10de", "0x040300", 0)  # its audio function: not a GPU
    pci(b + ["0000:82:00.0", "0000:83:00.0"], "0x10de", "0x030000", 1)  # VGA controller
    if nics is None:
        nics = ((a + ["0000:02:01.0", "0000:04:00.0"], "mlx5_1", "ib1", 0),
                (b + ["0000:82:01.0", "0000:84:00.0"], "mlx5_0", "ib0", 1))
    for parts, name, net, numa in nics:
        d = pci(parts, "0x15b3", "0x020700", numa)
        link(d / "infiniband" / name / "device", d)
        write(d / "infiniband" / name / "ports" / "1" / "state", "4: ACTIVE")
        (d / "net" / net).mkdir(parents=True)
        link(root / "class/infiniband" / name, d / "infiniband" / name)
        link(root / "class/net" / net, d / "net" / net)
    for node, cpus in enumerate(cpulists):
        write(root / f"devices/system/node/node{node}/cpulist", cpus)
    return top


class RailsTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-rails-"))
        self.host = socket.gethostname()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def rail_map(self, text, name="rails.map"):
        path = self.dir / name
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    def assertOneLine(self, r, *pieces):
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertEqual(r.stdout, "")
        for piece in pieces:
            self.assertIn(piece, r.stderr)


class RailMap(RailsTest):
    def test_a_good_map_gives_each_rail_its_line(self):
        path = self.rail_map(GOOD_MAP)
        r = rail_exec("--check-map", str(path), env=rail_env())
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "2\n", ""))
        r = rail_exec("--rail-map", str(path), "--no-numa", "--dry-run", "--local-rank", "1",
                      env=rail_env(self.dir / "no-sysfs"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"local rank 1 (host {self.host}): rail 1 nic mlx5_1:1 (net 10.91.0.0/24) from "
                                   f"{path}:4, numa off (--no-numa), UCX_NET_DEVICES=mlx5_1:1 NCCL_IB_HCA==mlx5_1 "
                                   f"OMPI_MCA_btl_openib_if_include=mlx5_1:1 OMPI_MCA_btl_tcp_if_include=10.91.0.0/24 "
                                   f"FABRICBENCH_RAIL=1 FABRICBENCH_RAIL_NIC=mlx5_1:1\n")  # a subnet: no NCCL_SOCKET_IFNAME

    def test_each_bad_line_is_one_line_naming_the_file_and_line(self):
        cases = (("0 net=ib0\n2 net=ib2\n", 2, "rail 2, but the 2 rails of the map must be numbered 0..1 (rail 1 is missing)"),
                 ("0 net=ib0\n\n0 net=ib1\n", 3, "rail 0 again (first on line 1)"),
                 ("0 net=ib0\n1 rdma=mlx5_1 speed=400\n", 2, "unknown key 'speed'"),
                 ("0 net=ib0\none net=ib1\n", 2, "rail 'one' is not a whole number 0-63"),
                 ("0 net=ib0\n64 net=ib1\n", 2, "rail '64' is not a whole number 0-63"),
                 ("0 net=ib0\n-1 net=ib1\n", 2, "rail '-1' is not a whole number"),
                 ("0 net=ib0\n1\n", 2, "rail 1 has no keys"),
                 ("0 net=ib0   # comment\n1 # only a comment after the rail\n", 2, "rail 1 has no keys"),
                 ("0 net=ib0 net=ib1\n", 1, "key net twice"),
                 ("0 rdma=mlx5_0:x\n", 1, "rdma='mlx5_0:x' is not DEVICE[:PORT]"),
                 ("0 rdma=mlx5_0:256\n", 1, "rdma='mlx5_0:256' is not DEVICE[:PORT]"),
                 ("0 net=10.0.0.256/24\n", 1, "net='10.0.0.256/24' is not a subnet"),
                 ("0 net=a/b\n", 1, "net='a/b' is neither an interface name"),
                 ("0 net\n", 1, "'net' is not KEY=VALUE"))
        for text, line, what in cases:
            path = self.rail_map(text)
            for args in (["--check-map", str(path)], ["--rail-map", str(path), "--dry-run", "--local-rank", "0"]):
                with self.subTest(text=text, args=args[0]):
                    self.assertOneLine(rail_exec(*args, env=rail_env()),
                                       f"fabric-rail-exec: --rail-map {path}:{line}: {what}",
                                       'allowed: one line "RAIL KEY=VALUE ..." per rail, rails 0..R-1 each once')

    def test_files_that_are_no_rail_map_are_one_line(self):
        for data, what in ((b"0 net=ib0\n1 net=\xff\n", ":2: bytes that are not UTF-8 text"),
                           (b"0 net=ib0\0\n", ":1: a NUL byte"),
                           (b"# nothing\n", ": no rails; allowed")):
            path = self.rail_map(data)
            self.assertOneLine(rail_exec("--check-map", str(path), env=rail_env()), f"{path}{what}")
        self.assertOneLine(rail_exec("--check-map", str(self.dir / "absent"), env=rail_env()),
                           f"--rail-map {self.dir / 'absent'}: cannot read the file")
        self.assertOneLine(rail_exec("--check-map", str(self.dir), env=rail_env()), "a directory; give a file")


class NearestNic(RailsTest):
    def dry_run(self, local, sysfs, **extra):
        r = rail_exec("--dry-run", "--local-rank", str(local), env=rail_env(sysfs, **extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_each_gpu_gets_the_nic_on_its_own_bridge(self):
        sysfs = make_sysfs(self.dir / "sys")
        self.assertIn("rail 0 nic mlx5_1:1 (net ib1) nearest GPU 0000:03:00.0, numa 0 cpus 0, UCX_NET_DEVICES=mlx5_1:1 "
                      "NCCL_IB_HCA==mlx5_1 OMPI_MCA_btl_openib_if_include=mlx5_1:1 OMPI_MCA_btl_tcp_if_include=ib1 "
                      "NCCL_SOCKET_IFNAME==ib1 FABRICBENCH_RAIL=0 FABRICBENCH_RAIL_NIC=mlx5_1:1", self.dry_run(0, sysfs))
        self.assertIn("rail 1 nic mlx5_0:1 (net ib0) nearest GPU 0000:83:00.0, numa 1 cpus 1,", self.dry_run(1, sysfs))

    def test_a_numeric_cuda_visible_devices_picks_among_the_gpus(self):
        sysfs = make_sysfs(self.dir / "sys")
        self.assertIn("rail 0 nic mlx5_0:1 (net ib0) nearest GPU 0000:83:00.0", self.dry_run(0, sysfs, CUDA_VISIBLE_DEVICES="1"))

    def test_equal_paths_go_to_the_gpus_numa_node_then_the_name(self):
        # Both NICs on other root complexes than GPU 0 (NUMA 0): the one on NUMA 0 wins though its name sorts later.
        far = (["pci0000:40", "0000:40:01.0", "0000:41:00.0"], "mlx5_a", "ib0", 1), \
              (["pci0000:c0", "0000:c0:01.0", "0000:c1:00.0"], "mlx5_b", "ib1", 0)
        self.assertIn("rail 0 nic mlx5_b:1 (net ib1)", self.dry_run(0, make_sysfs(self.dir / "numa", far)))
        same = (far[0], (far[1][0], "mlx5_b", "ib1", 1))
        self.assertIn("rail 0 nic mlx5_a:1 (net ib0)", self.dry_run(0, make_sysfs(self.dir / "name", same)))

    def test_without_gpus_or_nics_it_asks_for_a_rail_map(self):
        for sysfs in (self.dir / "empty", make_sysfs(self.dir / "gpus-only", nics=())):
            r = rail_exec("--dry-run", "--local-rank", "0", env=rail_env(sysfs))
            self.assertOneLine(r, "give --rail-map FILE")
        r = rail_exec("--dry-run", "--local-rank", "2", env=rail_env(make_sysfs(self.dir / "two")))
        self.assertOneLine(r, "local rank 2 has no GPU 2", "give --rail-map FILE")


class RankEnvironment(RailsTest):
    def setUp(self):
        super().setUp()
        self.sysfs = make_sysfs(self.dir / "sys")

    def test_the_dry_run_line_of_a_rank_under_each_launcher(self):
        h = self.host
        for variables, who, rail in (({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_RANK": "3"}, f"rank 3 (host {h}, local 1)", 1),
                                     ({"SLURM_LOCALID": "1", "SLURM_PROCID": "5"}, f"rank 5 (host {h}, local 1)", 1),
                                     ({"PMIX_LOCAL_RANK": "0", "PMIX_RANK": "2"}, f"rank 2 (host {h}, local 0)", 0),
                                     # Open MPI's variable first; no global rank known
                                     ({"OMPI_COMM_WORLD_LOCAL_RANK": "0", "SLURM_LOCALID": "1"}, f"local rank 0 (host {h})", 0)):
            for how in (["--dry-run"], {"FABRICBENCH_RAIL_DRY_RUN": "1"}):
                args = ["--", "/bin/false"] if isinstance(how, dict) else how
                env = rail_env(self.sysfs, **variables, **(how if isinstance(how, dict) else {}))
                with self.subTest(variables=variables, how=how):
                    r = rail_exec(*args, env=env)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertTrue(r.stdout.startswith(f"{who}: rail {rail} nic {('mlx5_1', 'mlx5_0')[rail]}:1"), r.stdout)
                    self.assertEqual(r.stdout.count("\n"), 1)

    def test_no_local_rank_is_one_line(self):
        self.assertOneLine(rail_exec("--", "/bin/true", env=rail_env(self.sysfs)),
                           "no local rank: none of OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, PMIX_LOCAL_RANK is set")
        self.assertOneLine(rail_exec("--", "/bin/true", env=rail_env(self.sysfs, SLURM_LOCALID="x")),
                           "SLURM_LOCALID='x' is not a whole number")
        self.assertOneLine(rail_exec(env=rail_env(self.sysfs, SLURM_LOCALID="0")), "put the command after '--'")
        self.assertOneLine(rail_exec("--bogus", "--", "/bin/true", env=rail_env(self.sysfs, SLURM_LOCALID="0")),
                           "unrecognised option '--bogus'")

    def exec_env(self, *args, **extra):
        r = rail_exec(*args, "--", "/usr/bin/env", env=rail_env(self.sysfs, **extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)

    def test_the_variables_reach_the_program_and_the_users_own_are_kept(self):
        env = self.exec_env("--no-numa", OMPI_COMM_WORLD_LOCAL_RANK="1", NCCL_IB_HCA="=mlx5_9")
        self.assertEqual({k: env.get(k) for k in RAIL_VARIABLES[:7]},
                         {"UCX_NET_DEVICES": "mlx5_0:1", "NCCL_IB_HCA": "=mlx5_9",  # the user's, kept
                          "OMPI_MCA_btl_openib_if_include": "mlx5_0:1", "OMPI_MCA_btl_tcp_if_include": "ib0",
                          "NCCL_SOCKET_IFNAME": "=ib0", "FABRICBENCH_RAIL": "1", "FABRICBENCH_RAIL_NIC": "mlx5_0:1"})
        r = rail_exec("--dry-run", env=rail_env(self.sysfs, OMPI_COMM_WORLD_LOCAL_RANK="1", NCCL_IB_HCA="=mlx5_9"))
        self.assertIn(" NCCL_IB_HCA==mlx5_9 (set before, kept) ", r.stdout)

    def test_a_rail_map_overrides_sysfs_and_a_subnet_sets_no_socket_name(self):
        path = self.rail_map(GOOD_MAP)
        env = self.exec_env("--rail-map", str(path), "--no-numa", SLURM_LOCALID="1")
        self.assertEqual((env.get("UCX_NET_DEVICES"), env.get("OMPI_MCA_btl_tcp_if_include"), env.get("FABRICBENCH_RAIL_NIC")),
                         ("mlx5_1:1", "10.91.0.0/24", "mlx5_1:1"))
        self.assertNotIn("NCCL_SOCKET_IFNAME", env)
        net_only = self.rail_map("0 net=eth0\n", "net.map")
        env = self.exec_env("--rail-map", str(net_only), "--no-numa", PMIX_LOCAL_RANK="0")
        self.assertEqual((env.get("FABRICBENCH_RAIL_NIC"), env.get("NCCL_SOCKET_IFNAME")), ("eth0", "=eth0"))
        self.assertNotIn("UCX_NET_DEVICES", env)

    def test_a_program_that_cannot_run_is_one_line(self):
        r = rail_exec("--no-numa", "--", str(self.dir / "absent"), env=rail_env(self.sysfs, SLURM_LOCALID="0"))
        self.assertOneLine(r, "cannot run", "No such file")


GET_POLICY = """
import ctypes, os, platform, sys
print(sorted(os.sched_getaffinity(0)))
number = {"x86_64": 239, "aarch64": 236}.get(platform.machine())
if number is not None:
    mode, mask = ctypes.c_int(-1), (ctypes.c_ulong * 16)()
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(ctypes.c_long(number), ctypes.byref(mode), mask, ctypes.c_ulong(16 * 64 + 1),
                        ctypes.c_void_p(0), ctypes.c_ulong(0)) == 0, os.strerror(ctypes.get_errno())
    print(mode.value, mask[0])
"""


class NumaBinding(RailsTest):
    def test_cpus_and_memory_are_bound_to_the_gpus_node(self):
        allowed = os.sched_getaffinity(0)
        if 0 not in allowed or len(allowed) < 2:
            self.skipTest(f"needs CPU 0 and another CPU to tell a binding from none; this process may use {sorted(allowed)}")
        sysfs = make_sysfs(self.dir / "sys", cpulists=("0", ",".join(map(str, sorted(allowed)))))
        env = rail_env(sysfs, OMPI_COMM_WORLD_LOCAL_RANK="0")
        r = rail_exec("--", sys.executable, "-c", GET_POLICY, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")  # no warning: both bindings took
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "[0]")
        if len(lines) > 1:
            self.assertEqual(lines[1], "2 1")  # MPOL_BIND, node 0
        r = rail_exec("--no-numa", "--", sys.executable, "-c", GET_POLICY, env=env)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], str(sorted(allowed)))
        if len(lines) > 1:
            self.assertEqual(lines[1].split()[0], "0")  # MPOL_DEFAULT


class MpirunRails(RailsTest):
    def test_dry_run_prints_the_command_and_each_local_ranks_binding(self):
        path = self.rail_map(GOOD_MAP)
        r = subprocess.run([str(LAUNCH / "fabric-mpirun"), "--hosts", "n1,n2", "--ranks-per-node", "2", "--rails",
                            "--rail-map", path.name, "--dry-run", "--", "fabric-coll", "-b", "8"], capture_output=True,
                           text=True, timeout=60, cwd=self.dir, env=rail_env(make_sysfs(self.dir / "sys")))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 4, r.stdout)
        self.assertRegex(lines[0], r"^mpirun -np 4 --host n1:2,n2:2 --map-by ppr:2:node --bind-to none ")
        self.assertTrue(lines[0].endswith(f" {LAUNCH / 'fabric-rail-exec'} --rail-map {path} -- fabric-coll -b 8"), lines[0])
        self.assertIn(f"evaluated on the launch host {self.host}", lines[1])
        self.assertTrue(lines[2].startswith(f"local rank 0 (host {self.host}): rail 0 nic mlx5_0:1 (net ib0) from "
                                            f"{path}:2, numa 0 cpus 0, UCX_NET_DEVICES=mlx5_0:1"), lines[2])
        self.assertTrue(lines[3].startswith(f"local rank 1 (host {self.host}): rail 1 nic mlx5_1:1 (net 10.91.0.0/24)"
                                            f" from {path}:4, numa 1 cpus 1,"), lines[3])

    def test_a_bad_map_or_a_rank_count_other_than_the_rails_is_one_line(self):
        good, bad = self.rail_map(GOOD_MAP), self.rail_map("0 net=ib0\n0 net=ib1\n", "bad.map")
        for args, what in ((["--ranks-per-node", "3", "--rails", "--rail-map", str(good)],
                            f"--ranks-per-node 3 but {good} has 2 rail(s)"),
                           (["--ranks-per-node", "2", "--rails", "--rail-map", str(bad)],
                            f"fabric-mpirun: --rail-map {bad}:2: rail 0 again"),
                           (["--ranks-per-node", "2", "--rail-map", str(good)], "--rail-map needs --rails")):
            r = run("fabric-mpirun", "--hosts", "a", *args, "--dry-run", "--", "x")
            self.assertOneLine(r, what)

    def test_each_rank_really_gets_its_rail(self):
        r = subprocess.run([str(LAUNCH / "fabric-mpirun"), "--hosts", "localhost", "--ranks-per-node", "2", "--rails",
                            "--mpirun-opt=--oversubscribe", "--", sys.executable, "-c", PRINT_ENV], capture_output=True,
                           text=True, timeout=120,
                           env=rail_env(make_sysfs(self.dir / "sys"), PRINT_DIR=str(self.dir)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted((self.dir / str(rank)).read_text() for rank in (0, 1)), [
            "OMPI_COMM_WORLD_LOCAL_RANK=0 FABRICBENCH_RAIL=0 FABRICBENCH_RAIL_NIC=mlx5_1:1 NCCL_IB_HCA==mlx5_1 UCX_NET_DEVICES=mlx5_1:1",
            "OMPI_COMM_WORLD_LOCAL_RANK=1 FABRICBENCH_RAIL=1 FABRICBENCH_RAIL_NIC=mlx5_0:1 NCCL_IB_HCA==mlx5_0 UCX_NET_DEVICES=mlx5_0:1"])


class SrunRails(RailsTest):
    def test_dry_run_prints_the_command_and_each_local_ranks_binding(self):
        path = self.rail_map(GOOD_MAP)
        r = subprocess.run([str(LAUNCH / "fabric-srun"), "--nodes", "2", "--ranks-per-node", "2", "--rails",
                            "--rail-map", path.name, "--no-numa", "--dry-run", "--", "fabric-coll"], capture_output=True,
                           text=True, timeout=60, cwd=self.dir, env=rail_env(make_sysfs(self.dir / "sys")))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"srun -N 2 --ntasks-per-node 2 --mpi=pmix --cpu-bind=none "
                                   f"{LAUNCH / 'fabric-rail-exec'} --rail-map {path} --no-numa -- fabric-coll")
        self.assertIn(f"evaluated on the launch host {self.host}", lines[1])
        self.assertEqual(lines[2:], [
            f"local rank 0 (host {self.host}): rail 0 nic mlx5_0:1 (net ib0) from {path}:2, numa off (--no-numa), "
            f"UCX_NET_DEVICES=mlx5_0:1 NCCL_IB_HCA==mlx5_0 OMPI_MCA_btl_openib_if_include=mlx5_0:1 "
            f"OMPI_MCA_btl_tcp_if_include=ib0 NCCL_SOCKET_IFNAME==ib0 FABRICBENCH_RAIL=0 FABRICBENCH_RAIL_NIC=mlx5_0:1",
            f"local rank 1 (host {self.host}): rail 1 nic mlx5_1:1 (net 10.91.0.0/24) from {path}:4, numa off "
            f"(--no-numa), UCX_NET_DEVICES=mlx5_1:1 NCCL_IB_HCA==mlx5_1 OMPI_MCA_btl_openib_if_include=mlx5_1:1 "
            f"OMPI_MCA_btl_tcp_if_include=10.91.0.0/24 FABRICBENCH_RAIL=1 FABRICBENCH_RAIL_NIC=mlx5_1:1"])

    def test_without_a_map_the_bindings_come_from_this_hosts_sysfs(self):
        r = subprocess.run([str(LAUNCH / "fabric-srun"), "--nodes", "1", "--ranks-per-node", "3", "--rails", "--dry-run",
                            "--", "x"], capture_output=True, text=True, timeout=60,
                           env=rail_env(make_sysfs(self.dir / "sys")))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"srun -N 1 --ntasks-per-node 3 --mpi=pmix --cpu-bind=none {LAUNCH / 'fabric-rail-exec'} -- x")
        self.assertIn("rail 0 nic mlx5_1:1 (net ib1) nearest GPU 0000:03:00.0, numa 0 cpus 0,", lines[2])
        self.assertIn("rail 1 nic mlx5_0:1 (net ib0) nearest GPU 0000:83:00.0, numa 1 cpus 1,", lines[3])
        self.assertTrue(lines[4].startswith("local rank 2: not known here: no rail map, and local rank 2 has no GPU 2"), lines[4])

    def test_a_bad_map_or_a_rank_count_other_than_the_rails_is_one_line(self):
        good, bad = self.rail_map(GOOD_MAP), self.rail_map("0 net=ib0\n1\n", "bad.map")
        for args, what in ((["--ranks-per-node", "1", "--rails", "--rail-map", str(good)],
                            f"fabric-srun: --rails: --ranks-per-node 1 but {good} has 2 rail(s)"),
                           (["--ranks-per-node", "2", "--rails", "--rail-map", str(bad)],
                            f"fabric-srun: --rail-map {bad}:2: rail 1 has no keys; allowed"),
                           (["--ranks-per-node", "2", "--no-numa"], "need --rails")):
            self.assertOneLine(run("fabric-srun", "--nodes", "2", *args, "--dry-run", "--", "x"), what)
