"""fabric-report's picture of a slow-rank report (fabric-watchdog --slow): the ranks against time (slow_ranks.png).
A report written by hand with h5py in the tool's layout (/slow/windows, /slow/collectives, /slow/findings,
/slow/processes, /slow/missing; lib/tools/watchdog/slow_judge.cpp): 2 ranks of one communicator, rank 1 late from
5 s to 13 s. The figure is read back as matplotlib artists (figures.py): no build needed."""
import contextlib
import io
import unittest
from html import unescape

import h5py
import numpy as np

import fabricbench_analysis as fa
from fabricbench_analysis import cli
from fabricbench_analysis.draw import slow_plots
from fabricbench_analysis.export import html
from fbtest import LaunchTest

from . import figures
from .hostile_files import HOST, HOST_SHOWN
from .sweep_files import _col, write_table

T0 = 1_795_000_000 * 1_000_000_000  # Unix ns of the first look (2026-11-18T...Z), a whole second
SECOND = 1_000_000_000
COMM = "0xabc0fb"
PIDS = {0: 4100, 1: 4101}
LOOKS = 21           # one judge look a second, from T0
LATE = range(5, 13)  # the seconds in which rank 1 arrives last, 20 ms after rank 0
LOSS = 40.0          # what that costs rank 0: 40% of the window, at the looks LOSS_AT
LOSS_AT = range(5, 15)
EARLY = range(0, 3)  # rank 0 last by 0.2 ms, 1% of the window: no line of its own
PER_SECOND = 10      # collectives a second


def _iso(ns):
    return np.datetime_as_string(np.datetime64(ns, "ns"), unit="s") + "Z"


def windows_rows(hosts):
    """Rank 0 at 1% over the first looks; then none (no rank last: no row, as the judge writes); rank 1 at LOSS%
    over LOSS_AT, then fading; rank 0 again at the last look."""
    rows = []
    for look in range(LOOKS):
        t = T0 + look * SECOND
        ranks = {0: 1.0} if look in EARLY else {}
        if look in LOSS_AT:
            ranks[1] = LOSS
        elif look in (15, 16, 17):
            ranks[1] = {15: 20.0, 16: 10.0, 17: 3.0}[look]
        if look == LOOKS - 1:
            ranks[0] = 0.5
        for rank, loss in ranks.items():
            rows.append((_iso(t), t, COMM, rank, hosts[rank], PIDS[rank], 10 * PER_SECOND, 8 if rank else 1,
                         20.0 if rank else 0.2, loss, 49.0))
    return rows


