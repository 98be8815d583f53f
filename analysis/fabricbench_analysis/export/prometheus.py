"""A run in Prometheus' text exposition format (version 0.0.4), for node_exporter's textfile collector.

Every value is a gauge in base units (seconds, bytes, bytes per second, ratios), every series carries the tool that
wrote the run, so the files of several tools can lie in one collector folder. Results tables (/results/<table>) are
exported from their declarations, no per-table code: each headline column, the reference and % of expected columns
and the health counters, one series per row labelled by the table's key columns. The sweep's pairs, per-node
medians, verdicts and coverage of its plan, the expected bandwidth per host and NIC (/env/expected) and the checks
(/doctor/findings, else /env/checks) have fixed layouts (docs/RESULTS.md) and their own families. docs/operations.md
lists them."""
from __future__ import annotations

import calendar
import math
import re
import time
import types

import pandas as pd

from ..judge.coverage import coverage_gap
from ..read.printable import printable
from ..read.results import HEALTH_COLUMNS

PREFIX = "fabricbench"
# unit in the file -> (factor to the base unit: a multiplier, or a divisor where negative, so that 1.801 us is
# 1.801e-06 s exactly as written; the name's suffix)
_UNITS = {
    "us": (-1e6, "seconds"), "ms": (-1e3, "seconds"), "s": (1.0, "seconds"),
    "MB/s": (1e6, "bytes_per_second"), "GB/s": (1e9, "bytes_per_second"), "MiB/s": (1048576.0, "bytes_per_second"),
    "Gb/s": (1e9 / 8, "bytes_per_second"), "M/s": (1e6, "per_second"), "%": (-100.0, "ratio"), "B": (1.0, "bytes"),
    "elements": (1.0, "elements"),
}
# What a sweep figure in that base unit is called.
_FIGURE = {"seconds": "latency_seconds", "bytes_per_second": "bandwidth_bytes_per_second"}
# The unit tokens of fabricbench's column names, dropped before the base unit's suffix is added.
_UNIT_TOKENS = {"us", "ms", "s", "mbps", "gbps", "mibps", "gbitps", "mps", "pct", "b"}
_CHECK_STATES = ("ok", "warn", "fail", "skip")
_RUN_STATES = ("complete", "failed", "running")


def escape_label(value) -> str:
    """A label value as the text format needs it, as the C++ tools write it (Exposition::escape, issue 48): first
    printable() (valid UTF-8, which the format requires and a host name with bytes that are not UTF-8 would break; no
    control character: a line feed is the text \\n, ESC \\x1b), then backslash and double quote escaped: an ESC in a host
    name reads \\\\x1b in the file, \\x1b once parsed. (Bytes that are not UTF-8 in a table, load() has made U+FFFD.)"""
    return printable(value).replace("\\", "\\\\").replace('"', '\\"')


def _escape_help(text: str) -> str:
    """HELP text names a table, a column and a unit of the file: printable() too, then backslash escaped."""
    return printable(text).replace("\\", "\\\\")


def _name(text: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_]", "_", text)
    return name if re.match(r"[a-zA-Z_]", name) else "_" + name


def _number(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _label_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if hasattr(value, "item"):
        value = value.item()
    return str(value)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


class Exposition:
    """Families in the order first seen, each with one HELP and TYPE line and its samples."""

    def __init__(self, tool: str):
        self.tool = tool
        self.families: dict = {}  # name -> (help, [(labels, value)])

    def add(self, name: str, help_text: str, labels: dict, value) -> None:
        if _missing(value):
            return
        name = _name(f"{PREFIX}_{name}")
        family = self.families.setdefault(name, (help_text, {}))
        labels = {"tool": self.tool, **{_name(k): _label_text(v) for k, v in labels.items() if v != ""}}
        family[1][tuple(labels.items())] = value  # a later row with the same labels is the last word

    def text(self) -> str:
        lines = []
        for name, (help_text, samples) in self.families.items():
            lines.append(f"# HELP {name} {_escape_help(help_text)}")
            lines.append(f"# TYPE {name} gauge")
            for labels, value in samples.items():
                body = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels)
                lines.append(f"{name}{{{body}}} {_number(value)}")
        return "\n".join(lines) + "\n"


