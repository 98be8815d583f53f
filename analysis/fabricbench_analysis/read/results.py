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
    if isinstance(value, str):
        # h5py decodes a variable-length string attribute itself, bytes that are not UTF-8 as lone surrogates
        # (surrogateescape), which no UTF-8 output can write: U+FFFD, as for the tables' text (a command line's
        # argument, a host name from a server, need not be UTF-8).
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
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
