#!/usr/bin/env python3
"""fabric-p2p --backend nccl against OSU 7.4's NCCL point-to-point benchmarks (osu_xccl_latency, osu_xccl_bw,
osu_xccl_bibw) on one GPU machine: 2 ranks, one GPU each (`mpirun -np 2 --bind-to none`), latency 1 B-4 MiB and bw /
bibw 1 B-1 GiB, OSU's default iteration counts on both sides, interleaved: each repeat runs fabric-p2p once as OSU
times (one block: --min-time 0), once at its defaults (the block repeated for --min-time, the median block reported),
and each OSU binary once, in an order that flips every repeat. Prints per test and size each one's median, the ratios
of medians to OSU and each one's run-to-run spread ((max - min) / median over the repeats). A benchmark run, not a
test: writes OUT/osu_xccl.md, every repeat's value in OUT/osu_xccl.json, and fabric-p2p's rows as OUT/rows.csv (the
format tests/perf/expected_curves.py reads: the healthy curves of nccl_p2p_bw and nccl_p2p_bibw).

  tests/perf/osu_xccl_interleaved.py --bin PREFIX/bin --osu DIR [--repeats 5] [--out DIR] [--max BYTES] [--osu-wait]
  (DIR: the folder of osu_xccl_latency, osu_xccl_bw and osu_xccl_bibw, built with --enable-ncclomb --enable-cuda)
"""
import argparse
import csv
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from osu_interleaved import spread  # noqa: E402  (run-to-run spread, as the CPU comparison reports it)

TESTS = {"latency": "osu_xccl_latency", "bw": "osu_xccl_bw", "bibw": "osu_xccl_bibw"}
MAX = {"latency": 4 << 20, "bw": 1 << 30, "bibw": 1 << 30}
VARIANTS = {"one block": ["--min-time", "0"], "default": []}
# --osu-wait: two variants more, one block each, that wait for the stream otherwise (the test hook
# FABRICBENCH_TEST_OSU_POLL): as OSU does (cudaStreamQuery and MPI_Iprobe in turn), and with cudaStreamSynchronize
# (fabric-p2p's wait before it polled the stream), to show what the wait costs.
OSU_WAIT = "one block, OSU's wait"
SYNC_WAIT = "one block, stream sync"


def mpirun(argv, extra=None):
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               **(extra or {}))
    names = ["NCCL_NVLS_ENABLE"] + list(extra or {})
    cmd = ["timeout", "900", "mpirun", "-np", "2", "--bind-to", "none"] + [x for n in names for x in ("-x", n)]
    cmd += [str(a) for a in argv]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout


def osu(binary, test):
    """{size: value} from an OSU table (latency in us, bandwidth in MB/s)."""
    values = {}
    for line in mpirun([binary, "-m", f"1:{MAX[test]}"]).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            values[int(parts[0])] = float(parts[1])
    return values


def fabric(bindir, scratch, repeat, variant, rows_out, load):
    result = {}
    for tests, top in (("latency" if "latency" in TESTS else "", MAX["latency"]),
                       (",".join(t for t in ("bw", "bibw") if t in TESTS), MAX["bw"])):
        if not tests:
            continue
        out = pathlib.Path(scratch) / f"{repeat}-{variant.replace(' ', '_')}-{tests.replace(',', '_')}.h5"
        wait = {OSU_WAIT: {"FABRICBENCH_TEST_OSU_POLL": "1"}, SYNC_WAIT: {"FABRICBENCH_TEST_OSU_POLL": "sync"}}.get(variant)
        mpirun([bindir / "fabric-p2p", "--backend", "nccl", "--test", tests, "--sizes", f"1:{top}", "--output", out,
                "--force", "-q", "--no-checks"] + VARIANTS.get(variant, ["--min-time", "0"]), wait)
        rows = load(str(out)).tables["results/p2p"]
        for test in tests.split(","):
            part = rows[rows.test == test]
            column = "latency_us" if test == "latency" else "bw_mbps"
            result[test] = dict(zip(part.bytes.astype(int), part[column]))
            if test != "latency" and variant == "default":
                for r in part.itertuples():
                    rows_out.append({"case": "healthy", "ranks": 2, "run": repeat, "tool": "fabric-p2p",
                                     "op": f"nccl_p2p_{test}", "in_place": 0, "bytes": int(r.bytes),
                                     "busbw_gbps": r.bw_mbps / 1e3, "expected_gbps": r.expected_gbps,
                                     "pct_expected": r.pct_expected, "expected_from": r.expected_from})
        out.unlink()
    return result


