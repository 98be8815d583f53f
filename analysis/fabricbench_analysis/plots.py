"""The pictures people read, chosen from the columns' declarations (results.py: Run.headlines, Run.series), never
from per-table code: each headline column of a results table against size, one curve per series value (a bandwidth
with the row's time beside it where the table measures one, and its reference figure, the expected bandwidth, as a
dashed line); the headline of any other table without a size as bars per series value (fabric-sweep's per-node
medians); sweep heat maps with the hosts named in that metric's verdicts marked and the hosts no test reached in grey;
for a mesh (fabric-sweep --repeat) each host's figure over time and a heat map per pass; and a stability profile
(per-iteration times of one size, in order). A title too wide for its figure is wrapped, never clipped."""
from __future__ import annotations

import dataclasses
import math
import pathlib
import re

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import rails  # noqa: E402
from .results import TIME_UNITS, curve_keys, curve_label  # noqa: E402

MOST_HOST_LABELS = 64  # a heat map names every host up to this many, else only those in a verdict
_TO_GBPS = {"MB/s": 1e-3, "MiB/s": 1048576 / 1e9, "GB/s": 1.0, "Gb/s": 1 / 8}


def title(run, what: str) -> str:
    """'<what> - fabric-coll on a,b (8 x NVIDIA H200) 2026-11-23' from the run's attributes and /env/ranks."""
    gpus = ""
    ranks = run.tables.get("env/ranks")
    if ranks is not None and "gpu_name" in ranks and (ranks.gpu_name != "").any():
        names = ranks[ranks.gpu_name != ""].gpu_name
        gpus = f" ({len(names)} x {names.iloc[0]})" if names.nunique() == 1 else f" ({len(names)} GPUs)"
    date = str(run.attrs.get("started_at", ""))[:10]
    hosts = [h for h in str(run.attrs.get("hosts", "")).split(",") if h]
    # A title is one line: past 8 hosts the count and the first and last (1024 names overflow the rasterizer).
    named = ",".join(hosts) if len(hosts) <= 8 else f"{len(hosts)} hosts ({hosts[0]} ... {hosts[-1]})"
    return f"{what}\n{run.attrs.get('tool', '')} on {named}{gpus} {date}"


def _size_axis(ax, size: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"{size} (B)")
    ax.grid(True, which="both", alpha=0.3)


def _reference_lines(ax, run, table: str, frame: pd.DataFrame, unit: str) -> None:
    """The table's reference columns (the expected bandwidth) as dashed lines, converted to the plotted `unit`."""
    for col in run.columns[table].values():
        if col.role != "reference" or col.unit not in _TO_GBPS or col.name not in frame:
            continue
        for value in sorted(frame[col.name].dropna().unique()):
            y = value * _TO_GBPS[col.unit] / _TO_GBPS[unit]
            ax.axhline(y, color="gray", linestyle="--", linewidth=1)
            ax.annotate(f"{col.name} {value:.4g} {col.unit}", (ax.get_xlim()[0], y), fontsize=7, color="gray",
                        xytext=(2, 2), textcoords="offset points")


def _wrap(text: str, chars: int) -> str:
    """Each line of `text` longer than `chars` broken after commas and spaces (a title's host list has no spaces)."""
    out = []
    for line in text.split("\n"):
        current = ""
        for token in re.findall(r"[^ ,]+[ ,]*|[ ,]+", line):
            if current and len(current) + len(token.rstrip()) > chars:
                out.append(current.rstrip())
                current = ""
            current += token
        out.append(current.rstrip())
    return "\n".join(out)


def _titles(fig) -> list:
    """(title, left, right in pixels of the room it is centred in): a panel's title its column of the figure's grid
    (a colour bar's nested grid is part of its panel), the figure's title the whole width."""
    width = fig.bbox.width
    # fig._suptitle: matplotlib 3.6 (Debian 12's) has no get_suptitle yet
    out = [(fig._suptitle, 0.0, width)] if fig._suptitle is not None and fig._suptitle.get_text() else []
    for ax in fig.axes:
        spec = ax.get_subplotspec() if ax.title.get_text() else None
        if spec is not None:
            spec = spec.get_topmost_subplotspec()
            ncols = spec.get_gridspec().ncols
            out.append((ax.title, width * spec.colspan.start / ncols, width * spec.colspan.stop / ncols))
    return out


