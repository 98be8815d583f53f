"""Two runs side by side, and baselines with pass/fail. Both work from the columns' declarations (role key,
measured; better higher or lower), never from per-table code.

Baseline format (INI; written by `fabric-report baseline`, read by `fabric-report check` and by the C++ tools'
`--baseline`):

    [baseline]
    tolerance = 10%                 # default for every entry below
    [results/coll 1]                # "<table> <anything>": one entry; the table comes first
    op = all_reduce                 # key columns: the rows this entry applies to (keys left out match any value)
    bytes = 1073741824
    busbw_gbps = 329.8              # measured columns: the expected values
    tolerance = 5%                  # optional: this entry's own tolerance

A value fails when it is worse than expected by more than the tolerance: below expected x (1 - tolerance) where
higher is better, above expected x (1 + tolerance) where lower is better. Comments are whole lines (# or ;).
"""
from __future__ import annotations

import configparser
import dataclasses
import math

import pandas as pd

from ..read.printable import printable
from ..read.results import HEALTH_COLUMNS

# Measured columns that describe the run's health rather than its speed: not compared by ratio or baselined.
_NOT_FIGURES = HEALTH_COLUMNS
_COMPARED_TABLES = ("results/", "sweep/nodes", "sweep/pairs")


def figures(run, table: str) -> list:
    """The measured columns of `table` that are speeds or times (what compare and baselines look at): those with a
    better direction, and in tables with a per-row `unit` column (the sweep's) the value of each row."""
    columns = run.columns.get(table, {})
    per_row = "unit" in columns
    return [c.name for c in columns.values() if c.role == "measured" and c.name not in _NOT_FIGURES
            and (c.better in ("higher", "lower") or per_row)]


def better(run, table: str, column: str, row) -> str:
    """The column's better direction; where it has none, the row's unit decides (times are lower-better)."""
    declared = run.columns[table][column].better
    if declared:
        return declared
    return "lower" if str(row.get("unit", "")) in ("us", "s", "ms") else "higher"


def compared_tables(run) -> list:
    return [t for t in run.tables if t.startswith(_COMPARED_TABLES) and run.keys(t) and figures(run, t)]


