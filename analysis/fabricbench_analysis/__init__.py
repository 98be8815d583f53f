"""Read fabricbench HDF5 results into pandas, and export them for Excel. Five parts, each importing only those
before it: read (HDF5 -> pandas, the files read and written), judge (the answer, comparisons and baselines, rails),
draw (the pictures), export (Excel, CSV, JSON lines, HTML, Prometheus) and imports (nccl-tests, OSU and perftest
output as fabricbench files; it imports read and judge); cli.py wires fabric-report to them. A part's modules are
reached by their paths (fabricbench_analysis.judge.compare, fabricbench_analysis.draw.plots).

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
