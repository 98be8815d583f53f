"""One self-contained HTML page for a run (plots inline as base64 PNG) that leads with the answer: the run's identity,
then what is wrong (answer.py: a sweep that did not test all it planned, the status of a run that did not complete,
the sweep's verdicts or "all N hosts pass", a mesh's changes (a recovery in green), failed and warned checks, rows
below their expected share, wrong data, regressions against a reference run B), then the pictures, then every table
folded (<details>): the comparison, all checks, results, sweep and /env tables. A sweep with rails or a topology adds,
after its verdicts, the per-NIC table (/sweep/nodes per host and rail) and the per-switch table (/sweep/switches), the
rows with suspect pairs first and highlighted."""
from __future__ import annotations

import base64
import html
import pathlib
import tempfile

import pandas as pd

from ..draw.plots import plot_run
from ..judge import compare as cmp
from ..judge import rails
from ..judge.answer import answer, checks_table
from ..read.printable import printable


def _text(value) -> str:
    """Every text of the page that comes from the run, a reference run or a path: printable() (a control character
    or a bidi override in a host name shows as \\x1b or \\u202e, as on the terminal, instead of reordering what the
    page reads or reaching a terminal that shows the file), then HTML-escaped, quotes included (it goes in attributes
    too)."""
    return html.escape(printable(value))

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; } td.t { text-align: left; }
.ok { color: #167d2b; } .warn { color: #a66a00; } .fail, .bad { color: #b00020; font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.3em 0; }
#answer { border: 2px solid #ccc; padding: 0.4em 1em; margin: 0.8em 0; }
#answer.wrong { border-color: #b00020; } #answer.clean { border-color: #167d2b; }
#answer p.line { font-size: 1.15em; margin: 0.3em 0; }
details { margin: 0.3em 0; } summary { cursor: pointer; font-weight: bold; }
.identity { color: #444; font-size: 0.9em; }
tr.suspect td { background: #fde8ea; }
"""


def _table(frame: pd.DataFrame, status_column: str = "", max_rows: int = 400, suspect=None) -> str:
    """`suspect`: per row, whether to highlight it (class 'suspect')."""
    if frame is None or frame.empty:
        return "<p>(empty)</p>"
    rows = ["<table><tr>" + "".join(f"<th>{_text(str(c))}</th>" for c in frame.columns) + "</tr>"]
    marks = list(suspect) if suspect is not None else [False] * len(frame)
    for (_, r), mark in zip(frame.head(max_rows).iterrows(), marks):
        cells = []
        for c in frame.columns:
            v = r[c]
            text = f"{v:.4g}" if isinstance(v, float) else str(v)
            css = "t" if isinstance(v, str) else ""
            if c == status_column or (isinstance(v, (bool,)) and v):
                css += f" {_text(str(v)) if c == status_column else 'bad'}"
            cells.append(f'<td class="{css.strip()}">{_text(text)}</td>')
        rows.append(("<tr class='suspect'>" if mark else "<tr>") + "".join(cells) + "</tr>")
    more = f"<p>({len(frame) - max_rows} more rows in the file)</p>" if len(frame) > max_rows else ""
    return "\n".join(rows) + "</table>" + more


def _images(run) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for path in plot_run(run, tmp, "png"):
            data = base64.b64encode(pathlib.Path(path).read_bytes()).decode("ascii")
            parts.append(f'<img alt="{_text(path.stem)}" src="data:image/png;base64,{data}">')
        return "\n".join(parts)


def _folded(title: str, body: str) -> str:
    return f"<details><summary>{_text(title)}</summary>{body}</details>"


# Beyond this many rows a per-NIC or per-switch table shows its suspect rows and folds the whole table.
OPEN_ROWS = 64


def _rail_tables(found) -> str:
    """The per-NIC table (a sweep with more than one rail) and the per-switch table (a sweep given a topology), each
    with its suspect rows first and highlighted; a long one shows the suspect rows and folds the rest."""
    out = []
    for css, title, frame, suspect in (
            ("nics", "Per NIC (host and rail)", found.nics, rails.nic_suspect),
            ("switches", "Per leaf switch" + (f" ({found.coverage})" if found.coverage else ""), found.switches,
             rails.switch_suspect)):
        if frame is None:
            continue
        marks = suspect(frame)
        count = sum(marks)
        heading = f"<h3 id='{css}'>{_text(title)}: {count} of {len(frame)} row(s) with suspect pairs</h3>"
        if len(frame) <= OPEN_ROWS:
            out.append(heading + _table(frame, suspect=marks))
            continue
        shown = frame[marks]
        out.append(heading + _table(shown, suspect=[True] * len(shown))
                   + _folded(f"all {len(frame)} rows", _table(frame, suspect=marks)))
    return "\n".join(out)


def _answer(run, found) -> str:
    """The first screen: one line per thing wrong (or that nothing is), then the rows behind each."""
    css = "clean" if found.nothing_wrong else "wrong"
    out = [f"<section id='answer' class='{css}'><h2>What is wrong</h2>"]
    for style, line in found.styled_lines():
        out.append(f"<p class='line {style}'>{_text(line)}</p>")
    if found.verdicts is not None and not found.verdicts.empty:
        out.append("<h3>Verdicts</h3>" + _table(found.verdicts))
    rail_tables = _rail_tables(found)
    if rail_tables:
        out.append(rail_tables)
    if not found.checks.empty:
        name, _ = checks_table(run)
        out.append(f"<h3>Failed and warned checks ({_text(name)})</h3>" + _table(found.checks, "status"))
    if not found.below_expected.empty:
        out.append(f"<h3>{_text(found.below_title())}</h3>" + _table(found.below_expected))
    if not found.wrong.empty:
        out.append("<h3>Wrong data</h3>" + _table(found.wrong))
    if found.regressions:
        out.append("<h3>Regressions against the reference run</h3><p class='bad'>"
                   + "<br>".join(_text(r) for r in found.regressions) + "</p>")
    out.append("</section>")
    return "\n".join(out)


def _when(a: dict) -> str:
    """'started T, finished T'; for a run imported from another tool's output, where it came from instead."""
    if a.get("imported_from"):
        return f"imported from {_text(str(a['imported_from']))} at {_text(str(a.get('imported_at', '')))}"
    return f"started {_text(str(a.get('started_at', '')))}, finished {_text(str(a.get('finished_at', '')))}"


def page(run, other=None, threshold: float = 0.05) -> str:
    a = run.attrs
    status_css = "ok" if run.complete else "fail"
    comparison = cmp.compare(other, run, threshold) if other is not None else None
    found = answer(run, comparison.regressions if comparison else ())
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_text(str(a.get('tool', '')))} "
           f"{_text(run.path.name)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{_text(str(a.get('tool', '')))} — {_text(run.path.name)}</h1>",
           f"<p class='identity'>status: <span class='{status_css}'>{_text(str(a.get('status', '')))}</span>; "
           f"hosts: {_text(str(a.get('hosts', '')))} ({_text(a.get('world_size', ''))} ranks); "
           + _when(a)
           + (f"; compared with {_text(other.path.name)} (the reference)" if other is not None else "")
           + f"<br><code>{_text(str(a.get('command_line', '')))}</code></p>",
           _answer(run, found)]
    notes = [n for n in str(a.get("notes", "")).split("\n") if n]
    if notes:  # an imported run's: where its expectation and the path NCCL took came from, what was left out
        out.append("<section id='notes'><h2>Notes</h2><ul>" + "".join(f"<li>{_text(n)}</li>" for n in notes)
                   + "</ul></section>")
    out.append("<section id='pictures'><h2>Plots</h2>" + _images(run) + "</section>")
    out.append("<section id='tables'><h2>Tables</h2>")
    if comparison is not None:
        changes = ("<p>What changed in /env:<br>" + "<br>".join(_text(x) for x in comparison.env_changes)
                   + "</p>") if comparison.env_changes else "<p>/env: the same</p>"
        body = changes + "".join(f"<h3>{_text(name)}</h3>" + _table(frame)
                                 for name, frame in comparison.tables.items())
        out.append(_folded(f"Comparison with {other.path.name} (B/A; regressions beyond {threshold:.0%})", body))
    for name in ("doctor/findings", "env/checks"):
        if name in run.tables:
            frame = run.tables[name]
            order = frame.status.map({"fail": 0, "warn": 1, "skip": 2, "ok": 3}).sort_values(kind="stable").index
            out.append(_folded(f"{name} ({len(frame)} rows)", _table(frame.loc[order], "status")))
    for name, frame in run.tables.items():
        if name.startswith(("results/", "sweep/")):
            out.append(_folded(f"{name} ({len(frame)} rows)", _table(frame)))
    for name in ("env/hosts", "env/expected", "env/ranks", "env/variables"):
        if name in run.tables:
            out.append(_folded(f"{name} ({len(run.tables[name])} rows)", _table(run.tables[name])))
    out.append("</section></body></html>")
    return "\n".join(out)


def write_html(run, out, other=None, threshold: float = 0.05) -> None:
    pathlib.Path(out).write_text(page(run, other, threshold), encoding="utf-8")
