"""Helpers for the tests that launch fabricbench executables: mpirun with the transports of RIGS.md, a scratch
directory per test, and reading results back through the analysis package."""
import atexit
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

import fabricbench_analysis

BIN = pathlib.Path(os.environ.get("FABRICBENCH_BIN", pathlib.Path(__file__).resolve().parents[1] / "build" / "benchmarks"))

TRANSPORTS = {
    "vader": ["--mca", "btl", "self,vader"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}


def mpirun_command(np, exe, args, transport="vader", env_names=()):
    cmd = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none"] + TRANSPORTS[transport]
    for name in env_names:
        cmd += ["-x", name]
    return cmd + [str(BIN / exe)] + [str(a) for a in args]


def collectives():
    """The operations of fabric-coll's table, as its --help names them ("Operations: all_reduce, ...")."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run([str(BIN / "fabric-coll"), "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    line = next(l for l in out.splitlines() if l.startswith("Operations: "))
    return line[len("Operations: "):].rstrip(".").split(", ")


# Open MPI 4 keeps every job's session directory under /tmp/ompi.HOST.UID, and the job that ends last removes that
# folder: a job starting while another ends can find it gone between its mkdir and its stat ("A call to mkdir was
# unable to create the desired directory ... File exists", open-mpi/ompi#8510). A clean-clone CI run failed so when
# mpi.test_bad_input ran three refused jobs at once (modules also run beside each other). So each launch has a folder
# of its own for it (orte_tmpdir_base), under this one of the process's: short, as Unix sockets are made under it.
SESSIONS = tempfile.mkdtemp(prefix="fb-")
atexit.register(shutil.rmtree, SESSIONS, ignore_errors=True)

# For jobs that are refused (exit 2 on every rank): mpirun then waits odls_base_sigkill_timeout (1 s) between the
# SIGTERM and the SIGKILL it sends the job's other processes, and took 1.4-2.4 s against 0.4 s for a passing run.
# Not for jobs that write results: their ranks need that second after SIGTERM.
QUICK_ABORT = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


class LaunchTest(unittest.TestCase):
    """Each test runs in its own scratch directory (its cwd for the launched job); each launch's environment (self.env)
    gives its mpirun a session directory of its own (SESSIONS)."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-test-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, **extra):
        env = dict(os.environ)
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        env["OMPI_MCA_orte_tmpdir_base"] = tempfile.mkdtemp(dir=SESSIONS)
        env.update(extra)
        return env

    def mpirun(self, np, exe, args, transport="vader", timeout=240, env=None, refused=False):
        """`refused`: the job is expected to be refused (exit 2), so mpirun need not wait before its SIGKILL."""
        env = (env or {}) | (QUICK_ABORT if refused else {})
        cmd = ["timeout", str(timeout)] + mpirun_command(np, exe, args, transport, env.keys())
        return subprocess.run(cmd, cwd=self.dir, env=self.env(**env), capture_output=True, text=True)

    def mpiruns(self, np, exe, arg_lists, refused=False, at_once=3):
        """self.mpirun for each of `arg_lists`, `at_once` at a time, in order: for lists of refused jobs, each mostly
        mpirun's start-up (0.8 s for half a core-second)."""
        with concurrent.futures.ThreadPoolExecutor(at_once) as pool:
            return list(pool.map(lambda args: self.mpirun(np, exe, args, refused=refused), arg_lists))

    def load(self, name):
        return fabricbench_analysis.load(self.dir / name)

    def files(self):
        return sorted(p.name for p in self.dir.iterdir())

    def assert_refused(self, result, program, expected):
        """Bad input: exit status 2, exactly one line of ours naming the problem, no table, no output file."""
        ours = [line for line in result.stderr.splitlines() if line.startswith(f"{program}:")]
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertEqual(len(ours), 1, result.stderr)
        self.assertIn(expected, ours[0])
        self.assertEqual(result.stdout, "")
        self.assertEqual(self.files(), [], "no output file")
