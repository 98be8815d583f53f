"""HDF5 -> pandas. Text columns are stored as fixed-width bytes; they come back as str.

Since schema_version 2 every table says what its columns are (HDF5 attributes column_units, column_roles,
column_better, one entry per column): `run.columns["results/coll"]["busbw_gbps"].unit == "GB/s"`. Matrices carry
their own row and column labels and load as DataFrames indexed by them."""
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

    @property
    def is_key(self) -> bool:
        return self.role == "key"


@dataclasses.dataclass
class Run:
    path: pathlib.Path
    attrs: dict
    tables: dict  # "results/p2p" -> DataFrame, for every table in the file
    columns: dict = dataclasses.field(default_factory=dict)   # "results/p2p" -> {column name -> Column}
    matrices: dict = dataclasses.field(default_factory=dict)  # "sweep/matrices/p2p_bw" -> DataFrame (labelled)
    matrix_attrs: dict = dataclasses.field(default_factory=dict)  # -> {"title", "unit", "better"}

    @property
    def complete(self) -> bool:
        return self.attrs.get("status") == "complete"

    def keys(self, table: str) -> list:
        """The columns that identify a row of `table`."""
        return [c.name for c in self.columns.get(table, {}).values() if c.is_key]


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
    return {n: Column(n, u, r, b) for n, u, r, b in zip(names, units, roles, better)}


def _matrix(dataset: h5py.Dataset):
    rows = _strings(dataset.attrs.get("row_labels"))
    columns = _strings(dataset.attrs.get("column_labels"))
    values = dataset[:]
    frame = pd.DataFrame(values, index=rows if len(rows) == values.shape[0] else None,
                         columns=columns if len(columns) == values.shape[1] else None)
    attrs = {k: _attr(dataset.attrs[k]) for k in ("title", "unit", "better") if k in dataset.attrs}
    return frame, attrs


def load(path) -> Run:
    """Every table of a fabricbench file as a DataFrame (also for a run that did not complete)."""
    path = pathlib.Path(path)
    run = Run(path, {}, {})
    with h5py.File(path, "r") as f:
        run.attrs = {k: _attr(v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            if obj.dtype.names:
                run.tables[name] = _frame(obj)
                run.columns[name] = _columns(obj)
            elif obj.ndim == 2:
                run.matrices[name], run.matrix_attrs[name] = _matrix(obj)
        f.visititems(visit)
    return run


def _sheet_name(table: str) -> str:
    return table.replace("/", "_")[:31]  # Excel's limit


def to_excel(run: Run, out, include_samples: bool = False) -> None:
    """One sheet per table plus a 'run' sheet with the attributes. Samples are large: off by default."""
    with pd.ExcelWriter(out, engine="openpyxl") as writer:
        pd.DataFrame(sorted(run.attrs.items()), columns=["attribute", "value"]).to_excel(writer, "run", index=False)
        for name, frame in run.tables.items():
            if name.startswith("samples/") and not include_samples:
                continue
            frame.to_excel(writer, _sheet_name(name), index=False)


def to_csv_dir(run: Run, directory) -> list:
    """One CSV per table (results, env, samples) in `directory`; returns the paths."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in run.tables.items():
        path = directory / (name.replace("/", "_") + ".csv")
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths
