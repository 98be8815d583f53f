"""fabric-sweep's rails and switch topology, as the plots, the page, the workbook and the answer read them.

With rails (local rank i of a node tests local rank i of the other node: rail i) /sweep/pairs, /sweep/nodes and
/sweep/verdicts carry a `rail` column (a verdict about no one rail: -1) and the NIC used (`nic_a`/`nic_b`, `nic`),
and each metric has one matrix per rail (/sweep/matrices/<metric>_rail<r>; root attribute `rails`). Given a
topology, /sweep/topology names each host's leaf and spine per rail, /sweep/switches sums up the pairs inside each
leaf and crossing it, verdicts name a `switch` (an uplink that cannot be told from its twin: "leaf1,leaf2") and the
root attribute `leaf_pair_coverage` says what share of leaf pairs x rails the sweep crossed. Files without these
columns and tables (single-rail sweeps, older files) read as before: no rail, no leaf."""
from __future__ import annotations

import dataclasses
import re

import pandas as pd

_RAIL_MATRIX = re.compile(r"^(?P<metric>.+)_rail(?P<rail>[0-9]+)$")
# The verdict kinds that point at one rail's hardware rather than at a host or a pair.
RAIL_KINDS = ("nic", "switch", "uplink", "path")
# The verdict kind of a host that no pair test reached (a budget spent, hosts excluded): a gap, not a finding.
UNTESTED = "untested"


def matrix_rail(stem: str):
    """'p2p_bw_rail1' -> ('p2p_bw', 1); 'p2p_bw' -> ('p2p_bw', None)."""
    found = _RAIL_MATRIX.match(stem)
    return (found["metric"], int(found["rail"])) if found else (stem, None)


def _int(value, default=-1) -> int:
    try:
        return default if pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return default


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def switches_of(value) -> list:
    """A verdict's `switch`: 'leaf1,leaf2' (an uplink that cannot be told from its twin) -> ['leaf1', 'leaf2']."""
    return [s.strip() for s in _text(value).split(",") if s.strip()]


@dataclasses.dataclass
class LeafOrder:
    """The order of a heat map's hosts: grouped by leaf switch where the sweep was given a topology."""
    hosts: list                 # the hosts in drawing order
    leaves: list                # (leaf, first index, end index) per group, in drawing order; [] without a topology
    boundaries: list            # the indices where a new leaf begins (a line is drawn before each); [] without

    @property
    def grouped(self) -> bool:
        return bool(self.leaves)


def topology(run):
    """/sweep/topology (host, rail, leaf, spine), or None when the sweep was given no topology."""
    frame = run.tables.get("sweep/topology")
    if frame is None or frame.empty or "host" not in frame or "leaf" not in frame:
        return None
    return frame


def leaves_of(run, rail=None) -> dict:
    """host -> leaf for one rail, in the order of /sweep/topology ({} without a topology). For a matrix without
    rails (rail None), or a rail the topology does not list, the first rail the table lists."""
    frame = topology(run)
    if frame is None:
        return {}
    if "rail" in frame:
        rails = list(dict.fromkeys(frame["rail"]))
        pick = rail if rail is not None and rail in rails else rails[0]
        frame = frame[frame["rail"] == pick]
    out = {}
    for host, leaf in zip(frame["host"], frame["leaf"]):
        out.setdefault(str(host), str(leaf))
    return out


def leaf_order(run, hosts, rail=None) -> LeafOrder:
    """The hosts of a matrix (in job order) grouped by leaf for `rail`: leaves in the order first seen in
    /sweep/topology, hosts in job order within a leaf, hosts the topology does not name last (leaf ""). Without a
    topology the hosts as given, with no leaf."""
    hosts = [str(h) for h in hosts]
    leaf = leaves_of(run, rail)
    if not leaf:
        return LeafOrder(hosts, [], [])
    names = list(dict.fromkeys(leaf.values()))
    if any(h not in leaf for h in hosts):
        names.append("")
    ordered, groups = [], []
    for name in names:
        members = [h for h in hosts if leaf.get(h, "") == name]
        if members:
            groups.append((name, len(ordered), len(ordered) + len(members)))
            ordered += members
    return LeafOrder(ordered, groups, [start for _, start, _ in groups[1:]])


def _verdict_rows(run, rail=None, metric=None) -> list:
    """The verdicts about something measured as dicts (an untested host's row is none: untested_hosts); with `rail`,
    those about that rail or about no one rail (rail -1 or no rail column); with `metric`, those of that metric or of
    no metric the sweep measured (data_path's path verdicts), so a latency verdict marks no bandwidth plot."""
    verdicts = run.tables.get("sweep/verdicts")
    if verdicts is None or verdicts.empty:
        return []
    rows = [v for v in verdicts.to_dict(orient="records") if _text(v.get("kind")) != UNTESTED]
    if rail is not None:
        rows = [v for v in rows if _int(v.get("rail", -1)) in (-1, rail)]
    if metric is not None:
        measured = measured_metrics(run)
        rows = [v for v in rows if _text(v.get("metric")) == metric or _text(v.get("metric")) not in measured]
    return rows


def measured_metrics(run) -> set:
    """The metrics of /sweep/pairs."""
    pairs = run.tables.get("sweep/pairs")
    return set() if pairs is None or "metric" not in pairs else {_text(m) for m in pairs["metric"]}


def verdict_hosts(run, rail=None, metric=None) -> set:
    """The hosts a verdict names (host_a, host_b); with `rail` and `metric` as _verdict_rows."""
    return {h for v in _verdict_rows(run, rail, metric) for h in (_text(v.get("host_a")), _text(v.get("host_b"))) if h}


