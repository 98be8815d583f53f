"""One self-contained HTML page for a run (plots inline as base64 PNG): status, environment, checks, tables and,
given a second run, the comparison."""
from __future__ import annotations

import base64
import html
import pathlib
import tempfile

import pandas as pd

from . import compare as cmp
from .plots import plot_run

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; } td.t { text-align: left; }
.ok { color: #167d2b; } .warn { color: #a66a00; } .fail, .bad { color: #b00020; font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.3em 0; }
"""


def _table(frame: pd.DataFrame, status_column: str = "", max_rows: int = 400) -> str:
    if frame is None or frame.empty:
        return "<p>(empty)</p>"
    rows = ["<table><tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns) + "</tr>"]
    for _, r in frame.head(max_rows).iterrows():
        cells = []
        for c in frame.columns:
            v = r[c]
            text = f"{v:.4g}" if isinstance(v, float) else str(v)
            css = "t" if isinstance(v, str) else ""
            if c == status_column or (isinstance(v, (bool,)) and v):
                css += f" {html.escape(str(v)) if c == status_column else 'bad'}"
            cells.append(f'<td class="{css.strip()}">{html.escape(text)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p>({len(frame) - max_rows} more rows in the file)</p>" if len(frame) > max_rows else ""
    return "\n".join(rows) + "</table>" + more


def _images(run) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for path in plot_run(run, tmp, "png"):
            data = base64.b64encode(pathlib.Path(path).read_bytes()).decode("ascii")
            parts.append(f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">')
        return "\n".join(parts)


def page(run, other=None, threshold: float = 0.05) -> str:
    a = run.attrs
    status_css = "ok" if run.complete else "fail"
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(str(a.get('tool', '')))} "
           f"{html.escape(run.path.name)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{html.escape(str(a.get('tool', '')))} — {html.escape(run.path.name)}</h1>",
           f"<p>status: <span class='{status_css}'>{html.escape(str(a.get('status', '')))}</span><br>"
           f"hosts: {html.escape(str(a.get('hosts', '')))} ({a.get('world_size', '')} ranks)<br>"
           f"started {html.escape(str(a.get('started_at', '')))}, finished {html.escape(str(a.get('finished_at', '')))}<br>"
           f"<code>{html.escape(str(a.get('command_line', '')))}</code></p>"]
    if other is not None:
        c = cmp.compare(other, run, threshold)
        out.append(f"<h2>Comparison with {html.escape(other.path.name)} (B/A; regressions beyond {threshold:.0%})</h2>")
        out.append("<p class='bad'>" + "<br>".join(html.escape(r) for r in c.regressions) + "</p>"
                   if c.regressions else "<p class='ok'>no regression</p>")
        if c.env_changes:
            out.append("<p>What changed in /env:<br>" + "<br>".join(html.escape(x) for x in c.env_changes) + "</p>")
        for name, frame in c.tables.items():
            out.append(f"<h3>{html.escape(name)}</h3>" + _table(frame))
    out.append("<h2>Plots</h2>" + _images(run))
    for name in ("doctor/findings", "env/checks"):
        if name in run.tables:
            frame = run.tables[name]
            order = frame.status.map({"fail": 0, "warn": 1, "skip": 2, "ok": 3}).sort_values(kind="stable").index
            out.append(f"<h2>{name}</h2>" + _table(frame.loc[order], "status"))
    for name, frame in run.tables.items():
        if name.startswith(("results/", "sweep/")):
            out.append(f"<h2>{html.escape(name)}</h2>" + _table(frame))
    for name in ("env/hosts", "env/expected", "env/ranks", "env/variables"):
        if name in run.tables:
            out.append(f"<h2>{name}</h2>" + _table(run.tables[name]))
    out.append("</body></html>")
    return "\n".join(out)


def write_html(run, out, other=None, threshold: float = 0.05) -> None:
    pathlib.Path(out).write_text(page(run, other, threshold), encoding="utf-8")
