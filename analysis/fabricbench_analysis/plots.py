"""The pictures people read: busbw and time against size for collectives, latency and bandwidth against size for
p2p and verbs (with the expected figure drawn where the run has one), sweep heat maps with the hosts named in
verdicts marked, per-node medians, and a stability profile (per-iteration times of one size, in order)."""
from __future__ import annotations

import math
import pathlib

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Which column is drawn for each results table: (latency column, bandwidth column, the tests that are latencies).
_CURVES = {
    "results/p2p": ("latency_us", "bw_mbps", "test"),
    "results/verbs": ("latency_us", "bw_avg_mibps", "test"),
}
_TO_GBPS = {"MB/s": 1e-3, "MiB/s": 1048576 / 1e9, "GB/s": 1.0, "Gb/s": 1 / 8}


def title(run, what: str) -> str:
    """'<what> - fabric-coll on a,b (8 x NVIDIA H200) 2026-11-23' from the run's attributes and /env/ranks."""
    gpus = ""
    ranks = run.tables.get("env/ranks")
    if ranks is not None and "gpu_name" in ranks and (ranks.gpu_name != "").any():
        names = ranks[ranks.gpu_name != ""].gpu_name
        gpus = f" ({len(names)} x {names.iloc[0]})" if names.nunique() == 1 else f" ({len(names)} GPUs)"
    date = str(run.attrs.get("started_at", ""))[:10]
    return f"{what}\n{run.attrs.get('tool', '')} on {run.attrs.get('hosts', '')}{gpus} {date}"


def _size_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (B)")
    ax.grid(True, which="both", alpha=0.3)


def _expected_line(ax, frame: pd.DataFrame, scale: float) -> None:
    if "expected_gbps" not in frame or frame.expected_gbps.isna().all():
        return
    for value in sorted(frame.expected_gbps.dropna().unique()):
        ax.axhline(value * scale, color="gray", linestyle="--", linewidth=1)
        ax.annotate(f"expected {value:.4g} GB/s", (ax.get_xlim()[0], value * scale), fontsize=7, color="gray",
                    xytext=(2, 2), textcoords="offset points")


def _save(fig, out: pathlib.Path, paths: list) -> None:
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    paths.append(out)


def _coll(run, out_dir, fmt, paths) -> None:
    frame = run.tables["results/coll"]
    fig, (bw, tm) = plt.subplots(1, 2, figsize=(12, 4.8))
    groups = ["op", "in_place", "dtype", "redop", "root"]
    varying = [g for g in groups if frame[g].nunique() > 1 or g == "op"]
    for key, part in frame.groupby(varying, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(("in-place" if v else "out-of-place") if g == "in_place" else str(v)
                         for g, v in zip(varying, key))
        part = part.sort_values("bytes")
        bw.plot(part.bytes, part.busbw_gbps, marker="o", markersize=3, label=label)
        tm.plot(part.bytes, part.time_us, marker="o", markersize=3, label=label)
    _size_axis(bw)
    _size_axis(tm)
    bw.set_ylabel("bus bandwidth (GB/s)")
    tm.set_ylabel("time per operation (us)")
    tm.set_yscale("log")
    _expected_line(bw, frame, 1.0)
    bw.legend(fontsize=7)
    bw.set_title(title(run, "bus bandwidth"), fontsize=9)
    tm.set_title(title(run, "time"), fontsize=9)
    _save(fig, out_dir / f"coll_busbw.{fmt}", paths)


def _p2p_like(run, table, out_dir, fmt, paths) -> None:
    frame = run.tables[table]
    lat_col, bw_col, by = _CURVES[table]
    unit = run.columns[table][bw_col].unit
    short = table.split("/")[1]
    latency = frame[frame[lat_col].notna()]
    bandwidth = frame[frame[bw_col].notna()]
    for part, col, ylabel, name in ((latency, lat_col, "latency (us)", "latency"),
                                    (bandwidth, bw_col, f"bandwidth ({unit})", "bandwidth")):
        if part.empty:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.8))
        for test, rows in part.groupby(by, sort=False):
            rows = rows.sort_values("bytes")
            ax.plot(rows.bytes, rows[col], marker="o", markersize=3, label=str(test))
        _size_axis(ax)
        ax.set_ylabel(ylabel)
        if name == "latency":
            ax.set_yscale("log")
        else:
            _expected_line(ax, part, 1 / _TO_GBPS.get(unit, 1.0))
        ax.legend(fontsize=8)
        ax.set_title(title(run, f"{short} {name}"), fontsize=9)
        _save(fig, out_dir / f"{short}_{name}.{fmt}", paths)


