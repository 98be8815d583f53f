"""What fabric-report writes for other programs from a run with hostile text (issue 48) is whole and valid, the text
shown as printable() shows it: the HTML page (escaped for HTML after printable(): no control character or bidi
override in the page; a root attribute cannot open a tag), the workbook (openpyxl refuses a control character in a
cell: before, one host name with an escape stopped the whole export) and the Prometheus file (label values valid
UTF-8 and escaped as the C++ tools' Exposition::escape: printable(), then backslash and double quote; promtool
accepts it; before, the escapes went into the labels raw), and the baseline (an .ini file: before, the host name's
line feed ended the header's comment and left a file with no section header, and a key's value ran onto a line of
its own that the parser read as a key; check refused the baseline written from the run it was written from)."""
import pathlib
import re
import shutil
import subprocess
import tempfile
import unittest

import h5py
import openpyxl

from fbtest import LaunchTest
from .hostile_files import HOST, HOST_SHOWN, doctor_run, hostile_attributes, sweep_pair

WRAPPER = pathlib.Path(__file__).resolve().parents[2] / "analysis" / "fabric-report"
PROMTOOL = shutil.which("promtool")
# Control characters (C0 but line feed and tab, DEL, C1) and bidi overrides and isolates: none may be in a file.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # python3-prometheus-client (ci/install-deps.sh installs it)
    text_string_to_metric_families = None


class HostileExports(LaunchTest):
    @classmethod
    def setUpClass(cls):
        cls.files = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-hostile-exports-"))
        cls.doctor = hostile_attributes(doctor_run(cls.files))
        with h5py.File(cls.doctor, "a") as f:  # a root attribute that would open a tag, were it not escaped
            f.attrs["world_size"] = "<script>alert(1)</script>"
        cls.a, cls.b = sweep_pair(cls.files)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.files, ignore_errors=True)

    def report(self, *args):
        r = subprocess.run([str(WRAPPER), *map(str, args)], capture_output=True, text=True, cwd=self.dir)
        self.assertEqual((r.returncode, r.stderr), (0, ""), args)
        return r.stdout

    def test_the_page_holds_no_control_character_and_no_tag_from_the_file(self):
        for run, other in ((self.doctor, None), (self.b, self.a)):
            with self.subTest(run=run.name):
                out = self.dir / f"{run.stem}.html"
                self.report("html", run, *([other] if other else []), out)
                page = out.read_bytes().decode("utf-8")
                self.assertIsNone(RAW.search(page), RAW.findall(page)[:5])
                self.assertIn("\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor: every rank healthy", page)
                if other is None:
                    self.assertNotIn("<script>", page)
                    self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
                    self.assertIn("0x\ufffd\ufffd3f", page, "bytes that are not UTF-8: U+FFFD, as load() reads them")

    def test_the_workbook_is_written_with_the_text_shown_as_printable_shows_it(self):
        for run in (self.doctor, self.b):
            with self.subTest(run=run.name):
                out = self.dir / f"{run.stem}.xlsx"
                self.report("excel", run, out)
                book = openpyxl.load_workbook(out)
                cells = {str(c.value) for sheet in book for row in sheet.iter_rows() for c in row if c.value}
                self.assertTrue(any(HOST_SHOWN in c for c in cells), "the host name, escaped")
                self.assertFalse([c for c in cells if RAW.search(c)])
        run_sheet = openpyxl.load_workbook(self.dir / "hostile.xlsx")["run"]
        attrs = {row[0].value: row[1].value for row in run_sheet.iter_rows(min_row=2)}
        self.assertEqual(attrs["status"], "failed: host replied \\x1b[2J\\r\\nFORGED status: complete \\u009b1m")

    def test_prometheus_labels_are_escaped_as_the_tools_write_them_and_promtool_accepts_the_file(self):
        for run in (self.doctor, self.b):
            with self.subTest(run=run.name):
                out = self.dir / f"{run.stem}.prom"
                self.report("metrics", run, out)
                text = out.read_bytes().decode("utf-8")  # valid UTF-8, or this raises
                self.assertIsNone(RAW.search(text), RAW.findall(text)[:5])
                # printable() first, then the backslashes of its escapes doubled, as Exposition::escape writes them.
                self.assertIn('host="\\\\x1b]0;pwned\\\\x07\\\\x1b[2J\\\\nFORGED fabric-doctor: every rank healthy"',
                              text)
                self.assertEqual([line for line in text.splitlines() if line.startswith("FORGED")], [])
                if text_string_to_metric_families is not None:
                    hosts = {s.labels.get("host") for family in text_string_to_metric_families(text)
                             for s in family.samples}
                    self.assertIn(HOST_SHOWN, hosts, "parsed back: the text printable() shows")
                    self.assertNotIn(HOST, hosts)
                if PROMTOOL:
                    check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
                    self.assertEqual((check.returncode, check.stdout + check.stderr), (0, ""))
        self.assertEqual(self.report("metrics", self.doctor), (self.dir / "hostile.prom").read_text(),
                         "stdout: the same text")

    def test_a_baseline_of_the_run_is_read_back_and_finds_every_row(self):
        base = self.dir / "b.ini"
        self.report("baseline", self.b, base)
        text = base.read_text(encoding="utf-8")
        self.assertIsNone(RAW.search(text), RAW.findall(text)[:5])
        self.assertEqual([line for line in text.splitlines() if line.startswith("FORGED")], [])
        self.assertIn(f"host = {HOST_SHOWN}\n", text)
        said = self.report("check", self.b, "--baseline", base)
        self.assertRegex(said, r"# [1-9][0-9]* value\(s\) checked against .*: 0 failed")
        self.assertNotIn("BELOW BASELINE", said, "every entry found its row, the hostile host's too")


if __name__ == "__main__":
    unittest.main()
