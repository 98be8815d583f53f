#!/usr/bin/python3
"""fabric-sweep --pattern shift against mpiGraph (LLNL/mpiGraph), interleaved on the emulated cluster
(tests/rigs/netns_cluster.sh; needs root). For each host count the rig comes up once; for each size every repeat
runs fabric-sweep and each mpiGraph binary once, through the rig's mpirun wrapper (the same MPI settings for all),
in an order that flips every repeat. A run's figure is the median over its N(N-1) ordered pairs: fabric-sweep's
/sweep/pairs value (MB/s = 1e6 B/s), mpiGraph's send matrix (2^20 B/s, converted to 1e6 B/s here). Prints, per
host count and size, each tool's median of the runs' medians, its spread ((max - min) / median) and the ratio of
medians to the first mpiGraph binary. A benchmark run, not a test; writes OUT/shift_vs_mpigraph.md and every
run's value in OUT/shift_vs_mpigraph.json.

  tests/perf/shift_vs_mpigraph.py --mpigraph PATH [--variant NAME=PATH ...] [--build build] [--sweep NAME=BUILD ...]
      [--hosts 4,8] [--sizes 65536,1048576,4194304] [--window 10] [--iters 10] [--warmup 0] [--repeats 3]
      [--rig mgcmp] [--net 131] [--out DIR]
(PATH: mpicc -O2 -o mpiGraph mpiGraph.c; a --variant is another binary printing mpiGraph's output, e.g. a private
copy timed differently; a --sweep is another build of fabric-sweep, e.g. the one before a change; each column is
named NAME.)
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
import fabricbench_analysis  # noqa: E402

RIG = ROOT / "tests" / "rigs" / "netns_cluster.sh"
MIB_TO_MB = 1048576 / 1e6  # mpiGraph's MB is 2^20 bytes


def rig(*args):
    subprocess.run([str(RIG)] + [str(a) for a in args], check=True, capture_output=True, text=True)


def mpirun(name, hosts, argv, ok=(0,)):
    names = ",".join(f"{name}-h{i}" for i in range(1, hosts + 1))
    cmd = ["timeout", "300", str(RIG), "mpirun", name, str(hosts), names, "--"] + [str(a) for a in argv]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)
    return r.stdout


def mpigraph(binary, name, hosts, size, a):
    """Every off-diagonal entry of mpiGraph's send matrix, in MB/s (1e6 B/s)."""
    out = mpirun(name, hosts, [binary, size, a.iters, a.window])  # mpiGraph's order: size, times, window
    values, in_send = [], False
    for line in out.splitlines():
        if line.startswith("Send\t"):
            in_send = True
        elif in_send and " to\t" in line:
            cells = line.split("\t")[1:]
            values += [float(c) * MIB_TO_MB for c in cells if c.strip() and float(c) != 0.0]
        elif in_send and line.strip() == "":
            in_send = False if values else in_send
    if len(values) != hosts * (hosts - 1):
        raise RuntimeError(f"{binary}: {len(values)} send values for {hosts} hosts:\n{out}")
    return values


def sweep(build, name, hosts, size, a, scratch):
    out = pathlib.Path(scratch) / f"sweep-{hosts}-{size}.h5"
    mpirun(name, hosts, [build / "benchmarks" / "fabric-sweep", "--pattern", "shift", "--metric", "p2p_bw",
                         "--sizes", size, "-W", a.window, "-n", a.iters, "-w", a.warmup, "--retest", "0",
                         "--output", out, "--force", "-q"], ok=(0, 1))  # 1: a verdict (a noisy run); its figures count
    rows = fabricbench_analysis.load(out).tables["sweep/pairs"]
    values = list(rows[rows.kind == "sweep"].value)
    if len(values) != hosts * (hosts - 1):
        raise RuntimeError(f"fabric-sweep: {len(values)} pair values for {hosts} hosts")
    return values


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpigraph", required=True, type=pathlib.Path)
    p.add_argument("--variant", action="append", default=[], help="NAME=PATH: another mpiGraph-like binary")
    p.add_argument("--build", default=ROOT / "build", type=pathlib.Path)
    p.add_argument("--sweep", action="append", default=[], help="NAME=BUILD: another fabric-sweep build folder")
    p.add_argument("--hosts", default="4")
    p.add_argument("--sizes", default="65536,1048576,4194304")
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=0, help="fabric-sweep -w (mpiGraph has none)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rig", default="mgcmp")
    p.add_argument("--net", type=int, default=131)
    p.add_argument("--out", default=pathlib.Path("."), type=pathlib.Path)
    a = p.parse_args()
    peers = [("mpiGraph", a.mpigraph)] + [tuple(v.split("=", 1)) for v in a.variant]
    builds = {"fabric-sweep": a.build} | {n: pathlib.Path(d) for n, d in (v.split("=", 1) for v in a.sweep)}
    tools = list(builds) + [n for n, _ in peers]
    raw = {}  # "hosts/size" -> tool -> every run's median over pairs, in order
    lines = [f"window {a.window}, iterations {a.iters}, fabric-sweep -w {a.warmup}, {a.repeats} interleaved repeats; "
             "each run's median over its ordered pairs, in MB/s (1e6 B/s)\n",
             "| hosts | size | " + " | ".join(tools) + " | " + " | ".join(f"{t} spread" for t in tools) + " | " +
             " | ".join(f"{t} / mpiGraph" for t in tools if t != "mpiGraph") + " |",
             "|---" * (2 + 2 * len(tools) + len(tools) - 1) + "|"]
    with tempfile.TemporaryDirectory() as scratch:
        for hosts in (int(h) for h in a.hosts.split(",")):
            rig("down", a.rig)
            rig("up", a.rig, a.net, hosts)
            try:
                for size in (int(s) for s in a.sizes.split(",")):
                    runs = {t: [] for t in tools}
                    for r in range(a.repeats):
                        steps = tools if r % 2 == 0 else tools[::-1]
                        for t in steps:
                            if t in builds:
                                v = sweep(builds[t], a.rig, hosts, size, a, scratch)
                            else:
                                v = mpigraph(dict(peers)[t], a.rig, hosts, size, a)
                            runs[t].append(statistics.median(v))
                    raw[f"{hosts}/{size}"] = runs
                    med = {t: statistics.median(runs[t]) for t in tools}
                    row = [str(hosts), str(size)] + [f"{med[t]:.1f}" for t in tools]
                    row += [f"{spread(runs[t]):.1%}" for t in tools]
                    row += [f"{med[t] / med['mpiGraph']:.3f}" for t in tools if t != "mpiGraph"]
                    lines.append("| " + " | ".join(row) + " |")
                    print(lines[-1], flush=True)
            finally:
                rig("down", a.rig)
    text = "\n".join(lines)
    print(text)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "shift_vs_mpigraph.md").write_text(text + "\n")
    (a.out / "shift_vs_mpigraph.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