def _verdict_hosts(run) -> set:
    verdicts = run.tables.get("sweep/verdicts")
    if verdicts is None:
        return set()
    return {h for h in list(verdicts.host_a) + list(verdicts.host_b) if h}


def _sweep(run, out_dir, fmt, paths) -> None:
    named = _verdict_hosts(run)
    for name, matrix in run.matrices.items():
        if not name.startswith("sweep/matrices/"):
            continue
        attrs = run.matrix_attrs.get(name, {})
        metric = name.rsplit("/", 1)[1]
        n = len(matrix)
        fig, ax = plt.subplots(figsize=(max(5, 0.5 * n + 3), max(4, 0.5 * n + 2)))
        values = matrix.to_numpy(dtype=float)
        cmap = "viridis" if attrs.get("better", "higher") == "higher" else "viridis_r"
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap)
        fig.colorbar(image, ax=ax, label=attrs.get("unit", ""))
        labels = [f"* {h}" if h in named else str(h) for h in matrix.index]
        ax.set_xticks(range(n), [f"* {h}" if h in named else str(h) for h in matrix.columns], rotation=90, fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
        for tick in ax.get_xticklabels() + ax.get_yticklabels():
            if tick.get_text().startswith("* "):
                tick.set_color("red")
        if n <= 16:
            norm = image.norm
            for i in range(n):
                for j in range(n):
                    if not math.isnan(values[i, j]):
                        shade = norm(values[i, j]) if cmap == "viridis" else 1 - norm(values[i, j])
                        ax.text(j, i, f"{values[i, j]:.3g}", ha="center", va="center", fontsize=6,
                                color="black" if shade > 0.6 else "white")
        ax.set_xlabel("to")
        ax.set_ylabel("from")
        ax.set_title(title(run, f"{metric} ({attrs.get('unit', '')}); * = named in a verdict"), fontsize=9)
        _save(fig, out_dir / f"sweep_{metric}.{fmt}", paths)
    nodes = run.tables.get("sweep/nodes")
    if nodes is None or nodes.empty:
        return
    metrics = list(dict.fromkeys(nodes.metric))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        rows = nodes[nodes.metric == metric]
        colors = ["red" if h in named else "tab:blue" for h in rows.host]
        ax.bar(range(len(rows)), rows["median"], color=colors)
        ax.set_xticks(range(len(rows)), list(rows.host), rotation=90, fontsize=7)
        ax.set_ylabel(f"median ({rows.unit.iloc[0]})")
        ax.set_title(title(run, f"per-node median {metric}"), fontsize=9)
    _save(fig, out_dir / f"sweep_nodes.{fmt}", paths)


def _stability(run, out_dir, fmt, paths) -> None:
    """Per-iteration times of the largest size of the first test/op, in order, one line per rank."""
    for table in ("results/coll", "results/p2p", "results/verbs"):
        samples = run.tables.get("samples/" + table.split("/")[1])
        frame = run.tables.get(table)
        if samples is None or samples.empty or frame is None or frame.empty:
            continue
        first = frame.iloc[0]
        group = "op" if table == "results/coll" else "test"
        same = frame[frame[group] == first[group]]
        index = same.bytes.idxmax()
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
        ax.set_title(title(run, f"stability: {row[group]} at {int(row.bytes)} B, median {med:.4g} us, "
                                f"p1-p99 spread {spread:.1%}"), fontsize=9)
        _save(fig, out_dir / f"stability_{table.split('/')[1]}.{fmt}", paths)


def plot_run(run, out_dir, fmt: str = "png") -> list:
    """Every plot that applies to `run`, written to `out_dir`; returns the paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list = []
    if "results/coll" in run.tables and not run.tables["results/coll"].empty:
        _coll(run, out_dir, fmt, paths)
    for table in _CURVES:
        if table in run.tables and not run.tables[table].empty:
            _p2p_like(run, table, out_dir, fmt, paths)
    _sweep(run, out_dir, fmt, paths)
    _stability(run, out_dir, fmt, paths)
    return paths
