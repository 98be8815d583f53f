"""What the pictures draw where and mark how, without matplotlib: a sweep matrix's heat map layout (HeatLayout,
heat_layout: hosts grouped by leaf switch, the hosts and leaves a verdict names, the hosts no test reached), the hosts
a verdict names, the colour of an untested host, a short list of names. Shared by plots.py and sweep_plots.py, and by
the Excel workbook (export/excel.py), which lays out a sweep's matrices as the heat maps do and must not import
matplotlib to do so."""
from __future__ import annotations

import dataclasses

from ..judge import rails


def _verdict_hosts(run, rail=None, metric=None) -> set:
    """The hosts named in a sweep verdict; with `rail`, in the verdicts about that rail or about no one rail; with
    `metric`, in that metric's verdicts (a latency verdict marks no bandwidth plot)."""
    return rails.verdict_hosts(run, rail, metric)


UNTESTED_COLOR = "darkgray"  # a host no pair test reached: not measured, neither good (black) nor bad (red)


@dataclasses.dataclass
class HeatLayout:
    """How the heat map of one sweep matrix is drawn: which metric and rail, the hosts in drawing order, the leaf
    switches (name, first index, end index) and the indices where a new leaf begins (a line before each), the hosts
    and leaves named in a verdict about that rail and metric (marked `*`, in red), the hosts no test reached
    (grey)."""
    metric: str
    rail: object            # int, or None for a matrix without rails
    hosts: list
    leaves: list
    boundaries: list
    marked_hosts: set
    marked_leaves: set
    untested: set = dataclasses.field(default_factory=set)


def heat_layout(run, name: str) -> HeatLayout:
    """The layout of the heat map of /`name` (sweep/matrices/<metric> or <metric>_rail<r>): hosts in the matrix's
    order (the job's) without a topology; with /sweep/topology grouped by that rail's leaves (rails.leaf_order)."""
    metric, rail = rails.matrix_rail(name.rsplit("/", 1)[1])
    matrix = run.matrices[name]
    hosts = [str(h) for h in matrix.index]
    order = rails.leaf_order(run, hosts, rail)
    if order.grouped and sorted(order.hosts) != sorted(str(c) for c in matrix.columns):
        order = rails.LeafOrder(hosts, [], [])  # rows and columns not the same hosts: drawn as stored
    return HeatLayout(metric, rail, order.hosts, order.leaves, order.boundaries, _verdict_hosts(run, rail, metric),
                      rails.verdict_switches(run, rail, metric) if order.grouped else set(),
                      set(rails.untested_hosts(run)))


def _few(names: list, most: int = 8) -> str:
    """'a, b', or the first `most` names and how many more."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
