#!/usr/bin/env python3
"""Healthy and degraded NCCL runs on one GPU machine, for "% of expected" (issue 35): the data its calibrated curves
come from (configs/expected-curves.csv) and the proof that they warn only where they should.

For each rank count (GPUs used by one process each, CUDA_VISIBLE_DEVICES-free: ranks 0..n-1 take GPUs 0..n-1):
  healthy   fabric-coll --backend nccl --op all -b 8 -e 1G -f 2, in and out of place, --runs times
  degraded  the same ops at 4 MiB, 64 MiB and 1 GiB under NCCL_P2P_DISABLE=1; NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1;
            NCCL_MAX_NCHANNELS=1; NCCL_PROTO=LL
  sweep     fabric-sweep --metric allreduce,sendrecv --backend nccl --sizes 64M, one GPU per fake host, healthy and
            under NCCL_P2P_DISABLE=1
Writes OUT/rows.csv (case, ranks, run, tool, op, in_place, bytes, busbw_gbps, expected_gbps, pct_expected,
expected_from) and OUT/warnings.csv (case, ranks, run, tool, warnings: the "below expected" lines each run printed),
and prints a summary: per case, the warning count and the lowest and highest pct_expected of the judged rows.

  tests/perf/expected_gpu.py --bin PREFIX/bin --out DIR [--ranks 2,4] [--runs 3] [--skip degraded,sweep]
"""
import argparse
import csv
import os
import pathlib
import re
import subprocess
import sys

DEGRADED = {
    "p2p_disabled": {"NCCL_P2P_DISABLE": "1"},
    "p2p_shm_disabled": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"},
    "one_channel": {"NCCL_MAX_NCHANNELS": "1"},
    "proto_ll": {"NCCL_PROTO": "LL"},
}
WARNING = re.compile(r"warning: .*(below|of the) .*expected", re.IGNORECASE)


def gpu_count():
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return len(out.strip().splitlines())


def mpirun(n, tool, args, env, bindir, timeout=580):
    cmd = ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", str(n)]
    for k in env:
        cmd += ["-x", k]
    cmd += [str(bindir / tool)] + args
    full = dict(os.environ, NCCL_NVLS_ENABLE="0", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                **env)
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, type=pathlib.Path)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--ranks", default="")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip", default="")
    ap.add_argument("--max-bytes", default="1G")
    ap.add_argument("--step", default="2", help="-f of the healthy runs")
    a = ap.parse_args()
    sys.path.insert(0, str(a.bin.parent / "share" / "fabricbench" / "analysis"))
    from fabricbench_analysis import load  # noqa: E402  (shipped with the carried build)

    gpus = gpu_count()
    ranks = [int(r) for r in a.ranks.split(",")] if a.ranks else [r for r in (2, 4, 8) if r <= gpus]
    skip = set(a.skip.split(",")) - {""}
    a.out.mkdir(parents=True, exist_ok=True)
    rows, warned = [], []

    def run(case, n, k, tool, args, env):
        h5 = a.out / f"{case}-{n}-{k}-{tool}.h5"
        r = mpirun(n, tool, args + ["--output", str(h5), "-q"], env, a.bin)
        text = r.stdout + r.stderr
        lines = [l for l in text.splitlines() if WARNING.search(l)]
        warned.append({"case": case, "ranks": n, "run": k, "tool": tool, "rc": r.returncode, "warnings": len(lines),
                       "first": lines[0][:300] if lines else ""})
        print(f"{case} ranks={n} run={k} {tool}: rc {r.returncode}, {len(lines)} warning line(s)", flush=True)
        for l in lines[:3]:
            print("   ", l[:400], flush=True)
        if r.returncode not in (0, 1):
            print(text[-2000:], flush=True)
        if not h5.exists():
            return
        res = load(str(h5))
        if tool == "fabric-coll":
            t = res.tables["results/coll"]
            for x in t.itertuples():
                rows.append({"case": case, "ranks": n, "run": k, "tool": tool, "op": x.op, "in_place": x.in_place,
                             "bytes": x.bytes, "busbw_gbps": x.busbw_gbps, "expected_gbps": x.expected_gbps,
                             "pct_expected": x.pct_expected, "expected_from": getattr(x, "expected_from", "")})
        else:
            t = res.tables["sweep/pairs"]
            for x in t.itertuples():
                rows.append({"case": case, "ranks": n, "run": k, "tool": tool, "op": x.metric, "in_place": 0,
                             "bytes": x.bytes, "busbw_gbps": x.value / 1e3 if x.unit == "MB/s" else x.value,
                             "expected_gbps": x.expected_gbps, "pct_expected": x.pct_expected,
                             "expected_from": getattr(x, "expected_from", "")})
        h5.unlink()

    for n in ranks:
        for k in range(a.runs):
            run("healthy", n, k, "fabric-coll", ["--backend", "nccl", "--op", "all", "-b", "8", "-e", a.max_bytes,
                                                 "-f", a.step], {})
        if "degraded" not in skip:
            for case, env in DEGRADED.items():
                run(case, n, 0, "fabric-coll", ["--backend", "nccl", "--op", "all_reduce,all_gather,reduce_scatter,"
                                                "sendrecv", "-b", "4M", "-e", a.max_bytes, "-f", "16", "-n", "5", "-w", "2"], env)
        if "sweep" not in skip:
            for case, env in (("healthy", {}), ("p2p_disabled", DEGRADED["p2p_disabled"])):
                run(case, n, 0, "fabric-sweep", ["--emulate-hosts", "1", "--metric", "allreduce,sendrecv", "--backend",
                                                 "nccl", "--sizes", "64M", "--retest", "0"], env)
    for name, data in (("rows.csv", rows), ("warnings.csv", warned)):
        if data:
            with open(a.out / name, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(data[0]))
                w.writeheader()
                w.writerows(data)


if __name__ == "__main__":
    main()