def report(a, tools, values, rows, repeats):
    """The table of what the repeats so far gave, written to OUT (after every repeat: a run cut short keeps them)."""
    ours = tools[:-1]
    lines = [f"\n### 2 GPUs, one rank each ({repeats} interleaved repeats; latency in us, bandwidth in MB/s)\n",
             "| test | size | OSU | " + " | ".join(ours) + " | " + " | ".join(f"{t} / OSU" for t in ours) +
             " | OSU spread | " + " | ".join(f"{t} spread" for t in ours) + " |",
             "|" + "---|" * (3 + 3 * len(ours) + 1)]
    for test in TESTS:
        for size in sorted(values["osu"][test]):
            series = [values[tool][test].get(size) for tool in tools]
            if not all(series):
                continue
            medians = [statistics.median(x) for x in series]
            theirs = medians[-1]
            lines.append(f"| {test} | {size} | {theirs:.4g} | " + " | ".join(f"{m:.4g}" for m in medians[:-1]) + " | " +
                         " | ".join(f"{m / theirs:.3f}" for m in medians[:-1]) + f" | {spread(series[-1]):.1%} | " +
                         " | ".join(f"{spread(x):.1%}" for x in series[:-1]) + " |")
    text = "\n".join(lines)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "osu_xccl.md").write_text(text + "\n")
    (a.out / "osu_xccl.json").write_text(json.dumps(values, indent=1))
    with open(a.out / "rows.csv", "w", newline="") as f:  # the default variant's rows
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return text


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, type=pathlib.Path)
    p.add_argument("--osu", required=True, type=pathlib.Path)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=pathlib.Path("."), type=pathlib.Path)
    p.add_argument("--max", type=int, help="largest size of every test (default: latency 4 MiB, bw and bibw 1 GiB)")
    p.add_argument("--osu-wait", action="store_true", help=f"also fabric-p2p '{OSU_WAIT}' and '{SYNC_WAIT}'")
    p.add_argument("--tests", default="latency,bw,bibw", help="the tests to compare (default: all three)")
    p.add_argument("--default-only", action="store_true", help="fabric-p2p at its defaults only (no one-block run)")
    a = p.parse_args()
    for t in set(TESTS) - set(a.tests.split(",")):
        del TESTS[t]
    if a.default_only:
        del VARIANTS["one block"]
    if a.max:
        MAX.update({t: a.max for t in MAX})
    variants = list(VARIANTS) + ([OSU_WAIT, SYNC_WAIT] if a.osu_wait else [])
    sys.path.insert(0, str(a.bin.parent / "share" / "fabricbench" / "analysis"))
    from fabricbench_analysis import load  # noqa: E402  (shipped with the carried build)

    tools = [f"fabric-p2p {v}" for v in variants] + ["osu"]
    values = {tool: {t: {} for t in TESTS} for tool in tools}
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(a.repeats):
            steps = [("fabric", v) for v in variants] + [("osu", t) for t in TESTS]
            for kind, what in (steps if r % 2 == 0 else steps[::-1]):
                if kind == "fabric":
                    for t, sizes in fabric(a.bin, scratch, r, what, rows, load).items():
                        for size, v in sizes.items():
                            values[f"fabric-p2p {what}"][t].setdefault(size, []).append(v)
                else:
                    for size, v in osu(a.osu / TESTS[what], what).items():
                        values["osu"][what].setdefault(size, []).append(v)
            report(a, tools, values, rows, r + 1)
            print(f"repeat {r + 1} of {a.repeats} done", flush=True)
    print(report(a, tools, values, rows, a.repeats))


if __name__ == "__main__":
    main()
