"""launch/slurm/healthcheck.sh without Slurm: fabric-doctor's cheap checks on this host alone (FABRICBENCH_TEST_SYSROOT
trees make a check fail or warn), the drain command it would run (--dry-run), what only logs, a doctor that cannot
run, the prolog's exit status and bad options. tests/rigs/test_slurm_healthcheck.py drains real Slurm nodes."""
import os
import pathlib
import resource
import shutil
import subprocess
import unittest

from fbtest import BIN, LaunchTest
from mpi.test_doctor import fake_rdma_tree, write

HEALTHCHECK = pathlib.Path(__file__).resolve().parents[2] / "launch" / "slurm" / "healthcheck.sh"
FAIL_REASON = "fabricbench: limits.memlock memlock 8 MiB"


def thp(root, defrag="madvise"):
    write(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    modes = ("always", "defer", "madvise", "never")
    write(root, "/sys/kernel/mm/transparent_hugepage/defrag", " ".join(f"[{m}]" if m == defrag else m for m in modes) + "\n")


def healthy_tree(root):
    thp(root)


def warn_tree(root):
    """THP defrag=always: host.thp warns."""
    thp(root, "always")


def fail_tree(root):
    """An Active RDMA port: with the locked-memory limit of low_memlock (8 MiB, under 64 MiB) limits.memlock fails."""
    fake_rdma_tree(root)
    thp(root)


def low_memlock():
    """The limit a host without `ulimit -l unlimited` has (Debian's default, 8 MiB): given to the script's process."""
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    limit = 8 << 20 if hard == resource.RLIM_INFINITY else min(8 << 20, hard)
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit, hard))


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "FABRICBENCH_TEST"))}
    env.update(extra)
    return env


