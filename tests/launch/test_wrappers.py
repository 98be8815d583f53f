"""launch/fabric-mpirun and launch/fabric-srun: the commands they build, and host names that never reach a shell."""
import pathlib
import subprocess
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
        path = pathlib.Path("/tmp/fabricbench-hostfile-test")
        path.write_text("# nodes\nn1 slots=8\n\nn2\n")
        r = run("fabric-mpirun", "--hostfile", str(path), "--ranks-per-node", "2", "--dry-run", "--", "x")
        path.unlink()
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
