"""launch/slurm/healthcheck.sh on a real Slurm (tests/rigs/slurm_cluster.sh on the emulated cluster): of four hosts,
h2 fails a cheap check (an Active RDMA port in its FABRICBENCH_TEST_SYSROOT tree with an 8 MiB locked-memory limit),
h3 only warns (THP defrag=always), h4 has no fabric-doctor and h1 is healthy. Only h2 is drained, with the finding as
its reason, whether the script runs inside each host as slurmd would, as slurmd's HealthCheckProgram, or as a Prolog
(which also keeps the job off h2). Needs root, slurm-wlm and munge."""
import os
import pathlib
import subprocess
import time
import unittest

from fbtest import BIN, LaunchTest
from launch.test_healthcheck import FAIL_REASON, HEALTHCHECK, clean_env, fail_tree, healthy_tree, low_memlock, warn_tree
from rigs.test_slurm_sweep import free_net, needs_slurm, slurm
from rigs.test_netns_sweep import rig

TREES = {"h1": healthy_tree, "h2": fail_tree, "h3": warn_tree, "h4": healthy_tree}


@needs_slurm
class SlurmHealthCheck(LaunchTest):
    def setUp(self):
        super().setUp()
        self.rig = f"k{os.getpid() % 100000}"
        self.hosts = {short: f"{self.rig}-{short}" for short in TREES}
        self.conf = f"/run/fabricbench-rig-{self.rig}/slurm/slurm.conf"
        self.log = self.dir / "healthcheck.log"
        for short, tree in TREES.items():
            tree(self.dir / "root" / self.hosts[short])
        # What slurmd gives a HealthCheckProgram is SLURMD_NODENAME and little else (no PATH, no SLURM_CONF): site
        # settings travel in a wrapper, the way docs/operations.md shows. This one also records the environment.
        self.wrapper = self.dir / "healthcheck-wrapper"
        self.wrapper.write_text(f"""#!/bin/sh
env > {self.dir}/env-$SLURMD_NODENAME
case "$SLURMD_NODENAME" in *-h4) bin={self.dir}/no-bin ;; *) bin={BIN} ;; esac
SLURM_CONF={self.conf} FABRICBENCH_TEST_SYSROOT={self.dir}/root/%h exec {HEALTHCHECK} --bin "$bin" --log {self.log}
""")
        self.wrapper.chmod(0o755)
        slurm("down", self.rig, check=False)
        rig("down", self.rig, check=False)

    def tearDown(self):
        slurm("down", self.rig, check=False)
        rig("down", self.rig, check=False)
        super().tearDown()

    def bring_up(self, *conf_lines):
        rig("up", self.rig, free_net(), len(TREES))
        extra = self.dir / "extra.conf"
        extra.write_text("".join(line + "\n" for line in conf_lines))
        # slurmd and what it starts inherit the 8 MiB locked-memory limit (Debian's default) that h2's port fails.
        up = subprocess.run([str(pathlib.Path(__file__).parent / "slurm_cluster.sh"), "up", self.rig, str(extra)],
                            capture_output=True, text=True, preexec_fn=low_memlock)
        self.assertEqual(up.returncode, 0, up.stdout + up.stderr)

    def sinfo(self, *args):
        r = subprocess.run(["sinfo"] + list(args), capture_output=True, text=True, env=clean_env(SLURM_CONF=self.conf))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def drained(self):
        return dict(line.split("|", 1) for line in self.sinfo("-R", "-h", "-o", "%n|%E").splitlines())

    def wait_for(self, condition, seconds=60):
        deadline = time.monotonic() + seconds
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.5)
        return condition()

    def log_lines(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def assert_only_h2_drained_and_the_rest_logged(self):
        self.assertEqual(self.drained(), {self.hosts["h2"]: FAIL_REASON})
        self.assertRegex(self.sinfo("-R"), rf"fabricbench: limits\. +root .* {self.hosts['h2']}\n")
        text = "\n".join(self.log_lines())
        self.assertIn(f"{self.hosts['h3']}: warning: host.thp defrag always", text)
        self.assertIn(f"{self.hosts['h4']}: fabric-doctor not found", text)
        self.assertNotIn(self.hosts["h1"], text)

    def test_run_inside_each_host_as_slurmd_would(self):
        self.bring_up()
        state = f"/run/fabricbench-rig-{self.rig}"
        for host in self.hosts.values():
            # slurmd's environment: SLURMD_NODENAME only. nsenter rather than `ip netns exec`: the host's own UTS
            # namespace too, so fabric-doctor sees the host name slurmd's children see (%h of the sysroot).
            r = subprocess.run(["nsenter", f"--net=/run/netns/{host}", f"--uts={state}/uts/{host}", "--",
                                "env", "-i", f"SLURMD_NODENAME={host}", str(self.wrapper)],
                               capture_output=True, text=True, timeout=120, preexec_fn=low_memlock)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_only_h2_drained_and_the_rest_logged()
        # Run again: an already drained node keeps its reason (an operator's own note is never overwritten).
        before = self.sinfo("-R", "-h", "-o", "%H")
        r = subprocess.run(["nsenter", f"--net=/run/netns/{self.hosts['h2']}", f"--uts={state}/uts/{self.hosts['h2']}",
                            "--", "env", "-i", f"SLURMD_NODENAME={self.hosts['h2']}", str(self.wrapper)],
                           capture_output=True, text=True, timeout=120, preexec_fn=low_memlock)
        self.assertIn("already drained (IDLE+DRAIN): reason left as it is", r.stderr)
        self.assertEqual(self.sinfo("-R", "-h", "-o", "%H"), before)

    def test_slurmd_runs_it_as_health_check_program(self):
        self.bring_up(f"HealthCheckProgram={self.wrapper}", "HealthCheckInterval=2")
        h2, h3 = self.hosts["h2"], self.hosts["h3"]
        self.assertTrue(self.wait_for(lambda: h2 in self.drained()), self.log_lines())
        # At slurmd's start and then every interval: wait for a second round of h3's warning.
        self.assertTrue(self.wait_for(lambda: sum(f"{h3}: warning" in l for l in self.log_lines()) >= 2), self.log_lines())
        self.assert_only_h2_drained_and_the_rest_logged()
        env = dict(l.split("=", 1) for l in (self.dir / f"env-{h2}").read_text().splitlines() if "=" in l)
        self.assertEqual(env["SLURMD_NODENAME"], h2)
        self.assertNotIn("SLURM_SCRIPT_CONTEXT", env)

    def test_as_a_prolog_the_job_does_not_start_on_the_failing_node(self):
        self.bring_up(f"Prolog={self.wrapper}", "PrologFlags=Alloc")
        env = clean_env(SLURM_CONF=self.conf)
        run = lambda *a: subprocess.run(["timeout", "60"] + list(a), capture_output=True, text=True, env=env, cwd=self.dir)
        r = run("srun", "-w", self.hosts["h1"], "-N", "1", "hostname")
        self.assertEqual((r.returncode, r.stdout), (0, f"{self.hosts['h1']}\n"), r.stderr)
        # A batch job: the prolog drains h2 and exits 1, Slurm requeues the job held; it never ran.
        r = run("sbatch", "-w", self.hosts["h2"], "-o", str(self.dir / "job-%j.out"), "--wrap", "hostname")
        self.assertEqual(r.returncode, 0, r.stderr)
        job = r.stdout.split()[-1]
        held = lambda: "launch failed requeued held" in run("squeue", "-h", "-j", job, "-o", "%r").stdout
        self.assertTrue(self.wait_for(held, 30), run("squeue", "-j", job).stdout)
        self.assertEqual(self.drained(), {self.hosts["h2"]: FAIL_REASON}, "Slurm keeps the prolog's own reason")
        self.assertEqual(list(self.dir.glob("job-*.out")), [])
        # srun onto the drained node is refused; with the node resumed, srun's own prolog run stops the job.
        subprocess.run(["scontrol", "release", job], env=env)
        subprocess.run(["scancel", job], env=env)
        subprocess.run(["scontrol", "update", f"nodename={self.hosts['h2']}", "state=resume"], env=env, check=True)
        r = run("srun", "-w", self.hosts["h2"], "-N", "1", "hostname")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"Prolog failure on node {self.hosts['h2']}", r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(self.drained(), {self.hosts["h2"]: FAIL_REASON})
        # h3 warned in its prolog only if a job went there; h1's job ran without a word.
        self.assertNotIn(self.hosts["h1"], "\n".join(self.log_lines()))


if __name__ == "__main__":
    unittest.main()
