"""The OSU micro-benchmarks' output (7.x; the MPI and the NCCL `osu_xccl_*` builds): point-to-point latency, bw, bibw
and mbw_mr into /results/p2p, the blocking collectives into /results/coll, as fabric-p2p and fabric-coll write them.
OSU prints neither the ranks nor the window; what a row needs of them comes from its header (mbw_mr prints pairs and
window), OSU's defaults (window 64 for bw and bibw) or the options --ranks and --window. OSU's collective sizes are
nccl-tests' for allreduce, bcast, reduce and reduce_scatter; for allgather and alltoall OSU gives one rank's part, so
those need --ranks (nccl-tests' size is the whole buffer) and are refused without it."""
from __future__ import annotations

import math
import re

from .imported import Imported
from .lines import column_names, read_lines
from .nccl_tests import FACTORS
from .values import INT64_MAX, whole

_TITLE = re.compile(r"#\s*OSU\s+(MPI|NCCL|RCCL|XCCL)(?:-\w+)?\s+(.*?)\s+Test(?:\s+v(\S+))?\s*$")
_PAIRS = re.compile(r"\[\s*pairs:\s*(\d+)\s*\]\s*\[\s*window size:\s*(\d+)\s*\]")
_BUFFERS = re.compile(r"Send Buffer on (\w+).*Receive Buffer on (\w+)")
_DTYPE = re.compile(r"#\s*Datatype:\s*(\w+)")
OSU_WINDOW = 64  # osu_bw and osu_bibw's default -W

P2P_TESTS = {"Latency": "latency", "Bandwidth": "bw", "Bi-Directional Bandwidth": "bibw",
             "Multiple Bandwidth / Message Rate": "mbw_mr"}
# OSU's collective -> (fabric-coll's op, redop, root, OSU's size is one rank's part)
COLLECTIVES = {"Allreduce": ("all_reduce", "sum", -1, False), "Bcast": ("broadcast", "none", 0, False),
               "Broadcast": ("broadcast", "none", 0, False), "Reduce": ("reduce", "sum", 0, False),
               "Reduce_scatter": ("reduce_scatter", "sum", -1, False), "Allgather": ("all_gather", "none", -1, True),
               "All-to-All": ("alltoall", "none", -1, True), "Alltoall": ("alltoall", "none", -1, True),
               "All-to-All Personalized Exchange": ("alltoall", "none", -1, True)}
# OSU 7.4's NCCL point-to-point tests print no title, only "#Using NCCL": their test comes from the file's name.
_UNTITLED = {"osu_xccl_latency": "latency", "osu_xccl_bw": "bw", "osu_xccl_bibw": "bibw", "osu_latency": "latency",
             "osu_bw": "bw", "osu_bibw": "bibw"}
DTYPES = {"MPI_CHAR": "int8", "MPI_INT": "int32", "MPI_FLOAT": "float", "MPI_DOUBLE": "double"}
_COLUMNS = {"Size": "size", "Avg Latency(us)": "avg", "Latency (us)": "avg", "Latency(us)": "avg",
            "Min Latency(us)": "min", "Max Latency(us)": "max", "Iterations": "iterations",
            "Bandwidth (MB/s)": "mbps", "MB/s": "mbps", "Messages/s": "msgs"}


def signature(line) -> bool:
    """A line only OSU prints."""
    return bool(_TITLE.match(line.stripped)) or line.stripped == "#Using NCCL"


def _untitled(path) -> str:
    stem = path.name.split(".")[0]
    return next((t for name, t in sorted(_UNTITLED.items(), key=lambda i: -len(i[0])) if stem.startswith(name)), "")