def _fit_titles(fig) -> bool:
    """Wrap each title wider than its room (8 host names over a 5-inch bar chart), which would otherwise be clipped
    at the figure's edge or run over its neighbour's; whether any was wrapped."""
    renderer = fig.canvas.get_renderer()
    wrapped = False
    for text, left, right in _titles(fig):
        box = text.get_window_extent(renderer)
        centre = (box.x0 + box.x1) / 2
        room = 2 * min(centre - left, right - centre) * 0.95
        if box.width > room > 0:
            longest = max(len(line) for line in text.get_text().split("\n"))
            text.set_text(_wrap(text.get_text(), max(12, int(longest * room / box.width))))
            wrapped = True
    return wrapped


def _save(fig, out: pathlib.Path, paths: list) -> None:
    # The layout first: it moves the panels, and with them where their titles are centred.
    laid_out = not fig.get_constrained_layout()
    if laid_out:
        fig.tight_layout()
    if _fit_titles(fig) and laid_out:
        fig.tight_layout()  # room for the wrapped titles' extra lines
    fig.savefig(out, dpi=110)
    plt.close(fig)
    paths.append(out)


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
            if unit in _TO_GBPS:
                _reference_lines(ax, run, table, part, unit)
            if rest:
                ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(values):]:
            ax.set_visible(False)
        fig.suptitle(title(run, f"{short} {col} ({unit}), one panel per {series}"), fontsize=10)
        _save(fig, out.with_name(f"{short}_{stem}{out.suffix}"), paths)


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
        if unit in _TO_GBPS:
            _reference_lines(axes[0][0], run, table, rows, unit)
        if keys:
            axes[0][0].legend(fontsize=7)
        _save(fig, out_dir / f"{short}_{name}.{fmt}", paths)


def _verdict_hosts(run, rail=None, metric=None) -> set:
    """The hosts named in a sweep verdict; with `rail`, in the verdicts about that rail or about no one rail; with
    `metric`, in that metric's verdicts (a latency verdict marks no bandwidth plot)."""
    return rails.verdict_hosts(run, rail, metric)


UNTESTED_COLOR = "darkgray"  # a host no pair test reached: not measured, neither good (black) nor bad (red)


def _color_ticks(labels, untested) -> None:
    """Marked names (`* `) red, untested hosts grey."""
    for tick in labels:
        if tick.get_text().startswith("* "):
            tick.set_color("red")
        elif tick.get_text() in untested:
            tick.set_color(UNTESTED_COLOR)


@dataclasses.dataclass
class HeatLayout:
    """How the heat map of one sweep matrix is drawn: which metric and rail, the hosts in drawing order, the leaf
    switches (name, first index, end index) and the indices where a new leaf begins (a line before each), the hosts
    and leaves named in a verdict about that rail and metric (marked `*`, in red), the hosts no test reached
    (grey)."""
    metric: str
    rail: object            # int, or None for a matrix without rails
    hosts: list
    leaves: list
    boundaries: list
    marked_hosts: set
    marked_leaves: set
    untested: set = dataclasses.field(default_factory=set)


def heat_layout(run, name: str) -> HeatLayout:
    """The layout of the heat map of /`name` (sweep/matrices/<metric> or <metric>_rail<r>): hosts in the matrix's
    order (the job's) without a topology; with /sweep/topology grouped by that rail's leaves (rails.leaf_order)."""
    metric, rail = rails.matrix_rail(name.rsplit("/", 1)[1])
    matrix = run.matrices[name]
    hosts = [str(h) for h in matrix.index]
    order = rails.leaf_order(run, hosts, rail)
    if order.grouped and sorted(order.hosts) != sorted(str(c) for c in matrix.columns):
        order = rails.LeafOrder(hosts, [], [])  # rows and columns not the same hosts: drawn as stored
    return HeatLayout(metric, rail, order.hosts, order.leaves, order.boundaries, _verdict_hosts(run, rail, metric),
                      rails.verdict_switches(run, rail, metric) if order.grouped else set(),
                      set(rails.untested_hosts(run)))


