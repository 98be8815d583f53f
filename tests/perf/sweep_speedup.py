#!/usr/bin/python3
"""fabric-sweep's concurrency and overhead on the emulated cluster (tests/rigs/netns_cluster.sh; needs root).

1. Speed-up: the all-pairs sweep over 4 hosts (3 rounds of 2 pairs at once) against the same pair tests one after
   another (--sequential), interleaved REPEATS times; ratio of the medians of the rounds' wall time (ideal N/2 = 2).
2. Overhead: everything in a round but its longest pair test (communicator splits, idle barrier, gathering, rank
   0 writing the round's rows in one batch), from /sweep/rounds, at each of --hosts (default 4, 8, 16): the sweep's
   wall time against rounds x longest pair test, and rank 0's overhead per round.
Every host is shaped to RATE so that pair tests are bound by the (emulated) network, not by this machine's 2 cores,
which concurrent CPU-bound TCP pairs would otherwise just share. A benchmark run, not a test.
  tests/perf/sweep_speedup.py [--build build] [--repeats 3] [--rate 200mbit] [--hosts 4,8,16]
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

RIG = ROOT / "tests" / "rigs" / "netns_cluster.sh"
ARGS = ["--sizes", "128K", "-W", "4", "-n", "4", "-w", "1", "--metric", "p2p_bw", "--retest", "0", "-q", "--force",
        "--rules", str(ROOT / "configs" / "rigs" / "netns-sweep.ini")]


def sweep(build, rig_id, hosts, out, extra=()):
    cmd = [str(RIG), "mpirun", rig_id, str(len(hosts)), ",".join(hosts), "--", str(build / "benchmarks" / "fabric-sweep"),
           "--output", str(out)] + ARGS + list(extra)
    subprocess.run(["timeout", "600"] + cmd, capture_output=True, text=True)
    rounds = fabricbench_analysis.load(out).tables["sweep/rounds"]
    return rounds[rounds.kind == "sweep"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rate", default="200mbit")
    p.add_argument("--hosts", default="4,8,16")
    a = p.parse_args()
    counts = [int(n) for n in a.hosts.split(",")]
    if os.geteuid() != 0:
        sys.exit("sweep_speedup.py needs root (network namespaces)")
    build = pathlib.Path(a.build)
    rig_id, results = f"p{os.getpid() % 100000}", {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in counts:
            subprocess.run([str(RIG), "down", rig_id], capture_output=True)
            subprocess.run([str(RIG), "up", rig_id, "120", str(n)], check=True)
            hosts = [f"{rig_id}-h{i}" for i in range(1, n + 1)]
            for h in hosts:
                subprocess.run([str(RIG), "shape-host", rig_id, h, a.rate], check=True)
            concurrent, sequential, overhead, tests = [], [], [], {"concurrent": [], "sequential": []}
            for i in range(a.repeats):
                r = sweep(build, rig_id, hosts, pathlib.Path(scratch) / f"c{n}-{i}.h5")
                concurrent.append(r.wall_s.sum())
                tests["concurrent"].append(r.longest_test_s.mean())
                tests.setdefault("longest_sum", []).append(r.longest_test_s.sum())
                overhead.append((r.overhead_s.sum(), r.overhead_s.mean(), len(r)))
                if n == 4:
                    s = sweep(build, rig_id, hosts, pathlib.Path(scratch) / f"s{n}-{i}.h5", ["--sequential"])
                    sequential.append(s.wall_s.sum())
                    tests["sequential"].append(s.longest_test_s.mean())
            subprocess.run([str(RIG), "down", rig_id], capture_output=True)
            results[n] = (concurrent, sequential, overhead, tests)
    if 4 not in results:
        results[4] = ([1], [1], [(0, 0, 0)], {"sequential": [0], "concurrent": [0]})
    c4, s4, o4, t4 = results[4]
    print(f"4 hosts, {a.rate} per host: all-pairs rounds {statistics.median(c4):.3f} s (runs {', '.join(f'{x:.3f}' for x in c4)}); "
          f"one pair at a time {statistics.median(s4):.3f} s (runs {', '.join(f'{x:.3f}' for x in s4)}); "
          f"speed-up {statistics.median(s4) / statistics.median(c4):.2f} (ideal 2)")
    print(f"4 hosts: a pair test takes {statistics.median(t4['sequential']) * 1e3:.0f} ms alone and the longest of a round "
          f"{statistics.median(t4['concurrent']) * 1e3:.0f} ms when 2 pairs run at once (the 2 cores and the emulated "
          f"links are shared)")
    for n in counts:
        o = results[n][2]
        longest = statistics.median(results[n][3]["longest_sum"])
        wall = statistics.median(results[n][0])
        print(f"{n} hosts: {o[0][2]} rounds; wall time median {wall:.3f} s against rounds x longest pair test "
              f"{longest:.3f} s (ratio {wall / longest:.3f}); rank 0's overhead per round median "
              f"{statistics.median(x[1] for x in o) * 1e3:.1f} ms, per sweep {statistics.median(x[0] for x in o) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
