"""Plots, Excel charts and the HTML page draw the columns a file declares (column_headline, column_series), with no
per-table code: a made-up table is drawn by its declared headline, and a file without the marks falls back to the
first measured column with a better direction. The files are written here with h5py, no C++ tool involved."""
import pathlib
import re
import shutil
import tempfile
import unittest

import h5py
import matplotlib
import numpy as np
import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis.draw import plots
from fabricbench_analysis.export import excel, html
from fabricbench_analysis.read import results

# (name, dtype, unit, role, better, headline, series)
WIDGET = [("kind", "S16", "", "key", "", False, True),
          ("payload", "<i8", "B", "key", "", False, False),
          ("mode", "<i8", "", "key", "", False, False),
          ("iterations", "<i8", "", "setting", "", False, False),
          ("slowness_us", "<f8", "us", "measured", "lower", False, False),
          ("speed_gbps", "<f8", "GB/s", "measured", "higher", True, False),
          ("wrong", "<i8", "B", "measured", "lower", False, False)]
TALLY = [("host", "S16", "", "key", "", False, False),
         ("metric", "S16", "", "key", "", False, True),
         ("median", "<f8", "", "measured", "", True, False),
         ("unit", "S8", "", "key", "", False, False)]


def write_table(f, path, columns, rows, marks=True):
    data = np.array(rows, dtype=[(c[0], c[1]) for c in columns])
    ds = f.create_dataset(path, data=data, maxshape=(None,), chunks=True)
    ds.attrs["column_units"] = [c[2] for c in columns]
    ds.attrs["column_roles"] = [c[3] for c in columns]
    ds.attrs["column_better"] = [c[4] for c in columns]
    if marks:
        ds.attrs["column_headline"] = ["yes" if c[5] else "" for c in columns]
        ds.attrs["column_series"] = ["yes" if c[6] else "" for c in columns]


def widget_rows():
    rows = []
    for kind, scale in ((b"alpha", 1.0), (b"beta", 2.0)):
        for mode in (0, 1):
            for size in (1024, 65536, 1048576):
                rows.append((kind, size, mode, 10, 100.0 + size / 1e4 + mode, scale * size / 1e5 + mode, 0))
    return rows


def texts(svg_path):
    """The text elements of an SVG written with svg.fonttype none: axis labels, titles, legend entries."""
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg_path.read_text())


def write_run(path, marks=True, widget=None):
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "fabricbench", "schema_version": 2, "tool": "fabric-made-up", "status": "complete",
                        "hosts": "h1,h2", "started_at": "2026-11-23T00:00:00Z", "world_size": 2})
        write_table(f, "results/widget", WIDGET, widget or widget_rows(), marks)
        write_table(f, "tally/nodes", TALLY, [(b"h1", b"m1", 5.0, b"GB/s"), (b"h2", b"m1", 3.0, b"GB/s"),
                                              (b"h1", b"m2", 9.0, b"us"), (b"h2", b"m2", 7.0, b"us")], marks)


