"""nccl-tests' output (every `*_perf`): the text it prints (with its header, device lines and either column layout:
plain, or with -I's per-iteration columns) and the JSON of `-J FILE.json`. Each row becomes two rows of /results/coll
(out-of-place, in-place), as fabric-coll writes them. Every row is checked as nccl-tests computes it (algbw = size /
time, busbw = algbw x the operation's factor for the ranks its header lists), so a line that was misread is refused,
not stored. Rows of 0 B (nccl-tests prints a size that holds no whole element per rank as 0 B at 0 GB/s) are left
out with a note."""
from __future__ import annotations

import math
import re

from . import jsondoc
from .imported import Imported
from .values import figure, whole

# nccl-tests' bus bandwidth factors (its src/<op>.cu GetBw), n = ranks.
FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n, "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n, "scatter": lambda n: (n - 1) / n, "hypercube": lambda n: 1.0,
    "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0,
}

ALONE = "each process ran alone: nccl-tests built without MPI=1, or started without mpirun"

# algbw as a share of size / time where it is not all of it: hypercube counts what each rank receives from the others.
ALGBW_SHARE = {"hypercube": lambda n: (n - 1) / n}

_RANK = re.compile(r"#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)"
                   r"\s+\[([^\]]*)\]\s*(.*)")
_VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(?:\s+nccl-headers=(\d+))?(?:\s+nccl-library=(\d+))?")
# An NCCL log line glued to the end of a table line (another thread of the process wrote it mid-row).
# Its host name is taken to begin with a letter (the table's last field, a number, is glued to it: "-1gpunode0:...").
_GLUED = re.compile(r"[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE) .*$")
_START = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_SETTINGS = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+).*?warmup iters:\s*(\d+)\s+iters:\s*(\d+)"
                       r"(?:.*?validation:\s*(\d+))?(?:.*?graph:\s*(\d+))?")
# The value columns of one placement (out-of-place, then in-place), by their header names.
_GROUP = {"time": "time_us", "cputime": "time_us", "algbw": "algbw_gbps", "busbw": "busbw_gbps", "#wrong": "wrong",
          "i_min": "iter_us_min", "i_max": "iter_us_max", "i_p99": "iter_us_p99"}
KEYS = ["size", "count", "type", "redop", "root"]


def nccl_version(code: str) -> str:
    """nccl-tests' NCCL version code (22803) as NCCL names it (2.28.3)."""
    if not code:
        return ""
    v = int(code)
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 20900 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"


def signature(line) -> bool:
    """A line only nccl-tests prints."""
    s = line.stripped
    return bool(_VERSION.match(s) or _START.match(s) or (s.startswith("#") and "busbw" in s and "algbw" in s))


def _op_of(program: str) -> str:
    name = program.rsplit("/", 1)[-1]
    return name[:-5] if name.endswith("_perf") else name


def check_row(run: Imported, line: int, op: str, ranks: int, size: int, time_us: float, algbw: float,
              busbw: float) -> None:
    """Refuse a row whose figures are not what nccl-tests computes from its size and time (a misread line): algbw =
    size / time, busbw = algbw x factor(ranks), to the 2 decimals printed (or 1% where fewer are printed)."""
    if not (time_us > 0) or math.isinf(time_us):
        raise run.refuse(line, f"time {time_us} us: not a time (not a row of nccl-tests' table)")
    for what, value in (("algbw", algbw), ("busbw", busbw)):
        if not (value >= 0) or math.isinf(value):  # nan compares false with every limit: it would pass as expected
            raise run.refuse(line, f"{what} {value} GB/s: not a measurement (a bandwidth of nan, inf or below 0 is "
                                   "refused, never stored)")
    want = size / time_us / 1e3 * (ALGBW_SHARE[op](ranks) if op in ALGBW_SHARE and ranks else 1.0)
    if abs(algbw - want) > 0.011 + 0.01 * want:
        raise run.refuse(line, f"algbw {algbw} GB/s is not size / time ({want:.3f}): not a row nccl-tests wrote")
    if ranks and op in FACTORS:
        bus = algbw * FACTORS[op](ranks)
        if abs(busbw - bus) > 0.011 + 0.01 * bus:
            raise run.refuse(line, f"busbw {busbw} GB/s is not algbw x the {op} factor for {ranks} ranks "
                                   f"({bus:.3f}): not a row nccl-tests wrote for {ranks} ranks")


