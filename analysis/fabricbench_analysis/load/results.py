"""HDF5 -> pandas. Text columns are stored as fixed-width bytes; they come back as str.

Since schema_version 2 every table says what its columns are (HDF5 attributes column_units, column_roles,
column_better, one entry per column): `run.columns["results/coll"]["busbw_gbps"].unit == "GB/s"`; newer files also
mark the headline columns and the series column (column_headline, column_series): `run.headlines("results/coll")
== ["busbw_gbps"]`, `run.series("results/coll") == "op"`. Matrices carry their own row and column labels and load as
DataFrames indexed by them."""
from __future__ import annotations

import dataclasses
import pathlib

import h5py
import numpy as np
import pandas as pd


@dataclasses.dataclass(frozen=True)
class Column:
    """What one column of a table is: unit ("" for none), role (key, setting, measured, statistic,
    reference: a figure the measurement is held against, such as the expected bandwidth) and, for
    measured values and their statistics, which direction is better ("higher", "lower" or "")."""
    name: str
    unit: str = ""
    role: str = ""
    better: str = ""
    headline: bool = False  # a measured value a person reads first: plots and charts draw it against size
    series: bool = False    # the key whose values name the curves (op, test, metric)

    @property
    def is_key(self) -> bool:
        return self.role == "key"


TIME_UNITS = ("us", "ms", "s")
# Measured columns that describe the run's health rather than its speed (compare.py neither compares nor
# baselines them by ratio; they are never a fallback headline).
HEALTH_COLUMNS = {"wrong", "port_errors", "xmit_wait", "nvlink_errors", "pct_expected", "suspect_pairs"}


@dataclasses.dataclass
class Run:
    path: pathlib.Path
    attrs: dict
    tables: dict  # "results/p2p" -> DataFrame, for every table in the file
    columns: dict = dataclasses.field(default_factory=dict)   # "results/p2p" -> {column name -> Column}
    matrices: dict = dataclasses.field(default_factory=dict)  # "sweep/matrices/p2p_bw" -> DataFrame (labelled)
    matrix_attrs: dict = dataclasses.field(default_factory=dict)  # -> {"title", "unit", "better"}
    marked: set = dataclasses.field(default_factory=set)  # tables whose file carries column_headline/column_series

    @property
    def complete(self) -> bool:
        return self.attrs.get("status") == "complete"

    def keys(self, table: str) -> list:
        """The columns that identify a row of `table`."""
        return [c.name for c in self.columns.get(table, {}).values() if c.is_key]

    def headlines(self, table: str) -> list:
        """The headline columns of `table` as the file declares them (column_headline).

        Files written before the attribute existed: a results table falls back to the first measured column with a
        better direction (health columns such as `wrong` left out), taken row by row, so that a table whose rows
        fill different columns (p2p's latency tests latency_us, its bandwidth tests bw_mbps) gets each; other tables
        of such files have none."""
        columns = self.columns.get(table, {})
        if table in self.marked:
            return [c.name for c in columns.values() if c.headline]
        if not table.startswith("results/"):
            return []
        candidates = [c.name for c in columns.values()
                      if c.role == "measured" and c.better in ("higher", "lower") and c.name not in HEALTH_COLUMNS]
        frame = self.tables.get(table)
        if frame is None or frame.empty or not candidates:
            return candidates[:1]
        filled = frame[candidates].notna()
        picked = {filled.columns[row.argmax()] for row in filled.to_numpy() if row.any()}
        return [c for c in candidates if c in picked] or candidates[:1]

    def series(self, table: str):
        """The key column whose values name the curves of `table` (column_series), or None. Files written before
        the attribute existed: a results table falls back to its first text key column."""
        columns = self.columns.get(table, {})
        if table in self.marked:
            return next((c.name for c in columns.values() if c.series), None)
        frame = self.tables.get(table)
        if not table.startswith("results/") or frame is None:
            return None
        return next((c.name for c in columns.values()
                     if c.is_key and (frame[c.name].dtype == object or frame[c.name].dtype.kind in "SU")), None)

    def size_key(self, table: str):
        """The key column holding the message size (unit B), the x axis of the plots and charts; None if none."""
        return next((c.name for c in self.columns.get(table, {}).values() if c.is_key and c.unit == "B"), None)