def _leaf_axes(ax, layout: HeatLayout) -> None:
    """Leaf boundaries as lines across the map, the leaf names on the top and right axes (named in a verdict: `*`,
    red)."""
    for index in layout.boundaries:
        ax.axhline(index - 0.5, color="black", linewidth=1.5).set_gid(f"leaf-boundary-row-{index}")
        ax.axvline(index - 0.5, color="black", linewidth=1.5).set_gid(f"leaf-boundary-column-{index}")
    centers = [(start + end - 1) / 2 for _, start, end in layout.leaves]
    names = [(f"* {leaf}" if leaf in layout.marked_leaves else leaf) or "(no leaf)" for leaf, _, _ in layout.leaves]
    top = ax.secondary_xaxis("top")
    top.set_xticks(centers, names, fontsize=8)
    right = ax.secondary_yaxis("right")
    right.set_yticks(centers, names, fontsize=8, rotation=90, va="center")
    for tick in top.get_xticklabels() + right.get_yticklabels():
        if tick.get_text().startswith("* "):
            tick.set_color("red")


def _heat_maps(run, out_dir, fmt, paths) -> None:
    """One heat map per sweep matrix (with rails: one per metric and rail, titled by its rail); with a topology the
    hosts grouped by leaf (heat_layout)."""
    for name, matrix in run.matrices.items():
        if not name.startswith("sweep/matrices/"):
            continue
        attrs = run.matrix_attrs.get(name, {})
        layout = heat_layout(run, name)
        if layout.leaves:
            matrix = matrix.copy()
            matrix.index, matrix.columns = matrix.index.map(str), matrix.columns.map(str)
            matrix = matrix.loc[layout.hosts, layout.hosts]
        named = layout.marked_hosts
        n = len(matrix)
        wider = 1 if layout.leaves else 0  # the leaf names on the right
        # At most 14 x 13 inches: at 1024 hosts a cell is a pixel or so, the leaves and the named hosts carry the
        # labels, and every cell is drawn as itself (no smoothing that would hide one bad row).
        side = min(0.5 * n, 11)
        fig, ax = plt.subplots(figsize=(max(5, side + 3) + wider, max(4, side + 2)))
        values = matrix.to_numpy(dtype=float)
        cmap = "viridis" if attrs.get("better", "higher") == "higher" else "viridis_r"
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, interpolation="nearest")
        fig.colorbar(image, ax=ax, label=attrs.get("unit", ""), **({"pad": 0.12} if layout.leaves else {}))
        if n <= MOST_HOST_LABELS:
            ax.set_xticks(range(n), [f"* {h}" if h in named else str(h) for h in matrix.columns], rotation=90, fontsize=7)
            ax.set_yticks(range(n), [f"* {h}" if h in named else str(h) for h in matrix.index], fontsize=7)
        else:  # only the hosts a verdict names
            rows = [i for i, h in enumerate(matrix.index) if h in named]
            columns = [i for i, h in enumerate(matrix.columns) if h in named]
            ax.set_xticks(columns, [f"* {matrix.columns[i]}" for i in columns], rotation=90, fontsize=7)
            ax.set_yticks(rows, [f"* {matrix.index[i]}" for i in rows], fontsize=7)
        _color_ticks(ax.get_xticklabels() + ax.get_yticklabels(), layout.untested)
        if n <= 16:
            norm = image.norm
            for i in range(n):
                for j in range(n):
                    if not math.isnan(values[i, j]):
                        shade = norm(values[i, j]) if cmap == "viridis" else 1 - norm(values[i, j])
                        ax.text(j, i, f"{values[i, j]:.3g}", ha="center", va="center", fontsize=6,
                                color="black" if shade > 0.6 else "white")
        if layout.leaves:
            _leaf_axes(ax, layout)
        ax.set_xlabel("to")
        ax.set_ylabel("from")
        what = layout.metric if layout.rail is None else f"{layout.metric} rail {layout.rail}"
        grey = "; grey: not tested" if layout.untested & set(layout.hosts) else ""
        ax.set_title(title(run, f"{what} ({attrs.get('unit', '')}); * = named in a verdict{grey}"), fontsize=9)
        _save(fig, out_dir / f"sweep_{name.rsplit('/', 1)[1]}.{fmt}", paths)


def _pass_matrix(rows: pd.DataFrame, hosts: list, higher: bool) -> np.ndarray:
    """One pass's matrix of one metric and rail from its /sweep/pairs rows: row -> column, the best of re-tests."""
    index = {h: i for i, h in enumerate(hosts)}
    m = np.full((len(hosts), len(hosts)), np.nan)
    pick = np.fmax if higher else np.fmin
    for r in rows.itertuples(index=False):
        a, b = index.get(r.host_a), index.get(r.host_b)
        if a is None or b is None or pd.isna(r.value):
            continue
        cells = [(a, b)] if r.direction == "a->b" else [(b, a)] if r.direction == "b->a" else [(a, b), (b, a)]
        for i, j in cells:
            m[i, j] = pick(m[i, j], r.value)
    return m


