#!/usr/bin/env python3
"""fabric-coll on the GPUs of this machine against the nccl-tests reference figures in configs/baselines/.
A benchmark run, not a test: prints the comparison table (ours / reference) and writes it to OUT/nccl_reference.md.

  tests/perf/nccl_reference.py --bin DIR [--out DIR] [--baseline FILE]
"""
import argparse
import configparser
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))
import fabricbench_analysis  # noqa: E402

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
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--out", default="perf-out")
    p.add_argument("--baseline", default=str(ROOT / "configs/baselines/h200x4-nvlink-nccl-tests.ini"))
    a = p.parse_args()
    bin_dir, out_dir = pathlib.Path(a.bin).resolve(), pathlib.Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    ref = configparser.ConfigParser()
    ref.read(a.baseline)
    n = gpu_count()
    tables = []
    if n >= 4:
        tables.append(run(bin_dir, out_dir, "all_reduce_4", 4, ["--op", "all_reduce", "-b", "8", "-e", "4G", "-f", "2"]))
        tables.append(run(bin_dir, out_dir, "all_reduce_4_graph", 4, ["--op", "all_reduce", "--sizes", "8,1M,16M,128M,1G,4G",
                                                                       "-G", "1"]))
        tables.append(run(bin_dir, out_dir, "others_4", 4, ["--op", "all_gather,reduce_scatter,alltoall,broadcast,reduce",
                                                             "--sizes", ",".join(SIZES)]))
    tables.append(run(bin_dir, out_dir, "pairs_2", 2, ["--op", "sendrecv,all_reduce", "--sizes", ",".join(SIZES)]))

    lines = ["| op | GPUs | timing | size | ours busbw out-of-place (GB/s) | ours in-place | nccl-tests reference | ours / reference |",
             "|---|---|---|---|---|---|---|---|"]
    for t in tables:
        for (op, ranks, timing), group in t.groupby(["op", "ranks", "timing"], sort=False):
            section = f"{op}.{ranks}"
            for label, size in SIZES.items():
                oop = group[(group.bytes == size) & (group.in_place == 0)]["busbw_gbps"]
                ip = group[(group.bytes == size) & (group.in_place == 1)]["busbw_gbps"]
                if oop.empty:
                    continue
                want = ref.getfloat(section, label, fallback=None) if timing == "host" else None
                ratio = f"{oop.iloc[0] / want:.3f}" if want else "-"
                lines.append(f"| {op} | {ranks} | {timing} | {label} | {oop.iloc[0]:.1f} | {ip.iloc[0]:.1f} | "
                             f"{want if want else '-'} | {ratio} |")
            small = group[(group.bytes == 8) & (group.in_place == 0)]["time_us"]
            if not small.empty:
                key = "time_us_8_graph" if timing == "graph" else "time_us_8"
                want = ref.getfloat(section, key, fallback=None)
                lines.append(f"| {op} | {ranks} | {timing} | 8 B time (us) | {small.iloc[0]:.1f} | - | "
                             f"{want if want else '-'} | {small.iloc[0] / want if want else float('nan'):.3f} |")
    text = "\n".join(lines)
    print(text)
    (out_dir / "nccl_reference.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
