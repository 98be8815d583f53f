"""fabric-report where the user's Python is. The shell wrapper (analysis/fabric-report) runs FABRICBENCH_PYTHON when
set, else the python3 on the PATH when it can import h5py, else /usr/bin/python3 when that can, else says in one line
what to install (exit 2). The package installs the Python way: `pip install --no-build-isolation --no-deps` of
analysis/ into a venv made with --system-site-packages (offline, Debian's setuptools) gives a working `fabric-report`
entry point that runs with the source tree out of sight."""
import os
import pathlib
import re
import shutil
import subprocess
import unittest

from fbtest import LaunchTest

SOURCE = pathlib.Path(__file__).resolve().parents[2]
WRAPPER = SOURCE / "analysis" / "fabric-report"
SYSTEM = "/usr/bin/python3"


def has(python, module):
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


class PythonChoice(LaunchTest):
    """Fake python3 commands that log each call and hand it to the real one (with or without its site-packages)."""

    def setUp(self):
        super().setUp()
        if not has(SYSTEM, "h5py"):
            self.skipTest(f"{SYSTEM} cannot import h5py (ci/install-deps.sh installs python3-h5py)")
        self.log = self.dir / "calls.log"
        self.run_file = self.dir / "run.h5"
        import h5py
        with h5py.File(self.run_file, "w") as f:
            f.attrs.update({"format": "fabricbench", "schema_version": 2, "tool": "fabric-made-up", "status": "complete",
                            "hosts": "h1", "world_size": 1})

    def fake(self, name, with_h5py):
        """A folder holding a `python3` that logs `name` and its arguments; without h5py it runs Python with -S (no
        site-packages), as a venv or pyenv Python without the packages would be."""
        folder = self.dir / name
        folder.mkdir()
        exe = folder / "python3"
        flags = "" if with_h5py else "-S "
        exe.write_text(f'#!/bin/sh\necho "{name} $*" >> {self.log}\nexec {SYSTEM} {flags}"$@"\n')
        exe.chmod(0o755)
        return exe

    def wrapper(self, path_dirs, **env):
        full = {k: v for k, v in os.environ.items() if k not in ("FABRICBENCH_PYTHON", "PYTHONPATH")}
        full["PATH"] = os.pathsep.join([str(d) for d in path_dirs] + ["/usr/bin", "/bin"])
        full.update(env)
        return subprocess.run([str(WRAPPER), "show", str(self.run_file)], capture_output=True, text=True, env=full,
                              cwd=self.dir)

    def ran(self):
        """Which fake ran fabric-report itself (not only the h5py probe)."""
        calls = self.log.read_text().splitlines() if self.log.exists() else []
        return [c.split()[0] for c in calls if "fabricbench_analysis.cli" in c]

    def test_the_python3_on_the_path_that_has_h5py_runs_it(self):
        venv = self.fake("venv", with_h5py=True)
        r = self.wrapper([venv.parent])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("status: complete", r.stdout)
        self.assertEqual(self.ran(), ["venv"])

    def test_a_python3_on_the_path_without_h5py_gives_way_to_the_system_one(self):
        bare = self.fake("bare", with_h5py=False)
        system = self.fake("system", with_h5py=True)
        r = self.wrapper([bare.parent], FABRICBENCH_TEST_SYSTEM_PYTHON=str(system))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ran(), ["system"])
        self.assertIn("bare -c import h5py", self.log.read_text(), "the PATH's python3 was asked first")

    def test_fabricbench_python_comes_first(self):
        venv = self.fake("venv", with_h5py=True)
        chosen = self.fake("chosen", with_h5py=True)
        r = self.wrapper([venv.parent], FABRICBENCH_PYTHON=str(chosen))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ran(), ["chosen"])

    def test_no_python_with_h5py_is_one_line_naming_what_to_install(self):
        bare = self.fake("bare", with_h5py=False)
        r = self.wrapper([bare.parent], FABRICBENCH_TEST_SYSTEM_PYTHON=str(self.dir / "no-such-python"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("fabric-report: no Python with h5py"), lines[0])
        self.assertIn(str(bare), lines[0])
        self.assertIn("python3-h5py python3-pandas python3-openpyxl python3-matplotlib", lines[0])
        self.assertIn("FABRICBENCH_PYTHON", lines[0])
        self.assertEqual(self.ran(), [])

    def test_a_fabricbench_python_without_h5py_is_refused_by_name(self):
        bare = self.fake("bare", with_h5py=False)
        r = self.wrapper([], FABRICBENCH_PYTHON=str(bare))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(f"FABRICBENCH_PYTHON={bare} cannot import h5py", r.stderr)


class PipInstall(LaunchTest):
    def test_a_venv_with_system_site_packages_gets_a_working_fabric_report(self):
        if not has(SYSTEM, "venv") or not has(SYSTEM, "setuptools") or not has(SYSTEM, "pip"):
            self.skipTest("needs python3-venv, python3-setuptools and python3-pip (ci/install-deps.sh installs them)")
        if not has(SYSTEM, "h5py"):
            self.skipTest(f"{SYSTEM} cannot import h5py (ci/install-deps.sh installs python3-h5py)")
        # A copy of analysis/: the build writes build/ and *.egg-info beside the sources.
        src = self.dir / "src"
        shutil.copytree(SOURCE / "analysis", src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        venv = self.dir / "venv"
        r = subprocess.run([SYSTEM, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FABRICBENCH_PYTHON")}
        env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from an index
        r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                            str(src)], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        entry = venv / "bin" / "fabric-report"
        self.assertTrue(entry.exists(), list((venv / "bin").iterdir()))
        shutil.rmtree(src)  # the installed copy is what runs
        # A real results file, read by the entry point from elsewhere with no PYTHONPATH.
        run = self.dir / "run.h5"
        r = self.mpirun(1, "fabric-doctor", ["--checks", "host", "--output", run.name])
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        r = subprocess.run([str(entry), "show", str(run)], capture_output=True, text=True, env=env, cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tool: fabric-doctor", r.stdout)
        r = subprocess.run([str(entry), "metrics", str(run)], capture_output=True, text=True, env=env, cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('fabricbench_run_status{tool="fabric-doctor",status="complete"} 1', r.stdout)
        # The page reaches every subpackage (read, judge, draw, export): all of them were installed.
        r = subprocess.run([str(entry), "html", str(run), str(self.dir / "run.html")], capture_output=True, text=True,
                           env=env, cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fabric-doctor", (self.dir / "run.html").read_text())
        r = subprocess.run([str(entry), "plot", str(self.dir / "nope.h5")], capture_output=True, text=True, env=env)
        self.assertEqual((r.returncode, len(r.stderr.splitlines())), (2, 1), r.stderr)
        where = subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import fabricbench_analysis; print(fabricbench_analysis.__file__)"],
                               capture_output=True, text=True, env=env, cwd="/")
        self.assertTrue(where.stdout.startswith(str(venv)), where.stdout + where.stderr)

    def test_the_package_version_is_the_tools_version(self):
        project = re.search(r"project\(fabricbench VERSION ([0-9.]+)", (SOURCE / "CMakeLists.txt").read_text())
        package = re.search(r'^version = "([0-9.]+)"', (SOURCE / "analysis" / "pyproject.toml").read_text(), re.M)
        self.assertEqual(package.group(1), project.group(1))


if __name__ == "__main__":
    unittest.main()