def collectives_rows():
    """PER_SECOND all-reduces a second on ranks 0 and 1: in LATE rank 1 arrives last (rank 0's kernel 20 ms longer),
    in EARLY rank 0 by 0.2 ms, otherwise a tie (0.01 ms: no dot)."""
    rows = []
    seq = 0
    for second in range(LOOKS):
        for k in range(PER_SECOND):
            t = T0 + second * SECOND + k * (SECOND // PER_SECOND) + SECOND // 20
            last, wait = (1, 20.0) if second in LATE else (0, 0.2) if second in EARLY else (0, 0.01)
            for rank in (0, 1):
                mine = 0.0 if rank == last else wait
                rows.append((t, COMM, seq, rank, "AllReduce", 1 << 20, "Ring", "Simple", 5.0 + mine, mine,
                             int(rank == last)))
            seq += 1
    return rows


def findings_rows(hosts):
    first, last = T0 + 6 * SECOND, T0 + 14 * SECOND
    return [("late", COMM, 1, hosts[1], PIDS[1], "GPU 1", "AllReduce", 1 << 20, 0.8, 20.0, LOSS, _iso(first),
             _iso(last), f"slow rank: rank 1 (pid {PIDS[1]}, GPU 1 on host {hosts[1]}) of communicator {COMM} ...")]


def write_slow_report(path, hosts=("nodeA", "nodeB"), empty=False, link=False):
    """A fabric-watchdog --slow report as the tool writes it; `empty`: every table without a row (a job whose
    ranks never arrived last, that ran no collective the judge saw); `link`: its finding a slow link from rank 1 to
    rank 0, in the findings' layout since the link kinds (peer and ratio columns)."""
    with h5py.File(path, "w") as f:
        for key, value in (("command_line", "fabric-watchdog --slow slow -- ./job"), ("format", "fabricbench"),
                           ("started_at", _iso(T0)), ("finished_at", _iso(T0 + LOOKS * SECOND)),
                           ("hosts", hosts[0]), ("status", "complete"), ("tool", "fabric-watchdog"),
                           ("tool_version", "0.1.0")):
            f.attrs[key] = value
        f.attrs["schema_version"] = np.int64(2)
        f.attrs["world_size"] = np.int64(1)
        if link:
            first, last = T0 + 6 * SECOND, T0 + 14 * SECOND
            write_table(f, "slow/findings",
                        [_col("kind", "S8", role="key"), _col("comm", "S20", role="key"),
                         _col("rank", "<i8", role="key"), _col("peer", "<i8", role="key"), _col("host", "S64"),
                         _col("pid", "<i8"), _col("gpu", "S40"), _col("op", "S16"), _col("bytes", "<i8"),
                         _col("late_fraction", "<f8", role="measured", better="lower"),
                         _col("wait_median_ms", "<f8", role="measured", better="lower"),
                         _col("ratio", "<f8", role="measured", better="lower"),
                         _col("loss_pct", "<f8", "%", "measured", "lower"), _col("first_seen", "S24"),
                         _col("last_seen", "S24"), _col("text", "S512")],
                        [("link", COMM, 1, 0, hosts[1], PIDS[1], "GPU 1", "", 0, 0.0, 0.0, 8.0, LOSS, _iso(first),
                          _iso(last), "slow link: the link from rank 1 ... to rank 0 ...")])
        else:
            write_table(f, "slow/findings",
                        [_col("kind", "S8", role="key"), _col("comm", "S20", role="key"),
                         _col("rank", "<i8", role="key"), _col("host", "S64"), _col("pid", "<i8"),
                         _col("gpu", "S40"), _col("op", "S16"), _col("bytes", "<i8"),
                         _col("late_fraction", "<f8", role="measured", better="lower"),
                         _col("wait_median_ms", "<f8", role="measured", better="lower"),
                         _col("loss_pct", "<f8", "%", "measured", "lower"), _col("first_seen", "S24"),
                         _col("last_seen", "S24"), _col("text", "S512")],
                        [] if empty else findings_rows(hosts))
        write_table(f, "slow/windows",
                    [_col("time", "S24", role="key"), _col("t_ns", "<i8", role="key"), _col("comm", "S20", role="key"),
                     _col("rank", "<i8", role="key"), _col("host", "S64"), _col("pid", "<i8"),
                     _col("collectives", "<i8"), _col("late", "<i8"),
                     _col("wait_median_ms", "<f8", role="measured", better="lower"),
                     _col("loss_pct", "<f8", "%", "measured", "lower"),
                     _col("kernel_median_ms", "<f8", role="measured")],
                    [] if empty else windows_rows(hosts))
        write_table(f, "slow/collectives",
                    [_col("t_ns", "<i8", role="key"), _col("comm", "S20", role="key"), _col("seq", "<i8", role="key"),
                     _col("rank", "<i8", role="key"), _col("op", "S16"), _col("bytes", "<i8"), _col("algo", "S16"),
                     _col("proto", "S8"), _col("kernel_ms", "<f8", role="measured"),
                     _col("wait_ms", "<f8", role="measured"), _col("last", "<i8")],
                    [] if empty else collectives_rows())
        write_table(f, "slow/processes",
                    [_col("host", "S64", role="key"), _col("pid", "<i8", role="key"), _col("cuda_device", "<i8"),
                     _col("gpu_bus_id", "S32"), _col("visible_devices", "S64"), _col("launcher_rank", "S16"),
                     _col("profiler_api", "<i8"), _col("file", "S256")],
                    [] if empty else [(hosts[r], PIDS[r], r, "", "", str(r), 4, f"slow/{r}.rec") for r in (0, 1)])
        write_table(f, "slow/missing", [_col("comm", "S20", role="key"), _col("rank", "<i8", role="key"),
                                        _col("collectives", "<i8", role="measured", better="lower")], [])
    return path


def written(path, out):
    """`fabric-report plot PATH --out OUT`: its exit status and the names it wrote."""
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["plot", str(path), "--out", str(out)])
    return rc, sorted(p.name for p in out.iterdir()) if out.is_dir() else []


