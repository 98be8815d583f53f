"""read: a fabricbench HDF5 file read into pandas (results.py: Column, Run, load) and the files fabric-report opens and
writes (files.py). The bottom layer: it imports nothing else of fabricbench_analysis."""
