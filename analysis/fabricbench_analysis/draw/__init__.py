"""draw: the pictures (matplotlib, Agg, files only): plots.py, a sweep's heat maps and mesh (sweep_plots.py), a
slow-rank report's ranks against time (slow_plots.py), each figure made into a file (figure_file.py); layout.py, what
they draw where and mark how, without matplotlib (Excel uses it). Imports load, and judge's rails (the verdicts mark
what is drawn). Nothing here: draw.layout imports no matplotlib."""
