#!/usr/bin/python3
"""Where a GPU sweep round's time goes (issue 33), before and after a change: fabric-sweep over one GPU per fake host
(--emulate-hosts 1) with --metric allreduce,sendrecv --sizes 64M, each binary run REPEATS times,
interleaved. Per run: the rounds' wall time (/sweep/rounds wall_s, the pair tests' longest measure) and the pair rows'
setup_s and measure_s; at the end, the median round against the median longest pair test, per binary, and the ratio.
A benchmark run, not a test. On the GPU machine:
  tests/perf/sweep_round_cost.py --before .carry/before/fabric-sweep --after .carry/bin/fabric-sweep [--np 4]"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import h5py

ap = argparse.ArgumentParser()
ap.add_argument("--before", required=True)
ap.add_argument("--after", required=True)
ap.add_argument("--np", type=int, default=4)
ap.add_argument("--repeats", type=int, default=3)
a = ap.parse_args()

ARGS = ["--emulate-hosts", "1", "--metric", "allreduce,sendrecv", "--backend", "nccl", "--sizes", "64M", "--retest", "0",
        "-q", "--force"]
env = dict(os.environ)
runs = {"before": [], "after": []}
work = pathlib.Path(tempfile.mkdtemp())
for rep in range(a.repeats):
    for name, exe in (("before", a.before), ("after", a.after)):
        out = work / f"{name}{rep}.h5"
        cmd = ["mpirun", "-np", str(a.np), "--oversubscribe", "--bind-to", "none", "-x", "LD_LIBRARY_PATH",
               "-x", "NCCL_NVLS_ENABLE", exe] + ARGS + ["--output", str(out)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if r.returncode not in (0, 1):
            sys.exit(f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        with h5py.File(out, "r") as f:
            rounds = f["sweep/rounds"][()]
            pairs = f["sweep/pairs"][()]
        wall = list(rounds["wall_s"])
        longest = list(rounds["longest_test_s"])
        runs[name].append((wall, longest))
        cols = rounds.dtype.names
        extra = {c: round(float(sum(rounds[c])), 3) for c in cols if c.startswith("r0_") or c in ("overhead_s", "setup_s")}
        print(f"{name} #{rep}: rounds wall {[round(w, 2) for w in wall]} s, longest test {[round(x, 2) for x in longest]} s, "
              f"pair rows setup {sum(pairs['setup_s']):.2f} s measure {sum(pairs['measure_s']):.2f} s over {len(pairs)} rows; "
              f"sums {extra}", flush=True)
for name, rs in runs.items():
    wall = statistics.median(w for ws, _ in rs for w in ws)
    longest = statistics.median(x for _, xs in rs for x in xs)
    print(f"{name}: median round {wall:.3f} s, median longest pair test {longest:.3f} s, the rest {wall - longest:.3f} s")
b = statistics.median(w for ws, _ in runs["before"] for w in ws)
af = statistics.median(w for ws, _ in runs["after"] for w in ws)
print(f"after/before, median round: {af / b:.3f}")