def _timestamp(text) -> float:
    """ISO 8601 UTC ('2026-11-23T21:55:01Z') -> seconds since the epoch; NaN where absent or unreadable."""
    try:
        return float(calendar.timegm(time.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return math.nan


def metric_stem(column: str, unit: str) -> str:
    """busbw_gbps (GB/s) -> busbw_bytes_per_second, latency_us -> latency_seconds, pct_expected -> of_expected_ratio."""
    suffix = _UNITS.get(unit, (1.0, ""))[1]
    tokens = column.split("_")
    kept = [t for t in tokens if t not in _UNIT_TOKENS] if suffix else tokens
    stem = "_".join(kept) or column
    if unit == "%" and tokens[0] == "pct":
        stem = "of_" + stem
    if suffix and not stem.endswith(suffix):
        stem = f"{stem}_{suffix}"
    return stem


def to_base(value, unit: str) -> float:
    """A value in `unit` (as the file declares it) in the base unit of its metric."""
    factor = _UNITS.get(unit, (1.0, ""))[0]
    return float(value) / -factor if factor < 0 else float(value) * factor


def exported_columns(run, table: str) -> list:
    """The columns of a results table that become metrics: the headlines, the reference columns (expected
    bandwidth), % of expected and the health counters (wrong bytes, port and NVLink error growth)."""
    columns = run.columns.get(table, {})
    headlines = set(run.headlines(table))
    return [c.name for c in columns.values()
            if c.name in headlines or c.role == "reference" or (c.role == "measured" and c.name in HEALTH_COLUMNS
                                                                and c.name != "suspect_pairs")]


def _results(out: Exposition, run, table: str, frame: pd.DataFrame) -> None:
    short = table.split("/", 1)[1].replace("/", "_")
    keys = run.keys(table)
    columns = run.columns[table]
    for column in exported_columns(run, table):
        unit = columns[column].unit
        help_text = (f"/{table} column {column} ({unit or 'no unit'} in the file, here in base units), one series "
                     f"per row labelled by its key columns")
        name = f"{short}_{metric_stem(column, unit)}"
        for row in frame.itertuples(index=False):
            value = getattr(row, column)
            if _missing(value):
                continue
            out.add(name, help_text, {k: getattr(row, k) for k in keys}, to_base(value, unit))


def _rail_labels(row: dict, columns) -> dict:
    """The rail and NIC labels of a sweep row where its table has them (issue 21's rails): rail (left out where -1,
    a verdict about no one rail), nic/nic_a/nic_b and switch (left out where empty, as every empty label)."""
    out = {}
    for column in columns:
        if column not in row:
            continue
        value = row[column]
        if column == "rail":
            if _missing(value) or int(value) < 0:
                continue
            value = int(value)
        out[column] = value
    return out


def _sweep(out: Exposition, run) -> None:
    pairs = run.tables.get("sweep/pairs")
    if pairs is not None and not pairs.empty:
        for record in pairs.to_dict(orient="records"):  # in the order measured: a re-test's row is the last word
            row = types.SimpleNamespace(**record)
            figure = _FIGURE.get(_UNITS.get(str(row.unit), (1.0, "value"))[1], "value")
            labels = {"metric": row.metric, "host_a": row.host_a, "host_b": row.host_b, "direction": row.direction,
                      "bytes": row.bytes, **_rail_labels(record, ("rail", "nic_a", "nic_b"))}
            out.add(f"sweep_pair_{figure}", f"fabric-sweep: a node pair's {figure.split('_')[0]} (/sweep/pairs "
                    "value), the last measured (a re-test replaces the sweep's row)", labels,
                    to_base(row.value, str(row.unit)))
            if "pct_expected" in pairs.columns:
                out.add("sweep_pair_of_expected_ratio", "fabric-sweep: a node pair's figure as a share of the expected "
                        "bandwidth", labels, to_base(row.pct_expected, "%"))
    nodes = run.tables.get("sweep/nodes")
    if nodes is not None and not nodes.empty:
        for record in nodes.to_dict(orient="records"):
            row = types.SimpleNamespace(**record)
            figure = _FIGURE.get(_UNITS.get(str(row.unit), (1.0, "value"))[1], "value")
            labels = {"metric": row.metric, "host": row.host, **_rail_labels(record, ("rail", "nic"))}
            out.add(f"sweep_node_median_{figure}", f"fabric-sweep: the median {figure.split('_')[0]} of a node's pairs "
                    "(/sweep/nodes), best of re-tests", labels, to_base(row.median, str(row.unit)))
            out.add("sweep_node_suspect_pairs", "fabric-sweep: a node's pairs below the rules", labels,
                    float(row.suspect_pairs))
    verdicts = run.tables.get("sweep/verdicts")
    if verdicts is not None:
        fixed = {"metric", "kind", "host_a", "host_b", "reason"}
        extra = [c for c in verdicts.columns if c not in fixed]  # rail, nic, switch ... as the sweep grows them
        out.add("sweep_verdicts", "fabric-sweep: how many verdicts the run gave (0: nothing wrong)", {},
                len(verdicts))
        for row in verdicts.to_dict(orient="records"):
            labels = {"kind": row["kind"], "metric": row["metric"], "host": row["host_a"], "peer": row["host_b"],
                      **_rail_labels(row, extra), "reason": row["reason"]}
            out.add("sweep_verdict", "fabric-sweep: one verdict (kind node, link, pair, hung, nic, switch, uplink, "
                    "path, untested (a host no pair test reached) ...; host and peer; rail, nic and switch where it "
                    "has them; the reason), value 1", labels, 1)
    switches = run.tables.get("sweep/switches")
    if switches is not None and not switches.empty:
        for row in switches.to_dict(orient="records"):
            figure = _FIGURE.get(_UNITS.get(str(row.get("unit", "")), (1.0, "value"))[1], "value")
            for where in ("inside", "crossing"):
                labels = {"switch": row["switch"], "metric": row["metric"], **_rail_labels(row, ("rail",)),
                          "pairs": where}
                if f"{where}_median" in row:
                    out.add(f"sweep_switch_median_{figure}", "fabric-sweep: the median of the pairs inside a leaf "
                            "switch or crossing it (/sweep/switches), per rail", labels,
                            to_base(row[f"{where}_median"], str(row.get("unit", ""))))
                if f"{where}_suspect" in row:
                    out.add("sweep_switch_suspect_pairs", "fabric-sweep: the suspect pairs inside a leaf switch or "
                            "crossing it (/sweep/switches), per rail", labels, float(row[f"{where}_suspect"]))
    try:
        coverage = float(run.attrs["leaf_pair_coverage"])
    except (KeyError, TypeError, ValueError):
        coverage = None
    if coverage is not None:
        out.add("sweep_leaf_pair_coverage_ratio", "fabric-sweep: the share of leaf switch pairs x rails the sweep's "
                "pairs crossed (given a topology)", {}, coverage)
    _coverage(out, run)


_COVERAGE_COUNTS = {
    "hosts_planned": "fabric-sweep: the hosts the sweep's plan was to test",
    "hosts_tested": "fabric-sweep: the hosts at least one pair test measured",
    "pairs_planned": "fabric-sweep: the pairs the sweep's plan asked for",
    "pairs_tested": "fabric-sweep: the pairs tested",
}


def _coverage(out: Exposition, run) -> None:
    """What the sweep tested of its plan (root attributes hosts_planned ... and coverage_complete), where the file has them: a
    sweep whose budget ran out before any test has no verdict, and sweep_verdicts alone would read as a pass."""
    present = [name for name in _COVERAGE_COUNTS if name in run.attrs]
    for name in present:
        try:
            out.add(f"sweep_{name}", _COVERAGE_COUNTS[name], {}, int(run.attrs[name]))
        except (TypeError, ValueError):
            continue
    if present or "coverage_complete" in run.attrs:
        out.add("sweep_coverage_complete", "fabric-sweep: 1 when the sweep tested every host (and pair) it planned, "
                "0 when it did not (then no verdict is no pass)", {}, 0 if coverage_gap(run) else 1)


def _checks(out: Exposition, run) -> None:
    name = "doctor/findings" if "doctor/findings" in run.tables else "env/checks"
    frame = run.tables.get(name)
    if frame is None:
        return
    counts = {s: 0 for s in _CHECK_STATES}
    for row in frame.to_dict(orient="records"):
        status = str(row.get("status", ""))
        counts[status] = counts.get(status, 0) + 1
        labels = {"host": row.get("host", ""), "rank": row.get("rank", -1) if row.get("rank", -1) >= 0 else "",
                  "check": row.get("check", ""), "subject": row.get("subject", "")}
        for state in _CHECK_STATES:
            out.add("check_status", "a check's finding (fabric-doctor's /doctor/findings, the other tools' cheap "
                    "/env/checks): 1 for its status, 0 for the others", {**labels, "status": state},
                    1 if status == state else 0)
    for state, count in counts.items():
        out.add("checks", "findings per status (fabric-doctor's /doctor/findings, the other tools' /env/checks)",
                {"status": state}, count)


def _expected(out: Exposition, run) -> None:
    frame = run.tables.get("env/expected")
    if frame is None:
        return
    for row in frame.itertuples(index=False):
        out.add("expected_bytes_per_second", "the bandwidth the hardware should reach per direction (/env/expected: "
                "nvlink and pcie per GPU, rdma_port per NIC port, rdma_node per host)",
                {"host": row.host, "kind": row.kind, "subject": row.subject}, to_base(row.gbps, "GB/s"))


def exposition(run) -> str:
    """The text of the .prom file for `run`."""
    a = run.attrs
    out = Exposition(str(a.get("tool", "")))
    status = str(a.get("status", ""))
    hosts = [h for h in str(a.get("hosts", "")).split(",") if h]
    out.add("run_info", "the run: version, hosts, file and full status, value 1",
            {"tool_version": a.get("tool_version", ""), "hosts": ",".join(hosts), "file": run.path.name,
             "status": status}, 1)
    state = status.split(":", 1)[0]
    for s in _RUN_STATES:
        out.add("run_status", "the run's status: 1 for complete, failed or running, 0 for the others", {"status": s},
                1 if state == s else 0)
    out.add("run_start_timestamp_seconds", "when the run started (Unix time)", {}, _timestamp(a.get("started_at")))
    out.add("run_end_timestamp_seconds", "when the run ended (Unix time)", {}, _timestamp(a.get("finished_at")))
    try:
        ranks = int(a.get("world_size"))
    except (TypeError, ValueError):  # a damaged file's world_size that is no number: no sample, not a traceback
        ranks = None
    out.add("run_ranks", "MPI ranks of the run", {}, ranks)
    out.add("run_hosts", "hosts of the run", {}, len(hosts))
    for table, frame in run.tables.items():
        if table.startswith("results/") and not frame.empty:
            _results(out, run, table, frame)
    _sweep(out, run)
    _expected(out, run)
    _checks(out, run)
    return out.text()


def write_metrics(run, out) -> None:
    with open(out, "w", encoding="utf-8") as f:
        f.write(exposition(run))
