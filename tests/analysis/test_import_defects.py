"""fabric-report import's reported defects, each held to the import's rule: a file whose figures equal the source's, or
one line on stderr naming the file (and line) and what is wrong, exit 2, and nothing written; never a traceback, never
a silent loss. Every source here is a real output of the peers (tests/fixtures/imports) or a copy of one cut, joined or
with one figure changed the way the defect's report describes."""
import json
import pathlib
import shutil
import tempfile
import unittest

import fabricbench_analysis as fa

from .test_import import NT, OSU, PERFTEST, report, source_rows


class Refused(unittest.TestCase):
    """Shared: a source imported or refused, as the rule says."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def source(self, name: str, text: str) -> pathlib.Path:
        path = self.dir / name
        path.write_text(text)
        return path

    def refused(self, source, *options, message="") -> str:
        out = self.dir / "out.h5"
        code, _, err = report("import", source, "--out", out, *options)
        self.assertEqual(code, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn(str(source), err)
        self.assertIn(message, err)
        self.assertEqual([p.name for p in self.dir.iterdir() if p.name.startswith((".out", "out"))], [])
        return err

    def imported(self, source, *options, status=0):
        out = self.dir / "out.h5"
        code, stdout, err = report("import", source, "--out", out, *options)
        self.assertEqual(code, status, err)
        return fa.load(out), stdout


def replaced(path: pathlib.Path, size: str, fields: dict) -> tuple:
    """`path`'s text with the row of `size` given other fields ({index: text}), and that row's line number."""
    lines = path.read_text().splitlines()
    k = next(k for k, line in enumerate(lines) if line.split()[:1] == [size])
    words = lines[k].split()
    for i, text in fields.items():
        words[i] = text
    lines[k] = " ".join(words)
    return "\n".join(lines) + "\n", k + 1


class NanRows(Refused):
    """1. A row of nan bandwidth was stored and judged 'within expected' (a comparison with nan never fails)."""

    def test_a_nan_or_inf_figure_is_refused_naming_its_line(self):
        for fields in ({6: "nan", 7: "nan"}, {10: "nan", 11: "nan"}, {5: "nan"}, {9: "inf"}, {7: "-nan"}):
            with self.subTest(fields=fields):
                text, number = replaced(NT / "all_reduce.txt", "8388608", fields)
                err = self.refused(self.source("all_reduce.txt", text), message=f"all_reduce.txt:{number}: ")
                self.assertRegex(err, r"nan|inf|not a time")

    def test_nan_in_nccl_tests_json_and_in_osu_is_refused(self):
        doc = json.loads((NT / "all_reduce.json").read_text())
        doc["results"][5]["out_of_place"]["bus_bw"] = float("nan")
        doc["results"][5]["out_of_place"]["alg_bw"] = float("nan")
        self.refused(self.source("all_reduce.json", json.dumps(doc)), message="nan")
        text, number = replaced(OSU / "osu_latency.txt", "8", {1: "nan"})
        self.refused(self.source("osu_latency.txt", text), message=f"osu_latency.txt:{number}: ")

    def test_the_answer_never_says_within_expected_of_a_row_without_a_figure(self):
        text, _ = replaced(NT / "all_reduce.txt", "134217728", {6: "nan", 7: "nan", 10: "nan", 11: "nan"})
        code, out, err = report("import", self.source("all_reduce.txt", text), "--out", self.dir / "out.h5")
        self.assertNotIn("within expected", out)
        self.assertEqual(code, 2, err)


if __name__ == "__main__":
    unittest.main()
