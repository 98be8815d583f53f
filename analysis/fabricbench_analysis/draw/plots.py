"""The pictures people read, chosen from the columns' declarations (results.py: Run.headlines, Run.series), never
from per-table code: each headline column of a results table against size, one curve per series value (a bandwidth
with the row's time beside it where the table measures one, and its reference figure, the expected bandwidth, as a
dashed line, or a dashed curve where it varies with size); the headline of any other table without a size as bars per
series value (fabric-sweep's per-node medians, a verdict's hosts in red, untested ones in grey); a sweep's heat maps
and mesh pictures (sweep_plots.py); a slow-rank report's ranks against time (slow_plots.py); and a stability profile
(per-iteration times of one size, in order). Each figure becomes a file through figure_file.py."""
from __future__ import annotations

import math
import pathlib

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from ..judge import rails  # noqa: E402
from ..read.results import TIME_UNITS, curve_keys, curve_label  # noqa: E402
from . import figure_file as ff  # noqa: E402
from . import layout  # noqa: E402
from . import slow_plots  # noqa: E402
from . import sweep_plots  # noqa: E402
from .figure_file import title  # noqa: E402

_TO_GBPS = {"MB/s": 1e-3, "MiB/s": 1048576 / 1e9, "GB/s": 1.0, "Gb/s": 1 / 8}


def _size_axis(ax, size: str) -> None:
    ax.set_xscale("log", base=2)
    # Powers of two as a person writes them (8, 1K, 1M, 1G), at most a dozen: every power of 8 B to 8 GiB crowded the
    # axis into one smear of labels.
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: ff.size_label(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"{size} (B)")
    ax.grid(True, which="both", alpha=0.3)


def _reference_lines(ax, run, table: str, frame: pd.DataFrame, unit: str) -> bool:
    """The table's reference columns (the expected bandwidth), converted to the plotted `unit`: a value that holds at
    every size as a dashed horizontal line; one that varies with size within a series value (a healthy curve: its
    rows' expected_from is calibrated) as a dashed curve against size, one per series value and kind of reference.
    Returns whether it drew such a curve (its label wants the legend)."""
    series, size = run.series(table), run.size_key(table)
    split = [c for c in (series, "expected_from") if c and c in frame]
    curved = False
    for col in run.columns[table].values():
        if col.role != "reference" or col.unit not in _TO_GBPS or col.name not in frame:
            continue
        scale = _TO_GBPS[col.unit] / _TO_GBPS[unit]
        rows = frame[frame[col.name].notna()]
        flat = {}  # value -> its kind of reference ("" where the file does not say)
        for key, part in rows.groupby(split if len(split) > 1 else split[0], sort=False) if split else [((), rows)]:
            key = dict(zip(split, key if isinstance(key, tuple) else (key,)))
            kind = str(key.get("expected_from", ""))
            if not size or part[col.name].nunique() < 2:
                flat.update(dict.fromkeys(part[col.name].unique(), kind))
                continue
            several = series in key and rows[series].nunique() > 1
            points = part.groupby(size)[col.name].median()  # in-place and out-of-place share one curve
            ax.plot(points.index, points.to_numpy() * scale, color="gray", linestyle="--", linewidth=1,
                    label=_reference_name(kind, str(key[series]) if several else ""))
            curved = True
        _flat_lines(ax, col, flat, scale)
    return curved


def _flat_lines(ax, col, values: dict, scale: float) -> None:
    """Each of `values` (value -> its kind of reference) as a dashed horizontal line, named; one that is never judged
    says so."""
    for value in sorted(values):
        y = value * scale
        ax.axhline(y, color="gray", linestyle="--", linewidth=1)
        never = " (uncalibrated: not judged)" if values[value] == "uncalibrated" else ""
        ax.annotate(f"{col.name} {value:.4g} {col.unit}{never}", (ax.get_xlim()[0], y), fontsize=7, color="gray",
                    xytext=(2, 2), textcoords="offset points")


def _reference_name(kind: str, value: str) -> str:
    """A dashed reference curve's legend entry: 'expected (calibrated)', with the series value where there are
    several ('expected (calibrated) all_reduce')."""
    return " ".join(w for w in ("expected", f"({kind})" if kind else "", value) if w)


def _kind(unit: str) -> str:
    return "latency" if unit in TIME_UNITS else "bandwidth" if unit in _TO_GBPS else ""


def _time_beside(run, table: str, rows: pd.DataFrame, headline: str):
    """For a bandwidth headline: the first measured time column (not itself a headline) with values in its rows,
    drawn beside it (fabric-coll's time_us); None where the table has none there."""
    if run.columns[table][headline].unit not in _TO_GBPS:
        return None
    for col in run.columns[table].values():
        if col.role == "measured" and col.unit in TIME_UNITS and not col.headline and rows[col.name].notna().any():
            return col.name
    return None


_STYLES = ["-", "--", ":", "-."]
MAX_CURVES_IN_ONE_PANEL = 6


