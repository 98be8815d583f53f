#!/usr/bin/env python3
"""Interleaved repeats of fabric-coll and the harness-free peer (tests/perf/nccl_peer.cpp) at the points where one
run of nccl_reference.py is too noisy to judge: all_reduce at 8 B (time) and all_gather, reduce_scatter, alltoall at
16 MiB (bus bandwidth), on 4 GPUs. Each repeat runs every variant once, in turn; the table gives the medians and
the ratio of medians. Variants with NCCL_RUNTIME_CONNECT=0 (NCCL connects every algorithm and protocol at
communicator creation instead of at first use) show whether a size's first call paying connection setup explains a
dip. A benchmark run, not a test.
  tests/perf/nccl_repeats.py --bin DIR [--out DIR] [--repeats 5]
"""
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fabricbench_analysis  # noqa: E402
import nccl_perf  # noqa: E402

OPS_16M = ["all_gather", "reduce_scatter", "alltoall"]


def sh(cmd, env=None):
    r = subprocess.run(["timeout", "300"] + cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def ours(bin_dir, out, args, env=None):
    """{(op, bytes): (time_us, busbw)} from one fabric-coll run on 4 GPUs."""
    sh(["mpirun", "-np", "4", "--bind-to", "none", str(bin_dir / "fabric-coll"), "--backend", "nccl", "--in-place", "0",
        "-q", "--force", "--output", str(out)] + args, env)
    t = fabricbench_analysis.load(out).tables["results/coll"]
    return {(r.op, int(r.bytes)): (r.time_us, r.busbw_gbps) for r in t.itertuples()}


def main():
    a, bin_dir, out_dir = nccl_perf.arguments(__doc__, repeats=dict(type=int, default=5))
    lazy_off = {"NCCL_RUNTIME_CONNECT": "0"}
    small, mid = 8, 16 << 20
    # variant -> function of the repeat index returning {(op, bytes): (time_us, busbw)}
    variants = {
        "ours 8B": lambda i: ours(bin_dir, out_dir / "r8.h5", ["--op", "all_reduce", "--sizes", "8"]),
        "ours 8B graph": lambda i: ours(bin_dir, out_dir / "r8g.h5", ["--op", "all_reduce", "--sizes", "8", "-G", "1"]),
        "peer 8B per-GPU": lambda i: nccl_perf.peer(bin_dir, ["all_reduce"], 4, small, small, True),
        "peer 8B one-process": lambda i: nccl_perf.peer(bin_dir, ["all_reduce"], 4, small, small, False),
        "ours 16M": lambda i: ours(bin_dir, out_dir / "r16.h5", ["--op", ",".join(OPS_16M), "--sizes", "1M,16M"]),
        "peer 16M per-GPU": lambda i: nccl_perf.peer(bin_dir, OPS_16M, 4, 1 << 20, mid, True, factor=16),
        "ours 16M connect-at-init": lambda i: ours(bin_dir, out_dir / "r16c.h5",
                                                   ["--op", ",".join(OPS_16M), "--sizes", "1M,16M"], lazy_off),
        "peer 16M per-GPU connect-at-init": lambda i: nccl_perf.peer(bin_dir, OPS_16M, 4, 1 << 20, mid, True, factor=16,
                                                                     env=lazy_off),
    }
    seen = {name: [] for name in variants}
    for i in range(a.repeats):
        for name, run in variants.items():
            seen[name].append(run(i))
            print(f"repeat {i + 1}/{a.repeats}: {name}", flush=True)

    def series(name, key, field):
        return [r[key][field] for r in seen[name]]

    lines = ["| point | variant A | variant B | A values | B values | median A | median B | A / B |", "|---|---|---|---|---|---|---|---|"]

    def compare(point, a_name, b_name, key, field):
        xa, xb = series(a_name, key, field), series(b_name, key, field)
        ma, mb = statistics.median(xa), statistics.median(xb)
        vals = lambda xs: ", ".join(f"{x:.2f}" if field == 0 else f"{x:.1f}" for x in xs)  # noqa: E731
        lines.append(f"| {point} | {a_name} | {b_name} | {vals(xa)} | {vals(xb)} | {ma:.2f} | {mb:.2f} | {ma / mb:.3f} |")

    compare("all_reduce 8 B time (us)", "ours 8B", "peer 8B per-GPU", ("all_reduce", small), 0)
    compare("all_reduce 8 B time (us)", "ours 8B graph", "peer 8B per-GPU", ("all_reduce", small), 0)
    compare("all_reduce 8 B time (us)", "peer 8B one-process", "peer 8B per-GPU", ("all_reduce", small), 0)
    for op in OPS_16M:
        compare(f"{op} 16 MiB busbw (GB/s)", "ours 16M", "peer 16M per-GPU", (op, mid), 1)
        compare(f"{op} 16 MiB busbw (GB/s)", "ours 16M connect-at-init", "peer 16M per-GPU connect-at-init", (op, mid), 1)
        compare(f"{op} 16 MiB busbw (GB/s)", "ours 16M connect-at-init", "ours 16M", (op, mid), 1)
    text = "\n".join(lines)
    print(text)
    (out_dir / "nccl_repeats.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
