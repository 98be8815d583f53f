"""What an imported row is held against: the suite's model (docs/expected.md), from what the source's header says
(hosts, GPUs, ranks) and what the person adds (--nics-per-node, --nic-rate, --link-gbps):

- one node, NCCL collectives on GPUs with NVLink: the healthy curve of the op and rank count for that link figure
  (configs/expected-curves.csv, as fabric-coll), `calibrated`; no curve (8 GPUs, another link): `uncalibrated`.
- two nodes or more, NCCL collectives: the node's NICs x the healthy busbw per NIC at that rate
  (configs/expected-network.csv, NVIDIA's statements with their source), `network`, judged at the run's largest size
  from 1 GiB; a busbw above the NICs' line rate cannot have gone through them: `not_network` (NVLS or Tree reduce
  inside the node first; NCCL_ALGO=RING measures the network). Without the NICs' count and rate: `uncalibrated`.
- a port's line rate for OSU's and perftest's bandwidth across nodes, given --nic-rate: `rated`, as the tools.
The link figure of a GPU the suite has curves for is known from its name (H100 SXM and H200: 18 NVLink 4 links x
26.5625 GB/s); any other needs --link-gbps."""
from __future__ import annotations

import csv
import dataclasses
import math
import pathlib

from ..read.files import BadInput
from .imported import Imported

# GPU names (as nccl-tests prints them) whose NVLink figure is known: 18 links x 26.5625 GB/s (NVLink 4).
NVLINK_BY_GPU = {"H100 80GB HBM3": 478.125, "H100 SXM": 478.125, "H200": 478.125, "H800": 478.125}
NOT_NETWORK = "not a network measurement: busbw above what the NICs carry"
# Why, by the algorithms NCCL's log shows for the run (NCCL_DEBUG_SUBSYS=TUNING); without a log the usual reason.
NOT_NETWORK_WHY = {
    "": "NCCL likely used NVLS or Tree, which reduce inside each node first; run with NCCL_ALGO=RING to test the "
        "network",
    "ring": "NCCL's log shows the ring algorithm only: the data did not all cross these NICs (are the ranks on "
            "distinct hosts? are --nics-per-node and --nic-rate right?)",
}


@dataclasses.dataclass
class Setup:
    """What the rows were measured on, as far as the source and the options say."""
    nodes: int = 0
    gpus_per_node: int = 0
    nics_per_node: int = 0
    nic_gbitps: float = 0.0
    link_gbps: float = 0.0
    link_basis: str = ""
    algorithms: set = dataclasses.field(default_factory=set)  # what NCCL's log shows it chose (RING, TREE, NVLS ...)


def _rows(path: pathlib.Path, header: list, what: str) -> list:
    if not path.is_file():
        raise BadInput(f"{what} {path}: no such file")
    with open(path, newline="") as f:
        lines = [x for x in f if x.strip() and not x.startswith("#")]
    reader = csv.DictReader(lines)
    if reader.fieldnames != header:
        raise BadInput(f"{what} {path}: the header must be '{','.join(header)}'")
    return list(reader)


def _files(configs: pathlib.Path) -> tuple:
    """The curves and network files configs/expected.ini names (keys `curves`, `network`), as the C++ tools read
    them."""
    import configparser
    ini = configparser.ConfigParser()
    ini.read(configs / "expected.ini")
    section = ini["expected"] if ini.has_section("expected") else {}
    return (configs / section.get("curves", "expected-curves.csv"),
            configs / section.get("network", "expected-network.csv"))