def verdict_switches(run, rail=None, metric=None) -> set:
    """The leaf switches a verdict names (`switch`, twins split); with `rail` and `metric` as verdict_hosts."""
    return {s for v in _verdict_rows(run, rail, metric) for s in switches_of(v.get("switch"))}


def untested_rows(run) -> list:
    """The verdicts of kind untested as dicts: one per host no pair test reached, or where every host was, one
    without a host for the pairs (or hosts) the plan left untested."""
    verdicts = run.tables.get("sweep/verdicts")
    if verdicts is None or verdicts.empty or "kind" not in verdicts:
        return []
    return verdicts[verdicts["kind"] == UNTESTED].to_dict(orient="records")


def untested_hosts(run) -> list:
    """The hosts no pair test reached, in the table's order: not measured, so drawn as not tested rather than as
    bad."""
    return list(dict.fromkeys(_text(v.get("host_a")) for v in untested_rows(run) if _text(v.get("host_a"))))


def describe(verdict) -> str:
    """Where a verdict points, in words: 'uplink of leaf2 on rail 1', 'NIC mlx5_1 (rail 1) of node7', 'leaf switch
    leaf3 on rail 0', 'path of rail 1 of node3 to node4 (NIC mlx5_0)', 'node node3', 'link node1-node2 on rail 0'."""
    v = dict(verdict)
    kind, a, b = _text(v.get("kind")), _text(v.get("host_a")), _text(v.get("host_b"))
    rail, nic, switches = _int(v.get("rail", -1)), _text(v.get("nic")), switches_of(v.get("switch"))
    on_rail = f" on rail {rail}" if rail >= 0 else ""
    if kind == "nic":
        where = f"NIC {nic} (rail {rail})" if nic and rail >= 0 else f"NIC {nic}" if nic else f"the NIC of rail {rail}"
        return f"{where} of {a}" if a else where
    if kind == "switch":
        return f"leaf switch {' or '.join(switches) or '?'}{on_rail}"
    if kind == "uplink":
        twins = " (the two cannot be told apart)" if len(switches) > 1 else ""
        return f"uplink of {' or '.join(switches) or '?'}{on_rail}{twins}"
    if kind == "path":
        ends = f"{a} to {b}" if a and b else a or b
        return (f"path of rail {rail}" if rail >= 0 else "path") + (f" of {ends}" if ends else "") \
            + (f" (NIC {nic})" if nic else "")
    if kind == "node":
        return f"node {a}{on_rail}"
    if kind in ("link", "pair", "hung"):
        return f"{kind} {a}-{b}{on_rail}" if b else f"{kind} {a}{on_rail}"
    return " ".join(x for x in (kind, a, b) if x) + on_rail


def rail_verdicts(run) -> list:
    """The verdicts of the kinds that point at one rail's hardware (nic, switch, uplink, path), as dicts."""
    return [v for v in _verdict_rows(run) if _text(v.get("kind")) in RAIL_KINDS]


def verdicts_with_where(frame):
    """The verdicts table with a leading `where` column (describe) when it has the rails' columns; else as it is."""
    if frame is None or frame.empty or not {"rail", "switch"} & set(frame.columns):
        return frame
    where = [describe(v) for v in frame.to_dict(orient="records")]
    return frame.assign(where=where)[["where"] + list(frame.columns)]


def nic_table(run):
    """Per NIC: /sweep/nodes when it has more than one rail (host, rail, nic, metric, median, unit, pairs,
    suspect_pairs), the rows with suspect pairs first (most first), the others in the file's order; None otherwise."""
    nodes = run.tables.get("sweep/nodes")
    if nodes is None or nodes.empty or "rail" not in nodes or nodes["rail"].nunique() < 2:
        return None
    columns = [c for c in ("host", "rail", "nic", "metric", "median", "unit", "pairs", "suspect_pairs") if c in nodes]
    frame = nodes[columns]
    if "suspect_pairs" in frame:
        frame = frame.assign(_s=-frame["suspect_pairs"].clip(lower=0)).sort_values("_s", kind="stable").drop(columns="_s")
    return frame.reset_index(drop=True)


def nic_suspect(frame) -> list:
    """Per row of nic_table: whether the NIC has suspect pairs."""
    return [bool(x > 0) for x in frame["suspect_pairs"]] if "suspect_pairs" in frame else [False] * len(frame)


def switch_table(run):
    """/sweep/switches (one row per leaf, rail and metric), the leaves with suspect pairs inside or crossing first;
    None when the sweep was given no topology."""
    frame = run.tables.get("sweep/switches")
    if frame is None:
        return None
    suspect = pd.Series(switch_suspect(frame), index=frame.index)
    return frame.assign(_s=~suspect).sort_values("_s", kind="stable").drop(columns="_s").reset_index(drop=True)


def switch_suspect(frame) -> list:
    """Per row of /sweep/switches: whether pairs inside the leaf or crossing it are suspect."""
    total = pd.Series(0, index=frame.index)
    for column in ("inside_suspect", "crossing_suspect"):
        if column in frame:
            total = total + frame[column].fillna(0)
    return [bool(x > 0) for x in total]


def coverage_text(run) -> str:
    """'the sweep crossed 75% of the leaf pairs x rails' from the root attribute leaf_pair_coverage; '' without."""
    value = run.attrs.get("leaf_pair_coverage")
    try:
        value = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if pd.isna(value) else f"the sweep crossed {value:.0%} of the leaf pairs x rails"
