"""The main command's install (ci/install-deps.sh main, run by launch/quickstart.sh) leaves the results usable: the
next steps the tools print (`# plots: fabric-report plot FILE`; html, excel) import matplotlib and openpyxl, which
the main set must hold; the build's set (installed first by ci/test.sh) holds what CMake requires. The script is run as a user (a fake `id`) with a fake `dpkg-query` that finds nothing
installed: it names every package of the set it would install."""
import os
import pathlib
import re
import subprocess
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def would_install(mode):
    with tempfile.TemporaryDirectory() as bin_dir:
        for name, body in (("id", "echo 1000"), ("dpkg-query", "exit 1")):
            p = pathlib.Path(bin_dir) / name
            p.write_text(f"#!/bin/sh\n{body}\n")
            p.chmod(0o755)
        r = subprocess.run(["bash", str(ROOT / "ci" / "install-deps.sh"), mode], capture_output=True, text=True,
                           timeout=30, env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"))
    assert r.returncode == 1, r.stderr
    line = [l for l in r.stderr.splitlines() if "missing packages:" in l][0]
    return set(line.split("missing packages:")[1].split("(")[0].split())


class MainInstall(unittest.TestCase):
    def test_the_main_set_holds_what_the_reports_import(self):
        main = would_install("main")
        for package in ("python3-matplotlib", "python3-openpyxl", "python3-h5py", "python3-pandas"):
            self.assertIn(package, main)
        # What fabric-report's drawings and workbooks import, each in the main set.
        src = ROOT / "analysis" / "fabricbench_analysis"
        imported = {m for m in ("matplotlib", "openpyxl") if any(
            re.search(rf"^\s*(import|from) {m}\b", f.read_text(), re.M) for f in src.rglob("*.py"))}
        self.assertEqual(imported, {"matplotlib", "openpyxl"})
        self.assertLessEqual({f"python3-{m}" for m in imported}, main)
        self.assertLessEqual(main, would_install("tests"))  # the tests' set holds the main one's

    def test_the_build_set_holds_what_cmake_finds_and_no_more(self):
        # ci/test.sh installs this set first and builds while the rest installs: what the top CMakeLists.txt
        # requires (find_package ... REQUIRED) must be in it, and nothing of the analysis package or the rigs.
        build = would_install("build")
        required = set(re.findall(r"find_package\((\w+) REQUIRED", (ROOT / "CMakeLists.txt").read_text()))
        self.assertEqual(required, {"MPI", "HDF5", "Boost", "fmt", "GTest"})
        for package in ("libopenmpi-dev", "libhdf5-dev", "libboost-program-options-dev", "libfmt-dev", "libgtest-dev",
                        "cmake", "ninja-build", "build-essential"):
            self.assertIn(package, build)
        self.assertIn("clang", build)  # ci/test.sh's compiler of the sanitized tree, not the main job's
        self.assertLessEqual(build - {"clang"}, would_install("main"))
        self.assertLessEqual(build, would_install("tests"))
        self.assertFalse({p for p in build if p.startswith("python3")}, build)


if __name__ == "__main__":
    unittest.main()
