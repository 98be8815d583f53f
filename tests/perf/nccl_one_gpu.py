#!/usr/bin/env python3
"""fabric-coll against nccl-tests on one GPU (one rank), small sizes, with harness-free yardsticks, interleaved
(issue 24). On one rank NCCL moves no data between GPUs: an out-of-place all_reduce, all_gather, reduce_scatter,
broadcast or reduce is one cudaMemcpyAsync inside NCCL (ncclLaunchOneRank), so the time per operation is the launch
path and that copy. Each repeat runs, in an order that flips every repeat:
  - fabric-coll (--bin) and, for each --variant NAME=DIR, a fabric-coll built another way (--op all, both places);
  - nccl-tests' binaries (--peer, MPI=1 build), once as usual and once with -C 1 (the time of the launch loop alone,
    before the final wait) for all_reduce;
  - tests/perf/nccl_peer (--nccl-peer) with one call per iteration, buffers rotated as both tools do, allocated with
    cudaMalloc (as fabric-coll) and with ncclMemAlloc (as nccl-tests 2.19).
Then start-to-first-result: the time from starting mpirun to the first 8 B result line, and to the end, for
fabric-coll and all_reduce_perf at one 8 B size, interleaved.
--paired BYTES instead: --rounds rounds at that one size of all_reduce, out of place, each round running every tool
once (order flipping): fabric-coll, nccl-tests, nccl-tests -C 1, nccl_peer (cudaMalloc) and nccl_peer's plain
cudaMemcpyAsync without NCCL (the floor); the ratio is taken within each round, so that the machine's slow stretches,
which move both tools, cancel. Prints medians per tool and size, ratios (nccl-tests' time / the other's, so 1.0 = the same and < 1 = slower than
nccl-tests) and each tool's spread over the repeats ((max - min) / median). A benchmark run, not a test; writes
OUT/nccl_one_gpu.md and the raw outputs.

  tests/perf/nccl_one_gpu.py --bin DIR --peer NCCL_TESTS --nccl-peer PATH [--variant NAME=DIR ...] [--repeats 5]
                             [--sizes 8:16M:8] [--iters 200] [--warmup 20] [--starts 5]
  tests/perf/nccl_one_gpu.py ... --graph 10: the same in CUDA graphs
  tests/perf/nccl_one_gpu.py --bin DIR --peer NCCL_TESTS --nccl-peer PATH --paired 8 [--rounds 15] [--iters 2000]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from nccl_tests_interleaved import fabricbench_analysis, nccl_tests, number, ours, sh, size  # noqa: E402

OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"]
PEER_OPS = ["all_reduce", "all_gather", "reduce_scatter"]  # what nccl_peer runs
MPIRUN = ["mpirun", "-np", "1", "--bind-to", "none"]


def nccl_tests_cpu(peer, op, lo, hi, factor, iters, warmup, log):
    """{bytes: us} of nccl-tests -C 1: the launch loop's time per operation, without the final wait."""
    out = sh(MPIRUN + [str(peer / f"{op}_perf"), "-b", str(lo), "-e", str(hi), "-f", str(factor), "-g", "1", "-n",
                       str(iters), "-w", str(warmup), "-c", "1", "-C", "1"], log)
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[1].isdigit():
            rows[int(f[0])] = number(f[5])
    return rows


def nccl_peer(path, lo, hi, factor, iters, warmup, alloc, log, ops=PEER_OPS, graph=0, upload_timed=False):
    """{(op, bytes): us} from one nccl_peer run on one GPU."""
    env = dict(os.environ, ALLOC=alloc, ROTATE="1", NOGROUP="1")
    if graph:
        env["GRAPH"] = str(graph)
    if upload_timed:
        env["GRAPH_UPLOAD_TIMED"] = "1"
    cmd = MPIRUN + [str(path), ",".join(ops), str(lo), str(hi), str(iters), str(warmup), str(factor)]
    r = subprocess.run(["timeout", "300"] + cmd, capture_output=True, text=True, env=env)
    log.write(f"$ ALLOC={alloc} ROTATE=1 NOGROUP=1 {' '.join(cmd)}\n{r.stdout}\n{r.stderr}\n")
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {r.returncode}\n{r.stderr[-2000:]}")
    rows = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 7 and f[0] in ops:
            rows[(f[0], int(f[2]))] = float(f[3])
    return rows


def yard_name(alloc, graph):
    name = f"nccl_peer {'cudaMalloc' if alloc == 'cuda' else 'ncclMemAlloc'}"
    return name + (", upload timed" if graph and alloc == "nccl" else "")


