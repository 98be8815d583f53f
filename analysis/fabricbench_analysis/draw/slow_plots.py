"""A slow-rank report's picture (fabric-watchdog --slow: /slow/windows, /slow/collectives, /slow/findings): ranks
against time, so that a reader sees which rank makes the others wait, and when.

Top panel: per communicator and rank, the share of the judge's window the other ranks spent waiting for it (loss_pct
of /slow/windows, one point per look) against seconds since the first collective or look, one line per rank whose
loss ever reached LOSS_SHOWN percent (and every rank a finding names); the time a finding named it shaded, from its
first_seen to its last_seen, and labelled "rank R (host, pid)" (a slow collective, named for no rank: grey, hatched).
Bottom panel: from /slow/collectives, per rank and 1 s bin the median wait the others had at the collectives where
that rank arrived last (its own row of a collective has wait_ms 0: the others' median wait_ms is what its late
arrival cost them, as the judge counts it), a dot per bin; a last arrival by less than TIE_MS is a tie (the judge's
rule) and left out. A report whose tables hold no row gets no figure, as every empty table in plot_run."""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..read.printable import printable
from . import figure_file as ff
from .figure_file import title

LOSS_SHOWN = 5.0     # percent of the window: a rank that ever cost the others this much gets a line
TIE_MS = 0.05        # the judge's min_wait_s (lib/job/straggler.hpp): a last arrival by less is a tie
WINDOW_RANKS = 8     # ranks kept per look in /slow/windows (slow_judge.cpp kWindowRanks)
MOST_RANKS = 8       # ranks drawn in their own colour and named in the legend; the others light grey
_SECOND = 1_000_000_000
# Line colours of the ranks (MOST_RANKS of them): no red (the shading already says "named slow", a colour tells ranks
# apart) and no grey (the ranks beyond MOST_RANKS).
_PALETTE = [c for c in matplotlib.colormaps["tab10"].colors
            if c not in (matplotlib.colors.to_rgb("tab:red"), matplotlib.colors.to_rgb("tab:gray"))]
_OTHERS = "lightgray"


# The columns each table must have to be drawn (a table without them is drawn as one without rows).
_NEEDED = {"slow/windows": {"t_ns", "comm", "rank", "host", "pid", "loss_pct"},
           "slow/collectives": {"t_ns", "comm", "seq", "rank", "wait_ms", "last"},
           "slow/findings": {"kind", "comm", "rank", "host", "pid", "op", "bytes", "first_seen", "last_seen"}}


def _rows(run, name: str) -> pd.DataFrame:
    frame = run.tables.get(name)
    return frame if frame is not None and _NEEDED[name] <= set(frame.columns) else pd.DataFrame()


def _origin(windows: pd.DataFrame, collectives: pd.DataFrame) -> int:
    """t_ns of the first collective or look (Unix ns): x = 0."""
    firsts = [int(f["t_ns"].min()) for f in (windows, collectives) if not f.empty and "t_ns" in f]
    return min(firsts)


def _looks(windows: pd.DataFrame) -> list:
    """(t_ns, full) per look of the judge, in order, `full` when the look kept WINDOW_RANKS ranks (a rank absent
    from it is below them: unknown) and not otherwise (absent: never last in that window: 0). The judge writes no row
    for a look where no rank arrived last: a gap of more than 1.5 looks gets a look of zeros after its start and one
    before its end."""
    counts = windows.groupby("t_ns").size().sort_index()
    times = [int(t) for t in counts.index]
    step = int(np.median(np.diff(times))) if len(times) > 1 else _SECOND
    step = step if step > 0 else _SECOND
    out = []
    for i, t in enumerate(times):
        if i and t - times[i - 1] > 1.5 * step:
            out += [(times[i - 1] + step, False), (t - step, False)]
        out.append((t, bool(counts.iloc[i] >= WINDOW_RANKS)))
    return out


def _who(rows: pd.DataFrame) -> tuple:
    """(host, pid) of a rank's rows, the last one's; ("", -1) without."""
    if rows.empty or "host" not in rows:
        return "", -1
    last = rows.iloc[-1]
    return str(last["host"]), int(last["pid"]) if "pid" in rows else -1