def _panels(run, table, rows, columns, keys, out: pathlib.Path, paths) -> None:
    """One panel per series value (fabric-coll --op all: one per op) for each of `columns`, one figure per column;
    in a panel the other curve keys' values are line styles (in-place solid, out-of-place dashed), named in words."""
    size = run.size_key(table)
    series, rest = keys[0], keys[1:]
    values = list(dict.fromkeys(rows[series]))
    styles = {v: _STYLES[i % len(_STYLES)] for i, v in enumerate(dict.fromkeys(rows[rest[0]]))} if rest else {}
    short = table.split("/", 1)[1].replace("/", "_")
    for col, stem in columns:
        unit = run.columns[table][col].unit
        ncols = min(4, len(values))
        nrows = math.ceil(len(values) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows + 0.6), squeeze=False)
        for ax, value in zip(axes.flat, values):
            part = rows[rows[series] == value]
            groups = part.groupby(rest if len(rest) > 1 else rest[0], sort=False) if rest else [((), part)]
            for key, curve in groups:
                key = key if isinstance(key, tuple) else (key,)
                curve = curve.sort_values(size)
                ax.plot(curve[size], curve[col], marker="o", markersize=3, linestyle=styles.get(key[0], "-") if rest
                        else "-", label=curve_label(rest, key) or str(value))
            _size_axis(ax, size)
            ax.set_ylabel(f"{col} ({unit})")
            if unit in TIME_UNITS:
                ax.set_yscale("log")
            ax.set_title(str(value), fontsize=10)
            curved = unit in _TO_GBPS and _reference_lines(ax, run, table, part, unit)
            if rest or curved:
                ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(values):]:
            ax.set_visible(False)
        fig.suptitle(title(run, f"{short} {col} ({unit}), one panel per {series}"), fontsize=10)
        ff.save(fig, out.with_name(f"{short}_{stem}{out.suffix}"), paths)


def _curves(run, table, out_dir, fmt, paths) -> None:
    """Each headline column against size (the rows that have it), one curve per curve_keys value:
    <table>_latency for a time, <table>_bandwidth for a rate (with the row's time beside it where there is one)."""
    frame = run.tables[table]
    size = run.size_key(table)
    short = table.split("/", 1)[1].replace("/", "_")
    taken = set()
    for headline in run.headlines(table):
        rows = frame[frame[headline].notna()]
        if rows.empty:
            continue
        unit = run.columns[table][headline].unit
        name = _kind(unit) or headline
        name = headline if name in taken else name
        taken.add(name)
        drawn = [headline] + [c for c in (_time_beside(run, table, rows, headline),) if c]
        keys = curve_keys(run, table, rows)
        if keys and keys[0] == run.series(table) and rows[keys].drop_duplicates().shape[0] > MAX_CURVES_IN_ONE_PANEL \
                and rows[keys[0]].nunique() > 1:
            # Too many curves for one legend: one panel per series value (the time beside it as a figure of its own).
            _panels(run, table, rows, [(headline, name)] + [(c, "time") for c in drawn[1:]], keys,
                    out_dir / f"{short}_{name}.{fmt}", paths)
            continue
        fig, axes = plt.subplots(1, len(drawn), figsize=(6 * len(drawn), 4.8) if len(drawn) > 1 else (7, 4.8),
                                 squeeze=False)
        groups = rows.groupby(keys if len(keys) > 1 else keys[0], sort=False) if keys else [((), rows)]
        for key, part in groups:
            part = part.sort_values(size)
            for ax, col in zip(axes[0], drawn):
                ax.plot(part[size], part[col], marker="o", markersize=3, label=curve_label(keys, key))
        for ax, col in zip(axes[0], drawn):
            col_unit = run.columns[table][col].unit
            _size_axis(ax, size)
            ax.set_ylabel(f"{col} ({col_unit})")
            if col_unit in TIME_UNITS:
                ax.set_yscale("log")
            ax.set_title(title(run, f"{short} {col}"), fontsize=9)
        curved = unit in _TO_GBPS and _reference_lines(axes[0][0], run, table, rows, unit)
        if keys or curved:
            axes[0][0].legend(fontsize=7)
        ff.save(fig, out_dir / f"{short}_{name}.{fmt}", paths)