def curve_keys(run: Run, table: str, frame: pd.DataFrame) -> list:
    """The key columns that name one curve of `table` against size: its series column, and every other key that
    still tells rows of one series and size apart (fabric-coll's in_place where both were run; dtype, redop or root
    where several were)."""
    series, size = run.series(table), run.size_key(table)
    keys = [series] if series else []
    others = [k for k in run.keys(table) if k not in keys and k != size]
    for key in others:
        by = keys + ([size] if size else [])
        if not by:
            keys.append(key)
            continue
        if frame.groupby(by, sort=False)[key].nunique().max() > 1:
            keys.append(key)
    return keys


# Key values a person reads better as words; -1 in a key column means "none" (root, gpu, rank) and is left out.
_WORDS = {("in_place", 0): "out-of-place", ("in_place", 1): "in-place"}


def curve_label(keys: list, values) -> str:
    """'all_reduce in-place': text keys by their value, numbers with their column's name ('mode=1'), in_place as
    in-place/out-of-place, a -1 (none, as fabric-coll's root of an operation without one) left out."""
    values = values if isinstance(values, tuple) else (values,)
    words = []
    for k, v in zip(keys, values):
        if isinstance(v, str):
            words.append(v)
        elif (k, v) in _WORDS:
            words.append(_WORDS[(k, v)])
        elif v != -1:
            words.append(f"{k}={v}")
    return " ".join(words)


