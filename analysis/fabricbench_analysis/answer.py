"""What an operator opens a report to learn: is anything wrong with this run, and where. The HTML page and the Excel
summary sheet lead with it: the run's status when it did not complete, the sweep's verdicts (or that every host
passes), the failed and warned checks, the rows below their expected share (configs/expected.ini's rule), rows with
wrong data, and, given a reference run, the regressions against it. A sweep with rails or a topology names where
each verdict about one rail points (the NIC of a host, a leaf switch, a leaf's uplink, a path: rails.describe), and
brings its per-NIC and per-switch tables."""
from __future__ import annotations

import configparser
import dataclasses
import pathlib

import pandas as pd

from . import rails

# configs/expected.ini's defaults; the shipped file is read where it lies beside the package (source tree or prefix).
WARN_BELOW_PERCENT = 80.0
MIN_BYTES = 1 << 20


def expected_rule() -> tuple:
    """(warn_below_percent, min_bytes) from configs/expected.ini beside the package, else the defaults."""
    for folder in (pathlib.Path(__file__).resolve().parents[2] / "configs",):
        path = folder / "expected.ini"
        if not path.is_file():
            continue
        parser = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
        try:
            parser.read(path)
            percent = parser.getfloat("expected", "warn_below_percent", fallback=WARN_BELOW_PERCENT)
            text = parser.get("expected", "min_bytes", fallback=str(MIN_BYTES)).strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            return percent, int(float(text.rstrip("KMG")) * scale)
        except (configparser.Error, ValueError):
            break
    return WARN_BELOW_PERCENT, MIN_BYTES


@dataclasses.dataclass
class Answer:
    status: str                     # "" when the run completed, else its status
    hosts: list
    verdicts: pd.DataFrame | None   # None: the run has no sweep verdicts table
    checks: pd.DataFrame            # the failed and warned findings, failures first
    check_counts: dict              # status -> findings
    below_expected: pd.DataFrame    # table, where, figure, value, expected, pct_expected
    wrong: pd.DataFrame             # table, where, wrong
    regressions: list
    rule: tuple
    nics: pd.DataFrame | None = None      # per NIC (rails.nic_table): a sweep with more than one rail
    switches: pd.DataFrame | None = None  # per leaf switch (rails.switch_table): a sweep given a topology
    coverage: str = ""                    # rails.coverage_text
    changes: list = dataclasses.field(default_factory=list)  # a mesh (fabric-sweep --repeat): /sweep/changes' lines
    passes: int = 0                                          # a mesh: the passes done

    # The rail verdicts (nic, switch, uplink, path) named one a line; beyond this many, one line says how many more.
    MAX_WHERE_LINES = 8

    @property
    def nothing_wrong(self) -> bool:
        return (not self.status and (self.verdicts is None or self.verdicts.empty) and self.checks.empty
                and not self.changes
                and self.below_expected.empty and self.wrong.empty and not self.regressions)

    def where_lines(self) -> list:
        """One line per verdict about one rail's hardware: 'p2p_bw: uplink of leaf2 on rail 1', 'p2p_bw: NIC mlx5_1
        (rail 1) of node7'."""
        if self.verdicts is None or self.verdicts.empty or "kind" not in self.verdicts:
            return []
        rows = [v for v in self.verdicts.to_dict(orient="records") if str(v.get("kind", "")) in rails.RAIL_KINDS]
        out = [f"{v.get('metric', '')}: {rails.describe(v)}".lstrip(": ") for v in rows[:self.MAX_WHERE_LINES]]
        if len(rows) > self.MAX_WHERE_LINES:
            out.append(f"... and {len(rows) - self.MAX_WHERE_LINES} more verdict(s) about one rail (the table below).")
        return out

    def lines(self) -> list:
        """The answer in a few sentences, the worst first."""
        out = []
        if self.status:
            out.append(f"The run did not complete: {self.status}")
        if self.verdicts is not None:
            if self.verdicts.empty:
                out.append(f"All {len(self.hosts)} hosts pass: no verdict.")
            else:
                named = sorted({h for h in list(self.verdicts.host_a) + list(self.verdicts.host_b) if h})
                if "switch" in self.verdicts:
                    named += list(dict.fromkeys(s for v in self.verdicts["switch"] for s in rails.switches_of(v)))
                out.append(f"{len(self.verdicts)} verdict(s)" + (f", naming {', '.join(named)}." if named else "."))
                out += self.where_lines()
            if self.passes:
                out[-1] = out[-1].rstrip(".") + f" in the last of {self.passes} passes."
        if self.changes:
            out.append(f"{len(self.changes)} change(s) over the passes, each named with the pass where it happened:")
            out += self.changes[:self.MAX_WHERE_LINES]
            if len(self.changes) > self.MAX_WHERE_LINES:
                out.append(f"... and {len(self.changes) - self.MAX_WHERE_LINES} more (/sweep/changes).")
        fails, warns = self.check_counts.get("fail", 0), self.check_counts.get("warn", 0)
        if fails or warns:
            out.append(f"{fails} failed and {warns} warned check(s).")
        if not self.below_expected.empty:
            out.append(f"{len(self.below_expected)} row(s) below {self.rule[0]:g}% of the expected bandwidth.")
        if not self.wrong.empty:
            out.append(f"{len(self.wrong)} row(s) with wrong data.")
        if self.regressions:
            out.append(f"{len(self.regressions)} regression(s) against the reference run.")
        if self.nothing_wrong:
            out.append(f"Nothing wrong: no verdict, no failed or warned check, no row below {self.rule[0]:g}% of "
                       "expected, no wrong data.")
        return out