class HealthCheckScript(LaunchTest):
    def run_check(self, *args, tree=None, env=None, bin_dir=BIN):
        extra = dict(env or {})
        if tree is not None:
            root = self.dir / tree.__name__
            shutil.rmtree(root, ignore_errors=True)
            tree(root)
            extra["FABRICBENCH_TEST_SYSROOT"] = str(root)
        argv = [str(HEALTHCHECK)] + (["--bin", str(bin_dir)] if bin_dir else []) + [str(a) for a in args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=clean_env(**extra), cwd=self.dir,
                              preexec_fn=low_memlock)

    def fake_doctor(self, body):
        """A fabric-doctor that runs BODY (sh) with $csv set to its --csv path."""
        d = self.dir / "fakebin"
        d.mkdir(exist_ok=True)
        p = d / "fabric-doctor"
        p.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --csv ] && csv=$2; shift; done\n' + body + "\n")
        p.chmod(0o755)
        return d

    def test_a_failed_check_drains_with_the_finding_as_reason(self):
        r = self.run_check("--node", "gpu-07", "--dry-run", tree=fail_tree)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f'scontrol update nodename=gpu-07 state=drain reason="{FAIL_REASON}"\n')
        self.assertIn("fabricbench-healthcheck: gpu-07: fail: limits.memlock memlock 8 MiB", r.stderr)
        self.assertEqual(self.files(), ["fail_tree"], "the doctor's files go to a temporary folder, removed after")

    def test_the_node_name_comes_from_slurmd(self):
        r = self.run_check("--dry-run", tree=fail_tree, env={"SLURMD_NODENAME": "n042"})
        self.assertIn("nodename=n042 ", r.stdout)

    def test_a_healthy_host_is_left_alone(self):
        r = self.run_check("--node", "n1", "--dry-run", tree=healthy_tree)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    def test_a_warning_only_logs_and_strict_drains(self):
        log = self.dir / "hc.log"
        r = self.run_check("--node", "n1", "--dry-run", "--log", log, tree=warn_tree)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.assertIn("n1: warning: host.thp defrag always", r.stderr)
        self.assertIn("fabricbench-healthcheck: n1: warning: host.thp defrag always", log.read_text())
        r = self.run_check("--node", "n1", "--dry-run", "--strict", tree=warn_tree)
        self.assertEqual(r.stdout, 'scontrol update nodename=n1 state=drain reason="fabricbench: host.thp defrag always"\n')

    def test_a_doctor_that_cannot_run_drains_nothing(self):
        cases = [(None, self.dir / "nowhere", "fabric-doctor not found"),
                 ("kill -SEGV $$", None, "killed by signal 11"),
                 ("exit 3", None, "exit status 3"),
                 ("exit 1", None, "findings"),  # exit 1 and no CSV
                 ('echo "host,rank,check,subject,status,value" > "$csv"; exit 1', None, "recorded no failed check")]
        for body, bin_dir, message in cases:
            with self.subTest(message):
                bin_dir = bin_dir or self.fake_doctor(body)
                # Even as a prolog: a check that cannot run is not the node's fault.
                r = self.run_check("--node", "n1", "--dry-run", "--prolog", tree=fail_tree, bin_dir=bin_dir)
                self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
                self.assertIn(message, r.stderr)
                self.assertIn("left as it is", r.stderr)

    def test_reads_quoted_csv_and_counts_the_other_failures(self):
        csv = ('host,rank,check,subject,status,value,expected,hint\\n'
               'n1,-1,rdma.link,mlx5_0/1,fail,"Ethernet, 100 Gb/s, no RoCE v2 GID",x,"a ""quoted"", hint"\\n'
               'n1,-1,host.thp,defrag,warn,always,,\\n'
               'n1,-1,gpu.ecc,GPU3,fail,"12 $(reboot) `x`",0,\\n')
        bin_dir = self.fake_doctor(f"printf '{csv}' > \"$csv\"; exit 1")
        r = self.run_check("--node", "n1", "--dry-run", bin_dir=bin_dir)
        self.assertEqual(r.stdout, 'scontrol update nodename=n1 state=drain '
                                   'reason="fabricbench: rdma.link mlx5_0/1 Ethernet, 100 Gb/s, no RoCE v2 GID (+1 more)"\n',
                         r.stderr)
        self.assertIn("fail: gpu.ecc GPU3 12 $(reboot) `x`", r.stderr)
        # Nothing a shell would expand reaches the reason.
        r = self.run_check("--node", "n1", "--dry-run", bin_dir=self.fake_doctor(
            "printf 'host,rank,check,subject,status,value\\nn1,-1,gpu.ecc,GPU3,fail,\"12 $(reboot) `x`\"\\n' > \"$csv\"; exit 1"))
        self.assertEqual(r.stdout, 'scontrol update nodename=n1 state=drain reason="fabricbench: gpu.ecc GPU3 12 _(reboot) _x_"\n')

    def test_finds_the_doctor_in_an_installed_prefix(self):
        prefix = self.dir / "prefix"
        (prefix / "share/fabricbench/slurm").mkdir(parents=True)
        (prefix / "bin").mkdir()
        (prefix / "bin/fabric-doctor").symlink_to(BIN / "fabric-doctor")
        shutil.copy2(HEALTHCHECK, prefix / "share/fabricbench/slurm/healthcheck.sh")
        root = self.dir / "fail_tree"
        fail_tree(root)
        r = subprocess.run([str(prefix / "share/fabricbench/slurm/healthcheck.sh"), "--node", "n1", "--dry-run"],
                           capture_output=True, text=True, timeout=120, preexec_fn=low_memlock,
                           env=clean_env(FABRICBENCH_TEST_SYSROOT=str(root), FABRICBENCH_BIN=""))
        self.assertIn(FAIL_REASON, r.stdout, r.stderr)

    def test_as_a_prolog_a_failure_exits_1_so_slurm_requeues_the_job(self):
        r = self.run_check("--node", "n1", "--dry-run", "--prolog", tree=fail_tree)
        self.assertEqual(r.returncode, 1, r.stderr)
        r = self.run_check("--node", "n1", "--dry-run", tree=fail_tree, env={"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"})
        self.assertEqual(r.returncode, 1, r.stderr)
        r = self.run_check("--node", "n1", "--dry-run", tree=warn_tree, env={"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"})
        self.assertEqual((r.returncode, r.stdout), (0, ""), "a warning does not stop the job")

    def baseline(self, name, bytes_, bw_mbps):
        path = self.dir / name
        path.write_text(f"[baseline]\ntolerance = 10%\n\n[results/p2p bw]\ntest = bw\nbytes = {bytes_}\n"
                        f"bw_mbps = {bw_mbps}\n")
        return path

    def test_a_baseline_measures_the_nodes_bandwidth_and_drains_below_it(self):
        # fabric-p2p between two local ranks stands in for the default fabric-coll over the node's GPUs: the same
        # mpirun, --baseline and reading of the tool's "below baseline" line.
        bandwidth = ["--bandwidth", "fabric-p2p --test bw --sizes 1M -n 5", "--ranks", "2"]
        env = {"OMPI_MCA_btl": "self,vader"}
        r = self.run_check("--node", "n1", "--dry-run", "--baseline", self.baseline("high.ini", 1 << 20, 1e9),
                           *bandwidth, tree=healthy_tree, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r'^scontrol update nodename=n1 state=drain reason="fabricbench: bandwidth '
                                   r'results/p2p bw bw_mbps [0-9.e+]+ against 1e\+09"\n$')
        self.assertIn("bandwidth below the baseline: [results/p2p bw] bw_mbps (bytes=1048576, test=bw):", r.stderr)
        # Within the baseline: nothing drained, a notice logged.
        r = self.run_check("--node", "n1", "--dry-run", "--baseline", self.baseline("low.ini", 1 << 20, 1), *bandwidth,
                           tree=healthy_tree, env=env)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.assertIn("bandwidth within the baseline: fabric-p2p --test bw --sizes 1M -n 5 on 2 rank(s)", r.stderr)
        # A baseline of another size than the command measures gives no answer: logged, the node left as it is.
        r = self.run_check("--node", "n1", "--dry-run", "--baseline", self.baseline("other.ini", 2 << 20, 1e9),
                           *bandwidth, tree=healthy_tree, env=env)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.assertIn("gave no answer (exit status 1): node left as it is; fabric-p2p: baseline entry not measured",
                      r.stderr)
        # As a prolog, a bandwidth below the baseline stops the job like a failed check.
        r = self.run_check("--node", "n1", "--dry-run", "--prolog", "--baseline", self.baseline("p.ini", 1 << 20, 1e9),
                           *bandwidth, tree=healthy_tree, env=env)
        self.assertEqual(r.returncode, 1, r.stderr)

    def test_bad_options_exit_2_in_one_line(self):
        missing = str(self.dir / "none.ini")
        here = str(pathlib.Path(__file__))
        for args, message in ((["--bogus"], "unknown option '--bogus'"), (["--node"], "--node needs a value"),
                              (["--node", "a;reboot"], "--node 'a;reboot'"), (["--bin="], "--bin needs a value"),
                              (["--baseline", missing], f"--baseline '{missing}': no readable file"),
                              (["--baseline", here, "--bandwidth", "rm -rf /"],
                               "--bandwidth 'rm -rf /': a command of fabric-coll, fabric-p2p or fabric-verbs"),
                              (["--baseline", here, "--ranks", "0"], "--ranks '0': a whole number from 1")):
            with self.subTest(args=args):
                r = subprocess.run([str(HEALTHCHECK)] + args, capture_output=True, text=True, timeout=30, env=clean_env())
                self.assertEqual((r.returncode, r.stdout), (2, ""))
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                self.assertIn(message, r.stderr)
        r = subprocess.run([str(HEALTHCHECK), "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--dry-run", r.stdout)


if __name__ == "__main__":
    unittest.main()