def read_json(path, run: Imported, op_hint: str = "") -> Imported:
    """nccl-tests' -J output."""
    run.table = "results/coll"
    return from_json(jsondoc.load(path, run, "nccl-tests wrote with -J"), run, op_hint)


def from_json(doc, run: Imported, op_hint: str = "") -> Imported:
    """The -J layout of nccl-tests 2.19 (its JSON 'version' 3): args, nccl_version, config (iterations, warmup_iters,
    graph, devices: rank, hostname, device, device_hex, device_info), results (size, count, type, redop, root,
    out_of_place/in_place: time, alg_bw, bus_bw, nwrong)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise run.refuse(0, "not the JSON nccl-tests writes with -J (no 'results' list)")
    config = jsondoc.part(run, doc.get("config"), "config", dict, {})
    args = jsondoc.part(run, doc.get("args"), "args", list, [])
    run.command_line = " ".join(str(a) for a in args)
    version = doc.get("nccl_version")
    run.nccl_version = nccl_version(str(whole(run, 0, "nccl_version", version))) if version else ""
    run.tool_version = ""  # the JSON carries its own format's version only
    op = (_op_of(str(args[0])) if args else "") or op_hint
    if op not in FACTORS:
        raise run.refuse(0, f"nccl-tests' JSON of '{op[:40]}': give --op (one of {', '.join(FACTORS)})")
    for k, r in enumerate(jsondoc.part(run, config.get("devices"), "config.devices", list, [])):
        r = jsondoc.part(run, r, f"config.devices[{k}]", dict)
        host = str(r.get("hostname", ""))
        run.ranks.append({"rank": whole(run, 0, f"config.devices[{k}].rank", r.get("rank", len(run.ranks))),
                          "host": host, "local_rank": sum(1 for x in run.ranks if x["host"] == host),
                          "gpu": whole(run, 0, f"config.devices[{k}].device", r.get("device", -1)),
                          "gpu_name": str(r.get("device_info", "")), "pci_bus_id": str(r.get("device_hex", ""))})
    if len(run.ranks) == 1:
        raise run.refuse(0, f"{ALONE} (config.devices lists 1 rank: nothing crossed a link)")
    settings = {"iterations": whole(run, 0, "config.iterations", config.get("iterations", -1)),
                "warmup": whole(run, 0, "config.warmup_iters", config.get("warmup_iters", -1)),
                "graph": whole(run, 0, "config.graph", config.get("graph", 0) or 0)}
    zero = 0
    for k, r in enumerate(doc["results"]):
        r = jsondoc.part(run, r, f"results[{k}]", dict)
        if whole(run, 0, f"results[{k}].size", r.get("size", 0)) == 0:
            zero += 1
            continue
        for in_place, name in enumerate(("out_of_place", "in_place")):
            v = r.get(name)
            if v is not None:
                run.rows.append(_json_row(run, f"results[{k}]", r, jsondoc.part(run, v, f"results[{k}].{name}", dict),
                                          op, in_place, settings))
    if not run.rows:
        raise run.refuse(0, "no result in nccl-tests' JSON")
    if zero:
        run.notes.append(f"{zero} size(s) of 0 B left out")
    return run


def _json_row(run: Imported, where: str, r: dict, v: dict, op: str, in_place: int, settings: dict) -> dict:
    """One placement of one size of the -J results, checked as a row of the text table."""
    wrong, time = v.get("nwrong"), v.get("time", v.get("cpu_time"))
    name = where + (".in_place" if in_place else ".out_of_place")
    row = {"op": op, "backend": "nccl", "dtype": str(r.get("type", "")), "redop": str(r.get("redop", "")),
           "root": whole(run, 0, f"{where}.root", r.get("root", -1)), "in_place": in_place,
           "bytes": whole(run, 0, f"{where}.size", r.get("size")),
           "count": whole(run, 0, f"{where}.count", r.get("count", 0)), "ranks": len(run.ranks),
           "iterations": settings["iterations"], "warmup": settings["warmup"],
           "timing": "graph" if settings["graph"] else "host",
           "time_us": figure(run, 0, f"{name}.time", time),
           "algbw_gbps": figure(run, 0, f"{name}.alg_bw", v.get("alg_bw")),
           "busbw_gbps": figure(run, 0, f"{name}.bus_bw", v.get("bus_bw")),
           "wrong": -1 if wrong is None else whole(run, 0, f"{name}.nwrong", wrong)}
    check_row(run, 0, op, len(run.ranks), row["bytes"], row["time_us"], row["algbw_gbps"], row["busbw_gbps"])
    return row
