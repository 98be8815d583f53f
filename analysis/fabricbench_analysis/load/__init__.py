"""load: a fabricbench HDF5 file read into pandas (results.py: Column, Run, load, the columns' declarations) and the
files fabric-report opens and writes (files.py). The bottom layer: it imports nothing else of fabricbench_analysis.
`fabricbench_analysis.load` is the function (the public API), so import these modules by their full name:
`from fabricbench_analysis.load.results import Run`."""
