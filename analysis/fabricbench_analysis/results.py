"""HDF5 -> pandas. Text columns are stored as fixed-width bytes; they come back as str."""
from __future__ import annotations

import dataclasses
import pathlib

import h5py
import numpy as np
import pandas as pd


@dataclasses.dataclass
class Run:
    path: pathlib.Path
    attrs: dict
    tables: dict  # "results/p2p" -> DataFrame, for every table in the file

    @property
    def complete(self) -> bool:
        return self.attrs.get("status") == "complete"


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


def load(path) -> Run:
    """Every table of a fabricbench file as a DataFrame (also for a run that did not complete)."""
    path = pathlib.Path(path)
    tables = {}
    with h5py.File(path, "r") as f:
        attrs = {k: _attr(v) for k, v in f.attrs.items()}
        f.visititems(lambda name, obj: tables.__setitem__(name, _frame(obj)) if isinstance(obj, h5py.Dataset) else None)
    return Run(path, attrs, tables)


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