# Line styles of the mesh's hosts over time: up to this many hosts each gets its own colour, beyond only the changed.
# No red: elsewhere on the page red means bad, and a change may be a recovery.
_PALETTE = [c for c in matplotlib.colormaps["tab10"].colors if c != matplotlib.colors.to_rgb("tab:red")]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _changed_hosts(changes, metric) -> list:
    """The hosts a change of `metric` names (/sweep/changes), in order of appearance."""
    if changes is None or changes.empty:
        return []
    mine = changes[changes["metric"] == metric] if "metric" in changes else changes
    return list(dict.fromkeys(h for a, b in zip(mine.host_a, mine.host_b) for h in (a, b) if h))


def _host_styles(hosts, changed) -> dict:
    """host -> ax.plot keywords. Each changed host its own colour and marker (the legend tells them apart), drawn
    thick over the others; the others thin, in their own colours while all hosts fit the palette, else light grey
    without a legend entry (at 1024 hosts the changed ones must stand out)."""
    few = len(hosts) <= len(_PALETTE)
    styles = {}
    for i, host in enumerate(hosts):
        if host in changed:
            k = changed.index(host)
            color = _PALETTE[i] if few else _PALETTE[k % len(_PALETTE)]
            styles[host] = dict(color=color, marker=_MARKERS[k % len(_MARKERS)], markersize=5, linewidth=2,
                                label=f"{host} (changed)", zorder=3)
        else:
            styles[host] = dict(color=_PALETTE[i] if few else "lightgray", marker="o", markersize=2, linewidth=0.8,
                                label=host if few else None, zorder=2)
    return styles


