"""What an operator opens a report to learn: is anything wrong with this run, and where. The HTML page and the Excel
summary sheet lead with it: that a sweep which did not test every host it planned is not a pass (coverage.py), the
run's status when it did not complete, the sweep's verdicts (or that every host passes), a mesh's changes (a recovery
styled as good news), the failed and warned checks, the rows below their expected share (configs/expected.ini's rule,
by what the figure is: a line rate or a healthy system's curve; where it is uncalibrated, that it was not judged), rows
with wrong data, and, given a reference run, the regressions against it. A sweep with rails or a topology names
where each verdict about one rail points (the NIC of a host, a leaf switch, a leaf's uplink, a path: rails.describe),
and brings its per-NIC and per-switch tables."""
from __future__ import annotations

import dataclasses

import pandas as pd

from . import rails
from .coverage import coverage_gap

# configs/expected.ini's defaults; the shipped file is read where it lies beside the package (source tree or prefix).
WARN_BELOW_PERCENT = 80.0
CALIBRATED_WARN_BELOW_PERCENT = 70.0
MIN_BYTES = 1 << 20

# What a row's expected_gbps is (its expected_from column), in the answer's words. "": a file written before the
# column, whose rows are judged as rated ones and named as they were. Uncalibrated rows are never judged.
REFERENCES = {"rated": "the line rate", "calibrated": "a healthy system's curve",
              "network": "a healthy fabric's busbw per NIC", "": "the expected bandwidth"}
UNCALIBRATED = "uncalibrated"
# Rows across nodes whose busbw is above what the nodes' NICs carry (fabric-report import, docs/expected.md): not
# judged against the network, and named as what they are.
NOT_NETWORK = "not_network"
# A healthy ring across nodes reaches its per-NIC figure only with large messages: `network` rows are judged from here.
NETWORK_MIN_BYTES = 1 << 30


@dataclasses.dataclass(frozen=True)
class ExpectedRule:
    """configs/expected.ini's [expected]: below which share of its reference a judged row is named, per kind of
    reference, and the smallest size judged."""
    warn_below_percent: float = WARN_BELOW_PERCENT  # rated: a line rate, which only large messages reach
    min_bytes: int = MIN_BYTES
    calibrated_warn_below_percent: float = CALIBRATED_WARN_BELOW_PERCENT  # calibrated: a healthy curve, at its size

    def threshold(self, kind: str) -> float:
        """The share below which a judged row of `kind` is named (an uncalibrated one is never judged)."""
        return self.calibrated_warn_below_percent if kind == "calibrated" else self.warn_below_percent


def expected_rule(run=None) -> ExpectedRule:
    """The rule the run was judged with, as the tool recorded it in the file's attributes (expected_warn_below_percent,
    expected_calibrated_warn_below_percent, expected_min_bytes: the tool's --expected-rule or the shipped
    configs/expected.ini, read and checked once, by the tool); a file without them (written before they were
    recorded, or made by hand) gets configs/expected.ini's defaults."""
    attrs = getattr(run, "attrs", {}) if run is not None else {}
    try:
        return ExpectedRule(float(attrs.get("expected_warn_below_percent", WARN_BELOW_PERCENT)),
                            int(attrs.get("expected_min_bytes", MIN_BYTES)),
                            float(attrs.get("expected_calibrated_warn_below_percent", CALIBRATED_WARN_BELOW_PERCENT)))
    except (TypeError, ValueError):
        return ExpectedRule()


