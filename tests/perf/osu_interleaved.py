#!/usr/bin/python3
"""fabric-p2p against the real OSU micro-benchmarks 7.4 (osu_latency, osu_bw, osu_bibw), same layout (2 ranks bound
to cores), same sizes (1 B to 4 MiB) and OSU's default iteration counts on both sides, interleaved: each repeat runs
fabric-p2p once (latency, bw, bibw) and each OSU binary once, in an order that flips every repeat. Prints, per test
and size, each tool's median, the ratio of medians (fabric / OSU) and each tool's run-to-run spread
((max - min) / median over the repeats), over shared memory and TCP loopback. A benchmark run, not a test; writes
OUT/osu_interleaved.md.

  tests/perf/osu_interleaved.py --osu DIR [--build build] [--repeats 5] [--transports shm,tcp] [--out DIR]
  (DIR: an OSU 7.4 install prefix; binaries under DIR/libexec/osu-micro-benchmarks/mpi/pt2pt)
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

TRANSPORTS = {
    "shm": ["--mca", "btl", "self,vader"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
TESTS = {"latency": "osu_latency", "bw": "osu_bw", "bibw": "osu_bibw"}


def mpirun(transport, argv):
    cmd = ["timeout", "600", "mpirun", "-np", "2", "--bind-to", "core"] + TRANSPORTS[transport] + [str(a) for a in argv]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def osu(binary, transport):
    """{size: value} from an OSU table (latency in us, bandwidth in MB/s)."""
    values = {}
    for line in mpirun(transport, [binary, "-m", "1:4194304"]).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            values[int(parts[0])] = float(parts[1])
    return values


def fabric(build, transport, scratch, repeat):
    out = pathlib.Path(scratch) / f"{transport}-{repeat}.h5"
    mpirun(transport, [build / "benchmarks" / "fabric-p2p", "--test", "all", "--sizes", "1:4M", "--output", out,
                       "--force", "-q", "--no-checks"])
    rows = fabricbench_analysis.load(out).tables["results/p2p"]
    result = {}
    for test in TESTS:
        part = rows[rows.test == test]
        column = "latency_us" if test == "latency" else "bw_mbps"
        result[test] = dict(zip(part.bytes.astype(int), part[column]))
    return result


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--osu", required=True, type=pathlib.Path)
    p.add_argument("--build", default=ROOT / "build", type=pathlib.Path)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--transports", default="shm,tcp")
    p.add_argument("--out", default=pathlib.Path("."), type=pathlib.Path)
    a = p.parse_args()
    bins = a.osu / "libexec" / "osu-micro-benchmarks" / "mpi" / "pt2pt"
    lines = []
    raw = {}  # transport -> tool -> test -> size -> every repeat's value, in order
    with tempfile.TemporaryDirectory() as scratch:
        for transport in a.transports.split(","):
            ours = {t: {} for t in TESTS}
            theirs = {t: {} for t in TESTS}
            for r in range(a.repeats):
                steps = [("fabric", None)] + [("osu", t) for t in TESTS]
                for kind, test in (steps if r % 2 == 0 else steps[::-1]):
                    if kind == "fabric":
                        for t, values in fabric(a.build, transport, scratch, r).items():
                            for size, v in values.items():
                                ours[t].setdefault(size, []).append(v)
                    else:
                        for size, v in osu(bins / TESTS[test], transport).items():
                            theirs[test].setdefault(size, []).append(v)
            raw[transport] = {"fabric-p2p": ours, "osu": theirs}
            lines += [f"\n### {transport} ({a.repeats} interleaved repeats; latency in us, bandwidth in MB/s)\n",
                      "| test | size | fabric-p2p median | OSU median | fabric / OSU | fabric spread | OSU spread |",
                      "|---|---|---|---|---|---|---|"]
            for test in TESTS:
                for size in sorted(theirs[test]):
                    f, o = ours[test].get(size), theirs[test][size]
                    if not f:
                        continue
                    fm, om = statistics.median(f), statistics.median(o)
                    lines.append(f"| {test} | {size} | {fm:.4g} | {om:.4g} | {fm / om:.3f} | {spread(f):.1%} | "
                                 f"{spread(o):.1%} |")
    text = "\n".join(lines)
    print(text)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "osu_interleaved.md").write_text(text + "\n")
    (a.out / "osu_interleaved.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
