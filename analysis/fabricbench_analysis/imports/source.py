"""The sources read: which tool wrote a file (told from its own lines, as far into it as it takes), its rows, the path
NCCL took (from INFO lines in it or --nccl-log), and its rows judged by the suite's model."""
from __future__ import annotations

import dataclasses
import pathlib

from ..read.files import BadInput
from . import expect, nccl_tests, nccl_text, osu, perftest
from .imported import Imported
from .lines import Line, head, read_lines
from .nccl_lines import NcclLines
from .values import held


@dataclasses.dataclass
class Options:
    tool: str = ""          # "" = told from the file
    op: str = ""            # nccl-tests output without its 'Collective test starting' line
    ranks: int = 0          # OSU: the job's ranks
    window: int = 0         # OSU bw/bibw: -W where the run set it
    nodes: int = 0          # where the source names no hosts
    nics_per_node: int = 0
    nic_gbitps: float = 0.0
    link_gbps: float = 0.0
    nccl_log: str = ""
    configs: pathlib.Path = pathlib.Path(__file__).resolve().parents[3] / "configs"


TOOLS = (("nccl-tests", nccl_tests), ("osu", osu), ("perftest", perftest))


def tool_of(path: pathlib.Path, start: Line | None = None) -> str:
    """The tool whose output begins at `start` (the file's first line where None)."""
    first = head(path, 1)
    if start is None and first and first[0].stripped.startswith(("{", "[")):
        text = path.read_bytes()[:1 << 16].decode("utf-8", "replace")
        return "perftest" if ("BW_average" in text or "t_typical" in text or "test_name" in text) else "nccl-tests"
    for line in read_lines(path, start):  # a job's log may hold a million lines before the table: read on
        for tool, module in TOOLS:
            if module.signature(line):
                return tool
    raise BadInput(f"{path}: not output of nccl-tests, OSU or perftest as fabric-report knows it (no nccl-tests "
                   "header, no '# OSU ... Test' title, no perftest table); give --tool if it is one of them")


def _other(tool: str):
    """Whether a line begins another tool's output (where a run of `tool` ends, in a file that holds both)."""
    return lambda line: any(module.signature(line) for name, module in TOOLS if name != tool)


def _read_run(path: pathlib.Path, tool: str, o: Options, start: Line | None) -> Imported:
    run = Imported(path, tool, first_line=start.number if start is not None else 1)
    is_json = start is None and head(path, 1) and head(path, 1)[0].stripped.startswith(("{", "["))
    if tool == "nccl-tests":
        hint = o.op or _op_from_name(path)
        if is_json:
            return nccl_tests.read_json(path, run, hint)
        return nccl_text.read_text(path, run, hint, start, _other(tool))
    if tool == "osu":
        return osu.read(path, run, o.ranks, o.window, start, _other(tool))
    return perftest.read_json(path, run) if is_json else perftest.read_text(path, run, start, _other(tool))


def read_source(path: pathlib.Path, o: Options) -> list:
    """The runs of one source: one, or each of several a job's log holds one after another (a script's second
    `*_perf`, or OSU after nccl-tests), each read as a source of its own."""
    runs, start = [], None
    while True:
        tool = (o.tool if not runs and o.tool else "") or tool_of(path, start)
        runs.append(_read_run(path, tool, o, start))
        start = runs[-1].next_run
        if start is None:
            break
    tools = {run.tool for run in runs}
    # An option is used or refused, never ignored: these say what only one tool's output leaves out.
    for option, value, owner in (("--op", o.op, "nccl-tests"), ("--ranks", o.ranks, "osu"),
                                 ("--window", o.window, "osu")):
        if value and owner not in tools:
            raise BadInput(f"import: {option} is for {owner} output; {path} is {'/'.join(sorted(tools))}'s")
    if len(runs) > 1:
        where = ", ".join(f"{r.tool} {r.what} from line {r.first_line}" for r in runs)
        for run in runs:
            run.notes.append(f"one of {len(runs)} runs in {path.name} ({where}): each is imported as its own")
    return runs


def _op_from_name(path: pathlib.Path) -> str:
    """all_reduce_perf.log, all_reduce.txt -> all_reduce (only where the output itself does not say)."""
    stem = path.name.split(".")[0].split("-")[0]
    stem = stem[:-5] if stem.endswith("_perf") else stem
    return stem if stem in nccl_tests.FACTORS else ""


def _log(o: Options, imp: Imported) -> NcclLines:
    log = imp.nccl_lines if isinstance(imp.nccl_lines, NcclLines) else NcclLines()
    if o.nccl_log:
        p = pathlib.Path(o.nccl_log)
        if not p.is_file():
            raise BadInput(f"--nccl-log {o.nccl_log}: no such file")
        for line in read_lines(p):
            log.take(line)
        if not log.lines:
            raise BadInput(f"--nccl-log {o.nccl_log}: no NCCL log line in it (NCCL_DEBUG=INFO writes them)")
    return log


def setup_of(imp: Imported, o: Options, log: NcclLines) -> expect.Setup:
    s = expect.Setup()
    hosts = imp.hosts or sorted(log.hosts)
    s.nodes = o.nodes or len(hosts)
    if imp.ranks and s.nodes:
        s.gpus_per_node = len(imp.ranks) // s.nodes
    s.nics_per_node = o.nics_per_node or len({name for (plugin, _), name in log.nics.items() if plugin != "Socket"})
    s.nic_gbitps = o.nic_gbitps
    s.link_gbps, s.link_basis = (o.link_gbps, "--link-gbps") if o.link_gbps else \
        expect.link_of([r.get("gpu_name", "") for r in imp.ranks])
    s.algorithms = set(log.algorithms.values())
    return s


def import_one(path: pathlib.Path, o: Options, model: expect.Model) -> list:
    """The runs of one source, read and judged."""
    return [judged(imp, o, model) for imp in read_source(path, o)]


def judged(imp: Imported, o: Options, model: expect.Model) -> Imported:
    held(imp)
    log = _log(o, imp)
    imp.nccl_version = imp.nccl_version or log.version
    path_text = log.path_text()
    if path_text and imp.table == "results/coll":
        short = "; ".join([", ".join(sorted(log.kinds()))] + ([log.gdr_text()] if log.gdr_text() else []))
        for r in imp.rows:
            if r.get("backend") == "nccl":
                r["path"] = short
        imp.notes.append(path_text)
    if log.env:
        imp.notes.append("NCCL settings in the log: " + " ".join(f"{k}={v}" for k, v in sorted(log.env.items())))
    model.stamp(imp, setup_of(imp, o, log))
    return imp


def sources_of(paths: list) -> list:
    """The files named, a folder's files (not hidden, not .h5) in name order."""
    out = []
    for text in paths:
        p = pathlib.Path(text)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".") and f.suffix != ".h5")
            if not found:
                raise BadInput(f"{text}: a folder with no file to import")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise BadInput(f"{text}: no such file or folder")
    return out
