"""load: a fabricbench HDF5 file read into pandas (results.py: Column, Run, load) and the files fabric-report opens and
writes (files.py). The bottom layer: it imports nothing else of fabricbench_analysis. `fabricbench_analysis.load` is
the function (the public API), not this package: write `from fabricbench_analysis.load.results import Run` or `from
fabricbench_analysis.load import files`; `import fabricbench_analysis.load.results as r` fails."""
