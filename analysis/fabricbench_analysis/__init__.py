"""Read fabricbench HDF5 results into pandas, and export them for Excel. Four parts, each importing only those
before it: load (HDF5 -> pandas, the files read and written), judge (the answer, comparisons and baselines, rails),
draw (the pictures) and export (Excel, CSV, JSON lines, HTML, Prometheus); cli.py wires fabric-report to them.

    import fabricbench_analysis as fa
    run = fa.load("fabricbench-p2p-20261121T120000Z.h5")
    run.attrs["status"], run.tables["results/p2p"], run.tables["samples/p2p"]
    run.columns["results/p2p"]["bw_mbps"].unit        # "MB/s"; .role, .better, .headline, .series
    run.headlines("results/p2p"), run.series("results/p2p")  # ["latency_us", "bw_mbps"], "test"
    run.matrices["sweep/matrices/p2p_bw"]             # labelled by host
"""
from .export.csv_dir import to_csv_dir
from .export.excel import to_excel
from .read.results import Column, Run, load

__all__ = ["Column", "Run", "load", "to_excel", "to_csv_dir"]

# The module paths docs/analysis.md gave before the package was split (issue 33), kept working for code written
# against them: `from fabricbench_analysis import compare, plots, rails`. Imported when asked for, not up front
# (plots imports matplotlib).
_MOVED = {"compare": ".judge.compare", "rails": ".judge.rails", "plots": ".draw.plots"}


def __getattr__(name):
    if name in _MOVED:
        import importlib

        return importlib.import_module(_MOVED[name], __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