def ratio(a: float, b: float) -> float:
    """b / a, 1 where both are equal (0 and 0 included), NaN where either is missing."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return math.nan
    if a == b:
        return 1.0
    return b / a if a != 0 else math.nan


def worse(better: str, r: float, threshold: float) -> bool:
    if math.isnan(r):
        return False
    return r < 1 - threshold if better == "higher" else r > 1 + threshold


@dataclasses.dataclass
class Comparison:
    tables: dict            # table -> DataFrame: keys, then <col>_a, <col>_b, <col>_ratio, <col>_regressed per figure
    regressions: list       # one line per regressed value
    env_changes: list       # one line per difference in /env (versions, variables, hosts)


def _unique_keys(frame: pd.DataFrame, keys: list) -> pd.DataFrame:
    # Repeated keys (a sweep's re-tests) keep their last row, as the last word on that pair.
    return frame.drop_duplicates(subset=keys, keep="last")


def compare(a, b, threshold: float = 0.05) -> Comparison:
    out = Comparison({}, [], [])
    for table in compared_tables(a):
        if table not in b.tables:
            continue
        keys = [k for k in a.keys(table) if k in b.tables[table].columns]
        cols = [c for c in figures(a, table) if c in b.tables[table].columns]
        joined = _unique_keys(a.tables[table], keys)[keys + cols].merge(
            _unique_keys(b.tables[table], keys)[keys + cols], on=keys, suffixes=("_a", "_b"))
        for col in cols:
            directions = [better(a, table, col, row) for _, row in joined.iterrows()]
            joined[f"{col}_ratio"] = [ratio(x, y) for x, y in zip(joined[f"{col}_a"], joined[f"{col}_b"])]
            joined[f"{col}_regressed"] = [worse(d, r, threshold) for d, r in zip(directions, joined[f"{col}_ratio"])]
            for (_, row), direction in zip(joined.iterrows(), directions):
                if not row[f"{col}_regressed"]:
                    continue
                where = ", ".join(f"{k}={row[k]}" for k in keys)
                out.regressions.append(f"{table} [{where}] {col}: {row[f'{col}_a']:.4g} -> {row[f'{col}_b']:.4g} "
                                       f"(x{row[f'{col}_ratio']:.3f}, {direction} is better)")
        out.tables[table] = joined
    out.env_changes = env_changes(a, b)
    return out


# Variables mpirun sets afresh for every launch (job ids, URIs, session folders, the command line): a difference
# there says nothing about the runs.
_PER_LAUNCH = ("OMPI_ARGV", "OMPI_FILE_LOCATION", "OMPI_COMMAND", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_ess_base_vpid",
               "OMPI_MCA_orte_", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_COMM_WORLD_", "OMPI_UNIVERSE_SIZE",
               "OMPI_APP_CTX_", "OMPI_FIRST_RANKS", "OMPI_NUM_APP_CTX", "OMPI_MCA_ess", "OMPI_MCA_shmem_RUNTIME_QUERY",
               "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_START_TIME", "SLURM_JOB_END_TIME")


def env_changes(a, b) -> list:
    """What differs between the two runs' environments: hosts, per-host facts and versions, variables (less those
    mpirun sets for each launch)."""
    lines = []
    if a.attrs.get("hosts") != b.attrs.get("hosts"):
        lines.append(f"hosts: {a.attrs.get('hosts')} -> {b.attrs.get('hosts')}")
    ha, hb = a.tables.get("env/hosts"), b.tables.get("env/hosts")
    if ha is not None and hb is not None:
        for host in sorted(set(ha.host) & set(hb.host)):
            ra, rb = ha[ha.host == host].iloc[0], hb[hb.host == host].iloc[0]
            for col in ha.columns:
                if col != "host" and col in hb.columns and str(ra[col]) != str(rb[col]):
                    lines.append(f"{host} {col}: {ra[col]} -> {rb[col]}")
    va, vb = a.tables.get("env/variables"), b.tables.get("env/variables")
    if va is not None and vb is not None:
        da = {(r.host, r.name): r.value for r in va.itertuples()}
        db = {(r.host, r.name): r.value for r in vb.itertuples()}
        for key in sorted(set(da) | set(db)):
            if key[1].startswith(_PER_LAUNCH):
                continue
            if da.get(key) != db.get(key):
                lines.append(f"{key[0]} {key[1]}: {da.get(key, '(unset)')} -> {db.get(key, '(unset)')}")
    return lines


def parse_fraction(text: str, where: str) -> float:
    """"5%" or "0.05" -> 0.05; ValueError naming `where` otherwise or outside [0, 1)."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"{where} = '{text}': a fraction (0.1) or a percentage (10%)") from None
    if not 0 <= value < 1:
        raise ValueError(f"{where} = '{text}': allowed values are 0% to 99%")
    return value


def write_baseline(run, path, tolerance: str = "10%") -> int:
    """One entry per row of every results table (and the sweep's per-node medians); returns the entry count."""
    parse_fraction(tolerance, "--tolerance")
    # The run's text through printable() (issue 48): a line feed in a host name would end the comment and start a line
    # the parser reads (a forged key, or no section header: no baseline at all); a key value is one line the same way
    # (_matches reads it back).
    a = {k: printable(run.attrs.get(k, "")) for k in ("tool", "hosts", "started_at")}
    lines = [f"# fabricbench baseline from {printable(run.path.name)}: {a['tool']} on {a['hosts']},",
             f"# {a['started_at']}. Written by fabric-report baseline; format: docs/analysis.md.",
             "[baseline]", f"tolerance = {tolerance}", ""]
    count = 0
    nodes = run.tables.get("sweep/nodes")
    if nodes is not None and not nodes.empty:
        # What fabric-sweep --baseline reads: per bandwidth metric, the median node's median pair, which every pair
        # should reach within half (configs/sweep.ini's suspect_below_fraction_of_median for bandwidth).
        for metric, rows in nodes.groupby("metric", sort=False):
            if str(rows.unit.iloc[0]) in ("us", "s", "ms"):
                continue
            lines += [f"[sweep/pairs {metric}]", f"metric = {metric}", f"value = {rows['median'].median():.6g}",
                      "tolerance = 50%", ""]
            count += 1
    for table in compared_tables(run):
        if table == "sweep/pairs":
            continue  # pairs change with the schedule: the per-metric entries above and the per-node medians
        keys, cols = run.keys(table), figures(run, table)
        for i, row in enumerate(_unique_keys(run.tables[table], keys).itertuples(index=False), 1):
            values = [(c, getattr(row, c)) for c in cols if not pd.isna(getattr(row, c))]
            if not values:
                continue
            lines.append(f"[{table} {i}]")
            lines += [f"{k} = {printable(getattr(row, k))}" for k in keys]
            lines += [f"{c} = {v:.6g}" for c, v in values]
            lines.append("")
            count += 1
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return count