class SlowRanksPicture(LaunchTest):
    def drawn(self, **options):
        path = write_slow_report(self.dir / "slow-report.h5", **options)
        return path, figures.drawn(path)

    def test_the_late_rank_is_a_line_at_its_loss_and_its_waits_are_dots(self):
        path, drawn = self.drawn()
        self.assertEqual(written(path, self.dir / "plots"), (0, ["slow_ranks.png"]))
        fig = drawn["slow_ranks.png"]
        top, bottom = fig.axes
        self.assertEqual(figures.clipped_titles(fig), [])
        # Top: one line, rank 1's (rank 0 never cost 5%); 40% at the looks it was injected, 0 where no row was.
        labelled = {line.get_label(): line for line in top.get_lines() if not line.get_label().startswith("_")}
        self.assertEqual(list(labelled), ["rank 1 (nodeB, 4101)"])
        line = labelled["rank 1 (nodeB, 4101)"]
        loss = dict(zip(np.round(line.get_xdata(), 3), line.get_ydata()))
        self.assertEqual([loss[float(s)] for s in LOSS_AT], [LOSS] * len(LOSS_AT))
        self.assertEqual((loss[0.0], loss[3.0], loss[4.0], loss[16.0], loss[18.0], loss[19.0]),
                         (0.0, 0.0, 0.0, 10.0, 0.0, 0.0), "rank 0's looks and those without rows: 0 for rank 1")
        self.assertEqual(max(line.get_ydata()), LOSS)
        # Its finding shaded from first_seen to the end of last_seen's second, in its colour, and named.
        spans = [p for p in top.patches if (p.get_gid() or "").startswith("finding-")]
        self.assertEqual(len(spans), 1)
        xs = spans[0].get_patch_transform().transform(spans[0].get_path().vertices)[:, 0]  # Polygon or Rectangle
        self.assertEqual((min(xs), max(xs)), (6.0, 15.0))
        self.assertEqual(matplotlib_rgb(spans[0].get_facecolor()), matplotlib_rgb(line.get_color()))
        self.assertIn("named slow: rank 1 (nodeB, 4101)", [t.get_text() for t in top.texts])
        # Bottom: rank 1's dots at 20 ms in each second it arrived last, in its colour; rank 0's at 0.2 ms.
        dots = {matplotlib_rgb(d.get_color()): d for d in bottom.get_lines()}
        late = dots[matplotlib_rgb(line.get_color())]
        self.assertEqual(list(late.get_xdata()), [s + 0.5 for s in LATE])
        self.assertEqual(list(late.get_ydata()), [20.0] * len(LATE))
        early = [d for d in bottom.get_lines() if d is not late]
        self.assertEqual(len(early), 1, "rank 0, last by 0.2 ms; the ties (0.01 ms) left out")
        self.assertEqual((list(early[0].get_xdata()), list(early[0].get_ydata())),
                         ([s + 0.5 for s in EARLY], [0.2] * len(EARLY)))
        self.assertEqual([t.get_text() for t in bottom.get_legend().get_texts()],
                         ["rank 1 (nodeB, 4101)", "rank 0 (nodeA, 4100)"], "the colours named on both panels")

    def test_a_slow_link_is_labelled_from_rank_to_peer(self):
        path, drawn = self.drawn(link=True)
        top, _ = drawn["slow_ranks.png"].axes
        self.assertIn(f"named slow: slow link: rank 1 -> rank 0 on {COMM}", [t.get_text() for t in top.texts])

    def test_the_page_holds_the_picture(self):
        path = write_slow_report(self.dir / "slow-report.h5")
        self.assertIn('<img alt="slow_ranks" src="data:image/png;base64,', html.page(fa.load(path)))

    def test_a_report_without_rows_gets_no_picture(self):
        path, drawn = self.drawn(empty=True)
        self.assertEqual(drawn, {}, "no row, no figure: as every empty table")
        self.assertEqual(written(path, self.dir / "plots"), (0, []))
        self.assertNotIn("<img", html.page(fa.load(path)))

    def test_a_report_of_ties_only_says_no_rank_arrived_last(self):
        path = write_slow_report(self.dir / "ties.h5")
        with h5py.File(path, "a") as f:
            rows = f["slow/collectives"][...]
            rows["wait_ms"] = np.minimum(rows["wait_ms"], 0.01)
            f["slow/collectives"][...] = rows
            for name in ("slow/windows", "slow/findings"):
                f[name].resize((0,))
        top, bottom = figures.drawn(path)["slow_ranks.png"].axes
        self.assertEqual(([line.get_gid() for line in top.get_lines()], bottom.get_lines()), (["loss-shown"], []))
        self.assertIn("no rank arrived last (by 0.05 ms or more)", [t.get_text() for t in bottom.texts])
        self.assertIn("no judge look recorded (/slow/windows has no row)", [t.get_text() for t in top.texts])

    def test_a_host_name_from_the_file_is_drawn_as_text(self):
        path, drawn = self.drawn(hosts=("nodeA", HOST))
        top, _ = drawn["slow_ranks.png"].axes
        shown = f"rank 1 ({HOST_SHOWN}, 4101)"
        self.assertEqual([t.get_text() for t in top.get_legend().get_texts()], [shown])
        self.assertIn(f"named slow: {shown}", [t.get_text() for t in top.texts])
        self.assertIn("slow_ranks", unescape(html.page(fa.load(path))))

    def test_loss_shown_is_the_documented_five_percent(self):
        self.assertEqual((slow_plots.LOSS_SHOWN, slow_plots.TIE_MS), (5.0, 0.05))


def matplotlib_rgb(color):
    import matplotlib.colors
    return tuple(round(c, 6) for c in matplotlib.colors.to_rgb(color))


if __name__ == "__main__":
    unittest.main()
