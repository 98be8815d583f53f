"""Every fabric-report subcommand meets the files a user can get wrong with one line on stderr naming the file or
option and what is allowed, exit status 2, no traceback and no output left behind: a missing file, a directory, a
text file, an HDF5 file that is not fabricbench's, a truncated file, a run still "running"; an output that cannot be
written (/proc), in a folder that does not exist, a directory where a file is expected (a file where a folder is),
the input itself, an empty name. `show` alone reads a running run: the rows so far, one line saying so, exit 1."""
import contextlib
import errno
import io
import pathlib
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import h5py

from fabricbench_analysis import cli
from fabricbench_analysis.judge import compare
from fbtest import LaunchTest

WRAPPER = pathlib.Path(__file__).resolve().parents[2] / "analysis" / "fabric-report"

# Each subcommand with RUN in the place of the run file and OUT in that of its output (file or folder), if it has one.
COMMANDS = {
    "show": (["show", "RUN"], None),
    "plot": (["plot", "RUN", "--out", "OUT"], "dir"),
    "compare": (["compare", "GOOD", "RUN"], None),
    "baseline": (["baseline", "RUN", "OUT"], "file"),
    "check": (["check", "RUN", "--baseline", "BASE"], None),
    "html": (["html", "RUN", "OUT"], "file"),
    "excel": (["excel", "RUN", "OUT"], "file"),
    "csv": (["csv", "RUN", "OUT"], "dir"),
    "json": (["json", "RUN", "OUT"], "file"),
    "metrics": (["metrics", "RUN", "OUT"], "file"),
}

# Bad run files: name in the scratch folder -> what the line says.
BAD_RUNS = {
    "missing.h5": "no such file",
    "folder.h5": "a directory; expected a fabricbench results file",
    "notes.txt": "not an HDF5 file; expected a fabricbench results file",
    "foreign.h5": "not a fabricbench results file (an HDF5 file without the format=fabricbench attribute)",
    "truncated.h5": "truncated or damaged",
    "half-header.h5": "truncated or damaged",
    "running.h5": "status 'running'",
    "future.h5": "schema_version 9: this fabric-report reads 1, 2",
}