class Model:
    def __init__(self, configs: pathlib.Path):
        curves, network = _files(configs)
        self.curves = {}
        for r in _rows(curves, ["path", "link_gbps", "ranks", "op", "bytes", "gbps", "source"], "curves"):
            key = (r["path"], float(r["link_gbps"]), int(r["ranks"]), r["op"])
            self.curves.setdefault(key, {"source": r["source"], "points": []})["points"].append(
                (int(r["bytes"]), float(r["gbps"])))
        for c in self.curves.values():
            c["points"].sort()
        self.network = {float(r["nic_gbitps"]): (float(r["busbw_gbps_per_nic"]), r["source"])
                        for r in _rows(network, ["nic_gbitps", "busbw_gbps_per_nic", "source"], "network references")}

    def curve(self, path: str, link: float, ranks: int, op: str):
        for (p, lk, n, o), c in self.curves.items():
            if p == path and n == ranks and o == op and abs(lk - link) <= 0.02 * lk:
                return lk, c
        return None, None

    @staticmethod
    def at(points: list, size: int) -> float:
        """fabric-coll's reading of a curve: straight lines on log-log axes, flat past the largest size."""
        if not points or size < points[0][0]:
            return math.nan
        if size >= points[-1][0]:
            return points[-1][1]
        for (b0, g0), (b1, g1) in zip(points, points[1:]):
            if b0 <= size < b1:
                if size == b0:
                    return g0
                t = math.log(size / b0) / math.log(b1 / b0)
                return math.exp(math.log(g0) + t * (math.log(g1) - math.log(g0)))
        return math.nan

    def stamp(self, imp: Imported, setup: Setup) -> None:
        """Give every bandwidth row its expected_gbps, pct_expected and expected_from, and the run its notes."""
        if imp.table == "results/coll":
            self._coll(imp, setup)
        elif setup.nic_gbitps and setup.nodes != 1:
            self._rated(imp, setup)

    def _coll(self, imp: Imported, s: Setup) -> None:
        nccl = [r for r in imp.rows if r.get("backend") == "nccl"]
        if not nccl:
            return
        if s.nodes >= 2:
            self._network(imp, s, nccl)
            return
        if not s.link_gbps:
            imp.notes.append("uncalibrated: no NVLink figure for this GPU (give --link-gbps to judge it against the "
                             "healthy curves)")
            return
        missing = set()
        for r in nccl:
            link, c = self.curve("nvlink", s.link_gbps, r["ranks"], r["op"])
            value = self.at(c["points"], r["bytes"]) if c else math.nan
            if c and math.isfinite(value):
                _set(r, value, "calibrated")
            else:
                _set(r, s.link_gbps, "uncalibrated")
                missing.add(f"{r['op']} on {r['ranks']} GPUs")
        imp.notes.append(f"expected: healthy curves over NVLink {s.link_gbps:g} GB/s ({s.link_basis}), "
                         "configs/expected-curves.csv")
        if missing:
            imp.notes.append(f"uncalibrated: no healthy curve of {', '.join(sorted(missing))} over nvlink "
                             f"{s.link_gbps:g} GB/s (shown, not judged)")

    def _network(self, imp: Imported, s: Setup, rows: list) -> None:
        if not (s.nics_per_node and s.nic_gbitps):
            for r in rows:
                r["expected_from"] = "uncalibrated"
            imp.notes.append(f"uncalibrated: {s.nodes} nodes, but the NICs' count and rate are not known (give "
                             "--nics-per-node and --nic-rate, or an NCCL INFO log with the 'NET/IB : Using' line)")
            return
        line_rate = s.nics_per_node * s.nic_gbitps / 8
        ref = self.network.get(float(s.nic_gbitps))
        above = 0
        for r in rows:
            if r["busbw_gbps"] > line_rate:
                _set(r, line_rate, "not_network")
                above += 1
            elif ref:
                _set(r, s.nics_per_node * ref[0], "network")
            else:
                _set(r, line_rate, "uncalibrated")
        if ref:
            imp.notes.append(f"expected across {s.nodes} nodes: {s.nics_per_node} NICs x {ref[0]:g} GB/s per "
                             f"{s.nic_gbitps:g} Gb/s NIC = {s.nics_per_node * ref[0]:g} GB/s busbw, judged at the "
                             f"largest size from 1 GiB ({ref[1]})")
        else:
            imp.notes.append(f"uncalibrated: no healthy reference for {s.nic_gbitps:g} Gb/s NICs "
                             "(configs/expected-network.csv); the line rate is shown, not judged")
        if above:
            imp.notes.append(f"{above} row(s) {NOT_NETWORK} ({not_network_why(s.algorithms)})")

    def _rated(self, imp: Imported, s: Setup) -> None:
        rate = s.nic_gbitps / 8
        for r in imp.rows:
            gbps = _row_gbps(r)
            if math.isfinite(gbps):
                r["expected_gbps"], r["pct_expected"], r["expected_from"] = rate, 100 * gbps / rate, "rated"
        imp.notes.append(f"expected: the port's line rate, {s.nic_gbitps:g} Gb/s (--nic-rate)")


def not_network_why(algorithms: set) -> str:
    others = sorted(a for a in algorithms if a.upper() != "RING")
    if others:
        return (f"NCCL used {'/'.join(others)} (its log), which reduce inside each node before the network; run with "
                "NCCL_ALGO=RING to test the network")
    return NOT_NETWORK_WHY["ring" if algorithms else ""]


def _row_gbps(r: dict) -> float:
    if r.get("bw_mbps") is not None:
        return r["bw_mbps"] / 1e3
    if r.get("bw_avg_mibps") is not None:
        return r["bw_avg_mibps"] * 1048576 / 1e9
    if r.get("bw_avg_gbitps") is not None:
        return r["bw_avg_gbitps"] / 8
    return math.nan


def _set(row: dict, expected: float, kind: str) -> None:
    row["expected_gbps"], row["expected_from"] = expected, kind
    row["pct_expected"] = 100 * row["busbw_gbps"] / expected if expected else math.nan


def link_of(gpu_names: list) -> tuple:
    """(NVLink GB/s, basis) for GPUs the suite knows by name; (0, '') otherwise."""
    for name in gpu_names:
        for model, gbps in NVLINK_BY_GPU.items():
            if model in name:
                return gbps, f"{model}: 18 NVLink 4 links x 26.56 GB/s, from the GPU's name"
    return 0.0, ""
