"""A run as an Excel workbook (openpyxl, imported when a workbook is written): a 'summary' sheet that leads with the
answer (judge/answer.py), a 'run' sheet with the attributes, one sheet per table, a sweep's per_nic and per_switch
sheets, native charts of each headline column against size, and sweep matrices as colour-scaled grids, hosts grouped
by leaf as the heat maps draw them. Moved out of read/results.py, which now only reads.
Readable in the clients it is for (issue 46: Excel, LibreOffice Calc, a PDF printed from either): columns as wide as
their content, each chart series in a colour of its own, printed landscape, each chart whole on a page of its own."""
from __future__ import annotations

import numbers

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


WIDEST = 60  # characters: no column wider; a text cell longer than this wraps within it


def _shown_width(value) -> int:
    """About how many characters a cell takes: a number as the General format shows it (about 11 characters at
    most: 39.23283571), text by its longest line."""
    if value is None:
        return 0
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return min(len(f"{value:.10g}"), 12)
    return max(len(line) for line in str(value).split("\n"))


def _fit_columns(sheet, free_rows=()) -> None:
    """Column widths from the content, so that no name is cut (issue 46: the summary cut results/coll): each column as
    wide as its widest cell, a margin for a bold header and a wider font than Excel's (LibreOffice's), at most WIDEST
    characters; a text cell wider than that wraps, top-aligned, its row as high as its lines (LibreOffice keeps a
    row's height on opening: the wrapped lines overlapped the next rows). The cells of `free_rows` (the summary's
    answer lines and headings, alone on their rows) run on over the empty cells to their right: they widen no
    column."""
    import textwrap

    from openpyxl.styles import Alignment
    from openpyxl.utils import get_column_letter

    widths, lines = {}, {}
    for row in sheet.iter_rows():
        for cell in row:
            if cell.value is None or cell.row in free_rows:
                continue
            n = _shown_width(cell.value)
            if n > WIDEST and isinstance(cell.value, str):
                cell.alignment = Alignment(wrap_text=True)
                wrapped = sum(len(textwrap.wrap(part, WIDEST)) or 1 for part in cell.value.split("\n"))
                lines[cell.row] = max(lines.get(cell.row, 1), wrapped)
            widths[cell.column] = max(widths.get(cell.column, 0), min(n, WIDEST))
    for column, n in widths.items():
        sheet.column_dimensions[get_column_letter(column)].width = round(n * 1.15) + 2
    for row, n in lines.items():
        sheet.row_dimensions[row].height = 15 * n  # points: Excel's default row (Calibri 11) a line
        for cell in sheet[row]:  # the row's other cells beside the first line, not the last
            if cell.value is not None:
                cell.alignment = Alignment(horizontal=cell.alignment.horizontal, vertical="top",
                                           wrap_text=cell.alignment.wrap_text)


PRINT_WIDTH = 125  # characters (column width units) across a landscape page within its margins, Letter or A4
SMALLEST_SCALE = 60  # %: a wider sheet is printed on more than one page across, not smaller


def _landscape(sheet, fit_width: int = 0) -> None:
    """Printed (or converted to PDF) across the page; given the sheet's width in characters (`fit_width`), one page
    wide where that shrinks it to SMALLEST_SCALE or less (the client measures, in its own font: LibreOffice without
    Calibri's metric twin draws wider), else at SMALLEST_SCALE, on more pages across (a wide sweep's summary shrunk to
    one page was unreadable)."""
    sheet.page_setup.orientation = "landscape"
    if fit_width and 100 * PRINT_WIDTH // fit_width >= SMALLEST_SCALE:
        sheet.sheet_properties.pageSetUpPr.fitToPage = True
        sheet.page_setup.fitToWidth, sheet.page_setup.fitToHeight = 1, 0
    elif fit_width:
        sheet.page_setup.scale = SMALLEST_SCALE


# The native charts' series colours, set on each series (issue 46): a chart style leaves them to the client, and
# LibreOffice drew fourteen curves in shades of one green. matplotlib's tab10 (the PNG plots' colours), then six
# unlike those; past the palette the colours come again with another dash. Markers cycle on their own, so that
# colours that look alike to a colour-blind reader still differ.
PALETTE = ("1F77B4", "FF7F0E", "2CA02C", "D62728", "9467BD", "8C564B", "E377C2", "7F7F7F", "BCBD22", "17BECF",
           "000000", "000075", "F032E6", "800000", "BFEF45", "469990")
DASHES = ("solid", "dash", "sysDot", "lgDashDot")
MARKERS = ("circle", "square", "triangle", "diamond")


