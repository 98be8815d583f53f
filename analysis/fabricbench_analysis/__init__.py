"""Read fabricbench HDF5 results into pandas, and export them for Excel.

    import fabricbench_analysis as fa
    run = fa.load("fabricbench-p2p-20261121T120000Z.h5")
    run.attrs["status"], run.tables["results/p2p"], run.tables["samples/p2p"]
    run.columns["results/p2p"]["bw_mbps"].unit        # "MB/s"; .role, .better, .headline, .series
    run.headlines("results/p2p"), run.series("results/p2p")  # ["latency_us", "bw_mbps"], "test"
    run.matrices["sweep/matrices/p2p_bw"]             # labelled by host
"""
from .load.results import Column, Run, load, to_excel, to_csv_dir

__all__ = ["Column", "Run", "load", "to_excel", "to_csv_dir"]
