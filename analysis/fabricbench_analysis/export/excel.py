"""A run as an Excel workbook (openpyxl, imported when a workbook is written): a 'summary' sheet that leads with the
answer (judge/answer.py), a 'run' sheet with the attributes, one sheet per table, a sweep's per_nic and per_switch
sheets, native charts of each headline column against size, and sweep matrices as colour-scaled grids, hosts grouped
by leaf as the heat maps draw them. Moved out of read/results.py, which now only reads."""
from __future__ import annotations

import pandas as pd

from ..draw.layout import heat_layout
from ..judge import rails
from ..judge.answer import answer
from ..read.printable import printable
from ..read.results import TIME_UNITS, Run, curve_keys, curve_label


def _text(value):
    """A cell's value as written: text through printable() (issue 48). openpyxl refuses a control character in a cell
    (IllegalCharacterError), so a host name with an escape sequence from a server would stop the whole workbook; it
    shows as \\x1b, as on the terminal and the page. Numbers as they are."""
    return printable(value) if isinstance(value, str) else value


def _write(frame: pd.DataFrame, writer, sheet_name: str, **options) -> None:
    """Every table of the workbook goes in through here: its text cells, column names and index labels _text()."""
    frame = frame.rename(columns=_text, index=_text)  # every level of a MultiIndex (the heat maps' leaf, host)
    if (frame.dtypes == object).any():
        frame = frame.apply(lambda column: column.map(_text) if column.dtype == object else column)
    frame.to_excel(writer, sheet_name, **options)


def _sheet_name(table: str) -> str:
    return table.replace("/", "_")[:31]  # Excel's limit


def _summary(run: Run) -> pd.DataFrame:
    """One row per measured figure of each results table: its best value and where."""
    rows = []
    for name, frame in run.tables.items():
        if not name.startswith("results/") or frame.empty:
            continue
        for col in run.columns.get(name, {}).values():
            if col.role != "measured" or col.better not in ("higher", "lower") or frame[col.name].isna().all():
                continue
            if col.name in ("wrong", "port_errors", "xmit_wait", "nvlink_errors"):
                rows.append({"table": name, "figure": col.name, "best": frame[col.name].sum(), "unit": col.unit,
                             "where": "sum over rows"})
                continue
            i = frame[col.name].idxmax() if col.better == "higher" else frame[col.name].idxmin()
            keys = ", ".join(f"{k}={frame.at[i, k]}" for k in run.keys(name))
            rows.append({"table": name, "figure": col.name, "best": frame.at[i, col.name], "unit": col.unit,
                         "where": keys})
    return pd.DataFrame(rows, columns=["table", "figure", "best", "unit", "where"])


def _chart_sheet(writer, run: Run) -> None:
    """Native charts: each headline column of each results table against size, one series per curve (the table's
    series column and the keys that split it: curve_keys), on one sheet per table (`chart_<table>`), blocks one below
    the other. Which columns, from the declarations (Run.headlines, Run.series); no per-table code."""
    from openpyxl.chart import Reference, ScatterChart, Series
    from openpyxl.utils import get_column_letter

    for table, frame in run.tables.items():
        size = run.size_key(table)
        if not table.startswith("results/") or frame.empty or size is None:
            continue
        sheet_name = ("chart_" + table.split("/", 1)[1].replace("/", "_"))[:31]
        row0 = 0
        for y in run.headlines(table):
            rows = frame[frame[y].notna()]
            if rows.empty:
                continue
            keys = curve_keys(run, table, rows)
            if keys:
                labels = [curve_label(keys, k) for k in rows[keys].itertuples(index=False, name=None)]
                rows = rows.assign(_curve=labels)
                data = rows.pivot_table(index=size, columns="_curve", values=y, aggfunc="max", sort=False)
                data.columns.name = None
            else:
                data = rows.groupby(size)[[y]].max()
            data = data.sort_index().reset_index()
            _write(data, writer, sheet_name, index=False, startrow=row0)
            sheet = writer.sheets[sheet_name]
            unit = run.columns[table][y].unit
            chart = ScatterChart()
            chart.title = f"{y} ({unit}) against size"
            chart.style = 13
            chart.x_axis.title = size
            chart.y_axis.title = f"{y} ({unit})"
            chart.x_axis.scaling.logBase = 2
            if unit in TIME_UNITS:
                chart.y_axis.scaling.logBase = 10
            n = len(data)
            xs = Reference(sheet, min_col=1, min_row=row0 + 2, max_row=row0 + n + 1)
            for c in range(2, data.shape[1] + 1):
                series = Series(Reference(sheet, min_col=c, min_row=row0 + 1, max_row=row0 + n + 1), xs,
                                title_from_data=True)
                series.marker.symbol = "circle"
                chart.series.append(series)
            chart.width, chart.height = 22, 12
            sheet.add_chart(chart, f"{get_column_letter(data.shape[1] + 2)}{row0 + 2}")
            row0 += max(n + 3, 27)  # the next block below this one's data and chart (12 cm: about 24 rows)


