#!/usr/bin/env python3
"""fabric-coll against the real nccl-tests (built with MPI=1), same layout (one process per GPU under mpirun), same
sizes and iterations, interleaved: each repeat runs fabric-coll once (every op) and each nccl-tests binary once, in an
order that flips every repeat. Prints, per op and size, the median time per operation of each tool, the ratio of
their bus bandwidths (ours / nccl-tests = nccl-tests' time / ours; from times, which nccl-tests prints with more
digits than its busbw) and each tool's run-to-run spread ((max - min) / median over the repeats), out of place and
in place. A benchmark run, not a test; writes OUT/nccl_tests_interleaved.md and the raw outputs.

  tests/perf/nccl_tests_interleaved.py --bin DIR --peer DIR [--gpus N] [--repeats 5] [--sizes 1M:4G:4] [--iters 20]
                                       [--graph N] [--ours-default]
--graph N captures the timed iterations in a CUDA graph launched N times, in both tools (nccl-tests -G): no launch
from the CPU per operation, so small sizes show what the GPUs and links take.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
import fabricbench_analysis  # noqa: E402

OPS = ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"]
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text):
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def sh(cmd, log):
    r = subprocess.run(["timeout", "500"] + cmd, capture_output=True, text=True)
    log.write(f"$ {' '.join(cmd)}\n{r.stdout}\n{r.stderr}\n")
    log.flush()
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def nccl_tests(peer, op, gpus, lo, hi, factor, iters, warmup, log, graph=0):
    """{(bytes, in_place): time per operation in us} from one nccl-tests run."""
    out = sh(["mpirun", "-np", str(gpus), "--bind-to", "none", str(peer / f"{op}_perf"), "-b", str(lo), "-e", str(hi),
              "-f", str(factor), "-g", "1", "-n", str(iters), "-w", str(warmup), "-c", "1"]
             + (["-G", str(graph)] if graph else []), log)
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[1].isdigit():
            rows[(int(f[0]), 0)] = number(f[5])
            rows[(int(f[0]), 1)] = number(f[9])
    return rows


def ours(bin_dir, out_dir, gpus, lo, hi, factor, iters, warmup, log, repeat=0, defaults=False, graph=0):
    path = out_dir / f"ours-{repeat}.h5"  # every repeat's file kept for a second look
    sh(["mpirun", "-np", str(gpus), "--bind-to", "none", str(bin_dir / "fabric-coll"), "--backend", "nccl", "--op", "all",
        "-b", str(lo), "-e", str(hi), "-f", str(factor)] + ([] if defaults else ["-n", str(iters), "-w", str(warmup)])
       + (["-G", str(graph)] if graph else []) + ["-q", "--force", "--output", str(path)], log)
    t = fabricbench_analysis.load(path).tables["results/coll"]
    return {(r.op, int(r.bytes), int(r.in_place)): r.time_us for r in t.itertuples()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="folder of fabric-coll")
    p.add_argument("--peer", required=True, help="folder of nccl-tests' *_perf binaries (MPI=1 build)")
    p.add_argument("--gpus", type=int, default=len(subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                                                     text=True).stdout.strip().splitlines()))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", default="1M:4G:4", help="MIN:MAX:FACTOR as nccl-tests -b/-e/-f")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--out", default="perf-out")
    p.add_argument("--ours-default", action="store_true",
                   help="run fabric-coll at its defaults (no -n/-w: repeated timed blocks for about --min-time)")
    p.add_argument("--graph", type=int, default=0, help="both tools: capture in a CUDA graph, launch it N times (-G)")
    a = p.parse_args()
    lo, hi, factor = a.sizes.split(":")
    lo, hi, factor = size(lo), size(hi), int(factor)
    ops = a.ops.split(",")
    out_dir = pathlib.Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    bin_dir, peer = pathlib.Path(a.bin).resolve(), pathlib.Path(a.peer).resolve()
    mine, theirs = {}, {}  # (op, bytes, in_place) -> [time in us per repeat]
    with open(out_dir / "nccl_tests_interleaved.log", "w") as log:
        for k in range(a.repeats):
            steps = [("ours", None)] + [("peer", op) for op in ops]
            for who, op in (steps if k % 2 == 0 else steps[::-1]):
                if who == "ours":
                    for key, v in ours(bin_dir, out_dir, a.gpus, lo, hi, factor, a.iters, a.warmup, log, k, a.ours_default,
                                        a.graph).items():
                        if key[0] in ops:
                            mine.setdefault(key, []).append(v)
                else:
                    for (b, ip), v in nccl_tests(peer, op, a.gpus, lo, hi, factor, a.iters, a.warmup, log,
                                                        a.graph).items():
                        if v is not None:
                            theirs.setdefault((op, b, ip), []).append(v)
            print(f"repeat {k + 1} of {a.repeats} done", flush=True)

    def spread(values):
        m = statistics.median(values)
        return (max(values) - min(values)) / m if m else float("nan")

    graph = f" -G {a.graph}" if a.graph else ""
    lines = [f"{a.gpus} GPUs, -b {lo} -e {hi} -f {factor} -n {a.iters} -w {a.warmup}{graph}, {a.repeats} interleaved repeats; "
             "times in us (medians); ratio = busbw ours / nccl-tests = time nccl-tests / ours; "
             "spread = (max - min) / median of the times over the repeats", "",
             "| op | bytes | place | fabric-coll us | nccl-tests us | busbw ratio | spread ours | spread nccl-tests |",
             "|---|---|---|---|---|---|---|---|"]
    for op in ops:
        for (o, b, ip) in sorted(k for k in theirs if k[0] == op):
            if (o, b, ip) not in mine:
                continue
            m, t = statistics.median(mine[(o, b, ip)]), statistics.median(theirs[(o, b, ip)])
            if not t or not m:
                continue
            lines.append(f"| {op} | {b} | {'in' if ip else 'out'} | {m:.4g} | {t:.4g} | {t / m:.3f} | "
                         f"{spread(mine[(o, b, ip)]):.3f} | {spread(theirs[(o, b, ip)]):.3f} |")
    text = "\n".join(lines)
    print(text)
    (out_dir / "nccl_tests_interleaved.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
