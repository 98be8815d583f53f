#!/usr/bin/env python3
"""fabric-coll on the GPUs of this machine against (1) a same-session peer written without the harness
(tests/perf/nccl_peer.cpp) in fabric-coll's layout (one process per GPU, under mpirun) and in the layout the reference
was taken in (one process driving every GPU), and (2) the nccl-tests figures in configs/baselines/.
A benchmark run, not a test: prints the comparison table and writes it to OUT/nccl_reference.md.

  tests/perf/nccl_reference.py --bin DIR [--out DIR] [--baseline FILE]
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fabricbench_analysis  # noqa: E402
import nccl_perf  # noqa: E402

SIZES = {"1M": 1 << 20, "16M": 16 << 20, "128M": 128 << 20, "1G": 1 << 30, "4G": 4 << 30}


def gpu_count():
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return len(out.strip().splitlines())


def run(bin_dir, out_dir, name, np, args):
    path = out_dir / f"{name}.h5"
    cmd = ["timeout", "500", "mpirun", "-np", str(np), "--bind-to", "none", str(bin_dir / "fabric-coll"),
           "--backend", "nccl", "--output", str(path), "--force"] + args
    print("$", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, text=True, capture_output=True)
    print(result.stdout[-6000:], result.stderr[-3000:], flush=True)
    if result.returncode != 0:
        raise SystemExit(f"{name}: exit status {result.returncode}")
    return fabricbench_analysis.load(path).tables["results/coll"]


def main():
    a, bin_dir, out_dir = nccl_perf.arguments(__doc__, baseline=dict(
        default=str(ROOT / "configs/baselines/h200x4-nvlink-nccl-tests.ini")))
    from fabricbench_analysis.judge import compare
    entries = compare.read_baseline(a.baseline)

    def reference(op, ranks, timing, size, column):
        """nccl-tests' figure for this op, GPU count, timing and size (the baseline file's entry), or None."""
        for e in entries:  # read without a run's declarations: numeric keys land among the values
            f = {**e.keys, **e.expected}
            if (f.get("op"), f.get("timing")) == (op, timing) and float(f.get("ranks", -1)) == ranks \
                    and float(f.get("bytes", -1)) == size:
                return f.get(column)
        return None
    n = gpu_count()
    tables = []
    if n >= 4:
        tables.append(run(bin_dir, out_dir, "all_reduce_4", 4, ["--op", "all_reduce", "-b", "8", "-e", "4G", "-f", "2"]))
        tables.append(run(bin_dir, out_dir, "all_reduce_4_graph", 4, ["--op", "all_reduce", "--sizes", "8,1M,16M,128M,1G,4G",
                                                                       "-G", "1"]))
        tables.append(run(bin_dir, out_dir, "others_4", 4, ["--op", "all_gather,reduce_scatter,alltoall,broadcast,reduce",
                                                             "--sizes", ",".join(SIZES)]))
    tables.append(run(bin_dir, out_dir, "pairs_2", 2, ["--op", "sendrecv,all_reduce", "--sizes", ",".join(SIZES)]))

    # (op, gpus) -> {bytes: (time_us, busbw)} for each peer layout
    ops = [(op, 4) for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall") if n >= 4]
    ops += [("sendrecv", 2), ("all_reduce", 2)]
    peers = {True: {}, False: {}}
    for per_process in (True, False):
        for op, gpus in ops:
            rows = nccl_perf.peer(bin_dir, [op], gpus, 1 << 20, 4 << 30, per_process)
            if op == "all_reduce":
                rows.update(nccl_perf.peer(bin_dir, [op], gpus, 8, 8, per_process))
            peers[per_process][(op, gpus)] = {size: v for (_, size), v in rows.items()}

    def fmt(v, digits=1):
        return "-" if v is None else f"{v:.{digits}f}"

    def ratio(a, b):
        return a / b if a is not None and b else None

    lines = ["| op | GPUs | timing | size | ours out-of-place | ours in-place | peer, process per GPU | ours / peer | "
             "peer, one process | nccl-tests reference | ours / reference | one-process peer / reference |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in tables:
        for (op, ranks, timing), group in t.groupby(["op", "ranks", "timing"], sort=False):
            same = peers[True].get((op, ranks), {}) if timing == "host" else {}
            single = peers[False].get((op, ranks), {}) if timing == "host" else {}
            small = group[(group.bytes == 8) & (group.in_place == 0)]["time_us"]
            if not small.empty:  # 8 B: times in us (lower is better)
                want = reference(op, ranks, timing, 8, "time_us")
                mine, other, one = small.iloc[0], same.get(8, (None,))[0], single.get(8, (None,))[0]
                lines.append(f"| {op} | {ranks} | {timing} | 8 B time (us) | {mine:.2f} | - | {fmt(other, 2)} | "
                             f"{fmt(ratio(mine, other), 3)} | {fmt(one, 2)} | {fmt(want)} | {fmt(ratio(mine, want), 3)} | "
                             f"{fmt(ratio(one, want), 3)} |")
            for label, size in SIZES.items():  # busbw in GB/s (higher is better)
                oop = group[(group.bytes == size) & (group.in_place == 0)]["busbw_gbps"]
                ip = group[(group.bytes == size) & (group.in_place == 1)]["busbw_gbps"]
                if oop.empty:
                    continue
                mine = oop.iloc[0]
                want = reference(op, ranks, timing, size, "busbw_gbps") if timing == "host" else None
                other, one = same.get(size, (None, None))[1], single.get(size, (None, None))[1]
                lines.append(f"| {op} | {ranks} | {timing} | {label} | {mine:.1f} | "
                             f"{fmt(ip.iloc[0] if not ip.empty else None)} | {fmt(other)} | {fmt(ratio(mine, other), 3)} | "
                             f"{fmt(one)} | {fmt(want)} | {fmt(ratio(mine, want), 3)} | {fmt(ratio(one, want), 3)} |")
    text = "\n".join(lines)
    print(text)
    (out_dir / "nccl_reference.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