def tree(folder: pathlib.Path) -> dict:
    """Every file under `folder` (hidden ones too) with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


class BadFiles(LaunchTest):
    @classmethod
    def setUpClass(cls):
        cls.files = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-badfiles-"))
        runner = LaunchTest()
        runner.dir = cls.files
        r = runner.mpirun(2, "fabric-p2p", ["--test", "bw", "--sizes", "64K", "-n", "5", "-q", "--output", "run.h5"])
        assert r.returncode == 0, r.stdout + r.stderr
        good = cls.files / "run.h5"
        data = good.read_bytes()
        (cls.files / "truncated.h5").write_bytes(data[:len(data) // 2])
        (cls.files / "half-header.h5").write_bytes(data[:40])  # the signature, half a superblock
        (cls.files / "notes.txt").write_text("results: fine\n")
        (cls.files / "folder.h5").mkdir()
        with h5py.File(cls.files / "foreign.h5", "w") as f:
            f["measurements"] = [1.0, 2.0, 3.0]
            f.attrs["format"] = "something-else"
        for name, attrs in (("running.h5", {"status": "running", "finished_at": ""}), ("future.h5", {"schema_version": 9})):
            shutil.copy(good, cls.files / name)
            with h5py.File(cls.files / name, "a") as f:
                f.attrs.update(attrs)
        compare.write_baseline(fabricbench_load(good), cls.files / "base.ini")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.files, ignore_errors=True)

    def argv(self, command, run="run.h5", out=None, base="base.ini"):
        """The argument list of `command` with its placeholders filled (OUT in the test's scratch folder)."""
        words, kind = COMMANDS[command]
        if out is None:
            out = str(self.dir / ("out" if kind == "dir" else f"out.{command}"))
        fill = {"RUN": str(self.files / run) if run else "", "GOOD": str(self.files / "run.h5"), "OUT": out,
                "BASE": str(self.files / base)}
        return [fill.get(w, w) for w in words]

    def report(self, argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
        return rc, out.getvalue(), err.getvalue()

    def assert_one_line(self, argv, expected_rc, *fragments):
        before, inputs = tree(self.dir), tree(self.files)
        rc, out, err = self.report(argv)
        lines = err.splitlines()
        self.assertEqual(rc, expected_rc, (argv, out, err))
        self.assertEqual(len(lines), 1, (argv, err))
        self.assertTrue(lines[0].startswith("fabric-report: "), lines[0])
        for fragment in fragments:
            self.assertIn(fragment, lines[0], argv)
        self.assertEqual(tree(self.dir), before, f"{argv}: nothing written, not even a temporary file")
        self.assertEqual(tree(self.files), inputs, f"{argv}: the inputs are untouched")
        return out

    def test_every_subcommand_refuses_every_bad_run_file(self):
        for command in COMMANDS:
            for name, message in BAD_RUNS.items():
                if command == "show" and name == "running.h5":
                    continue  # below: show reads it
                with self.subTest(command=command, run=name):
                    out = self.assert_one_line(self.argv(command, run=name), 2, name, message)
                    self.assertEqual(out, "")

    def test_an_empty_run_name_is_refused(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                self.assert_one_line(self.argv(command, run=""), 2, "an empty path")

    def test_a_running_run_is_refused_with_what_is_allowed(self):
        for command in COMMANDS:
            if command != "show":
                with self.subTest(command=command):
                    self.assert_one_line(self.argv(command, run="running.h5"), 2, "running.h5",
                                         "status 'running'", "allowed here: a finished run")

    def test_show_reads_a_running_run_and_says_it_did_not_complete(self):
        # An interrupted run stays readable: its rows so far, one line saying so, exit 1 (not complete).
        out = self.assert_one_line(self.argv("show", run="running.h5"), 1, "running.h5", "status 'running'",
                                   "rows written so far")
        self.assertIn("[results/p2p] 1 rows", out)
        self.assertIn("status: running", out)

    def test_a_file_still_open_for_writing_is_shown_and_refused_elsewhere(self):
        # The tool measuring holds HDF5's lock on its file; another process holds it here (the CLI runs in its own).
        live = self.dir / "live.h5"
        shutil.copy(self.files / "running.h5", live)
        script = "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); print('open', flush=True); sys.stdin.read()"
        holder = subprocess.Popen(["/usr/bin/python3", "-c", script, str(live)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "open")
            shown = subprocess.run([str(WRAPPER), "show", str(live)], capture_output=True, text=True)
            self.assertEqual(shown.returncode, 1, shown.stderr)
            self.assertIn("[results/p2p] 1 rows", shown.stdout)
            refused = subprocess.run([str(WRAPPER), "json", str(live)], capture_output=True, text=True)
            self.assertEqual(refused.returncode, 2, refused.stderr)
            self.assertEqual(len(refused.stderr.splitlines()), 1, refused.stderr)
            self.assertIn("open for writing by a run still measuring", refused.stderr)
        finally:
            holder.communicate("", timeout=30)

    def test_every_output_that_cannot_be_written_is_refused_before_anything_is_written(self):
        (self.dir / "a-file").write_text("not a folder\n")
        (self.dir / "a-folder").mkdir()
        for command, (_, kind) in COMMANDS.items():
            if kind is None:
                continue
            cases = [("/proc/nope" if kind == "dir" else "/proc/nope.out", "cannot"), ("", "an empty path")]
            if kind == "file":  # an output folder is made with its parents, a file's folder must exist
                cases += [(str(self.dir / "no-such-folder" / "x.out"), "does not exist"),
                          (str(self.dir / "a-folder"), "a directory; expected a file name"),
                          (str(self.files / "run.h5"), "the same file as the input"),
                          ("/dev/null", "not a regular file")]
            else:
                cases += [(str(self.dir / "a-file"), "a file; expected a folder"),
                          (str(self.dir / "a-file" / "below"), "is a file; expected a folder")]
            for out, message in cases:
                with self.subTest(command=command, out=out):
                    self.assert_one_line(self.argv(command, out=out), 2, out, message)

    def test_a_bad_baseline_is_refused(self):
        for base, message in (("missing.ini", "no such file"), ("folder.h5", "a directory; expected a file"),
                              ("notes.txt", "not a baseline file"), ("run.h5", "a binary file")):
            with self.subTest(base=base):
                self.assert_one_line(self.argv("check", base=base), 2, "--baseline", base, message)

    def test_usage_errors_are_one_line_naming_the_option_and_the_allowed_values(self):
        for argv, fragments in ((["plot", str(self.files / "run.h5"), "--format", "jpg"], ["--format", "'png', 'svg'"]),
                                (["nope"], ["'show'", "'plot'"]),
                                (["excel", str(self.files / "run.h5")], ["excel", "required: out"]),
                                (["show", str(self.files / "run.h5"), "--bogus"],
                                 ["show: --bogus: not an option of fabric-report show"])):
            with self.subTest(argv=argv):
                self.assert_one_line(argv, 2, *fragments)

    def test_a_write_that_fails_midway_leaves_nothing(self):
        def plot_then_fail(run, out_dir, fmt="png"):
            (pathlib.Path(out_dir) / "first.png").write_bytes(b"\x89PNG")
            raise OSError(errno.ENOSPC, "No space left on device")

        def excel_then_fail(run, out, include_samples=False):
            pathlib.Path(out).write_bytes(b"PK\x03\x04 half")
            raise OSError(errno.EIO, "Input/output error")

        with mock.patch("fabricbench_analysis.draw.plots.plot_run", plot_then_fail):
            self.assert_one_line(self.argv("plot", out=str(self.dir / "new" / "plots")), 3, "--out",
                                 "nothing written", "No space left")
        self.assertFalse((self.dir / "new").exists(), "the folders made for the output are gone too")
        (self.dir / "kept").mkdir()
        (self.dir / "kept" / "old.png").write_text("an earlier plot")
        with mock.patch("fabricbench_analysis.draw.plots.plot_run", plot_then_fail):
            self.assert_one_line(self.argv("plot", out=str(self.dir / "kept")), 3, "nothing written")
        self.assertEqual(sorted(p.name for p in (self.dir / "kept").iterdir()), ["old.png"])
        with mock.patch("fabricbench_analysis.cli.to_excel", excel_then_fail):
            self.assert_one_line(self.argv("excel"), 3, "OUT.xlsx", "nothing written", "Input/output error")

    def test_the_shell_wrapper_gives_the_same_one_line_without_a_traceback(self):
        r = subprocess.run([str(WRAPPER), "plot", str(self.files / "run.h5"), "--out", "/proc/nope"],
                           capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertNotIn("Traceback", r.stderr)
        self.assertRegex(r.stderr, r"^fabric-report: --out /proc/nope: cannot [^\n]*\n$")

    def test_good_files_still_work_after_a_refusal(self):
        # The checks refuse what is wrong, not what is right: each subcommand on the good run.
        for command in COMMANDS:
            with self.subTest(command=command):
                rc, out, err = self.report(self.argv(command))
                self.assertEqual(rc, 0, (command, err))
                self.assertEqual(err, "")


def fabricbench_load(path):
    from fabricbench_analysis import load
    return load(path)


if __name__ == "__main__":
    unittest.main()
