"""A run's tables as CSV files, one per table, in a folder (`fabric-report csv`)."""
from __future__ import annotations

import pathlib

from ..read.results import Run


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