def size_text(n: int) -> str:
    """1048576 -> '1 MiB', 1000 -> '1000 B'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _where(run, table: str, row) -> str:
    parts = []
    for key in run.keys(table):
        value = row[key]
        if key == "bytes":
            parts.append(size_text(int(value)))
        elif isinstance(value, str):
            if value:
                parts.append(value)
        elif value != -1:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def _below_expected(run, rule) -> pd.DataFrame:
    """Rows whose % of expected is below the rule: per results table at its largest size per series value (when that
    size is at least min_bytes); every sweep pair from min_bytes up (the tools' own reading)."""
    percent, min_bytes = rule
    rows = []
    for table, frame in run.tables.items():
        if "pct_expected" not in frame.columns or frame.empty or not table.startswith(("results/", "sweep/pairs")):
            continue
        judged = frame[frame.pct_expected.notna()]
        size = run.size_key(table)
        if size:
            judged = judged[judged[size] >= min_bytes]
            if table.startswith("results/") and not judged.empty:
                series = run.series(table)
                groups = judged.groupby(series, sort=False) if series else [("", judged)]
                judged = pd.concat([g[g[size] == g[size].max()] for _, g in groups])
        for _, row in judged[judged.pct_expected < percent].iterrows():
            figure = run.headlines(table)[0] if run.headlines(table) else "value"
            figure = next((h for h in run.headlines(table) if pd.notna(row.get(h))), figure)
            rows.append({"table": table, "where": _where(run, table, row), "figure": figure,
                         "value": row.get(figure), "expected_gbps": row.get("expected_gbps"),
                         "pct_expected": row.pct_expected})
    return pd.DataFrame(rows, columns=["table", "where", "figure", "value", "expected_gbps", "pct_expected"])


def _wrong(run) -> pd.DataFrame:
    rows = []
    for table, frame in run.tables.items():
        if "wrong" in frame.columns and table.startswith(("results/", "sweep/pairs")):
            for _, row in frame[frame.wrong > 0].iterrows():
                rows.append({"table": table, "where": _where(run, table, row), "wrong": row.wrong})
    return pd.DataFrame(rows, columns=["table", "where", "wrong"])


def checks_table(run):
    """fabric-doctor's findings, else the cheap checks every tool stores; None where the run has neither."""
    for name in ("doctor/findings", "env/checks"):
        if name in run.tables:
            return name, run.tables[name]
    return None, None


def answer(run, regressions=()) -> Answer:
    _, checks = checks_table(run)
    counts, bad = {}, pd.DataFrame()
    if checks is not None and "status" in checks:
        counts = checks.status.value_counts().to_dict()
        bad = checks[checks.status.isin(["fail", "warn"])]
        bad = bad.loc[bad.status.map({"fail": 0, "warn": 1}).sort_values(kind="stable").index]
    rule = expected_rule()
    status = str(run.attrs.get("status", ""))
    return Answer("" if status == "complete" else status,
                  [h for h in str(run.attrs.get("hosts", "")).split(",") if h],
                  rails.verdicts_with_where(run.tables.get("sweep/verdicts")), bad, counts, _below_expected(run, rule),
                  _wrong(run), list(regressions), rule, rails.nic_table(run), rails.switch_table(run),
                  rails.coverage_text(run), _changes(run), int(run.attrs.get("passes", 0) or 0))


def _changes(run) -> list:
    frame = run.tables.get("sweep/changes")
    return [] if frame is None or frame.empty else [str(t) for t in frame["text"]]
