#!/usr/bin/env python3
"""Small NCCL operations in CUDA graphs, three ways, interleaved (issue 14): fabric-coll --graph, nccl-tests -G, and
tests/perf/nccl_peer.cpp (a harness-free program: cudaMalloc buffers, no rotation, a default communicator) with
GRAPH set, once with the graph's first launch untimed (as fabric-coll) and once timed (as nccl-tests). If the
harness-free figure sits with one tool, the other tool's harness adds what differs. A benchmark run, not a test.

  tests/perf/nccl_graph_three_way.py --bin DIR --peer NCCL_TESTS --nccl-peer PATH [--repeats 3] [--launches 100]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
import fabricbench_analysis  # noqa: E402

OPS = ["all_reduce", "all_gather", "reduce_scatter"]
SIZES = [8 * 4 ** k for k in range(10)]  # 8 B .. 2 MiB


def run(cmd, env=None):
    r = subprocess.run(["timeout", "300", "mpirun", "-np", "2", "--bind-to", "none"] + cmd, capture_output=True,
                       text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        raise SystemExit(f"{cmd}: exit {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, type=pathlib.Path)
    p.add_argument("--peer", required=True, type=pathlib.Path)
    p.add_argument("--nccl-peer", required=True, type=pathlib.Path)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--launches", type=int, default=100)
    a = p.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    lo, hi, g = SIZES[0], SIZES[-1], str(a.launches)
    times = {}  # (tool, op, bytes) -> [us]

    def add(tool, op, size, us):
        times.setdefault((tool, op, size), []).append(us)

    with tempfile.TemporaryDirectory() as scratch:
        out = pathlib.Path(scratch) / "c.h5"
        for k in range(a.repeats):
            steps = ["fabric-coll", "nccl-tests", "peer", "peer-upload-timed"]
            for tool in steps if k % 2 == 0 else steps[::-1]:
                if tool == "fabric-coll":
                    run([str(a.bin / "fabric-coll"), "--op", ",".join(OPS), "-b", str(lo), "-e", str(hi), "-f", "4",
                         "-n", "200", "-w", "20", "-G", g, "--in-place", "0", "-q", "--no-checks", "--force",
                         "--output", str(out)])
                    for r in fabricbench_analysis.load(out).tables["results/coll"].itertuples():
                        add(tool, r.op, int(r.bytes), r.time_us)
                elif tool == "nccl-tests":
                    for op in OPS:
                        for line in run([str(a.peer / f"{op}_perf"), "-b", str(lo), "-e", str(hi), "-f", "4", "-g", "1",
                                         "-n", "200", "-w", "20", "-G", g]).splitlines():
                            f = line.split()
                            if len(f) >= 13 and f[0].isdigit():
                                add(tool, op, int(f[0]), float(f[5]))
                else:
                    env = {"GRAPH": g, **({"GRAPH_UPLOAD_TIMED": "1"} if tool == "peer-upload-timed" else {})}
                    for line in run([str(a.nccl_peer), ",".join(OPS), str(lo), str(hi), "200", "20", "4"], env).splitlines():
                        f = line.split()
                        if len(f) == 7 and f[0] in OPS:
                            add(tool, f[0], int(f[2]), float(f[3]))
            print(f"repeat {k + 1} of {a.repeats} done", flush=True)
    tools = ["fabric-coll", "nccl-tests", "peer", "peer-upload-timed"]
    print(f"\n2 GPUs, -n 200 -w 20, graph launched {g} times, {a.repeats} interleaved repeats; median time per operation "
          "in us (out of place)\n")
    print("| op | bytes | " + " | ".join(tools) + " | nccl-tests / fabric-coll | peer / fabric-coll |")
    print("|---|---|" + "---|" * (len(tools) + 2))
    for op in OPS:
        for size in SIZES:
            m = [statistics.median(times[(t, op, size)]) if (t, op, size) in times else float("nan") for t in tools]
            print(f"| {op} | {size} | " + " | ".join(f"{x:.3f}" for x in m) + f" | {m[1] / m[0]:.3f} | {m[2] / m[0]:.3f} |")


if __name__ == "__main__":
    main()