def _matrix_sheets(writer, run: Run) -> None:
    """Sweep matrices as colour-scaled grids (a heat map in Excel); with a topology the hosts grouped by leaf as the
    plots group them (draw/layout.py: heat_layout), the leaf named beside each host."""
    from openpyxl.utils import get_column_letter

    for name, matrix in run.matrices.items():
        sheet_name = ("heat_" + name.rsplit("/", 1)[1])[:31]
        if name.startswith("sweep/matrices/"):
            layout = heat_layout(run, name)
            if layout.leaves:
                matrix = matrix.copy()
                matrix.index, matrix.columns = matrix.index.map(str), matrix.columns.map(str)
                matrix = matrix.loc[layout.hosts, layout.hosts]
                leaf = {h: leaf for leaf, start, end in layout.leaves for h in layout.hosts[start:end]}
                matrix.index = pd.MultiIndex.from_arrays([[leaf[h] for h in matrix.index], list(matrix.index)],
                                                         names=["leaf", "host"])
                _write(matrix, writer, sheet_name)
                sheet = writer.sheets[sheet_name]
                n_rows, n_cols = matrix.shape
                cells = f"C2:{get_column_letter(n_cols + 2)}{n_rows + 1}"
                _colour_scale(sheet, cells, run.matrix_attrs.get(name, {}).get("better", "higher"))
                continue
        _write(matrix, writer, sheet_name)
        sheet = writer.sheets[sheet_name]
        n_rows, n_cols = matrix.shape
        cells = f"B2:{get_column_letter(n_cols + 1)}{n_rows + 1}"
        _colour_scale(sheet, cells, run.matrix_attrs.get(name, {}).get("better", "higher"))


def _colour_scale(sheet, cells: str, better: str) -> None:
    from openpyxl.formatting.rule import ColorScaleRule

    low, high = ("F8696B", "63BE7B") if better == "higher" else ("63BE7B", "F8696B")
    sheet.conditional_formatting.add(cells, ColorScaleRule(start_type="min", start_color=low, mid_type="percentile",
                                                           mid_value=50, mid_color="FFEB84", end_type="max",
                                                           end_color=high))


SUSPECT_FILL = "FDE8EA"  # the rows of a per-NIC or per-switch table with suspect pairs (the page's highlight)


def _highlight(sheet, first_row: int, marks, width: int) -> None:
    """Fill the rows of a table written from sheet row `first_row` (1-based, its first data row) where `marks`."""
    from openpyxl.styles import PatternFill

    fill = PatternFill("solid", start_color=SUSPECT_FILL, end_color=SUSPECT_FILL)
    for i, mark in enumerate(marks):
        if mark:
            for c in range(1, width + 1):
                sheet.cell(first_row + i, c).fill = fill


def _rail_sheets(writer, run: Run) -> None:
    """per_nic (a sweep with more than one rail) and per_switch (a sweep given a topology): the rows with suspect
    pairs first and filled, a filter on the header."""
    for sheet_name, frame, suspect in (("per_nic", rails.nic_table(run), rails.nic_suspect),
                                       ("per_switch", rails.switch_table(run), rails.switch_suspect)):
        if frame is None:
            continue
        _write(frame, writer, sheet_name, index=False)
        sheet = writer.sheets[sheet_name]
        _highlight(sheet, 2, suspect(frame), frame.shape[1])
        if not frame.empty:
            sheet.auto_filter.ref = sheet.dimensions


def _summary_sheet(writer, run: Run) -> None:
    """The first sheet leads with the answer, as the HTML page: the run's identity, what is wrong (answer.py) in a
    few lines, the rows behind it (verdicts, failed and warned checks, rows below expected, wrong data), then each
    figure's best value."""
    from openpyxl.styles import Font

    found = answer(run)
    head = pd.DataFrame([("tool", run.attrs.get("tool", "")), ("status", run.attrs.get("status", "")),
                         ("hosts", run.attrs.get("hosts", "")), ("started_at", run.attrs.get("started_at", ""))],
                        columns=["attribute", "value"])
    _write(head, writer, "summary", index=False)
    sheet = writer.sheets["summary"]
    row = len(head) + 2  # 0-based row for pandas; openpyxl's rows are 1-based
    colour = {"ok": "167D2B", "fail": "B00020"}
    for style, line in found.styled_lines():
        sheet.cell(row + 1, 1, _text(line)).font = Font(bold=line not in found.recovered, color=colour[style])
        row += 1
    switches = "Per leaf switch" + (f" ({found.coverage})" if found.coverage else "")
    blocks = [("Verdicts", found.verdicts if found.verdicts is not None else pd.DataFrame(), None),
              ("Per NIC (host and rail)", found.nics if found.nics is not None else pd.DataFrame(), rails.nic_suspect),
              (switches, found.switches if found.switches is not None else pd.DataFrame(), rails.switch_suspect),
              ("Failed and warned checks", found.checks, None),
              (found.below_title(), found.below_expected, None),
              ("Wrong data", found.wrong, None), ("Best figures", _summary(run), None)]
    for title, frame, suspect in blocks:
        if frame.empty:
            continue
        row += 1
        sheet.cell(row + 1, 1, _text(title)).font = Font(bold=True)
        _write(frame, writer, "summary", index=False, startrow=row + 1)
        if suspect is not None:
            _highlight(sheet, row + 3, suspect(frame), frame.shape[1])
        row += len(frame) + 2


def to_excel(run: Run, out, include_samples: bool = False) -> None:
    """A 'summary' sheet (identity, what is wrong and the rows behind it, each figure's best), a 'run' sheet with the
    attributes, one sheet per table, a sweep's per_nic and per_switch sheets (with rails, with a topology), native
    charts of bandwidth against size, and sweep matrices as colour-scaled grids (one per rail; with a topology the
    hosts grouped by leaf). Samples are large: off by default."""
    with pd.ExcelWriter(out, engine="openpyxl") as writer:
        _summary_sheet(writer, run)
        _write(pd.DataFrame(sorted(run.attrs.items()), columns=["attribute", "value"]), writer, "run", index=False)
        for name, frame in run.tables.items():
            if name.startswith("samples/") and not include_samples:
                continue
            _write(frame, writer, _sheet_name(name), index=False)
        _rail_sheets(writer, run)
        _chart_sheet(writer, run)
        _matrix_sheets(writer, run)