@dataclasses.dataclass
class Answer:
    status: str                     # "" when the run completed, else its status
    hosts: list
    verdicts: pd.DataFrame | None   # None: the run has no sweep verdicts table
    checks: pd.DataFrame            # the failed and warned findings, failures first
    check_counts: dict              # status -> findings
    below_expected: pd.DataFrame    # table, where, figure, value, expected, pct_expected, expected_from
    wrong: pd.DataFrame             # table, where, wrong
    regressions: list
    rule: ExpectedRule
    nics: pd.DataFrame | None = None      # per NIC (rails.nic_table): a sweep with more than one rail
    switches: pd.DataFrame | None = None  # per leaf switch (rails.switch_table): a sweep given a topology
    coverage: str = ""                    # rails.coverage_text
    changes: list = dataclasses.field(default_factory=list)  # a mesh (fabric-sweep --repeat): /sweep/changes' lines
    passes: int = 0                                          # a mesh: the passes done
    recovered: set = dataclasses.field(default_factory=set)  # the lines of `changes` that say a verdict went
    gap: str = ""                                            # coverage_gap: why the sweep is no pass whatever it found
    judged: dict = dataclasses.field(default_factory=dict)   # expected_from -> rows the rule judged
    uncalibrated: int = 0                                    # rows with a % of expected that is never judged
    not_network: int = 0                                     # rows above what the NICs carry (NOT_NETWORK)
    notes: list = dataclasses.field(default_factory=list)    # the file's `notes` attribute, line by line

    # The rail verdicts (nic, switch, uplink, path) named one a line; beyond this many, one line says how many more.
    MAX_WHERE_LINES = 8

    @property
    def nothing_wrong(self) -> bool:
        return (not self.status and not self.gap and (self.verdicts is None or self.verdicts.empty)
                and self.checks.empty and not self.changes and not self.not_network
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

    def _split_verdicts(self) -> tuple:
        """(the verdicts about something measured, the hosts no pair test reached: the rows of kind untested)."""
        if "kind" not in self.verdicts:
            return self.verdicts, []
        untested = self.verdicts["kind"] == rails.UNTESTED
        return self.verdicts[~untested], [h for h in self.verdicts.host_a[untested] if h]

    def _verdict_lines(self) -> list:
        found, untested = self._split_verdicts()
        out = [f"Not tested: {_names(untested)} (no pair test reached them)."] if untested else []
        if found.empty and self.gap:
            out.append("No verdict about the hosts tested.")  # the others may be as bad: no "all pass"
        elif found.empty:
            out.append(f"All {len(self.hosts)} hosts pass: no verdict.")
        else:
            named = sorted({h for h in list(found.host_a) + list(found.host_b) if h})
            if "switch" in found:
                named += list(dict.fromkeys(s for v in found["switch"] for s in rails.switches_of(v)))
            out.append(f"{len(found)} verdict(s)" + (f", naming {', '.join(named)}." if named else "."))
            out += self.where_lines()
        if self.passes:
            out[-1] = out[-1].rstrip(".") + f" in the last of {self.passes} passes."
        return out

    def lines(self) -> list:
        """The answer in a few sentences, the worst first."""
        return [text for _, text in self.styled_lines()]

    def styled_lines(self) -> list:
        """(style, line) per line of the answer: 'ok' where nothing is wrong or for a verdict that went (a recovery
        is good news, not a fault), else 'fail'."""
        out = []
        if self.gap:
            out.append(f"Not a pass: {self.gap}")
        if self.status:
            out.append(f"The run did not complete: {self.status}")
        if self.verdicts is not None:
            out += self._verdict_lines()
        if self.changes:
            out.append(f"{len(self.changes)} change(s) over the passes, each named with the pass where it happened:")
            out += self.changes[:self.MAX_WHERE_LINES]
            if len(self.changes) > self.MAX_WHERE_LINES:
                out.append(f"... and {len(self.changes) - self.MAX_WHERE_LINES} more (/sweep/changes).")
        fails, warns = self.check_counts.get("fail", 0), self.check_counts.get("warn", 0)
        if fails or warns:
            out.append(f"{fails} failed and {warns} warned check(s).")
        out += self._below_lines()
        if self.not_network:
            note = next((n for n in self.notes if "NICs carry (" in n), "")
            why = note.split("NICs carry (", 1)[1].rsplit(")", 1)[0] if note else ""
            out.append(f"{self.not_network} row(s) not a network measurement (busbw above what the NICs carry)"
                       + (f": {why}." if why else "."))
        if not self.wrong.empty:
            out.append(f"{len(self.wrong)} row(s) with wrong data.")
        if self.regressions:
            out.append(f"{len(self.regressions)} regression(s) against the reference run.")
        if self.nothing_wrong:
            out.append(f"Nothing wrong: no verdict, no failed or warned check, {self._bandwidth_words()}no wrong data.")
        note = self.uncalibrated_line()
        out += [note] if note else []
        good = {note} | self.recovered  # the note is no fault: it says what was not judged
        return [("ok" if self.nothing_wrong or line in good else "fail", line) for line in out]

    def _below_lines(self) -> list:
        """'3 row(s) below 70% of a healthy system's curve.': one line per kind of reference with rows below it."""
        counts = self.below_expected.expected_from.value_counts()
        return [f"{counts[kind]} row(s) below {self.rule.threshold(kind):g}% of {words}."
                for kind, words in REFERENCES.items() if kind in counts]

    def below_title(self) -> str:
        """The heading of the rows below expected: 'Below 80% of the line rate or 70% of a healthy system's curve'."""
        kinds = set(self.below_expected.expected_from)
        return "Below " + " or ".join(f"{self.rule.threshold(kind):g}% of {words}"
                                      for kind, words in REFERENCES.items() if kind in kinds)

    def _bandwidth_words(self) -> str:
        """What the good news says of bandwidth: within expected where rows of a file that says what its references
        are were judged; nothing where every figure is uncalibrated (its own line says so); not judged where no row
        was (a CPU run: no expected figure; issue 46: it said 'no row below 80%'); else as it always did."""
        if any(kind and count for kind, count in self.judged.items()):
            return "bandwidth within expected, "
        if self.uncalibrated and not any(self.judged.values()):
            return ""
        if not any(self.judged.values()):
            return f"bandwidth not judged (no row of {size_text(self.rule.min_bytes)} or more has an expected figure), "
        return f"no row below {self.rule.warn_below_percent:g}% of expected, "

    def uncalibrated_line(self) -> str:
        """That % of expected was shown and not judged (no healthy curve for a GPU link), '' where nothing was."""
        if not self.uncalibrated:
            return ""
        rows = f" for {self.uncalibrated} row(s)" if any(self.judged.values()) else " here"
        return f"% of expected is uncalibrated{rows} (no healthy curve for this setup): shown, not judged."


def _names(names: list, most: int = 16) -> str:
    """'a, b, c', or the first `most` and how many more (a budget spent at 1024 hosts leaves hundreds)."""
    more = f", ... and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


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


def _kinds(frame: pd.DataFrame) -> pd.Series:
    """Each row's expected_from: '' for a file written before the column; a value the tools never write is rated (as
    theirs: what is neither calibrated nor uncalibrated is a line rate)."""
    if "expected_from" not in frame:
        return pd.Series("", index=frame.index, dtype=object)
    kinds = frame["expected_from"].fillna("").astype(str).str.strip()
    return kinds.where(kinds.isin(["calibrated", "network", NOT_NETWORK, UNCALIBRATED, ""]), "rated")


def _bandwidth_tables(run):
    """(table, its rows with a % of expected) per results table and sweep pairs, each row's kind of reference in
    `_ref` (sweep pairs have a `kind` of their own)."""
    for table, frame in run.tables.items():
        if "pct_expected" not in frame.columns or frame.empty or not table.startswith(("results/", "sweep/pairs")):
            continue
        rows = frame.assign(_ref=_kinds(frame))
        yield table, rows[rows.pct_expected.notna()]


def _judged(run, table: str, rows: pd.DataFrame, rule: ExpectedRule) -> pd.DataFrame:
    """The rows the rule judges: from min_bytes up, a calibrated one at every size (a healthy curve holds at each);
    a rated one (or one of an older file) in a results table at its largest size per series value (a line rate is
    what large messages reach), every sweep pair (the tools' own reading); an uncalibrated one never."""
    rows = rows[~rows["_ref"].isin([UNCALIBRATED, NOT_NETWORK])]
    size = run.size_key(table)
    if not size:
        return rows
    rows = rows[(rows[size] >= rule.min_bytes) & ((rows["_ref"] != "network") | (rows[size] >= NETWORK_MIN_BYTES))]
    if table.startswith("results/") and not rows.empty:
        rated = rows["_ref"] != "calibrated"
        # The largest size per series value (a table without a series column: one group).
        largest = rows[rated].groupby(run.series(table) or (lambda _: 0), sort=False)[size].transform("max")
        rows = rows[~rated | (rows[size] == largest.reindex(rows.index))]
    return rows


def _below_expected(run, rule: ExpectedRule) -> pd.DataFrame:
    """The judged rows (_judged) whose % of expected is below the rule's threshold for their kind."""
    out = []
    for table, rows in _bandwidth_tables(run):
        judged = _judged(run, table, rows, rule)
        for _, row in judged[judged.pct_expected < judged["_ref"].map(rule.threshold)].iterrows():
            figure = run.headlines(table)[0] if run.headlines(table) else "value"
            figure = next((h for h in run.headlines(table) if pd.notna(row.get(h))), figure)
            out.append({"table": table, "where": _where(run, table, row), "figure": figure,
                        "value": row.get(figure), "expected_gbps": row.get("expected_gbps"),
                        "pct_expected": row.pct_expected, "expected_from": row["_ref"], "path": row.get("path", "")})
    frame = pd.DataFrame(out, columns=["table", "where", "figure", "value", "expected_gbps", "pct_expected",
                                       "expected_from", "path"])
    # The path NCCL took, where the rows name it (an imported run with NCCL's INFO lines): a row below says how it went.
    return frame if (frame.path.fillna("") != "").any() else frame.drop(columns="path")


def _expected_counts(run, rule: ExpectedRule) -> tuple:
    """({expected_from: rows judged}, rows with an uncalibrated % of expected, rows not a network measurement): what
    the answer may say of the rows that are not below."""
    judged, uncalibrated, not_network = {}, 0, 0
    for table, rows in _bandwidth_tables(run):
        for kind, count in _judged(run, table, rows, rule)["_ref"].value_counts().items():
            judged[kind] = judged.get(kind, 0) + int(count)
        uncalibrated += int((rows["_ref"] == UNCALIBRATED).sum())
        not_network += int((rows["_ref"] == NOT_NETWORK).sum())
    return judged, uncalibrated, not_network


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
    rule = expected_rule(run)
    status = str(run.attrs.get("status", ""))
    return Answer("" if status == "complete" else status,
                  [h for h in str(run.attrs.get("hosts", "")).split(",") if h],
                  rails.verdicts_with_where(run.tables.get("sweep/verdicts")), bad, counts, _below_expected(run, rule),
                  _wrong(run), list(regressions), rule, rails.nic_table(run), rails.switch_table(run),
                  rails.coverage_text(run), _changes(run), int(run.attrs.get("passes", 0) or 0),
                  set(_changes(run, "recovered")), coverage_gap(run), *_expected_counts(run, rule),
                  [n for n in str(run.attrs.get("notes", "")).split("\n") if n])


def _changes(run, change: str = "") -> list:
    """/sweep/changes' lines; with `change`, those of that change (new, recovered)."""
    frame = run.tables.get("sweep/changes")
    if frame is None or frame.empty:
        return []
    if change:
        frame = frame[frame["change"] == change] if "change" in frame else frame.iloc[:0]
    return [str(t) for t in frame["text"]]
