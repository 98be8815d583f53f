#!/usr/bin/python3
"""Harness cost of fabric-p2p: fabric-p2p against a bare MPI loop (tests/perf/bare_p2p.cpp), interleaved
REPEATS times each, over shared memory and TCP loopback, at 8 B, 64 KiB and 4 MiB. Prints ratios of medians:
latency ratio = fabric / bare (goal <= 1.03), bandwidth ratio = fabric / bare (goal >= 0.97).

  tests/perf/p2p_overhead.py [--build build] [--repeats 5]
A benchmark run, not a test: the machine is shared and noisy, so only the interleaved ratios mean anything.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "analysis"))
import fabricbench_analysis  # noqa: E402

TRANSPORTS = {
    "shm": ["--mca", "btl", "self,vader"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
# size -> (latency iterations, bandwidth iterations); warm-up is a tenth.
SIZES = {8: (20000, 400), 65536: (4000, 100), 4 << 20: (200, 10)}
WINDOW = 64


def mpirun(transport, argv):
    cmd = ["timeout", "300", "mpirun", "-np", "2", "--bind-to", "core"] + TRANSPORTS[transport] + argv
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def fabric(build, transport, test, size, iters, scratch):
    out = pathlib.Path(scratch) / f"{transport}-{test}-{size}.h5"
    mpirun(transport, [str(build / "benchmarks" / "fabric-p2p"), "--test", test, "--sizes", str(size), "-n", str(iters),
                       "-w", str(max(iters // 10, 1)), "-W", str(WINDOW), "-q", "--force", "--output", str(out)])
    row = fabricbench_analysis.load(out).tables["results/p2p"].iloc[0]
    return row["latency_us"] if test == "latency" else row["bw_mbps"]


def bare(build, transport, test, size, iters):
    return float(mpirun(transport, [str(build / "tests" / "bare_p2p"), test, str(size), str(iters),
                                    str(max(iters // 10, 1)), str(WINDOW)]).strip())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(pathlib.Path(__file__).resolve().parents[2] / "build"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(f"{'transport':9} {'test':8} {'bytes':>8} {'fabric_med':>11} {'bare_med':>10} {'ratio':>7}  goal")
    with tempfile.TemporaryDirectory() as scratch:
        for transport in TRANSPORTS:
            for test in ("latency", "bw"):
                for size, (lat_iters, bw_iters) in SIZES.items():
                    iters = lat_iters if test == "latency" else bw_iters
                    ours, theirs = [], []
                    for _ in range(args.repeats):  # interleaved: fabric, bare, fabric, bare ...
                        ours.append(fabric(build, transport, test, size, iters, scratch))
                        theirs.append(bare(build, transport, test, size, iters))
                    ratio = statistics.median(ours) / statistics.median(theirs)
                    ok = ratio <= 1.03 if test == "latency" else ratio >= 0.97
                    goal = "<= 1.03" if test == "latency" else ">= 0.97"
                    print(f"{transport:9} {test:8} {size:8} {statistics.median(ours):11.3f} "
                          f"{statistics.median(theirs):10.3f} {ratio:7.3f}  {goal} {'ok' if ok else 'MISSED'}",
                          flush=True)


if __name__ == "__main__":
    main()