def read(path, run: Imported, ranks: int = 0, window: int = 0, start=None, other=lambda line: False) -> Imported:
    """One OSU test's output, from the line `start`; it ends where another test's (or tool's) output begins."""
    kind = test = op = backend = ""
    banner = False
    memory, dtype, pairs, win, columns, printer = "host", "", 1, 0, None, None
    stray = None  # a line after the table that is no row: allowed only where another run's output follows
    for x in read_lines(path, start):
        s = x.stripped
        if not s:
            continue
        if run.rows and (signature(x) or other(x)):
            run.next_run = stray or x  # the next test's output: read as a run of its own
            break
        m = _TITLE.match(s)
        if m:
            if kind:
                raise run.refuse(x.number, "a second OSU title before the first test's table (two tests' output "
                                           "interleaved: import each from a file of its own)")
            backend = "mpi" if m.group(1) == "MPI" else "nccl"
            name, run.tool_version = m.group(2), m.group(3) or ""
            if name in P2P_TESTS:
                kind, test, run.table = "p2p", P2P_TESTS[name], "results/p2p"
            elif name.endswith(" Latency") and name[:-8] in COLLECTIVES:
                kind, op, run.table = "coll", name[:-8], "results/coll"
            else:
                raise run.refuse(x.number, f"OSU test '{name}': not one fabric-report imports (latency, bw, bibw, "
                                           f"mbw_mr; {', '.join(sorted(COLLECTIVES))})")
            printer = x.label
            continue
        if s == "#Using NCCL":
            banner = True
            continue
        if banner and not kind and s.lstrip("#").strip().startswith("Size"):
            test = _untitled(path)
            if not test:
                raise run.refuse(x.number, "OSU's NCCL point-to-point output names no test (it prints no title): name "
                                           "the file after the benchmark (osu_xccl_latency..., osu_xccl_bw..., "
                                           "osu_xccl_bibw...)")
            kind, backend, run.table, printer = "p2p", "nccl", "results/p2p", x.label
            run.notes.append(f"test {test}: from the file's name (OSU's NCCL point-to-point tests print no title)")
        if not kind and banner and _BUFFERS.search(s):
            memory = "device" if "DEVICE" in s.upper() else "host"
            continue
        if not kind or (printer is not None and x.label != printer):
            continue
        if (b := _BUFFERS.search(s)):
            memory = "device" if "DEVICE" in (b.group(1) + b.group(2)).upper() else \
                "managed" if "MANAGED" in (b.group(1) + b.group(2)).upper() else "host"
            continue
        if (d := _DTYPE.match(s)):
            dtype = d.group(1)
            continue
        if (p := _PAIRS.search(s)):
            pairs, win = int(p.group(1)), int(p.group(2))
            continue
        if s.startswith("#"):
            if s.lstrip("#").strip().startswith("Size"):
                columns = column_names(s, _COLUMNS)
            continue
        if columns is None:
            continue
        words = s.split()
        row_like = words[0].isdigit()
        if stray is not None or not row_like or len(words) != len(columns):
            if run.rows and not row_like:
                stray = stray or x  # after the table: a line of what follows it, if another run follows
                continue
            x, s, words = stray or x, (stray or x).stripped, (stray or x).stripped.split()
            raise run.refuse(x.number, f"not a row of OSU's table ({len(words)} fields, {len(columns)} wanted: "
                                       f"{' '.join(columns)}): '{s[:80]}'")
        values = {}
        for c, w in zip(columns, words):
            if c in ("size", "iterations"):
                values[c] = whole(run, x.number, c, w)
                continue
            try:
                values[c] = float(w)
            except ValueError:
                raise run.refuse(x.number, f"{c} '{w}' is not a number (not a row of OSU's table)") from None
            if not (values[c] >= 0) or math.isinf(values[c]):  # nan would compare false with every limit
                raise run.refuse(x.number, f"{c} {w}: not a measurement (a figure of nan, inf or below 0 is refused, "
                                           "never stored)")
        if kind == "p2p":
            run.rows.append(_p2p_row(test, backend, memory, values, pairs, win or window or OSU_WINDOW))
        else:
            run.rows.append(_coll_row(run, x.number, op, backend, memory, dtype, values, ranks))
    if stray is not None and run.next_run is None:
        raise run.refuse(stray.number, f"not a row of OSU's table: '{stray.stripped[:80]}'")
    if not kind:
        raise run.refuse(0, "no OSU test title ('# OSU MPI ... Test v7.4')")
    if not run.rows:
        raise run.refuse(0, "no row of OSU's table found")
    if kind == "p2p" and test in ("bw", "bibw") and not window:
        run.notes.append(f"window {OSU_WINDOW}: OSU's default (its output does not print it; give --window if the run "
                         "set -W)")
    if kind == "coll" and not ranks:
        run.notes.append("busbw not computed: OSU does not print the ranks (give --ranks N)")
    return run


def _p2p_row(test: str, backend: str, memory: str, v: dict, pairs: int, window: int) -> dict:
    row = {"test": test, "memory": memory, "backend": backend, "bytes": int(v["size"]),
           "pairs": pairs if test == "mbw_mr" else 1, "window": 1 if test == "latency" else window}
    if test == "latency":
        row["latency_us"] = v["avg"]
    else:
        row["bw_mbps"] = v["mbps"]
        if "msgs" in v:
            row["msg_rate_mps"] = v["msgs"] / 1e6
    return row


def _coll_row(run: Imported, line: int, name: str, backend: str, memory: str, dtype: str, v: dict,
              ranks: int) -> dict:
    op, redop, root, per_rank = COLLECTIVES[name]
    size = int(v["size"])
    if per_rank and not ranks:
        raise run.refuse(line, f"osu {name}: its size is one rank's part, nccl-tests' and fabric-coll's the whole "
                               "buffer: give --ranks N (the job's ranks) to import it")
    size = size * ranks if per_rank else size
    if size > INT64_MAX:
        raise run.refuse(line, f"size {v['size']} x {ranks} ranks is out of range (the files hold up to 2^63-1)")
    time_us = v["avg"]
    algbw = size / time_us / 1e3 if time_us > 0 else float("nan")
    row = {"op": op, "backend": backend, "dtype": DTYPES.get(dtype, dtype.lower() or "int8"), "redop": redop,
           "root": root, "in_place": 0, "bytes": size, "count": -1, "ranks": ranks or -1,
           "timing": "host", "time_us": time_us, "algbw_gbps": algbw,
           "busbw_gbps": algbw * FACTORS[op](ranks) if ranks else float("nan")}
    if "min" in v:
        row["time_us_rank_min"], row["time_us_rank_max"] = v["min"], v["max"]
    if "iterations" in v:
        row["iterations"] = int(v["iterations"])
    return row
