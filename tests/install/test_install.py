"""An installed prefix, and a build tree moved elsewhere, run with the source and build trees out of reach.

The tools find their shipped files (configs/sweep.ini ...) relative to their own location, never through a path
compiled in on the build machine: `cmake --install` to a temporary prefix, then a private mount namespace lays an
empty tmpfs over the source tree and the build tree, and fabric-p2p, fabric-sweep and fabric-report run from the
prefix; the unit tests run from a moved copy of the build tree the same way. Needs root (mount namespaces)."""
import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile
import unittest

SOURCE = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("FABRICBENCH_BUILD_DIR", SOURCE / "build"))
MPIRUN = "mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader"


def can_hide_trees():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    return r.returncode == 0


@unittest.skipUnless(can_hide_trees(), "skipped: needs root (a private mount namespace hides the trees)")
class OutOfTheTrees(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-install-"))
        self.assertFalse(str(self.dir).startswith(str(SOURCE)), "scratch must lie outside the trees it hides")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def hidden(self, script, timeout=300):
        """Runs `script` (sh) with empty tmpfs laid over the source and build trees."""
        trees = [p for p in {SOURCE, BUILD} if p.exists()]
        outermost = [p for p in trees if not any(q != p and q in p.parents for q in trees)]
        mounts = " && ".join(f"mount -t tmpfs fabricbench-hidden {shlex.quote(str(p))}" for p in outermost)
        full = f"set -e; {mounts}; test ! -e {shlex.quote(str(SOURCE / 'configs'))}; {script}"
        # mpirun's session directory in the scratch folder, not /tmp's shared one (tests/fbtest.py's SESSIONS says why)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_orte_tmpdir_base=str(self.dir / "ompi"))
        env.pop("FABRICBENCH_DATA_DIR", None)
        env.pop("PYTHONPATH", None)
        return subprocess.run(["timeout", str(timeout), "unshare", "--mount", "--propagation", "private", "sh", "-c",
                               full], cwd=self.dir, env=env, capture_output=True, text=True)

    def test_an_installed_prefix_runs_without_the_trees(self):
        prefix = self.dir / "prefix"
        r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for path in ("bin/fabric-p2p", "bin/fabric-coll", "bin/fabric-sweep", "bin/fabric-mpirun", "bin/fabric-rail-exec", "bin/fabric-report",
                     "share/fabricbench/configs/sweep.ini", "share/fabricbench/analysis/fabricbench_analysis/cli.py",
                     "share/fabricbench/slurm/healthcheck.sh"):
            self.assertTrue((prefix / path).exists(), path)
        bin_ = prefix / "bin"
        # The script runs under `set -e`: the sweep's exit status is caught, since 1 (a verdict) is fine here.
        script = (f"{MPIRUN} -np 2 {bin_}/fabric-p2p --test latency --sizes 8 -n 5 --output p2p.h5 -q; rc=0; "
                  f"{MPIRUN} -np 4 {bin_}/fabric-sweep --emulate-hosts 1 --metric p2p_latency "
                  f"-n 5 -w 1 --output sweep.h5 -q || rc=$?; echo sweep-exit=$rc; "
                  f"{bin_}/fabric-report show sweep.h5 > report.txt")
        r = self.hidden(script)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"sweep-exit=[01]\b", r.stderr)  # 1 is a verdict on a noisy machine
        self.assertNotIn("cannot open", r.stderr)
        report = (self.dir / "report.txt").read_text()
        self.assertIn("status: complete", report)
        import h5py
        for name in ("p2p.h5", "sweep.h5"):
            with h5py.File(self.dir / name) as f:
                self.assertEqual(f.attrs["status"], "complete", name)

    def test_a_moved_build_tree_passes_its_unit_tests(self):
        moved = self.dir / "moved"
        (moved / "tests").mkdir(parents=True)
        shutil.copy2(BUILD / "tests" / "fabricbench_unit_tests", moved / "tests")
        shutil.copy2(BUILD / "tests" / "libfabricbench_fake_nvml.so", moved / "tests")  # NVML's stand-in beside it
        shutil.copytree(BUILD / "share", moved / "share")
        # The doctor's parser tests read the GPU machine's logs, which the build put next to the binary: they
        # travel with it, and the binary finds them relative to itself (no FABRICBENCH_FIXTURES).
        shutil.copytree(BUILD / "tests" / "fixtures", moved / "tests" / "fixtures")
        r = self.hidden(f"env -u FABRICBENCH_FIXTURES {moved}/tests/fabricbench_unit_tests --gtest_brief=1")
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr)
        self.assertIn("PASSED", r.stdout)


if __name__ == "__main__":
    unittest.main()