def first_result(cmd, log):
    """Seconds from starting `cmd` to its first 8 B result line (first fields "8" and "2": bytes, count), and to its
    end."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["timeout", "120"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = None
    lines = []
    for line in p.stdout:
        lines.append(line)
        f = line.split()
        if first is None and len(f) > 2 and f[0] == "8" and f[1] == "2":
            first = time.perf_counter() - t0
    p.wait()
    total = time.perf_counter() - t0
    log.write(f"$ {' '.join(cmd)}  (first result {first}, end {total:.3f} s)\n{''.join(lines)}\n")
    if p.returncode != 0 or first is None:
        raise SystemExit(f"{' '.join(cmd)}: exit status {p.returncode}, first result {first}\n{''.join(lines)[-2000:]}")
    return first, total


def paired(a, peer, yard, out_dir, log):
    """Per round, each tool's time per operation at one size; returns the markdown lines."""
    b, n, w = str(a.paired), str(a.iters), str(a.warmup)
    h5 = out_dir / "paired.h5"

    def fabric_coll():
        sh(MPIRUN + [str(pathlib.Path(a.bin).resolve() / "fabric-coll"), "--backend", "nccl", "--op", "all_reduce",
                     "--sizes", b, "-n", n, "-w", w, "--in-place", "0", "-q", "--force", "--output", str(h5)], log)
        return float(fabricbench_analysis.load(h5).tables["results/coll"]["time_us"].iloc[0])

    def tests(cpu):
        out = sh(MPIRUN + [str(peer / "all_reduce_perf"), "-b", b, "-e", b, "-g", "1", "-n", n, "-w", w, "-c", "1"]
                 + (["-C", "1"] if cpu else []), log)
        return next(number(f[5]) for f in (line.split() for line in out.splitlines())
                    if len(f) >= 13 and f[0] == b and f[1].isdigit())

    def yardstick(op):
        return nccl_peer(yard, a.paired, a.paired, 2, a.iters, a.warmup, "cuda", log, ops=[op])[(op, a.paired)]

    tools = [("fabric-coll", fabric_coll), ("nccl-tests", lambda: tests(False)),
             ("nccl-tests launch loop (-C 1)", lambda: tests(True)), ("nccl_peer", lambda: yardstick("all_reduce")),
             ("nccl_peer cudaMemcpyAsync, no NCCL", lambda: yardstick("memcpy"))]
    rounds = []
    for k in range(a.rounds):
        order = tools if k % 2 == 0 else tools[::-1]
        rounds.append({name: run() for name, run in order})
        print(f"round {k + 1} of {a.rounds}: " + ", ".join(f"{t} {v:.3f}" for t, v in rounds[-1].items()), flush=True)

    def q(v, p):
        v = sorted(v)
        return v[round(p * (len(v) - 1))]

    lines = [f"1 GPU, all_reduce {a.paired} B out of place, -n {a.iters} -w {a.warmup}, {a.rounds} rounds, each tool once "
             "per round (order flipping); time per operation in us: median [min, max] over the rounds; ratio = "
             "nccl-tests' time / the tool's in the same round: median [p25, p75] (min, max)", "",
             "| tool | us per op | ratio to nccl-tests |", "|---|---|---|"]
    for name, _ in tools:
        t = [r[name] for r in rounds]
        ratio = [r["nccl-tests"] / r[name] for r in rounds]
        lines.append(f"| {name} | {statistics.median(t):.3f} [{min(t):.3f}, {max(t):.3f}] | "
                     f"{statistics.median(ratio):.3f} [{q(ratio, 0.25):.3f}, {q(ratio, 0.75):.3f}] "
                     f"({min(ratio):.3f}, {max(ratio):.3f}) |")
    return lines


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder of fabric-coll")
    p.add_argument("--peer", required=True, help="folder of nccl-tests' *_perf binaries (MPI=1 build)")
    p.add_argument("--nccl-peer", required=True, help="tests/perf/nccl_peer, built")
    p.add_argument("--variant", action="append", default=[], help="NAME=DIR: another fabric-coll build to compare")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", default="8:16M:8", help="MIN:MAX:FACTOR as nccl-tests -b/-e/-f")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--starts", type=int, default=5, help="interleaved start-to-first-result runs of each tool")
    p.add_argument("--out", default="perf-out")
    p.add_argument("--paired", type=int, default=0, help="BYTES: rounds of all_reduce at this one size (see above)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--graph", type=int, default=0, help="N: every tool captures the timed iterations in a CUDA graph "
                   "launched N times (-G N; nccl_peer GRAPH=N, its ncclMemAlloc run timing the upload as nccl-tests); "
                   "-C 1 is left out")
    a = p.parse_args()
    lo, hi, factor = a.sizes.split(":")
    lo, hi, factor = size(lo), size(hi), int(factor)
    out_dir = pathlib.Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    builds = [("fabric-coll", pathlib.Path(a.bin).resolve())]
    for v in a.variant:
        name, _, path = v.partition("=")
        builds.append((f"fabric-coll {name}", pathlib.Path(path).resolve()))
    peer, yard = pathlib.Path(a.peer).resolve(), pathlib.Path(a.nccl_peer).resolve()
    if a.paired:
        with open(out_dir / "nccl_one_gpu_paired.log", "w") as log:
            text = "\n".join(paired(a, peer, yard, out_dir, log))
        print(text)
        (out_dir / "nccl_one_gpu_paired.md").write_text(text + "\n")
        return
    times = {}  # (tool, op, bytes, in_place) -> [us per repeat]

    def add(tool, op, b, ip, us):
        if us:
            times.setdefault((tool, op, b, ip), []).append(us)

    with open(out_dir / "nccl_one_gpu.log", "w") as log:
        for k in range(a.repeats):
            steps = [("build", b) for b in builds] + [("peer", op) for op in OPS]
            if not a.graph:
                steps += [("cpu", "all_reduce")] + [("yard", alloc) for alloc in ("cuda", "nccl")]
            else:  # as fabric-coll (cudaMalloc, upload untimed) and as nccl-tests (ncclMemAlloc, upload timed)
                steps += [("yard", "cuda"), ("yard", "nccl")]
            for kind, what in (steps if k % 2 == 0 else steps[::-1]):
                if kind == "build":
                    for (op, b, ip), us in ours(what[1], out_dir, 1, lo, hi, factor, a.iters, a.warmup, log,
                                                f"{k}-{builds.index(what)}", graph=a.graph).items():
                        add(what[0], op, b, ip, us)
                elif kind == "peer":
                    for (b, ip), us in nccl_tests(peer, what, 1, lo, hi, factor, a.iters, a.warmup, log,
                                                  a.graph).items():
                        add("nccl-tests", what, b, ip, us)
                elif kind == "cpu":
                    for b, us in nccl_tests_cpu(peer, what, lo, hi, factor, a.iters, a.warmup, log).items():
                        add("nccl-tests launch loop (-C 1)", what, b, 0, us)
                else:
                    for (op, b), us in nccl_peer(yard, lo, hi, factor, a.iters, a.warmup, what, log, graph=a.graph,
                                                 upload_timed=bool(a.graph) and what == "nccl").items():
                        add(yard_name(what, a.graph), op, b, 0, us)
            print(f"repeat {k + 1} of {a.repeats} done", flush=True)
        starts = {}
        if a.graph:
            a.starts = 0
        start_cmds = [(name, MPIRUN + [str(d / "fabric-coll"), "--backend", "nccl", "--op", "all_reduce", "-b", "8",
                                       "-e", "8", "-n", "20", "-w", "5", "--output", str(out_dir / "start.h5"),
                                       "--force"]) for name, d in builds]
        start_cmds.append(("nccl-tests", MPIRUN + [str(peer / "all_reduce_perf"), "-b", "8", "-e", "8", "-g", "1"]))
        for k in range(a.starts):
            for name, cmd in (start_cmds if k % 2 == 0 else start_cmds[::-1]):
                starts.setdefault(name, []).append(first_result(cmd, log))

    tools = [b[0] for b in builds] + ([] if a.graph else ["nccl-tests launch loop (-C 1)"])
    tools += [yard_name("cuda", a.graph), yard_name("nccl", a.graph)]
    graph = f" -G {a.graph}" if a.graph else ""
    lines = [f"1 GPU, 1 rank, -b {lo} -e {hi} -f {factor} -n {a.iters} -w {a.warmup}{graph}, {a.repeats} interleaved "
             "repeats; out of place; times in us (medians over the repeats); ratio = nccl-tests' time / the tool's "
             "(busbw ratio); spread = (max - min) / median over the repeats", ""]
    header = "| op | bytes | nccl-tests us (spread) | " + " | ".join(f"{t} us (spread) | ratio" for t in tools) + " |"
    lines += [header, "|" + "---|" * (3 + 2 * len(tools))]
    for op in OPS:
        for b in sorted({key[2] for key in times if key[0] == "nccl-tests" and key[1] == op}):
            ref = times.get(("nccl-tests", op, b, 0))
            if not ref:
                continue
            r = statistics.median(ref)
            cells = [op, str(b), f"{r:.3f} ({spread(ref):.3f})"]
            for t in tools:
                v = times.get((t, op, b, 0))
                cells += [f"{statistics.median(v):.3f} ({spread(v):.3f})", f"{r / statistics.median(v):.3f}"] if v \
                    else ["", ""]
            lines.append("| " + " | ".join(cells) + " |")
    if starts:
        lines += ["", f"start to first result (mpirun -np 1, one 8 B all_reduce, -n 20 -w 5), {a.starts} interleaved runs "
                  "each, seconds: median [min, max]", "", "| tool | first result | end |", "|---|---|---|"]
    for name, v in starts.items():
        f, e = [x[0] for x in v], [x[1] for x in v]
        lines.append(f"| {name} | {statistics.median(f):.3f} [{min(f):.3f}, {max(f):.3f}] | "
                     f"{statistics.median(e):.3f} [{min(e):.3f}, {max(e):.3f}] |")
    text = "\n".join(lines)
    print(text)
    (out_dir / f"nccl_one_gpu{'_graph' if a.graph else ''}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
