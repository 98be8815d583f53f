"""The Excel export readable in the clients it is for (issue 46: opened in LibreOffice Calc and converted to PDF, the
summary cut results/coll, fourteen chart series shared shades of one green, and a CPU run where no row had an
expected figure said 'no row below 80% of expected'). Read back with openpyxl: every chart series in a colour of its
own (past the palette, another dash), set on the series itself; every column at least as wide as its cells (to a
limit, past which a cell wraps and its row is as high as its lines); the charts printed whole, each on a page of its
own; and a run where nothing was judged says so. Synthetic files (sweep_files.py's writer): no build needed."""
import unittest

import h5py
import numpy as np
import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis.export import excel, html
from fabricbench_analysis.judge.answer import answer
from fbtest import LaunchTest

from .sweep_files import _col, write_table

OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"]
SIZES = [8, 1024, 1 << 20, 16 << 20]
# As a CPU build of fabric-coll writes them: the expected columns there, empty (no line rate, no healthy curve).
COLL = [_col("op", "S24", role="key", series=True), _col("bytes", "<i8", "B", "key"),
        _col("in_place", "<i8", role="key"),
        _col("busbw_gbps", "<f8", "GB/s", "measured", "higher", headline=True),
        _col("time_us", "<f8", "us", "measured", "lower", headline=True),
        _col("expected_gbps", "<f8", "GB/s", "reference"), _col("pct_expected", "<f8", "%", "measured", "higher"),
        _col("expected_from", "S12")]
NOT_JUDGED = "bandwidth not judged (no row of 1 MiB or more has an expected figure)"
COMMAND = "fabric-coll --backend mpi --op all -b 8 -e 1G -f 2 -n 20 -w 5 --check 1 --output /scratch/runs/x.h5 --force"


def write_coll(path, ops=OPS, expected=None):
    """A fabric-coll file: each op in and out of place at SIZES; `expected` (GB/s, rated) or none, as on a CPU."""
    rows = [(op, size, mode, 1e-3 * size ** 0.5 + i + mode / 2, size / 1e3 + 1, expected or np.nan,
             100 * (1e-3 * size ** 0.5 + i) / expected if expected else np.nan, "rated" if expected else "")
            for i, op in enumerate(ops) for mode in (0, 1) for size in SIZES]
    with h5py.File(path, "w") as f:
        for key, value in (("tool", "fabric-coll"), ("status", "complete"), ("hosts", "node0,node1"),
                           ("format", "fabricbench"), ("started_at", "2026-11-26T00:00:00Z"),
                           ("finished_at", "2026-11-26T00:00:09Z"), ("command_line", COMMAND)):
            f.attrs[key] = value
        f.attrs["schema_version"], f.attrs["world_size"] = np.int64(2), np.int64(2)
        write_table(f, "results/coll", COLL, rows)
    return fa.load(path)


CLIENTS_DEFAULT = 8.43  # characters: a column's width in Excel and LibreOffice where the file sets none


def shown(value) -> int:
    """The characters a cell shows: a number as the General format does (at most about 11), text its longest line."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return min(len(f"{value:.10g}"), 12)
    return max(len(line) for line in str(value).split("\n"))


def column_width(sheet, column: int) -> float:
    """The width the file gives the column (1-based), else the clients' default (openpyxl reads it as 13)."""
    return next((d.width for d in sheet.column_dimensions.values() if d.min and d.min <= column <= d.max),
                CLIENTS_DEFAULT)


def colour(properties):
    """The RGB hex of a line or fill's solid colour, None where the client is left to choose."""
    fill = properties.solidFill if properties is not None else None
    return fill.srgbClr if fill is not None else None


