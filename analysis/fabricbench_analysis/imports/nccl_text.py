"""nccl-tests' text output, read line by line: its header (version, test, settings, the `#  Rank` lines), its table
(either layout, rows cut by NCCL's own lines joined), the NCCL log lines around it. A run ends where the next run of the
same file begins (a job script's second `*_perf`, or another tool's output after it): that one is read as its own. A
header cut off (output as people post it) leaves the op and the rank count to the table's own figures (nccl_infer)."""
from __future__ import annotations

import dataclasses
import re

from .imported import Imported
from .lines import read_lines
from .nccl_infer import Printed, resolve
from .nccl_lines import NcclLines
from .nccl_tests import (_GLUED, _GROUP, _RANK, _SETTINGS, _START, _VERSION, ALONE, KEYS, _op_of, check_row,
                         nccl_version)
from .values import figure, whole


class _Table:
    """The column layout of one result table, from its header line."""

    def __init__(self, names: list):
        self.names = names
        starts = [i for i, n in enumerate(names) if n in ("time", "cputime")]
        self.groups = []
        for k, start in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else len(names)
            self.groups.append([(i, _GROUP[names[i]]) for i in range(start, end) if names[i] in _GROUP])
        self.width = max((i for g in self.groups for i, _ in g), default=len(KEYS) - 1) + 1


def _begins_run(s: str) -> bool:
    """A line of a run's header: after a table, the next run of the file begins with it."""
    words = s[1:].split() if s.startswith("#") else []
    return bool(_VERSION.match(s) or _START.match(s) or _SETTINGS.match(s) or _RANK.match(s)
                or words[:2] in (["Using", "devices"], ["size", "count"]))


class TextReader:
    def __init__(self, path, run: Imported, op_hint: str, other):
        self.path, self.run, self.other = path, run, other
        self.op, self.op_said, self.hint = op_hint, False, op_hint
        self.table, self.settings, self.ended, self.zero = None, {}, True, 0
        self.log, self.printer, self.pending = NcclLines(), None, []
        self.printed, self.seen_ranks, self.hosts_local = [], {}, {}
        self.last = 0

    def read(self, start=None) -> Imported:
        run = self.run
        run.table = "results/coll"
        for x in read_lines(self.path, start):
            if not self.take(x):
                run.next_run = x
                break
            self.last = x.number
        if not self.printed:
            raise run.refuse(0, "no row of nccl-tests' result table found" + (
                f" (only {self.zero} row(s) of 0 B, which hold no measurement)" if self.zero else ""))
        if not self.ended:
            run.cut_at = self.last
        op, ranks = resolve(run, self.printed, self.op, self.op_said, self.settings)
        for p in self.printed:
            self.rows_of(p, op, ranks)
        if self.zero:
            run.notes.append(f"{self.zero} size(s) of 0 B left out (nccl-tests prints a size that holds no whole "
                             "element per rank as 0 B at 0 GB/s)")
        run.nccl_lines = self.log
        run.nccl_version = run.nccl_version or self.log.version
        return run

    def take(self, x) -> bool:
        """Read one line; False where it begins the next run of the file (not read here)."""
        s = x.stripped
        if self.log.take(x) or not s:
            return True
        ours = self.printer is None or x.label == self.printer
        if (self.printed or self.zero) and ours and (_begins_run(s) or self.other(x)):
            return False
        if self.header(x, s):
            return True
        if s.startswith("#"):
            words = s[1:].split()
            if words[:2] == ["size", "count"]:
                self.table, self.ended, self.printer = _Table(words), False, x.label
            elif words[:3] == ["Out", "of", "bounds"] or words[:2] == ["Avg", "bus"]:
                self.ended, self.table = True, None
            return True
        if self.table is None or not ours:
            return True  # a line before or between the tables, or another rank's line interleaved
        text = x.text
        glued = _GLUED.search(text)
        if glued:
            self.log.take(dataclasses.replace(x, text=glued.group(0)))
            text = text[:glued.start()]
        words = text.split()
        if self.pending and words and words[0].isdigit() and len(words) >= self.table.width:
            raise self.run.refuse(self.pending[0], f"a row of the {self.op or 'nccl-tests'} table cut short: "
                                                   f"{len(self.pending) - 1} of {self.table.width} fields")
        self.pending = (self.pending or [x.number]) + words
        if len(self.pending) - 1 < self.table.width and glued:
            return True  # the rest of the row follows NCCL's line
        self.row(self.pending[0], self.pending[1:], x)
        self.pending = []
        return True

    def header(self, x, s: str) -> bool:
        """The header's lines: version, test, settings, ranks."""
        run = self.run
        if (m := _VERSION.match(s)):
            run.tool_version = m.group(1)
            run.nccl_version = nccl_version(m.group(3) or m.group(2) or "")
        elif (m := _START.match(s)):
            if self.op_said:
                raise run.refuse(x.number, f"{ALONE} (a second header before the {self.op} table: each process "
                                           "printed its own)")
            self.op, self.op_said = _op_of(m.group(1)), True
        elif (m := _SETTINGS.match(s)):
            self.settings = {"threads": int(m.group(1)), "gpus": int(m.group(2)), "warmup": int(m.group(3)),
                             "iterations": int(m.group(4)), "check": int(m.group(5) or 1),
                             "graph": int(m.group(6) or 0)}
            run.facts["gpus_per_thread"] = self.settings["gpus"]
        elif (m := _RANK.match(s)):
            self.rank(x, m)
        else:
            return False
        return True

    def rank(self, x, m) -> None:
        number, host = whole(self.run, x.number, "rank", m.group(1)), m.group(3)
        if number in self.seen_ranks:
            raise self.run.refuse(x.number, f"{ALONE} (rank {number} is listed twice, at lines "
                                            f"{self.seen_ranks[number]} and {x.number}: each process numbered itself)")
        self.seen_ranks[number] = x.number
        local = self.hosts_local.setdefault(host, 0)
        self.hosts_local[host] += 1
        self.run.ranks.append({"rank": number, "host": host, "local_rank": local,
                               "gpu": whole(self.run, x.number, "device", m.group(4)),
                               "gpu_name": m.group(6).strip(), "pci_bus_id": m.group(5),
                               "pid": whole(self.run, x.number, "pid", m.group(2))})

    def row(self, number: int, words: list, x) -> None:
        """One printed row, its fields checked as numbers (the op and ranks may not be known yet)."""
        table, run = self.table, self.run
        blank = len(words) == table.width - 1 and bool(re.fullmatch(r"-?\d+", words[3] if len(words) > 3 else ""))
        if blank:
            words = words[:3] + ["none"] + words[3:]  # no reduction: nccl-tests leaves redop blank (hypercube)
        if len(words) < table.width or not words[0].isdigit():
            raise run.refuse(number, f"not a row of the {self.op or 'nccl-tests'} table ({len(words)} fields, "
                                     f"{table.width} wanted): '{x.stripped[:80]}'")
        size = whole(run, number, "size", words[0])
        if size == 0:
            self.zero += 1
            return
        placements = []
        for group in table.groups[:2]:
            figures = {}
            for i, column in group:
                if column == "wrong":
                    figures[column] = -1 if words[i] == "N/A" else whole(run, number, "#wrong", words[i])
                else:
                    figures[column] = figure(run, number, column, words[i])
            placements.append(figures)
        self.printed.append(Printed(number, size, whole(run, number, "count", words[1]), words[2],
                                    "" if blank else words[3], whole(run, number, "root", words[4]), placements))

    def rows_of(self, p: Printed, op: str, ranks: int) -> None:
        run, settings = self.run, self.settings
        for in_place, figures in enumerate(p.placements):
            row = {"op": op, "backend": "nccl", "dtype": p.dtype, "redop": p.redop or "none",
                   "root": p.root, "in_place": in_place, "bytes": p.size, "count": p.count, "ranks": ranks or -1,
                   "iterations": settings.get("iterations", -1), "warmup": settings.get("warmup", -1),
                   "timing": "graph" if settings.get("graph") else "host", **figures}
            check_row(run, p.line, row["op"], ranks, p.size, row["time_us"], row["algbw_gbps"], row["busbw_gbps"])
            run.rows.append(row)


def read_text(path, run: Imported, op_hint: str = "", start=None, other=lambda line: False) -> Imported:
    return TextReader(path, run, op_hint, other).read(start)