def _style_series(series, i: int) -> None:
    """The i-th series of a chart: its colour, dash and marker; straight lines between the points."""
    from openpyxl.chart.shapes import GraphicalProperties

    colour = PALETTE[i % len(PALETTE)]
    line = series.graphicalProperties.line
    line.solidFill, line.prstDash, line.width = colour, DASHES[i // len(PALETTE) % len(DASHES)], 19050  # 1.5 pt
    series.marker.symbol, series.marker.size = MARKERS[i % len(MARKERS)], 5
    series.marker.graphicalProperties = GraphicalProperties(solidFill=colour)
    series.marker.graphicalProperties.line.solidFill = colour
    series.smooth = False


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
    the other, the charts in one column right of the widest block's data. Which columns, from the declarations
    (Run.headlines, Run.series); no per-table code. Printed: across the page, each block's data first, then its chart
    on a page of its own (a break before the charts' column and before each block: a chart cut in two left its legend
    on another page)."""
    from openpyxl.chart import Reference, ScatterChart, Series
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.pagebreak import Break

    for table, frame in run.tables.items():
        size = run.size_key(table)
        if not table.startswith("results/") or frame.empty or size is None:
            continue
        sheet_name = ("chart_" + table.split("/", 1)[1].replace("/", "_"))[:31]
        blocks = []  # (headline, its data: size and a column per curve)
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
            blocks.append((y, data.sort_index().reset_index()))
        if not blocks:
            continue
        gap = max(data.shape[1] for _, data in blocks) + 1  # the column between the data and the charts
        row0 = 0
        for y, data in blocks:
            _write(data, writer, sheet_name, index=False, startrow=row0)
            sheet = writer.sheets[sheet_name]
            unit = run.columns[table][y].unit
            chart = ScatterChart(scatterStyle="lineMarker")
            chart.title = f"{y} ({unit}) against size"
            chart.x_axis.delete = chart.y_axis.delete = False  # shown whatever openpyxl's default (3.1 deletes them)
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
                _style_series(series, c - 2)
                chart.series.append(series)
            chart.width, chart.height = 21, 12  # with the gap, within a landscape page's print width (Letter: 24 cm)
            sheet.add_chart(chart, f"{get_column_letter(gap + 1)}{row0 + 2}")
            if row0:
                sheet.row_breaks.append(Break(id=row0))
            row0 += max(n + 3, 27)  # the next block below this one's data and chart (12 cm: about 24 rows)
        sheet = writer.sheets[sheet_name]
        sheet.col_breaks.append(Break(id=gap - 1))  # the charts on pages of their own, after the data's
        sheet.column_dimensions[get_column_letter(gap)].width = 2
        _landscape(sheet)
        sheet.page_setup.pageOrder = "overThenDown"  # each block's data, then its chart


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
    figure's best value. Columns as wide as the tables' cells; the answer's lines run on beside them; printed scaled
    to the page's width where that leaves it readable."""
    from openpyxl.styles import Font

    found = answer(run)
    head = pd.DataFrame([("tool", run.attrs.get("tool", "")), ("status", run.attrs.get("status", "")),
                         ("hosts", run.attrs.get("hosts", "")), ("started_at", run.attrs.get("started_at", ""))],
                        columns=["attribute", "value"])
    _write(head, writer, "summary", index=False)
    sheet = writer.sheets["summary"]
    row = len(head) + 2  # 0-based row for pandas; openpyxl's rows are 1-based
    colour = {"ok": "167D2B", "fail": "B00020"}
    free_rows = set()  # 1-based: the answer's lines and the headings
    for style, line in found.styled_lines():
        sheet.cell(row + 1, 1, _text(line)).font = Font(bold=line not in found.recovered, color=colour[style])
        free_rows.add(row + 1)
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
        free_rows.add(row + 1)
        _write(frame, writer, "summary", index=False, startrow=row + 1)
        if suspect is not None:
            _highlight(sheet, row + 3, suspect(frame), frame.shape[1])
        row += len(frame) + 2
    _fit_columns(sheet, free_rows)
    lines = [round(1.1 * _shown_width(sheet.cell(r, 1).value)) for r in free_rows]  # bold
    _landscape(sheet, max([sum(d.width or 0 for d in sheet.column_dimensions.values())] + lines))


def to_excel(run: Run, out, include_samples: bool = False) -> None:
    """A 'summary' sheet (identity, what is wrong and the rows behind it, each figure's best), a 'run' sheet with the
    attributes, one sheet per table, a sweep's per_nic and per_switch sheets (with rails, with a topology), native
    charts of bandwidth against size, and sweep matrices as colour-scaled grids (one per rail; with a topology the
    hosts grouped by leaf); every sheet's columns as wide as their content. Samples are large: off by default."""
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
        for sheet in writer.book.worksheets:
            if sheet.title != "summary":  # the summary fits its own: its answer's lines run on
                _fit_columns(sheet)
