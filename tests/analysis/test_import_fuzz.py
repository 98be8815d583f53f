"""fabric-report import fed the peers' real output mutated the way files get damaged (lines deleted, duplicated or cut,
a figure made nan, huge, negative or garbage, the file cut anywhere; nccl-tests text and -J JSON, OSU text, perftest
text and JSON), every outcome held to the import's rule: exit 0 (or 1, a run that did not complete) with a file whose
every figure is one the source printed, or exit 2 with one line on stderr naming the source and nothing written. Never
an exception. Hypothesis, derandomized: the same examples on every run."""
import math
import pathlib
import re
import shutil
import tempfile
import unittest

import fabricbench_analysis as fa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .test_import import NT, OSU, PERFTEST, report

SOURCES = [NT / "all_reduce.txt", NT / "all_gather.txt", NT / "reduce_scatter.txt", NT / "all_reduce-info.txt",
           NT / "all_reduce.json", OSU / "osu_bw.txt", OSU / "osu_latency.txt", OSU / "osu_allreduce-full.txt",
           PERFTEST / "new-write_bw-all.txt", PERFTEST / "new-write_lat.txt", PERFTEST / "new-write_bw.json",
           PERFTEST / "new-read_lat.json"]
TEXTS = {p: p.read_text() for p in SOURCES}
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
GARBAGE = ["nan", "-nan", "inf", "-inf", "-1", "-0.5", "0", "1e400", "18446744073709551616", "9" * 40, "x", "", "N/A",
           "0x10", "[]", "{}", '"8"', "null", "true"]
# The columns whose figures the source prints (the rest are computed: expectations, OSU's busbw, ...)
PRINTED = ["bytes", "time_us", "algbw_gbps", "busbw_gbps", "latency_us", "bw_mbps", "bw_peak_mibps", "bw_avg_mibps",
           "bw_peak_gbitps", "bw_avg_gbitps", "msg_rate_mps", "time_us_min", "time_us_max", "time_us_rank_min",
           "time_us_rank_max"]


@st.composite
def damaged(draw):
    """(the source's name, its text damaged by 1 to 3 mutations)."""
    path = draw(st.sampled_from(SOURCES))
    text = TEXTS[path]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "duplicate", "truncate", "number", "number", "cut"]))
        lines = text.splitlines(keepends=True)
        if not lines:
            break
        k = draw(st.integers(0, len(lines) - 1))
        if kind == "delete":
            del lines[k]
        elif kind == "duplicate":
            lines.insert(k, lines[k])
        elif kind == "truncate":
            lines[k] = lines[k][:draw(st.integers(0, len(lines[k])))]
        elif kind == "cut":
            text = text[:draw(st.integers(0, len(text)))]
            continue
        else:
            found = list(NUMBER.finditer(text))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                text = text[:m.start()] + draw(st.sampled_from(GARBAGE)) + text[m.end():]
            continue
        text = "".join(lines)
    return path.name, text


class Damaged(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-fuzz-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def held_to_the_rule(self, name: str, text: str) -> None:
        here = pathlib.Path(tempfile.mkdtemp(dir=self.dir))
        source, out = here / name, here / "out.h5"
        source.write_text(text)
        code, _, err = report("import", source, "--out", out)
        self.assertIn(code, (0, 1, 2), err)
        if code == 2:
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertTrue(err.startswith(f"fabric-report: {source}"), err)
            self.assertEqual(sorted(p.name for p in here.iterdir()), [name], "nothing written")
            return
        printed = {float(m.group()) for m in NUMBER.finditer(text)}
        run = fa.load(out)
        computed = {"algbw_gbps", "busbw_gbps"} if run.attrs["tool"] == "osu" else set()  # OSU prints the time
        for table, frame in run.tables.items():
            if not table.startswith("results/"):
                continue
            self.assertGreater(len(frame), 0)
            for column in [c for c in PRINTED if c in frame.columns and c not in computed]:
                for value in frame[column]:
                    if column == "msg_rate_mps" and "osu" in name:
                        value = value * 1e6
                    if not (isinstance(value, float) and math.isnan(value)):
                        self.assertIn(float(value), printed, f"{column} {value}: a figure the source does not hold")

    @settings(max_examples=150, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(damaged())
    def test_every_damaged_source_is_imported_as_printed_or_refused_in_one_line(self, case):
        self.held_to_the_rule(*case)


if __name__ == "__main__":
    unittest.main()