def _bars(run, table, out_dir, fmt, paths) -> None:
    """A table without a size (fabric-sweep's per-node medians): each headline as bars, one panel per series value,
    each bar named by the text keys that vary within the panel (and its rail where the rows have several); names in a
    sweep verdict of the panel's metric in red, hosts no pair test reached in grey (and named below the panel where
    they have no bar)."""
    frame = run.tables[table]
    untested = rails.untested_hosts(run)
    series = run.series(table)
    columns = run.columns[table]
    text_keys = [k for k in run.keys(table) if k != series and frame[k].dtype == object]
    for headline in run.headlines(table):
        rows = frame[frame[headline].notna()]
        if rows.empty:
            continue
        panels = list(rows.groupby(series, sort=False)) if series else [("", rows)]
        several_rails = "rail" in rows and rows.groupby(series or (lambda _: 0))["rail"].nunique().max() > 1
        width = max(5, 0.3 * max(len(part) for _, part in panels)) if several_rails else 5  # a bar per host and rail
        fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 4), squeeze=False)
        for ax, (value, part) in zip(axes[0], panels):
            metric = str(value) if series == "metric" else None  # a verdict marks the plots of its own metric
            varying = [k for k in text_keys if part[k].nunique() > 1] or text_keys[:1]
            texts = [tuple(str(v) for v in r) for r in part[varying].itertuples(index=False, name=None)]
            labels = [" ".join(t) for t in texts]
            named = layout._verdict_hosts(run, None, metric)
            red = [x in named for x in labels]
            if "rail" in part and part["rail"].nunique() > 1:
                # One bar per host (or leaf) and rail: red where a verdict about that rail (or no one rail) names it.
                labels = [f"{x} rail {r}" for x, r in zip(labels, part["rail"])]
                red = [any(v in layout._verdict_hosts(run, r, metric) | rails.verdict_switches(run, r, metric) for v in t)
                       for t, r in zip(texts, part["rail"])]
            grey = [not bad and any(v in untested for v in t) for t, bad in zip(texts, red)]
            colors = ["red" if bad else layout.UNTESTED_COLOR if gap else "tab:blue" for bad, gap in zip(red, grey)]
            ax.bar(range(len(part)), part[headline], color=colors)
            ax.set_xticks(range(len(part)), labels, rotation=90, fontsize=7)
            for tick, gap in zip(ax.get_xticklabels(), grey):
                if gap:
                    tick.set_color(layout.UNTESTED_COLOR)
            missing = [h for h in untested if h not in set(part["host"])] if "host" in part else []
            if missing:
                ax.set_xlabel(f"not tested (no bar): {layout._few(missing)}", color=layout.UNTESTED_COLOR, fontsize=8)
            # A table with a per-row unit column (the sweep's) names the unit there.
            unit = columns[headline].unit or (str(part["unit"].iloc[0]) if "unit" in part else "")
            ax.set_ylabel(f"{headline} ({unit})" if unit else headline)
            ax.set_title(title(run, f"{table} {headline} {value}".strip()), fontsize=9)
        stem = table.replace("/", "_") + ("" if headline == run.headlines(table)[0] else f"_{headline}")
        ff.save(fig, out_dir / f"{stem}.{fmt}", paths)


def _stability(run, out_dir, fmt, paths) -> None:
    """Per-iteration times of the largest size of the first series value (op, test), in order, one line per rank:
    for every results table with a samples table of the same name (/samples/<name>, the columns of
    TableSpec::samples())."""
    for table, frame in run.tables.items():
        if not table.startswith("results/"):
            continue
        short = table.split("/", 1)[1]
        samples = run.tables.get("samples/" + short)
        if samples is None or samples.empty or frame is None or frame.empty:
            continue
        first = frame.iloc[0]
        series, size = run.series(table), run.size_key(table)
        same = frame[frame[series] == first[series]] if series else frame
        index = same[size].idxmax() if size else same.index[0]
        row = frame.loc[index]
        mine = samples[samples.row == index]
        if mine.empty:
            continue
        fig, ax = plt.subplots(figsize=(9, 4))
        for rank, part in mine.groupby("rank"):
            part = part.sort_values("iteration")
            ax.plot(part.iteration, part.time_us, linewidth=0.8, label=f"rank {rank}")
        ax.set_xlabel("iteration")
        ax.set_ylabel("time per iteration (us)")
        ax.grid(True, alpha=0.3)
        if mine["rank"].nunique() <= 8:
            ax.legend(fontsize=7)
        med = mine.time_us.median()
        spread = (mine.time_us.quantile(0.99) - mine.time_us.quantile(0.01)) / med if med else math.nan
        what = " ".join(([str(row[series])] if series else []) + ([f"at {int(row[size])} B"] if size else []))
        ax.set_title(title(run, f"stability: {what}, median {med:.4g} us, p1-p99 spread {spread:.1%}"), fontsize=9)
        ff.save(fig, out_dir / f"stability_{short.replace('/', '_')}.{fmt}", paths)


def plot_run(run, out_dir, fmt: str = "png") -> list:
    """Every plot that applies to `run`, written to `out_dir`; returns the paths. Results tables with a size key
    get curves, other tables (samples aside) without one get bars, of their headline columns; a sweep its heat maps
    and mesh, a slow-rank report (/slow/windows, /slow/collectives) its ranks against time."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list = []
    drawn = [t for t, frame in run.tables.items() if not frame.empty and run.headlines(t)]
    for table in drawn:
        if table.startswith("results/") and run.size_key(table):
            _curves(run, table, out_dir, fmt, paths)
    sweep_plots.heat_maps(run, out_dir, fmt, paths)
    sweep_plots.mesh(run, out_dir, fmt, paths)
    slow_plots.slow_ranks(run, out_dir, fmt, paths)
    for table in drawn:
        if table in ("sweep/passes", "sweep/changes"):
            continue  # the mesh's own pictures
        if not table.startswith(("results/", "samples/")) and not run.size_key(table):
            _bars(run, table, out_dir, fmt, paths)
    _stability(run, out_dir, fmt, paths)
    return paths
