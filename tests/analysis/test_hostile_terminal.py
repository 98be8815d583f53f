"""Nothing a results file, a baseline or a command line holds reaches the terminal raw through fabric-report (issue
48): every field it prints goes through printable(), as the C++ tools' TerminalTable does, so a host name from a RAS
reply that would retitle the window, clear the screen and start a line "FORGED fabric-doctor: every rank healthy" of
our own is shown as the text \\x1b]0;pwned\\x07\\x1b[2J\\nFORGED ..., on its own line nowhere. Before: show, compare
and check printed the escapes and the forged lines, bytes that are not UTF-8 went out raw, and plot's missing-glyph
warnings carried the escapes to stderr (and a host name with two $ stopped plot with a traceback: mathtext)."""
import pathlib
import shutil
import subprocess
import tempfile
import unittest

import fabricbench_analysis as fa
from fbtest import LaunchTest
from .hostile_files import (HOST, HOST_SHOWN, MATH_HOST, RAW, doctor_run, forged_lines, hostile_attributes,
                            sweep_pair)

WRAPPER = pathlib.Path(__file__).resolve().parents[2] / "analysis" / "fabric-report"


class HostileTerminal(LaunchTest):
    @classmethod
    def setUpClass(cls):
        cls.files = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-hostile-terminal-"))
        cls.doctor = hostile_attributes(doctor_run(cls.files))
        cls.a, cls.b = sweep_pair(cls.files)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.files, ignore_errors=True)

    def report(self, *args):
        """fabric-report as a user runs it; its stdout and stderr as bytes decoded strictly: valid UTF-8 or this
        raises."""
        r = subprocess.run([str(WRAPPER), *map(str, args)], capture_output=True, cwd=self.dir)
        return r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")

    def assert_nothing_raw(self, text):
        for raw in RAW + ("\r",):
            self.assertNotIn(raw, text)
        self.assertEqual(forged_lines(text), [], text)

    def test_load_makes_bytes_that_are_not_utf8_u_fffd_in_tables_and_attributes(self):
        # h5py hands an attribute's bad bytes over as lone surrogates, which no UTF-8 output can write.
        run = fa.load(self.doctor)
        self.assertIn("0x\ufffd\ufffd3f", set(run.tables["doctor/ras_communicators"].communicator))
        self.assertIn(HOST, set(run.tables["doctor/ras_ranks"].host), "the host name as the server sent it")
        self.assertIn("r\ufffd\ufffd.h5", run.attrs["command_line"])
        for value in run.attrs.values():
            str(value).encode("utf-8")

    def test_show_prints_the_attributes_escaped_each_on_its_one_line(self):
        code, out, err = self.report("show", self.doctor)
        self.assertEqual(code, 1, err)  # status failed: ...
        self.assert_nothing_raw(out + err)
        self.assertIn("  command_line: fabric-p2p --output r\ufffd\ufffd.h5 --note \\x1b[31mred\\x1b[0m\\nFORGED line "
                      "\\u202e\n", out)
        self.assertIn("        status: failed: host replied \\x1b[2J\\r\\nFORGED status: complete \\u009b1m\n", out)
        self.assertIn("         hosts: node0,\\x1b]0;pwned\\x07node1\n", out)

    def test_compare_prints_the_tables_regressions_and_hosts_escaped(self):
        code, out, err = self.report("compare", self.a, self.b)
        self.assertEqual(code, 1, out + err)  # the hostile host is slow in B: regressions
        self.assert_nothing_raw(out + err)
        regressions = [line for line in out.splitlines() if line.startswith("REGRESSION")]
        self.assertTrue(regressions, out)
        self.assertTrue(any(HOST_SHOWN in line for line in regressions), regressions)
        table_rows = [line for line in out.splitlines() if HOST_SHOWN in line and not line.startswith("REGRESSION")]
        self.assertTrue(table_rows, "the host in the compared tables' rows, escaped")

    def test_check_prints_a_users_baseline_escaped(self):
        # A baseline is a user's file: its section names and key values come back in check's lines, and so does
        # its path.
        base = self.dir / "b\x1b[2J\nFORGED.ini"
        base.write_text("[baseline]\ntolerance = 10%\n[sweep/nodes \x1b]0;pwned\x07 \u202e]\nhost = \x1b]0;pwned\x07\n"
                        "metric = p2p_bw\nmedian = 9000\n", encoding="utf-8")
        code, out, err = self.report("check", self.b, "--baseline", base)
        self.assertEqual(code, 1, out + err)
        self.assert_nothing_raw(out + err)
        self.assertIn("BELOW BASELINE [sweep/nodes \\x1b]0;pwned\\x07 \\u202e]: no row of sweep/nodes with "
                      "host=\\x1b]0;pwned\\x07, metric=p2p_bw\n", out)
        self.assertIn("checked against ", out)
        self.assertIn("b\\x1b[2J\\nFORGED.ini", out)

    def test_a_bad_path_is_refused_in_one_escaped_line(self):
        name = "no\x1b]0;pwned\x07\nFORGED fabric-report: all good \u202e.h5"
        for argv in (["show", name], ["csv", self.doctor, self.dir / "csv", "--table", name]):
            with self.subTest(argv=argv[0]):
                code, out, err = self.report(*argv)
                self.assertEqual((code, out), (2, ""))
                self.assert_nothing_raw(err)
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn("no\\x1b]0;pwned\\x07\\nFORGED fabric-report: all good \\u202e.h5", err)

    def test_plot_says_no_escape_on_stderr_and_names_its_files_escaped(self):
        out_dir = self.dir / "p\x1b[2Jlots"
        code, out, err = self.report("plot", self.b, "--out", out_dir)
        self.assertEqual((code, err), (0, ""), "no missing-glyph warning: the escapes are drawn as text; "
                         f"{MATH_HOST} drawn as it reads, not parsed as mathtext")
        self.assert_nothing_raw(out)
        self.assertTrue(out.splitlines())
        for line in out.splitlines():
            self.assertTrue(line.startswith(str(self.dir / "p\\x1b[2Jlots") + "/"), line)


if __name__ == "__main__":
    unittest.main()
