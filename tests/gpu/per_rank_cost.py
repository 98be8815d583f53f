"""What fabric-coll --per-rank costs its own numbers (issue 45): all_reduce from 1 MiB to 256 MiB on 2 GPUs, the same
run with and without --per-rank (the profiler plugin in its NCCL, every collective and kernel channel recorded),
interleaved, 3 pairs, alternating which goes first. Prints per size the median busbw of each and their ratio.
Run from the repository root with a carried build in .carry:  python3 tests/gpu/per_rank_cost.py $OUT"""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CARRY = ROOT / ".carry"
sys.path.insert(0, str(CARRY / "share" / "fabricbench" / "analysis"))
import fabricbench_analysis  # noqa: E402


def run(work, name, per_rank):
    out = work / f"{name}.h5"
    cmd = ["mpirun", "-np", "2", "--bind-to", "none", "--mca", "btl", "self,vader", "-x", "LD_LIBRARY_PATH", "-x",
           "NCCL_NVLS_ENABLE", str(CARRY / "bin" / "fabric-coll"), "--backend", "nccl", "-b", "1M", "-e", "256M",
           "-f", "4", "-n", "40", "-w", "10", "--output", str(out)] + (["--per-rank"] if per_rank else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(r.stdout + r.stderr)
    t = fabricbench_analysis.load(out).tables["results/coll"]
    t = t[(t.in_place == 0) & (t.op == t.op.iloc[0])]
    return {int(b): float(v) for b, v in zip(t["bytes"], t["busbw_gbps"])}


def main():
    out = pathlib.Path(sys.argv[1])
    work = pathlib.Path("/tmp/per-rank-cost")
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ["LD_LIBRARY_PATH"] = str(CARRY / "lib")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    runs = {False: [], True: []}
    for k in range(3):
        for per_rank in ((False, True) if k % 2 == 0 else (True, False)):
            runs[per_rank].append(run(work, f"r{k}{int(per_rank)}", per_rank))
    table = []
    for size in sorted(runs[False][0]):
        plain = sorted(r[size] for r in runs[False])
        watched = sorted(r[size] for r in runs[True])
        table.append({"bytes": size, "plain_gbps": plain, "per_rank_gbps": watched,
                      "ratio_of_medians": watched[1] / plain[1]})
    (out / "per_rank_cost.json").write_text(json.dumps(table, indent=1))
    for row in table:
        print(f"{row['bytes']:>10} B  plain {row['plain_gbps']}  --per-rank {row['per_rank_gbps']}  "
              f"ratio {row['ratio_of_medians']:.4f}")


if __name__ == "__main__":
    main()
