"""One figure made into one file the same way everywhere: matplotlib without a display, a title that says what and
where (tool, hosts, GPUs, date), and titles too wide for their room wrapped before saving, never clipped."""
from __future__ import annotations

import pathlib
import re

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedFormatter, FuncFormatter, LogFormatter, NullFormatter  # noqa: E402

from ..read.printable import printable  # noqa: E402


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
    # The run's own fields printable() here: a line feed in a host name is text, the title's one line break ours.
    return f"{what}\n{printable(run.attrs.get('tool', ''))} on {printable(named)}{printable(gpus)} {printable(date)}"


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


def _lines(text: str) -> str:
    return "\n".join(printable(line) for line in text.split("\n"))


def size_label(v: float) -> str:
    """A size axis' tick: 8, 512, 1K, 64M, 1G (binary units, as the tools print sizes)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def _plain_log_labels(fig) -> None:
    """Log axes labelled in plain numbers. matplotlib writes their ticks as mathtext ("$\\mathdefault{10^{3}}$"),
    which _printable_texts draws as it reads: the raw TeX showed on every log axis (seen in a browser, issue 46)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_formatter(), LogFormatter):
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            if isinstance(axis.get_minor_formatter(), LogFormatter):
                axis.set_minor_formatter(NullFormatter())


def _printable_texts(fig) -> None:
    """Every text of the figure, each of its lines through printable() (issue 48): a host name's escapes drawn as
    text, not as missing glyphs, whose warnings would carry the raw bytes to the terminal. The figure's own line
    breaks (a title's second line) are kept. Tick labels given as a list (set_xticks(..., labels)) are set again
    from their formatter when drawn (FuncFormatter over a dict, or FixedFormatter): its labels too. And every text
    drawn as it reads, never as mathtext: a host name with two $ ("a$\\frac{$b") was parsed as a formula, and one
    it could not parse stopped the plot with a traceback (save: the texts made while drawing too)."""
    for text in fig.findobj(Text):
        text.set_text(_lines(text.get_text()))
        text.set_parse_math(False)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [_lines(str(label)) for label in formatter.seq]
            elif isinstance(formatter, FuncFormatter):
                axis.set_major_formatter(FuncFormatter(lambda x, pos, f=formatter.func: _lines(str(f(x, pos)))))


def save(fig, out: pathlib.Path, paths: list) -> None:
    _plain_log_labels(fig)
    _printable_texts(fig)
    with matplotlib.rc_context({"text.parse_math": False}):  # tick labels are made while the figure is drawn
        # The layout first: it moves the panels, and with them where their titles are centred.
        laid_out = not fig.get_constrained_layout()
        if laid_out:
            fig.tight_layout()
        if _fit_titles(fig) and laid_out:
            fig.tight_layout()  # room for the wrapped titles' extra lines
        fig.savefig(out, dpi=110)
    plt.close(fig)
    paths.append(out)
