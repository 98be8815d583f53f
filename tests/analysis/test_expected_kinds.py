"""What the answer, the page, the workbook and the plots make of "% of expected" by the kind of its reference (the
expected_from column): a calibrated row (a healthy system's curve at its size) judged at every size from min_bytes up
against calibrated_warn_below_percent; a rated row (a line rate) at the run's largest size against
warn_below_percent; an uncalibrated row shown and never judged; a file written before the column as before (every row
rated, in the old words). A reference that varies with size is drawn as a dashed curve, not as lines.
Synthetic files (sweep_files.py's writer): no build needed."""
import html as htmlib
import unittest

import h5py
import numpy as np
import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis.export import excel, html
from fabricbench_analysis.judge.answer import answer, expected_rule
from fbtest import LaunchTest

from . import figures
from .sweep_files import _col, write_table

RULE = expected_rule()
RATED, CALIBRATED = RULE.warn_below_percent, RULE.calibrated_warn_below_percent
SIZES = [RULE.min_bytes // 2, RULE.min_bytes, 4 * RULE.min_bytes, 16 * RULE.min_bytes]
UNCALIBRATED = "% of expected is uncalibrated here (no healthy curve for this setup): shown, not judged."
CLEAN = "Nothing wrong: no verdict, no failed or warned check, {}no wrong data."

COLL = [_col("op", "S24", role="key", series=True), _col("bytes", "<i8", "B", "key"),
        _col("in_place", "<i8", role="key"),
        _col("busbw_gbps", "<f8", "GB/s", "measured", "higher", headline=True),
        _col("time_us", "<f8", "us", "measured", "lower"), _col("expected_gbps", "<f8", "GB/s", "reference"),
        _col("pct_expected", "<f8", "%", "measured", "higher")]
PAIRS = [_col("round", "<i8", role="key"), _col("kind", "S8", role="key"), _col("host_a", "S64", role="key"),
         _col("host_b", "S64", role="key"), _col("metric", "S16", role="key", series=True),
         _col("bytes", "<i8", "B", "key"), _col("value", "<f8", "MB/s", "measured", "higher", headline=True),
         _col("expected_gbps", "<f8", "GB/s", "reference"), _col("pct_expected", "<f8", "%", "measured", "higher")]
FROM = _col("expected_from", "S12")


def curve(size):
    """A healthy curve (GB/s) that grows with size."""
    return 20.0 * (size / RULE.min_bytes) ** 0.5


def coll_rows(op, kind, pct, in_place=(1,)):
    """fabric-coll rows of `op` at SIZES, each at pct(size) % of its reference: the curve where calibrated, else a
    flat 150 GB/s."""
    out = []
    for size in SIZES:
        for mode in in_place:
            expected = curve(size) if kind == "calibrated" else 150.0
            out.append((op, size, mode, expected * pct(size) / 100, size / 1e3, expected, pct(size), kind))
    return out


def write(path, tool, tables, with_kind=True, rule=None):
    """A results file: root attributes and {table: rows}; rows end with their expected_from, left out (with the
    column) where `with_kind` is false, as in files written before it. `rule`: the expected_* attributes a tool
    records (the rule it judged with), else none, as in files written before them."""
    with h5py.File(path, "w") as f:
        for key, value in (rule or {}).items():
            f.attrs[key] = np.float64(value)
        for key, value in (("tool", tool), ("status", "complete"), ("hosts", "node0,node1"), ("format", "fabricbench"),
                           ("started_at", "2026-11-26T00:00:00Z"), ("finished_at", "2026-11-26T00:00:09Z"),
                           ("command_line", f"{tool} -o x.h5")):
            f.attrs[key] = value
        f.attrs["schema_version"], f.attrs["world_size"] = np.int64(2), np.int64(2)
        for name, (columns, rows) in tables.items():
            write_table(f, name, columns + [FROM] if with_kind else columns,
                        rows if with_kind else [r[:-1] for r in rows])
    return fa.load(path)


class ExpectedKinds(LaunchTest):
    def coll(self, name, *rows, with_kind=True):
        return write(self.dir / name, "fabric-coll", {"results/coll": (COLL, [r for part in rows for r in part])},
                     with_kind)

    def test_calibrated_rows_are_judged_at_every_size_from_min_bytes(self):
        # all_reduce below the curve's threshold at 1 MiB (not the largest size) and far below under min_bytes;
        # between the two thresholds at the largest size: a healthy curve is held to its own.
        low = {SIZES[0]: 20.0, SIZES[1]: CALIBRATED - 20, SIZES[-1]: (CALIBRATED + RATED) / 2}
        found = answer(self.coll("calibrated.h5", coll_rows("all_reduce", "calibrated", lambda s: low.get(s, 100.0))))
        self.assertEqual(list(found.below_expected["where"]), ["all_reduce 1 MiB in_place=1"])
        self.assertEqual(list(found.below_expected.expected_from), ["calibrated"])
        self.assertIn(f"1 row(s) below {CALIBRATED:g}% of a healthy system's curve.", found.lines())
        self.assertFalse(found.nothing_wrong)

    def test_rated_rows_are_judged_at_the_largest_size_only(self):
        found = answer(self.coll("rated.h5", coll_rows("all_reduce", "rated", lambda s: RATED - 30)))
        self.assertEqual(list(found.below_expected["where"]), [f"all_reduce {SIZES[-1] >> 20} MiB in_place=1"])
        self.assertIn(f"1 row(s) below {RATED:g}% of the line rate.", found.lines())
        self.assertNotIn("healthy", " ".join(found.lines()))

    def test_both_kinds_below_are_named_each_with_its_threshold(self):
        found = answer(self.coll("both.h5", coll_rows("all_reduce", "calibrated", lambda s: CALIBRATED - 10),
                                 coll_rows("all_gather", "rated", lambda s: RATED - 10)))
        self.assertEqual(found.lines(), [f"1 row(s) below {RATED:g}% of the line rate.",
                                         f"3 row(s) below {CALIBRATED:g}% of a healthy system's curve."])
        self.assertEqual(found.below_title(),
                         f"Below {RATED:g}% of the line rate or {CALIBRATED:g}% of a healthy system's curve")

    def test_uncalibrated_rows_are_never_named_and_the_answer_says_so(self):
        found = answer(self.coll("uncalibrated.h5", coll_rows("all_gather", "uncalibrated", lambda s: 40.0)))
        self.assertTrue(found.below_expected.empty)
        self.assertTrue(found.nothing_wrong)
        self.assertEqual(found.lines(), [CLEAN.format(""), UNCALIBRATED], "no claim of within expected")
        self.assertEqual([style for style, _ in found.styled_lines()], ["ok", "ok"])

    def test_an_uncalibrated_note_beside_a_fault_is_no_fault(self):
        found = answer(self.coll("mixed.h5", coll_rows("all_gather", "uncalibrated", lambda s: 40.0),
                                 coll_rows("all_reduce", "calibrated", lambda s: CALIBRATED - 10)))
        styled = found.styled_lines()
        note = "% of expected is uncalibrated for 4 row(s) (no healthy curve for this setup): shown, not judged."
        self.assertEqual(styled[-1], ("ok", note))
        self.assertEqual(styled[0], ("fail", f"3 row(s) below {CALIBRATED:g}% of a healthy system's curve."))

    def test_judged_rows_none_below_are_within_expected(self):
        found = answer(self.coll("clean.h5", coll_rows("all_reduce", "calibrated", lambda s: CALIBRATED + 5),
                                 coll_rows("all_gather", "rated", lambda s: RATED + 5)))
        self.assertTrue(found.nothing_wrong)
        self.assertEqual(found.lines(), [CLEAN.format("bandwidth within expected, ")])
        found = answer(self.coll("some.h5", coll_rows("all_reduce", "calibrated", lambda s: CALIBRATED + 5),
                                 coll_rows("all_gather", "uncalibrated", lambda s: 40.0)))
        self.assertEqual(found.lines()[0], CLEAN.format("bandwidth within expected, "))
        self.assertIn("uncalibrated for 4 row(s)", found.lines()[1])

    def test_the_rule_the_file_records_is_the_one_judged_with(self):
        # A run given --expected-rule with warn_below_percent 95: its rated row at 90% is named, by 95, not the
        # default 80; the same rows without the attributes are judged by the defaults and pass.
        rows = coll_rows("all_reduce", "rated", lambda s: 90.0)
        strict = write(self.dir / "strict.h5", "fabric-coll", {"results/coll": (COLL, rows)},
                       rule={"expected_warn_below_percent": 95, "expected_calibrated_warn_below_percent": 70,
                             "expected_min_bytes": RULE.min_bytes})
        self.assertEqual(expected_rule(strict).warn_below_percent, 95)
        self.assertIn("1 row(s) below 95% of the line rate.", answer(strict).lines())
        plain = answer(self.coll("plain.h5", rows))
        self.assertTrue(plain.below_expected.empty)
        self.assertEqual(plain.rule, expected_rule())

    def test_a_file_without_expected_from_behaves_as_before(self):
        # Every row rated, named in the old words: the largest size only, against warn_below_percent.
        low = lambda s: RATED - 30 if s < SIZES[-1] else RATED - 10
        found = answer(self.coll("old.h5", coll_rows("all_reduce", "", low), with_kind=False))
        self.assertEqual(len(found.below_expected), 1)
        self.assertEqual(found.lines(), [f"1 row(s) below {RATED:g}% of the expected bandwidth."])
        self.assertEqual(found.below_title(), f"Below {RATED:g}% of the expected bandwidth")
        found = answer(self.coll("old-clean.h5", coll_rows("all_reduce", "", lambda s: RATED + 5), with_kind=False))
        self.assertEqual(found.lines(), [CLEAN.format(f"no row below {RATED:g}% of expected, ")])

    def test_sweep_pairs_are_judged_from_min_bytes_up_by_their_kind(self):
        rows = [(0, "sweep", "node0", "node1", "allreduce", size, 1e3 * curve(size) * pct / 100, curve(size), pct,
                 "calibrated") for size, pct in ((SIZES[0], 10.0), (SIZES[1], CALIBRATED - 5), (SIZES[2], 95.0))]
        rows.append((1, "sweep", "node0", "node2", "p2p_bw", SIZES[1], 1e3 * 12.5 * 0.5, 12.5, 50.0, "rated"))
        rows.append((1, "sweep", "node1", "node2", "p2p_bw", SIZES[2], 1e3 * 40.0, 150.0, 30.0, "uncalibrated"))
        found = answer(write(self.dir / "sweep.h5", "fabric-sweep", {"sweep/pairs": (PAIRS, rows)}))
        self.assertEqual(list(found.below_expected["where"]),
                         ["round=0 sweep node0 node1 allreduce 1 MiB", "round=1 sweep node0 node2 p2p_bw 1 MiB"],
                         "the pairs' own kind column kept")
        self.assertEqual(found.judged, {"calibrated": 2, "rated": 1})
        self.assertEqual(found.uncalibrated, 1)

    def test_the_page_and_the_workbook_say_it(self):
        run = self.coll("page.h5", coll_rows("all_reduce", "calibrated", lambda s: CALIBRATED - 10),
                        coll_rows("all_gather", "uncalibrated", lambda s: 40.0))
        page = htmlib.unescape(html.page(run))
        lead = page[page.index("<section id='answer'"):page.index("</section>")]
        self.assertIn(f"<p class='line fail'>3 row(s) below {CALIBRATED:g}% of a healthy system's curve.</p>", lead)
        self.assertIn("<p class='line ok'>% of expected is uncalibrated for 4 row(s)", lead)
        self.assertIn(f"<h3>Below {CALIBRATED:g}% of a healthy system's curve</h3>", lead)
        out = self.dir / "page.xlsx"
        excel.to_excel(run, out)
        column = [c.value for c in openpyxl.load_workbook(out)["summary"]["A"]]
        self.assertIn(f"3 row(s) below {CALIBRATED:g}% of a healthy system's curve.", column)
        self.assertIn(f"Below {CALIBRATED:g}% of a healthy system's curve", column)

    def test_a_reference_that_varies_with_size_is_a_dashed_curve(self):
        path = self.dir / "curve.h5"
        self.coll("curve.h5", coll_rows("all_reduce", "calibrated", lambda s: 90.0, in_place=(0, 1)),
                  coll_rows("all_gather", "uncalibrated", lambda s: 40.0))
        ax = figures.drawn(path)["coll_bandwidth.png"].axes[0]
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        curves = [line for line in dashed if line.get_label().startswith("expected")]
        self.assertEqual([line.get_label() for line in curves], ["expected (calibrated) all_reduce"])
        self.assertEqual(list(curves[0].get_xdata()), SIZES, "one point per size: in- and out-of-place share it")
        self.assertEqual(list(curves[0].get_ydata()), [curve(s) for s in SIZES])
        self.assertIn("expected (calibrated) all_reduce", [t.get_text() for t in ax.get_legend().get_texts()])
        # The uncalibrated figure is constant: a horizontal line, named as not judged.
        self.assertEqual(len(dashed), 2)
        self.assertIn("expected_gbps 150 GB/s (uncalibrated: not judged)", [t.get_text() for t in ax.texts])

    def test_one_panel_per_op_each_with_its_curve(self):
        ops = [f"op{i}" for i in range(7)]  # more curves than one panel holds
        path = self.dir / "panels.h5"
        self.coll("panels.h5", *[coll_rows(op, "calibrated", lambda s: 90.0, in_place=(0, 1)) for op in ops])
        fig = figures.drawn(path)["coll_bandwidth.png"]
        for ax in fig.axes[:len(ops)]:
            curves = [line for line in ax.get_lines() if line.get_label() == "expected (calibrated)"]
            self.assertEqual(len(curves), 1, ax.get_title())
            self.assertEqual(len(curves[0].get_xdata()), len(SIZES))
            self.assertIsNotNone(ax.get_legend())

    def test_a_constant_reference_is_still_a_line(self):
        path = self.dir / "flat.h5"
        self.coll("flat.h5", coll_rows("all_reduce", "", lambda s: 90.0), with_kind=False)
        ax = figures.drawn(path)["coll_bandwidth.png"].axes[0]
        self.assertFalse([line for line in ax.get_lines() if line.get_label().startswith("expected")])
        self.assertEqual([t.get_text() for t in ax.texts], ["expected_gbps 150 GB/s"])


if __name__ == "__main__":
    unittest.main()
