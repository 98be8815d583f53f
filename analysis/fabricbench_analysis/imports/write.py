"""An imported run written as the suite's HDF5 file (docs/RESULTS.md): the root attributes every tool writes (tool
names the peer, `imported_from` the source), /env/ranks and /env/hosts from the header lines, and the results table
with its column attributes, so that every reader of fabricbench files (fabric-report, pandas) takes it unchanged. A
source that stopped mid-table is written with its rows and the status `failed: ...`, as a tool killed mid-run."""
from __future__ import annotations

import datetime

import h5py
import numpy as np

from .imported import TABLES, Col, Imported

SCHEMA_VERSION = 2


def _dtype(col: Col):
    return {"text": f"S{col.width}", "int": "<i8", "float": "<f8"}[col.kind]


def _value(col: Col, row: dict):
    v = row.get(col.name)
    if col.kind == "text":
        return ("" if v is None else str(v)).encode("utf-8")[:col.width]
    if col.kind == "int":
        return -1 if v is None else int(v)
    return np.nan if v is None else float(v)


def _strings(values) -> np.ndarray:
    return np.array(values, dtype=h5py.string_dtype())


def _table(group: h5py.Group, name: str, columns: list, rows: list) -> None:
    dtype = np.dtype([(c.name, _dtype(c)) for c in columns])
    data = np.array([tuple(_value(c, r) for c in columns) for r in rows], dtype=dtype)
    d = group.create_dataset(name, data=data, maxshape=(None,), chunks=True)
    d.attrs["column_units"] = _strings([c.unit for c in columns])
    d.attrs["column_roles"] = _strings([c.role for c in columns])
    d.attrs["column_better"] = _strings([c.better for c in columns])
    d.attrs["column_headline"] = _strings(["yes" if c.headline else "" for c in columns])
    d.attrs["column_series"] = _strings(["yes" if c.series else "" for c in columns])


RANKS = [Col("rank", "int"), Col("host", "text", 64), Col("local_rank", "int"), Col("gpu", "int"),
         Col("gpu_name", "text", 64), Col("gpu_uuid", "text", 48), Col("pci_bus_id", "text", 24)]
HOSTS = [Col("host", "text", 64), Col("nccl", "text", 32), Col("gpu_count", "text", 8), Col("gpu_model", "text", 96)]
# Beside the tools' columns, imported NCCL rows name the path NCCL took (from INFO lines in the source or --nccl-log).
PATH = Col("path", "text", 192, role="setting")


def columns_of(imp: Imported) -> list:
    """The table's columns that some row fills, in the tools' order; the expected columns always."""
    spec = TABLES[imp.table]
    filled = {k for r in imp.rows for k in r}
    cols = [c for c in spec if c.name in filled or c.name in ("expected_gbps", "pct_expected", "expected_from")]
    if "path" in filled:
        cols.append(PATH)
    return cols


def write(imp: Imported, path, rule) -> None:
    """Write `imp` (its rows already stamped with their expectation) to `path`; `rule` is the ExpectedRule judged by."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    hosts = imp.hosts
    with h5py.File(path, "w") as f:
        a = f.attrs
        a["format"], a["schema_version"] = "fabricbench", SCHEMA_VERSION
        a["tool"], a["tool_version"] = imp.tool, imp.tool_version
        a["command_line"] = imp.command_line
        a["started_at"], a["finished_at"] = "", ""
        a["imported_from"], a["imported_at"] = str(imp.source), now
        a["status"] = f"failed: {imp.stopped}" if imp.stopped else "complete" if not imp.cut_at else \
            f"failed: the source ends at line {imp.cut_at} inside its table (the run did not finish)"
        a["world_size"] = imp.world_size or (len(imp.ranks) if imp.ranks else -1)
        a["hosts"] = ",".join(hosts)
        a["expected_warn_below_percent"] = float(rule.warn_below_percent)
        a["expected_calibrated_warn_below_percent"] = float(rule.calibrated_warn_below_percent)
        a["expected_min_bytes"] = float(rule.min_bytes)
        a["notes"] = "\n".join(imp.notes)
        env = f.create_group("env")
        _table(env, "ranks", RANKS, imp.ranks)
        per_host = {}
        for r in imp.ranks:
            h = per_host.setdefault(r["host"], {"host": r["host"], "nccl": imp.nccl_version, "gpus": []})
            h["gpus"].append(r.get("gpu_name", ""))
        host_rows = [{"host": h["host"], "nccl": h["nccl"], "gpu_count": str(len(h["gpus"])),
                      "gpu_model": ",".join(sorted(set(h["gpus"])))} for h in per_host.values()]
        _table(env, "hosts", HOSTS, host_rows)
        group, name = imp.table.split("/")
        _table(f.require_group(group), name, columns_of(imp), imp.rows)