def _mesh(run, out_dir, fmt, paths, most_passes: int = 12) -> None:
    """fabric-sweep --repeat: per metric, each host's median pair over time (one line per host, x the pass's start;
    hosts a change verdict of that metric names drawn thick, each in its own colour and marker) and a heat map per
    pass (the last `most_passes`, one panel each)."""
    passes, pairs = run.tables.get("sweep/passes"), run.tables.get("sweep/pairs")
    if passes is None or passes.empty or pairs is None or pairs.empty:
        return
    changes = run.tables.get("sweep/changes")
    hosts = [h for h in str(run.attrs.get("hosts", "")).split(",") if h]
    start = dict(zip(passes["pass"], passes["start_s"]))
    rows = pairs[pairs["pass"].isin(start.keys())]
    if "rail" in rows:
        rows = rows[rows["rail"] == rows["rail"].min()]  # rail 0 (the per-rail heat maps are the last pass's)
    for metric, part in rows.groupby("metric", sort=False):
        unit = str(part["unit"].iloc[0])
        higher = run.matrix_attrs.get(f"sweep/matrices/{metric}", {}).get("better", "higher") != "lower"
        fig, ax = plt.subplots(figsize=(9, 4))
        changed = _changed_hosts(changes, metric)
        styles = _host_styles(hosts, changed)
        lowest, highest = math.inf, 0.0
        for host in hosts:
            mine = part[(part.host_a == host) | (part.host_b == host)]
            per_pass = mine.groupby("pass")["value"].median()
            xs = [start[k] for k in per_pass.index]
            lowest, highest = min(lowest, per_pass.min()), max(highest, per_pass.max())
            ax.plot(xs, per_pass.to_numpy(), **styles[host])
        ax.set_xlabel("seconds since the first pass")
        ax.set_ylabel(f"{metric}, median pair of the host ({unit})")
        if lowest > 0 and highest / lowest > 20:
            ax.set_yscale("log")  # a change of 100x (20 us -> 2 ms) beside the others
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.set_title(title(run, f"{metric} per host over {len(start)} passes; thick: named in a change"), fontsize=9)
        _save(fig, out_dir / f"sweep_over_time_{metric}.{fmt}", paths)

        shown = sorted(start)[-most_passes:]
        cols = min(4, len(shown))
        lines = math.ceil(len(shown) / cols)
        mats = {k: _pass_matrix(part[part["pass"] == k], hosts, higher) for k in shown}
        finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()] or [np.array([])])
        vmin, vmax = (finite.min(), finite.max()) if finite.size else (0, 1)
        norm = matplotlib.colors.LogNorm(vmin, vmax) if not higher and vmin > 0 else None
        fig, axes = plt.subplots(lines, cols, figsize=(3.2 * cols + 1.2, 3.2 * lines + 0.8), squeeze=False,
                                 constrained_layout=True)
        image = None
        for ax, k in zip(axes.flat, shown):
            image = ax.imshow(np.ma.masked_invalid(mats[k]), cmap="viridis" if higher else "viridis_r",
                              norm=norm, vmin=None if norm else vmin, vmax=None if norm else vmax)
            ax.set_title(f"pass {k}", fontsize=8)
            small = len(hosts) <= 16
            ax.set_xticks(range(len(hosts)) if small else [], hosts if small else [], rotation=90, fontsize=5)
            ax.set_yticks(range(len(hosts)) if small else [], hosts if small else [], fontsize=5)
        for ax in list(axes.flat)[len(shown):]:
            ax.axis("off")
        if image is not None:
            fig.colorbar(image, ax=axes.ravel().tolist(), label=unit, shrink=0.8)
        fig.suptitle(title(run, f"{metric} per pass (row -> column), one colour scale"), fontsize=9)
        _save(fig, out_dir / f"sweep_passes_{metric}.{fmt}", paths)


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
            named = _verdict_hosts(run, None, metric)
            red = [x in named for x in labels]
            if "rail" in part and part["rail"].nunique() > 1:
                # One bar per host (or leaf) and rail: red where a verdict about that rail (or no one rail) names it.
                labels = [f"{x} rail {r}" for x, r in zip(labels, part["rail"])]
                red = [any(v in _verdict_hosts(run, r, metric) | rails.verdict_switches(run, r, metric) for v in t)
                       for t, r in zip(texts, part["rail"])]
            grey = [not bad and any(v in untested for v in t) for t, bad in zip(texts, red)]
            colors = ["red" if bad else UNTESTED_COLOR if gap else "tab:blue" for bad, gap in zip(red, grey)]
            ax.bar(range(len(part)), part[headline], color=colors)
            ax.set_xticks(range(len(part)), labels, rotation=90, fontsize=7)
            for tick, gap in zip(ax.get_xticklabels(), grey):
                if gap:
                    tick.set_color(UNTESTED_COLOR)
            missing = [h for h in untested if h not in set(part["host"])] if "host" in part else []
            if missing:
                ax.set_xlabel(f"not tested (no bar): {_few(missing)}", color=UNTESTED_COLOR, fontsize=8)
            # A table with a per-row unit column (the sweep's) names the unit there.
            unit = columns[headline].unit or (str(part["unit"].iloc[0]) if "unit" in part else "")
            ax.set_ylabel(f"{headline} ({unit})" if unit else headline)
            ax.set_title(title(run, f"{table} {headline} {value}".strip()), fontsize=9)
        stem = table.replace("/", "_") + ("" if headline == run.headlines(table)[0] else f"_{headline}")
        _save(fig, out_dir / f"{stem}.{fmt}", paths)


def _few(names: list, most: int = 8) -> str:
    """'a, b', or the first `most` names and how many more."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


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
        _save(fig, out_dir / f"stability_{short.replace('/', '_')}.{fmt}", paths)


def plot_run(run, out_dir, fmt: str = "png") -> list:
    """Every plot that applies to `run`, written to `out_dir`; returns the paths. Results tables with a size key
    get curves, other tables (samples aside) without one get bars, of their headline columns."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list = []
    drawn = [t for t, frame in run.tables.items() if not frame.empty and run.headlines(t)]
    for table in drawn:
        if table.startswith("results/") and run.size_key(table):
            _curves(run, table, out_dir, fmt, paths)
    _heat_maps(run, out_dir, fmt, paths)
    _mesh(run, out_dir, fmt, paths)
    for table in drawn:
        if table in ("sweep/passes", "sweep/changes"):
            continue  # the mesh's own pictures
        if not table.startswith(("results/", "samples/")) and not run.size_key(table):
            _bars(run, table, out_dir, fmt, paths)
    _stability(run, out_dir, fmt, paths)
    return paths
