#!/usr/bin/env python3
"""Healthy curves for configs/expected-curves.csv from the rows tests/perf/expected_gpu.py (fabric-coll) and
tests/perf/osu_xccl_interleaved.py (fabric-p2p --backend nccl: nccl_p2p_bw, nccl_p2p_bibw) wrote (rows.csv of one
or more calls on the same machine): per (ranks, op, size) the median over the healthy fabric-coll runs of each of
in-place and out-of-place, and the lower of the two. Prints the CSV (header comments and all) to stdout.

  tests/perf/expected_curves.py --source "4 x H200 NV18, NCCL 2.28.3, 2026-11-26" ROWS.csv... > configs/expected-curves.csv
Also --fixture FILE: the healthy and degraded rows from 1 MiB up (what the unit tests hold the curves against)."""
import argparse
import csv
import statistics
from collections import defaultdict

HEADER = """# Healthy bus bandwidth (GB/s, nccl-tests' busbw) per op and size, measured with fabric-coll --backend nccl on lent
# GPU machines by tests/perf/expected_gpu.py and made into curves by tests/perf/expected_curves.py (docs/expected.md).
# One curve per (path, link_gbps, ranks, op): path and link_gbps are the GPU link the doctor found (NVLink: links x
# per-link speed), ranks one per GPU. Each figure is the median over the healthy runs of in-place and of out-of-place,
# the lower of the two.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--source", required=True)
    ap.add_argument("--path", default="nvlink")
    ap.add_argument("--fixture")
    a = ap.parse_args()
    rows = []
    for k, name in enumerate(a.rows):
        with open(name) as f:
            for r in csv.DictReader(f):
                r["run"] = f"{k}-{r['run']}"
                rows.append(r)
    values = defaultdict(list)
    link = defaultdict(set)  # (ranks, op) -> the link figure its rows were held against (bibw: both directions')
    for r in rows:
        if r["case"] == "healthy" and r["tool"] in ("fabric-coll", "fabric-p2p") and r["busbw_gbps"]:
            values[(int(r["ranks"]), r["op"], int(r["bytes"]), r["in_place"])].append(float(r["busbw_gbps"]))
            if r["expected_gbps"]:
                link[(int(r["ranks"]), r["op"])].add(round(float(r["expected_gbps"]), 3))
    for key, figures in link.items():
        assert len(figures) == 1, f"{key}: one GPU link figure wanted, got {figures}"
    curve = defaultdict(list)
    for (ranks, op, size, _), v in values.items():
        curve[(ranks, op, size)].append(statistics.median(v))
    print(HEADER + "path,link_gbps,ranks,op,bytes,gbps,source")
    for (ranks, op, size), v in sorted(curve.items()):
        if min(v) > 0:
            print(f'{a.path},{next(iter(link[(ranks, op)]))},{ranks},{op},{size},{min(v):.6g},"{a.source}"')
    if a.fixture:
        with open(a.fixture, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["case", "tool", "ranks", "run", "op", "in_place", "bytes", "busbw_gbps"])
            for r in rows:
                if int(r["bytes"]) >= 1 << 20 and r["busbw_gbps"]:
                    w.writerow([r["case"], r["tool"], r["ranks"], r["run"], r["op"], r["in_place"], r["bytes"],
                                f"{float(r['busbw_gbps']):.6g}"])


if __name__ == "__main__":
    main()
