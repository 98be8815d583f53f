#!/usr/bin/python3
"""What a duplex covering round costs against a simplex round (issue 60), on a host with cores to spare: fabric-sweep
--plan adaptive --metric p2p_bw --budget over NP fake hosts (--emulate-hosts 1), whose judging rounds are simplex
(NP / 2 disjoint pairs, each pair's two directions one after the other) and whose covering rounds are duplex (NP
pairs, each host sending to one host while it receives from another, then the reverse). Both kinds run in every run,
one after the other, so they are interleaved in time. Per run and kind: the median of the rounds' wall times
(/sweep/rounds wall_s, the `duplex` column; simplex rounds of NP / 2 pairs only, not the re-tests') and of their pairs'
figures (MB/s). The two kinds do not run the same test: a judging round's p2p_bw is held to a time budget after a
probe, a covering round's runs its full iterations, so the rounds' wall times say what the tool spends and the figures
what a byte costs (a flow of a duplex round against one alone: simplex MB/s / duplex MB/s). At the end, per transport
and size, both ratios of each run and their medians. A benchmark run, not a test:
  tests/perf/duplex_round_cost.py --bin .carry/bin [--np 8] [--repeats 3] [--sizes 128K,4M] [--transports vader,tcp]
Prints one line per run and a summary; --json FILE writes them."""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import h5py

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--np", type=int, default=8)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--sizes", default="128K,4M")
ap.add_argument("--transports", default="vader,tcp")
ap.add_argument("--budget", default="60s")
ap.add_argument("--json")
a = ap.parse_args()

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRANSPORTS = {"vader": ["--mca", "btl", "self,vader"],
              "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]}
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
work = pathlib.Path(tempfile.mkdtemp())
runs = []
for rep in range(a.repeats):
    for transport in a.transports.split(","):
        for size in a.sizes.split(","):
            out = work / f"{transport}-{size}-{rep}.h5"
            cmd = ["mpirun", "-np", str(a.np), "--oversubscribe", "--bind-to", "none"] + TRANSPORTS[transport] + [
                str(pathlib.Path(a.bin) / "fabric-sweep"), "--emulate-hosts", "1", "--plan", "adaptive", "--metric",
                "p2p_bw", "--sizes", size, "--budget", a.budget, "--seed", str(rep + 1), "-q", "--rules",
                str(ROOT / "configs" / "rigs" / "netns-sweep.ini"), "--output", str(out)]
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if r.returncode not in (0, 1):
                sys.exit(f"{transport} {size}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            with h5py.File(out, "r") as f:
                rounds = f["sweep/rounds"][()]
                pairs = f["sweep/pairs"][()]
            simplex = [float(x["wall_s"]) for x in rounds if x["duplex"] == 0 and x["pairs"] == a.np // 2]
            duplex = [float(x["wall_s"]) for x in rounds if x["duplex"] == 1]
            kind_of = {int(x["round"]): ("duplex" if x["duplex"] == 1 else
                                         "simplex" if x["pairs"] == a.np // 2 else "other") for x in rounds}
            figures = {k: [float(x["value"]) for x in pairs if kind_of.get(int(x["round"])) == k]
                       for k in ("simplex", "duplex")}
            run = {"transport": transport, "size": size, "repeat": rep, "simplex_rounds": len(simplex),
                   "duplex_rounds": len(duplex),
                   "simplex_median_s": statistics.median(simplex) if simplex else None,
                   "duplex_median_s": statistics.median(duplex) if duplex else None}
            for k, v in figures.items():
                run[f"{k}_mbs"] = statistics.median(v) if v else None
            if simplex and duplex:
                run["ratio"] = run["duplex_median_s"] / run["simplex_median_s"]
            if figures["simplex"] and figures["duplex"]:
                run["byte_ratio"] = run["simplex_mbs"] / run["duplex_mbs"]
            runs.append(run)
            print(json.dumps(run), flush=True)
summary = {}
for transport in a.transports.split(","):
    for size in a.sizes.split(","):
        mine = [r for r in runs if r["transport"] == transport and r["size"] == size]
        for key in ("ratio", "byte_ratio"):
            ratios = [r[key] for r in mine if key in r]
            if ratios:
                summary.setdefault(f"{transport} {size}", {})[key] = {"median": statistics.median(ratios),
                                                                      "runs": ratios}
print(json.dumps(summary, indent=1))
if a.json:
    pathlib.Path(a.json).write_text(json.dumps({"np": a.np, "runs": runs, "summary": summary}, indent=1))