class ExcelReadable(LaunchTest):
    def book(self, run, name="run.xlsx"):
        out = self.dir / name
        excel.to_excel(run, out)
        return openpyxl.load_workbook(out)

    def test_each_chart_series_has_a_colour_of_its_own(self):
        # Fourteen curves (seven operations, in and out of place): fourteen colours, set on each series and its
        # marker, not left to the chart's style (LibreOffice drew them in shades of one green).
        sheet = self.book(write_coll(self.dir / "coll.h5"))["chart_coll"]
        self.assertEqual(len(sheet._charts), 2, "busbw_gbps and time_us")
        for chart in sheet._charts:
            series = chart.series
            self.assertEqual(len(series), 2 * len(OPS))
            lines = [colour(s.graphicalProperties.line) for s in series]
            self.assertNotIn(None, lines)
            self.assertEqual(len(set(lines)), len(lines), lines)
            self.assertEqual([colour(s.marker.graphicalProperties) for s in series], lines, "markers as the lines")
            self.assertEqual([s.graphicalProperties.line.prstDash for s in series], ["solid"] * len(series))
            self.assertEqual({s.smooth for s in series}, {False}, "straight lines between the measured points")

    def test_past_the_palette_the_colours_come_again_with_another_dash(self):
        ops = [f"op{i}" for i in range(len(excel.PALETTE) // 2 + 3)]
        series = self.book(write_coll(self.dir / "many.h5", ops))["chart_coll"]._charts[0].series
        self.assertEqual(len(series), 2 * len(ops))
        styles = [(colour(s.graphicalProperties.line), s.graphicalProperties.line.prstDash) for s in series]
        self.assertEqual(len(set(styles)), len(styles), styles)
        first = [c for c, _ in styles[:len(excel.PALETTE)]]
        self.assertEqual(len(set(first)), len(excel.PALETTE), "the whole palette before any colour comes again")
        self.assertEqual({d for _, d in styles[len(excel.PALETTE):]}, {excel.DASHES[1]})

    def assert_fits(self, sheet, skip_rows=()):
        """Every cell of `sheet` (but `skip_rows`) within its column's width: a text longer than WIDEST wraps and
        its row is as high as its lines."""
        cut, unwrapped = [], []
        for row in sheet.iter_rows():
            for cell in row:
                if cell.value is None or cell.row in skip_rows:
                    continue
                n, width = shown(cell.value), column_width(sheet, cell.column)
                if width < min(n, excel.WIDEST):
                    cut.append((cell.coordinate, cell.value, width))
                if n > excel.WIDEST and not (cell.alignment.wrap_text and
                                             (sheet.row_dimensions[cell.row].height or 0) >= 30):
                    unwrapped.append((cell.coordinate, cell.value))
        self.assertEqual(cut[:5], [], f"{sheet.title}: {len(cut)} cell(s) wider than their column")
        self.assertEqual(unwrapped[:5], [], f"{sheet.title}: {len(unwrapped)} long cell(s) neither wrapped nor high")

    def test_the_summary_columns_hold_their_names(self):
        book = self.book(write_coll(self.dir / "coll.h5"))
        sheet = book["summary"]
        column = [c.value for c in sheet["A"]]
        self.assertIn("results/coll", column)
        self.assertGreaterEqual(column_width(sheet, 1), len("results/coll"))
        # The answer's lines and the headings run on over the empty cells beside them: they widen no column.
        free = {i for i, v in enumerate(column, 1) if v and all(c.value is None for c in sheet[i][1:])}
        self.assertIn("Best figures", [column[i - 1] for i in free])
        self.assertLess(column_width(sheet, 1), max(len(column[i - 1]) for i in free))
        self.assert_fits(sheet, free)

    def test_every_other_sheet_holds_its_names(self):
        book = self.book(write_coll(self.dir / "coll.h5"))
        for name in ("run", "results_coll", "chart_coll"):
            self.assert_fits(book[name])
        self.assertIn("reduce_scatter out-of-place", [c.value for c in book["chart_coll"][1]])
        name, value = next(row for row in book["run"].iter_rows() if row[0].value == "command_line")
        self.assertEqual(value.value, COMMAND)
        self.assertTrue(value.alignment.wrap_text, "longer than WIDEST")
        self.assertEqual((name.alignment.vertical, value.alignment.vertical), ("top", "top"), "beside its first line")

    def test_each_chart_prints_whole_on_a_page_of_its_own(self):
        # Across the page, a break before the charts' column and one before each block after the first: the chart
        # cut in two had left its legend on another page.
        sheet = self.book(write_coll(self.dir / "coll.h5"))["chart_coll"]
        self.assertEqual(sheet.page_setup.orientation, "landscape")
        columns = {chart.anchor._from.col for chart in sheet._charts}  # 0-based
        self.assertEqual(len(columns), 1, "the charts in one column")
        self.assertEqual([b.id for b in sheet.col_breaks.brk], [columns.pop() - 1], "the gap goes with the chart")
        rows = sorted(chart.anchor._from.row for chart in sheet._charts)
        self.assertEqual([b.id for b in sheet.row_breaks.brk], [rows[1] - 1])
        landscape_letter = int((11 - 2 * 0.75) * 914400)  # EMU: the print width within the default margins
        self.assertTrue(all(chart.anchor.ext.width < landscape_letter for chart in sheet._charts))

    def test_a_run_where_nothing_was_judged_says_not_judged(self):
        run = write_coll(self.dir / "cpu.h5")
        found = answer(run)
        self.assertEqual(found.judged, {})
        self.assertEqual(found.lines(), [f"Nothing wrong: no verdict, no failed or warned check, {NOT_JUDGED}, "
                                         "no wrong data."])
        self.assertNotIn("no row below", " ".join(found.lines()))
        column = [c.value for c in self.book(run)["summary"]["A"]]
        self.assertIn(found.lines()[0], column)
        self.assertIn(NOT_JUDGED, html.page(run))

    def test_a_run_whose_rows_were_judged_keeps_its_words(self):
        found = answer(write_coll(self.dir / "rated.h5", expected=1.0))
        self.assertEqual(found.judged, {"rated": 2 * len(OPS)})
        self.assertIn("bandwidth within expected", found.lines()[0])
        self.assertNotIn("not judged", " ".join(found.lines()))


if __name__ == "__main__":
    unittest.main()
