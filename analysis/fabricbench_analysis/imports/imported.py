"""One run of another tool, read: which tool and version, the command where the output says it, the hosts and GPUs
its header lines name, and the rows of the suite's table it maps to (/results/coll for nccl-tests and OSU's
collectives, /results/p2p for OSU's point-to-point tests, /results/verbs for perftest), with the columns those tables
have in the suite's own files: the same names, units, roles, better directions, headline and series marks (a test
holds them against files the tools write). Columns the source has no figure for are left out, not filled."""
from __future__ import annotations

import dataclasses
import pathlib

from ..read.files import BadInput, one_line


@dataclasses.dataclass(frozen=True)
class Col:
    name: str
    kind: str           # text, int, float
    width: int = 0      # text: bytes, as the tools declare it
    unit: str = ""
    role: str = "key"   # key, setting, measured, statistic, reference
    better: str = ""
    headline: bool = False
    series: bool = False


def _key(name, kind="int", width=0, unit="", series=False):
    return Col(name, kind, width, unit, "key", series=series)


def _setting(name, kind="int", width=0):
    return Col(name, kind, width, "", "setting")


def _measured(name, unit, better, headline=False, kind="float"):
    return Col(name, kind, 0, unit, "measured", better, headline)


def _statistic(name, unit="us"):
    return Col(name, "float", 0, unit, "statistic", "lower")


# The three columns every bandwidth table ends with (facts::ExpectedShare::columns in the C++ tools).
EXPECTED = [Col("expected_gbps", "float", 0, "GB/s", "reference"),
            _measured("pct_expected", "%", "higher"),
            _setting("expected_from", "text", 12)]

# fabric-coll's /results/coll, less what no peer prints (spread over blocks, per-rank extremes, counters).
COLL = [_key("op", "text", 16, series=True), _key("backend", "text", 8), _key("dtype", "text", 12),
        _key("redop", "text", 8), _key("root"), _key("in_place"), _key("bytes", unit="B"),
        _key("count", unit="elements"), _key("ranks"), _setting("iterations"), _setting("warmup"),
        _key("timing", "text", 12), _measured("time_us", "us", "lower"),
        _statistic("time_us_rank_min"), _statistic("time_us_rank_max"), _statistic("iter_us_min"),
        _statistic("iter_us_max"), _statistic("iter_us_p99"),
        _measured("algbw_gbps", "GB/s", "higher"), _measured("busbw_gbps", "GB/s", "higher", headline=True),
        _measured("wrong", "elements", "lower", kind="int")] + EXPECTED

# fabric-p2p's /results/p2p, less the per-iteration statistics OSU does not print.
P2P = [_key("test", "text", 16, series=True), _key("memory", "text", 8), _key("backend", "text", 8),
       _key("bytes", unit="B"), _key("pairs"), _key("window"), _setting("iterations"), _setting("warmup"),
       _measured("latency_us", "us", "lower", headline=True), _measured("bw_mbps", "MB/s", "higher", headline=True),
       _measured("msg_rate_mps", "M/s", "higher"), _statistic("time_us_min"), _statistic("time_us_max")] + EXPECTED

# fabric-verbs' /results/verbs (perftest's own figures).
VERBS = [_key("test", "text", 10, series=True), _key("memory", "text", 8), _key("bytes", unit="B"), _key("pairs"),
         _key("qps"), _setting("iterations"), _setting("tx_depth"), _setting("mtu"), _setting("device", "text", 16),
         _setting("port"), _setting("link_layer", "text", 10), _setting("gid_index"),
         _measured("bw_peak_mibps", "MiB/s", "higher"), _measured("bw_avg_mibps", "MiB/s", "higher", headline=True),
         _measured("bw_peak_gbitps", "Gb/s", "higher"), _measured("bw_avg_gbitps", "Gb/s", "higher"),
         _measured("msg_rate_mps", "M/s", "higher"), _measured("latency_us", "us", "lower", headline=True),
         _statistic("time_us_min"), _statistic("time_us_max"), _statistic("time_us_mean"),
         _statistic("time_us_stddev"), _statistic("time_us_p99"), _statistic("time_us_p999")] + EXPECTED

TABLES = {"results/coll": COLL, "results/p2p": P2P, "results/verbs": VERBS}


@dataclasses.dataclass
class Imported:
    """What one source file held."""
    source: pathlib.Path
    tool: str                       # nccl-tests, osu, perftest
    tool_version: str = ""
    table: str = ""                 # results/coll, results/p2p, results/verbs
    rows: list = dataclasses.field(default_factory=list)   # dicts of column name -> value
    command_line: str = ""          # where the output says it (JSON, perftest's command); else ""
    ranks: list = dataclasses.field(default_factory=list)  # dicts: rank, host, local_rank, gpu, gpu_name, pci_bus_id
    nccl_version: str = ""
    cut_at: int = 0                 # the line where the source stopped mid-table (0: it finished)
    stopped: str = ""               # the tool's own word that it stopped before the end ("" where it did not say)
    notes: list = dataclasses.field(default_factory=list)  # lines a person should read (what was not judged, why)
    nccl_lines: object = None       # NcclLines: what NCCL's INFO lines in the file said (the path it took)
    facts: dict = dataclasses.field(default_factory=dict)   # what the header said: gpus_per_process, nics, ...
    world_size: int = 0             # the job's ranks where told from the figures, not from the header's rank lines
    next_run: object = None         # the Line where another run begins in the same source (None: the file ended)
    first_line: int = 1             # where this run begins in its source (a job's log may hold several)

    @property
    def what(self) -> str:
        """The test or op its rows are of (all_reduce, bw, write_bw ...)."""
        return str(self.rows[0].get("op") or self.rows[0].get("test") or "") if self.rows else ""

    @property
    def hosts(self) -> list:
        return list(dict.fromkeys(r["host"] for r in self.ranks if r.get("host")))

    def refuse(self, line: int, why: str) -> BadInput:
        """The one line that says why the source is not imported (a figure quoted from it cannot break the line)."""
        return BadInput(one_line(f"{self.source}:{line}: {why}" if line else f"{self.source}: {why}"))