def _frame(dataset: h5py.Dataset) -> pd.DataFrame:
    frame = pd.DataFrame(dataset[:])
    for column in frame.columns:
        if frame[column].dtype == object or frame[column].dtype.kind == "S":
            frame[column] = frame[column].map(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    return frame


def _attr(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _strings(value) -> list:
    if value is None:
        return []
    return [_attr(v) for v in np.atleast_1d(value)]


def _columns(dataset: h5py.Dataset) -> dict:
    names = list(dataset.dtype.names or [])
    count = len(names)
    units = _strings(dataset.attrs.get("column_units")) or [""] * count
    roles = _strings(dataset.attrs.get("column_roles")) or [""] * count
    better = _strings(dataset.attrs.get("column_better")) or [""] * count
    headline = _strings(dataset.attrs.get("column_headline")) or [""] * count
    series = _strings(dataset.attrs.get("column_series")) or [""] * count
    return {n: Column(n, u, r, b, h == "yes", s == "yes")
            for n, u, r, b, h, s in zip(names, units, roles, better, headline, series)}


def _matrix(dataset: h5py.Dataset):
    rows = _strings(dataset.attrs.get("row_labels"))
    columns = _strings(dataset.attrs.get("column_labels"))
    values = dataset[:]
    frame = pd.DataFrame(values, index=rows if len(rows) == values.shape[0] else None,
                         columns=columns if len(columns) == values.shape[1] else None)
    attrs = {k: _attr(dataset.attrs[k]) for k in ("title", "unit", "better") if k in dataset.attrs}
    return frame, attrs


def load(path, locking: bool = True) -> Run:
    """Every table of a fabricbench file as a DataFrame (also for a run that did not complete). A tool still writing
    the file holds HDF5's lock on it; `locking=False` reads the rows it has flushed so far anyway."""
    path = pathlib.Path(path)
    run = Run(path, {}, {})
    with h5py.File(path, "r", locking=locking) as f:
        run.attrs = {k: _attr(v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            if obj.dtype.names:
                run.tables[name] = _frame(obj)
                run.columns[name] = _columns(obj)
                if "column_headline" in obj.attrs or "column_series" in obj.attrs:
                    run.marked.add(name)
            elif obj.ndim == 2:
                run.matrices[name], run.matrix_attrs[name] = _matrix(obj)
        f.visititems(visit)
    return run


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
            data.to_excel(writer, sheet_name, index=False, startrow=row0)
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
    plots group them (sweep_plots.heat_layout), the leaf named beside each host."""
    from openpyxl.utils import get_column_letter

    for name, matrix in run.matrices.items():
        sheet_name = ("heat_" + name.rsplit("/", 1)[1])[:31]
        if name.startswith("sweep/matrices/"):
            from ..draw.sweep_plots import heat_layout  # matplotlib: only for a sweep's matrices

            layout = heat_layout(run, name)
            if layout.leaves:
                matrix = matrix.copy()
                matrix.index, matrix.columns = matrix.index.map(str), matrix.columns.map(str)
                matrix = matrix.loc[layout.hosts, layout.hosts]
                leaf = {h: leaf for leaf, start, end in layout.leaves for h in layout.hosts[start:end]}
                matrix.index = pd.MultiIndex.from_arrays([[leaf[h] for h in matrix.index], list(matrix.index)],
                                                         names=["leaf", "host"])
                matrix.to_excel(writer, sheet_name)
                sheet = writer.sheets[sheet_name]
                n_rows, n_cols = matrix.shape
                cells = f"C2:{get_column_letter(n_cols + 2)}{n_rows + 1}"
                _colour_scale(sheet, cells, run.matrix_attrs.get(name, {}).get("better", "higher"))
                continue
        matrix.to_excel(writer, sheet_name)
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
    from ..judge import rails

    for sheet_name, frame, suspect in (("per_nic", rails.nic_table(run), rails.nic_suspect),
                                       ("per_switch", rails.switch_table(run), rails.switch_suspect)):
        if frame is None:
            continue
        frame.to_excel(writer, sheet_name, index=False)
        sheet = writer.sheets[sheet_name]
        _highlight(sheet, 2, suspect(frame), frame.shape[1])
        if not frame.empty:
            sheet.auto_filter.ref = sheet.dimensions


def _summary_sheet(writer, run: Run) -> None:
    """The first sheet leads with the answer, as the HTML page: the run's identity, what is wrong (answer.py) in a
    few lines, the rows behind it (verdicts, failed and warned checks, rows below expected, wrong data), then each
    figure's best value."""
    from openpyxl.styles import Font

    from ..judge.answer import answer

    found = answer(run)
    head = pd.DataFrame([("tool", run.attrs.get("tool", "")), ("status", run.attrs.get("status", "")),
                         ("hosts", run.attrs.get("hosts", "")), ("started_at", run.attrs.get("started_at", ""))],
                        columns=["attribute", "value"])
    head.to_excel(writer, "summary", index=False)
    sheet = writer.sheets["summary"]
    row = len(head) + 2  # 0-based row for pandas; openpyxl's rows are 1-based
    colour = {"ok": "167D2B", "fail": "B00020"}
    for style, line in found.styled_lines():
        sheet.cell(row + 1, 1, line).font = Font(bold=line not in found.recovered, color=colour[style])
        row += 1
    from ..judge import rails

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
        sheet.cell(row + 1, 1, title).font = Font(bold=True)
        frame.to_excel(writer, "summary", index=False, startrow=row + 1)
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
        pd.DataFrame(sorted(run.attrs.items()), columns=["attribute", "value"]).to_excel(writer, "run", index=False)
        for name, frame in run.tables.items():
            if name.startswith("samples/") and not include_samples:
                continue
            frame.to_excel(writer, _sheet_name(name), index=False)
        _rail_sheets(writer, run)
        _chart_sheet(writer, run)
        _matrix_sheets(writer, run)


def to_json_lines(run: Run, out, tables=None) -> int:
    """Every table (or `tables`) as JSON lines: one object per row with its table's name, to a path or an open text
    file (stdout); returns the line count."""
    import contextlib
    import json

    count = 0
    with (open(out, "w") if isinstance(out, (str, pathlib.Path)) else contextlib.nullcontext(out)) as f:
        for name, frame in run.tables.items():
            if tables and name not in tables:
                continue
            for record in frame.to_dict(orient="records"):
                clean = {k: (None if isinstance(v, float) and np.isnan(v) else (v.item() if isinstance(v, np.generic) else v))
                         for k, v in record.items()}
                f.write(json.dumps({"table": name, **clean}) + "\n")
                count += 1
    return count


def to_csv_dir(run: Run, directory, tables=None) -> list:
    """One CSV per table (results, env, samples; or only `tables`) in `directory`; returns the paths."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in run.tables.items():
        if tables and name not in tables:
            continue
        path = directory / (name.replace("/", "_") + ".csv")
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths
