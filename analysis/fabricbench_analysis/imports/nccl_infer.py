"""The op and rank count of a nccl-tests table whose header was cut (output as people post it: no 'Collective test
starting' line, only the last `#  Rank` lines, the table alone), told from the table itself: the redop and root columns
(a reduction or none, a root or -1), count x the type's size = the size (or the size / n, where each rank holds a
part), algbw = size / time, and busbw / algbw = the op's bus factor for n ranks (nccl-tests' GetBw: all_reduce
2(n-1)/n, all_gather, reduce_scatter, alltoall, gather, scatter (n-1)/n, broadcast, reduce, sendrecv 1). What was told
so is said in the notes; where two answers fit, the table is refused in one line naming them. A header of one rank,
or every busbw 0.00, is the most common mistake of nccl-tests' users: each process ran alone."""
from __future__ import annotations

import dataclasses

from .imported import Imported
from .nccl_tests import ALGBW_SHARE, ALONE, FACTORS
MAX_RANKS = 1024  # rank counts tried where the header does not say it
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8,
              "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
              "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
REDUCING = {"all_reduce", "reduce_scatter", "reduce"}
ROOTED = {"broadcast", "reduce", "gather", "scatter"}
PARTS = {"reduce_scatter", "all_gather", "alltoall", "alltoallv", "gather", "scatter", "hypercube"}  # count = size/n


@dataclasses.dataclass
class Printed:
    """One row of the table as printed, its figures checked as numbers."""
    line: int
    size: int
    count: int
    dtype: str
    redop: str          # "" where nccl-tests left it blank (hypercube)
    root: int
    placements: list    # {time_us, algbw_gbps, busbw_gbps, wrong, ...} out-of-place, then in-place


def _columns_fit(op: str, p: Printed) -> bool:
    if op == "hypercube":
        redop = p.redop == ""
    elif op == "sendrecv":
        redop = p.redop != ""
    else:
        redop = (p.redop not in ("", "none")) == (op in REDUCING)
    return redop and (p.root >= 0) == (op in ROOTED)


def fits(op: str, n: int, printed: list) -> bool:
    """True where every row is what nccl-tests prints for `op` on `n` ranks (to the 2 decimals it prints)."""
    f, share = FACTORS[op](n), ALGBW_SHARE[op](n) if op in ALGBW_SHARE else 1.0
    for p in printed:
        if not _columns_fit(op, p):
            return False
        size = TYPE_BYTES.get(p.dtype, 0) * p.count * (n if op in PARTS else 1)
        if size and size != p.size:
            return False
        for fig in p.placements:
            a, b, t = fig["algbw_gbps"], fig["busbw_gbps"], fig["time_us"]
            want = p.size / t / 1e3 * share if t > 0 else -1.0
            if abs(a - want) > 0.011 + 0.01 * want or abs(b - a * f) > 0.0051 * (1 + f) + 1e-9:
                return False
    return True


def _constant(op: str) -> bool:
    """busbw = algbw and the count the whole size at any rank count: n cannot be told."""
    return op not in PARTS and op not in ALGBW_SHARE and FACTORS[op](2) == FACTORS[op](64)


def answers(printed: list, ops: list, counts: range) -> dict:
    """op -> the rank counts it fits ([0]: fits at any)."""
    out = {}
    for op in ops:
        if _constant(op):
            if fits(op, counts.start, printed):
                out[op] = [0]
            continue
        ns = [n for n in counts if fits(op, n, printed)]
        if ns:
            out[op] = ns
    return out


def _said(op: str, ns: list) -> str:
    if ns == [0]:
        return f"{op} (at any rank count)"
    return f"{op} on {ns[0]} ranks" if len(ns) == 1 else f"{op} on {ns[0]}-{ns[-1]} ranks"


def _alone(run: Imported, printed: list, listed: list, op: str) -> None:
    figures = [f for p in printed for f in p.placements]
    moved = [f for f in figures if f["algbw_gbps"] >= 0.05]
    zero = bool(moved) and all(f["busbw_gbps"] == 0 for f in moved)
    if zero and len(listed) <= 1:
        raise run.refuse(printed[0].line, f"{ALONE} (busbw 0.00 on every row: {len(listed) or 'no'} rank listed, "
                                          "nothing crossed a link)")
    if listed == [0] and op and FACTORS.get(op, lambda n: 0)(1) != 0:
        raise run.refuse(printed[0].line, f"{ALONE} (1 rank listed: {op} of one rank crosses no link)")


def resolve(run: Imported, printed: list, op: str, op_said: bool, settings: dict) -> tuple:
    """(op, ranks) of the table: the header's where it says them, else told from the figures (ranks 0: not known)."""
    listed = sorted(r["rank"] for r in run.ranks)
    complete = bool(listed) and listed == list(range(len(listed))) and len(listed) >= 2
    if op and op not in FACTORS:
        raise run.refuse(0, f"nccl-tests' test '{op[:40]}' is not one fabric-report imports (one of "
                            f"{', '.join(FACTORS)})")
    _alone(run, printed, listed, op)
    if op and complete:
        return op, len(listed)
    counts = range(len(listed), len(listed) + 1) if complete else range(max(listed, default=0) + 1 or 2, MAX_RANKS)
    counts = range(max(counts.start, 2), max(counts.stop, 3))
    found = answers(printed, [op] if op else list(FACTORS), counts)
    where = printed[0].line
    if not found:
        raise run.refuse(where, f"the table fits no nccl-tests op{' ' + op if op else ''} at {counts.start}-"
                                f"{counts.stop - 1} ranks (its header is cut: give the output from its '# nccl-tests "
                                "version' line)")
    if len(found) > 1:
        raise run.refuse(where, "the header is cut and the table fits two answers: " + ", ".join(
            _said(o, ns) for o, ns in found.items()) + ": give --op (or the output with its 'Collective test "
                                                       "starting' line)")
    (told, ns), = found.items()
    if len(ns) > 1:
        raise run.refuse(where, f"the header's '#  Rank' lines are cut and the table fits {_said(told, ns)}: give the "
                                "output with its '#  Rank' lines")
    _notes(run, told, op, ns[0], listed, complete)
    return told, ns[0] or (len(listed) if complete else 0)


def _notes(run: Imported, told: str, op: str, n: int, listed: list, complete: bool) -> None:
    if not op:
        run.notes.append(f"op {told}: told from the table (the header's 'Collective test starting' line is not in "
                         "the source): its redop, root and count columns and busbw / algbw fit it alone")
    if complete:
        return
    if listed:
        run.notes.append(f"the header's '#  Rank' lines are cut (rank {', '.join(map(str, listed))} listed): left "
                         "out of /env/ranks")
        run.ranks.clear()
    run.world_size = n
    run.notes.append(f"ranks {n}: told from the table (busbw / algbw = {told}'s bus factor for {n} ranks"
                     f"{', count x type size' if told in PARTS else ''})" if n else
                     f"ranks: not known (the header's '#  Rank' lines are not in the source, and {told}'s busbw is "
                     "its algbw at any rank count)")