class Headline(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-headline-"))
        matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in SVG, so the labels can be read back

    def tearDown(self):
        matplotlib.rcParams["svg.fonttype"] = "path"
        shutil.rmtree(self.dir, ignore_errors=True)

    def load(self, marks=True, widget=None):
        write_run(self.dir / "run.h5", marks, widget)
        return fa.load(self.dir / "run.h5")

    def chart_columns(self, run):
        """The header and the value columns of the Excel chart data block of results/widget."""
        out = self.dir / "run.xlsx"
        excel.to_excel(run, out)
        sheet = openpyxl.load_workbook(out)["chart_widget"]
        header = [c.value for c in sheet[1] if c.value is not None]
        return header, sheet

    def test_the_declared_headline_and_series_are_loaded(self):
        run = self.load()
        self.assertTrue(run.columns["results/widget"]["speed_gbps"].headline)
        self.assertFalse(run.columns["results/widget"]["slowness_us"].headline)
        self.assertTrue(run.columns["results/widget"]["kind"].series)
        self.assertEqual(run.headlines("results/widget"), ["speed_gbps"])
        self.assertEqual(run.series("results/widget"), "kind")
        self.assertEqual(run.size_key("results/widget"), "payload")
        self.assertEqual(run.headlines("tally/nodes"), ["median"])
        self.assertEqual(run.series("tally/nodes"), "metric")
        # mode tells rows of one kind and size apart, iterations is a setting and never names a curve
        self.assertEqual(results.curve_keys(run, "results/widget", run.tables["results/widget"]), ["kind", "mode"])

    def test_a_made_up_table_is_plotted_by_its_declared_headline(self):
        run = self.load()
        paths = plots.plot_run(run, self.dir / "plots", "svg")
        names = {p.name for p in paths}
        self.assertIn("widget_bandwidth.svg", names)  # speed_gbps is a rate
        self.assertNotIn("widget_latency.svg", names)  # slowness_us is no headline: drawn only beside it
        self.assertIn("tally_nodes.svg", names)        # a table without a size: bars per series value
        svg = texts(self.dir / "plots" / "widget_bandwidth.svg")
        self.assertIn("speed_gbps (GB/s)", svg)
        self.assertIn("slowness_us (us)", svg)
        for label in ("alpha mode=0", "alpha mode=1", "beta mode=0", "beta mode=1"):
            self.assertIn(label, svg)
        bars = texts(self.dir / "plots" / "tally_nodes.svg")
        self.assertIn("median (GB/s)", bars)
        self.assertIn("median (us)", bars)
        self.assertTrue({"h1", "h2"} <= set(bars), bars)

    def test_a_made_up_table_is_charted_by_its_declared_headline(self):
        run = self.load()
        header, sheet = self.chart_columns(run)
        self.assertEqual(header, ["payload", "alpha mode=0", "alpha mode=1", "beta mode=0", "beta mode=1"])
        self.assertEqual(len(sheet._charts), 1)
        frame = run.tables["results/widget"]
        beta1 = frame[(frame.kind == "beta") & (frame["mode"] == 1)].sort_values("payload").speed_gbps.tolist()
        self.assertEqual([sheet.cell(r, 5).value for r in range(2, 5)], beta1)

    def test_the_html_page_holds_the_plots_of_a_made_up_table(self):
        page = html.page(self.load())
        self.assertGreaterEqual(page.count("data:image/png;base64,"), 2)
        self.assertIn('alt="widget_bandwidth"', page)

    def test_a_file_without_the_marks_falls_back_to_the_first_measured_column_with_a_better_direction(self):
        run = self.load(marks=False)
        self.assertNotIn("results/widget", run.marked)
        self.assertFalse(any(c.headline or c.series for c in run.columns["results/widget"].values()))
        self.assertEqual(run.headlines("results/widget"), ["slowness_us"])
        self.assertEqual(run.series("results/widget"), "kind")  # the first text key column
        self.assertEqual(run.headlines("tally/nodes"), [])      # only results tables fall back
        names = {p.name for p in plots.plot_run(run, self.dir / "plots", "svg")}
        self.assertIn("widget_latency.svg", names)
        self.assertNotIn("widget_bandwidth.svg", names)
        self.assertNotIn("tally_nodes.svg", names)
        self.assertIn("slowness_us (us)", texts(self.dir / "plots" / "widget_latency.svg"))
        header, sheet = self.chart_columns(run)
        self.assertEqual(header[0], "payload")
        frame = run.tables["results/widget"]
        alpha0 = frame[(frame.kind == "alpha") & (frame["mode"] == 0)].sort_values("payload").slowness_us.tolist()
        self.assertEqual([sheet.cell(r, 2).value for r in range(2, 5)], alpha0)

    def test_the_fallback_takes_each_rows_first_filled_column(self):
        # As fabric-p2p's older files: latency tests fill slowness_us only, bandwidth tests speed_gbps only.
        rows = [(b"lat", 8, 0, 10, 1.5, np.nan, 0), (b"lat", 64, 0, 10, 1.7, np.nan, 0),
                (b"bw", 8, 0, 10, np.nan, 0.1, 0), (b"bw", 64, 0, 10, np.nan, 0.8, 0)]
        run = self.load(marks=False, widget=rows)
        self.assertEqual(run.headlines("results/widget"), ["slowness_us", "speed_gbps"])
        names = {p.name for p in plots.plot_run(run, self.dir / "plots", "svg")}
        self.assertTrue({"widget_latency.svg", "widget_bandwidth.svg"} <= names, names)
        lat, bw = texts(self.dir / "plots" / "widget_latency.svg"), texts(self.dir / "plots" / "widget_bandwidth.svg")
        self.assertIn("lat", lat)
        self.assertNotIn("bw", lat)
        self.assertIn("bw", bw)
        self.assertNotIn("lat", bw)


if __name__ == "__main__":
    unittest.main()
