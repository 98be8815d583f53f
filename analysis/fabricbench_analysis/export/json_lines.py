"""A run's tables as JSON lines (`fabric-report json`): one object per row, named by its table."""
from __future__ import annotations

import contextlib
import json
import pathlib

import numpy as np

from ..read.results import Run


def to_json_lines(run: Run, out, tables=None) -> int:
    """Every table (or `tables`) as JSON lines: one object per row with its table's name, to a path or an open text
    file (stdout); returns the line count."""
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