def _name(rank, host: str, pid, comm: str, several_comms: bool) -> str:
    """'rank 1 (node1, 4242)', with ' of 0xabc0fb' where the report has several communicators; every field read from
    the file through printable() here (a line feed in a host name is text, not a line break of the legend)."""
    where = f" ({printable(host)}, {printable(pid)})" if host else ""
    return f"rank {printable(rank)}{where}" + (f" of {printable(comm)}" if several_comms else "")


def _seconds(text, t0: int):
    """An ISO UTC time of the file (first_seen) as seconds since t0; None where it does not read as one."""
    at = pd.to_datetime(str(text), utc=True, errors="coerce")
    return None if pd.isna(at) else (at.value - t0) / 1e9


def _last_waits(collectives: pd.DataFrame, t0: int) -> pd.DataFrame:
    """Per collective the rank that arrived last (last == 1) and the others' median wait_ms, ties left out; then per
    (comm, rank, 1 s bin): the median of those waits (`wait`), their sum (`cost`) and the bin's middle (`x`, s)."""
    if collectives.empty:
        return pd.DataFrame(columns=["comm", "rank", "bin", "wait", "cost", "x"])
    others = collectives[collectives["last"] == 0].groupby(["comm", "seq"])["wait_ms"].median().rename("wait")
    lasts = collectives[collectives["last"] == 1].set_index(["comm", "seq"])[["rank", "t_ns"]]
    late = lasts.join(others, how="inner")
    late = late[late["wait"] >= TIE_MS].reset_index()
    late["bin"] = (late["t_ns"] - t0) // _SECOND
    per = late.groupby(["comm", "rank", "bin"])["wait"].agg(wait="median", cost="sum").reset_index()
    per["x"] = per["bin"] + 0.5
    return per


def _loss_lines(windows: pd.DataFrame, named: set, t0: int) -> list:
    """[(comm, rank, x, y, peak)] for each rank whose loss_pct reached LOSS_SHOWN or that a finding names, largest
    peak first: y per look, 0 where the look is not full and the rank is absent, NaN (a break) where it is full."""
    if windows.empty:
        return []
    looks = _looks(windows)
    x = np.array([(t - t0) / 1e9 for t, _ in looks])
    out = []
    for (comm, rank), rows in windows.groupby(["comm", "rank"], sort=False):
        peak = float(rows["loss_pct"].max())
        if not (peak >= LOSS_SHOWN or (comm, rank) in named):
            continue
        mine = rows.groupby("t_ns")["loss_pct"].max()
        y = np.array([float(mine[t]) if t in mine.index else (np.nan if full else 0.0) for t, full in looks])
        out.append((comm, rank, x, y, peak))
    return sorted(out, key=lambda line: -line[4])


def _shade(axes, findings: pd.DataFrame, t0: int, colors: dict, names: dict, several_comms: bool) -> None:
    """Each finding's first_seen .. last_seen shaded on both panels (its rank's colour; a slow collective, link or
    rank's network grey and hatched), labelled on the top panel. The times are whole seconds: the span reaches to the end of the last one."""
    top = axes[0]
    for i, f in enumerate(findings.itertuples(index=False)):
        start, end = _seconds(f.first_seen, t0), _seconds(f.last_seen, t0)
        if start is None or end is None:
            continue
        key = (f.comm, f.rank)
        if str(f.kind) == "late":
            label = _name(f.rank, str(f.host), f.pid, f.comm, several_comms) if str(f.host) else names.get(
                key, _name(f.rank, "", -1, f.comm, several_comms))
            style = dict(color=colors.get(key, _OTHERS), alpha=0.18)
        elif str(f.kind) == "link":  # a link from rank to peer (a file before the link kinds has no peer column)
            label = f"slow link: rank {f.rank} -> rank {getattr(f, 'peer', '?')} on {printable(f.comm)}"
            style = dict(facecolor="none", edgecolor="gray", hatch="//", alpha=0.5)
        elif str(f.kind) == "network":
            label = f"slow network of rank {f.rank} ({printable(str(f.host))}) on {printable(f.comm)}"
            style = dict(facecolor="none", edgecolor="gray", hatch="//", alpha=0.5)
        else:
            label = f"slow inside: {printable(f.op)} of {printable(f.bytes)} B on {printable(f.comm)}"
            style = dict(facecolor="none", edgecolor="gray", hatch="//", alpha=0.5)
        for ax in axes:
            ax.axvspan(start, end + 1, zorder=1, **style).set_gid(f"finding-{i}")
        top.text(start, 0.97 - 0.08 * (i % 6), f"named slow: {label}", transform=top.get_xaxis_transform(),
                 fontsize=7, va="top", ha="left", color="black", zorder=4)


