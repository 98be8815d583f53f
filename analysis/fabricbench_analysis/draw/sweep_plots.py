"""A sweep's pictures (fabric-sweep): a heat map per metric and rail with the hosts and leaves named in that metric's
verdicts marked and the hosts no test reached in grey, hosts grouped by leaf switch; and for a mesh (--repeat) each
host's figure over the passes and a heat map per pass."""
from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import figure_file as ff
from .figure_file import title
from .layout import UNTESTED_COLOR, HeatLayout, heat_layout

MOST_HOST_LABELS = 64  # a heat map names every host up to this many, else only those in a verdict


def _color_ticks(labels, untested) -> None:
    """Marked names (`* `) red, untested hosts grey."""
    for tick in labels:
        if tick.get_text().startswith("* "):
            tick.set_color("red")
        elif tick.get_text() in untested:
            tick.set_color(UNTESTED_COLOR)


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


def heat_maps(run, out_dir, fmt, paths) -> None:
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
        ff.save(fig, out_dir / f"sweep_{name.rsplit('/', 1)[1]}.{fmt}", paths)


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


def mesh(run, out_dir, fmt, paths, most_passes: int = 12) -> None:
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
        ff.save(fig, out_dir / f"sweep_over_time_{metric}.{fmt}", paths)

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
        ff.save(fig, out_dir / f"sweep_passes_{metric}.{fmt}", paths)
