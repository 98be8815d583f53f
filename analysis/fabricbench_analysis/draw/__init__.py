"""draw: the pictures (matplotlib, Agg, files only): plots.py, a sweep's heat maps and mesh (sweep_plots.py), each
figure made into a file (figure_file.py). Imports load, and judge's rails (the verdicts mark what is drawn)."""