def slow_ranks(run, out_dir, fmt, paths) -> None:
    """fabric-watchdog --slow's report: the ranks against time (see the module's text), slow_ranks.<fmt>."""
    windows, collectives = _rows(run, "slow/windows"), _rows(run, "slow/collectives")
    if windows.empty and collectives.empty:
        return  # no row: no figure, as for every empty table
    findings = _rows(run, "slow/findings")
    t0 = _origin(windows, collectives)
    comms = set(windows["comm"]) if not windows.empty else set()
    comms |= set(collectives["comm"]) if not collectives.empty else set()
    several = len(comms) > 1
    named = set(zip(findings["comm"], findings["rank"])) if not findings.empty else set()
    lines = _loss_lines(windows, named, t0)
    waits = _last_waits(collectives, t0)

    # One colour per rank on both panels: the top panel's ranks by peak loss, then the bottom's by what they cost.
    order = [(comm, rank) for comm, rank, *_ in lines]
    order += [k for k in waits.groupby(["comm", "rank"])["cost"].sum().sort_values(ascending=False).index
              if k not in order] if not waits.empty else []
    colors = {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(order[:MOST_RANKS])}
    names = {}
    for comm, rank in order:
        rows = windows[(windows["comm"] == comm) & (windows["rank"] == rank)] if not windows.empty else windows
        names[(comm, rank)] = _name(rank, *_who(rows), comm, several)

    fig, axes = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
    top, bottom = axes
    others = 0
    for comm, rank, x, y, _ in lines:
        key = (comm, rank)
        mine = key in colors
        others += not mine
        top.plot(x, y, marker="o", markersize=3, linewidth=1.6 if mine else 0.8, zorder=3 if mine else 2,
                 color=colors.get(key, _OTHERS), label=names[key] if mine else None)
    if not lines:
        top.text(0.5, 0.5, f"no rank cost the others {LOSS_SHOWN:g}% of a window" if not windows.empty
                 else "no judge look recorded (/slow/windows has no row)", transform=top.transAxes, ha="center",
                 va="center", fontsize=10, color="gray")
    top.set_ylabel("time lost to the rank (% of the window)")
    peak = max([line[4] for line in lines], default=0.0)
    top.set_ylim(0, max(2 * LOSS_SHOWN, 1.15 * peak))
    top.axhline(LOSS_SHOWN, color="gray", linestyle=":", linewidth=0.8).set_gid("loss-shown")
    top.set_title(f"the others' wait for each rank over the judge's window; a line per rank that reached "
                  f"{LOSS_SHOWN:g}%" + (f" ({others} more in grey)" if others else "")
                  + "; shaded: named slow", fontsize=8)

    drawn_others = 0
    rank_of = {k: i for i, k in enumerate(order)}  # the legend in the colours' order
    for key, part in sorted(waits.groupby(["comm", "rank"], sort=False), key=lambda g: rank_of[g[0]]):
        mine = key in colors
        drawn_others += not mine
        bottom.plot(part["x"], part["wait"], linestyle="none", marker="o", markersize=4 if mine else 2.5,
                    color=colors.get(key, _OTHERS), zorder=3 if mine else 2, label=names[key] if mine else None)
    if waits.empty:
        bottom.text(0.5, 0.5, f"no rank arrived last (by {TIE_MS:g} ms or more)" if not collectives.empty
                    else "no collective recorded (/slow/collectives has no row)", transform=bottom.transAxes,
                    ha="center", va="center", fontsize=10, color="gray")
    bottom.set_ylabel("the others' median wait when\nthe rank arrived last (ms)")
    bottom.set_ylim(bottom=0)
    bottom.set_title(f"per 1 s, at the collectives where the rank arrived last (ties under {TIE_MS:g} ms left out)"
                     + (f"; {drawn_others} more rank(s) in grey" if drawn_others else ""), fontsize=8)
    t0_text = pd.Timestamp(t0, unit="ns", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    bottom.set_xlabel(f"seconds since {t0_text} (the first collective or look)")

    if not findings.empty:
        _shade(axes, findings, t0, colors, names, several)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(title(run, "slow ranks against time: who makes the others wait, and when"), fontsize=9)
    ff.save(fig, out_dir / f"slow_ranks.{fmt}", paths)