@dataclasses.dataclass
class Entry:
    table: str
    name: str
    keys: dict
    expected: dict
    tolerance: float


def read_baseline(path, run=None) -> list:
    """The entries of a baseline file; with `run`, names are checked against its columns. ValueError on bad input."""
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"), inline_comment_prefixes=None)
    parser.optionxform = str
    with open(path) as f:
        parser.read_file(f)
    if not parser.has_section("baseline"):
        raise ValueError(f"{path}: no [baseline] section")
    default = parse_fraction(parser.get("baseline", "tolerance", fallback="10%"), f"{path}: [baseline] tolerance")
    entries = []
    for section in parser.sections():
        if section == "baseline":
            continue
        table = section.split(" ", 1)[0]
        values = dict(parser.items(section))
        tolerance = default
        if "tolerance" in values:
            tolerance = parse_fraction(values.pop("tolerance"), f"{path}: [{section}] tolerance")
        keys, expected = {}, {}
        declared = run.columns.get(table) if run is not None else None
        for name, text in values.items():
            column = declared.get(name) if declared else None
            if declared is not None and column is None:
                raise ValueError(f"{path}: [{section}] {name}: table {table} has no such column")
            if column is not None and column.role == "key":
                keys[name] = text
            else:
                try:
                    expected[name] = float(text)
                except ValueError:
                    if column is None:
                        keys[name] = text
                    else:
                        raise ValueError(f"{path}: [{section}] {name} = '{text}': not a number") from None
        entries.append(Entry(table, section, keys, expected, tolerance))
    return entries


def _matches(row, keys: dict) -> bool:
    for name, text in keys.items():
        value = row[name]
        if isinstance(value, str):
            if value != text and printable(value) != text:  # as write_baseline wrote it, or as a user typed it
                return False
        else:
            try:
                if float(value) != float(text):
                    return False
            except ValueError:
                return False
    return True


def check(run, path) -> tuple:
    """(failures, checked): one line per value worse than its baseline, and how many values were checked."""
    failures, checked = [], 0
    for entry in read_baseline(path, run):
        frame = run.tables.get(entry.table)
        if frame is None:
            failures.append(f"[{entry.name}]: the run has no table {entry.table}")
            continue
        rows = [r for _, r in frame.iterrows() if _matches(r, entry.keys)]
        if not rows:
            failures.append(f"[{entry.name}]: no row of {entry.table} with "
                            + ", ".join(f"{k}={v}" for k, v in entry.keys.items()))
            continue
        for col, expected in entry.expected.items():
            for row in rows:
                direction = better(run, entry.table, col, row)
                checked += 1
                value = float(row[col])
                bound = expected * (1 - entry.tolerance) if direction == "higher" else expected * (1 + entry.tolerance)
                bad = math.isnan(value) or (value < bound if direction == "higher" else value > bound)
                if bad:
                    failures.append(f"[{entry.name}] {col}: {value:.4g} against {expected:.4g} "
                                    f"({direction} is better, tolerance {entry.tolerance:.0%})")
    return failures, checked
