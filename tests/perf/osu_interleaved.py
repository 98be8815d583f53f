#!/usr/bin/python3
"""fabric-p2p against the real OSU micro-benchmarks 7.4 (osu_latency, osu_bw, osu_bibw), same layout (2 ranks bound
to cores), same sizes (1 B to 4 MiB) and OSU's default iteration counts on both sides, interleaved: each repeat runs
fabric-p2p (latency, bw, bibw) once as OSU times (one block: --min-time 0), once at its defaults (the block repeated
for --min-time, the median block reported), and each OSU binary once, in an order that flips every repeat. Prints,
per test and size, each one's median, the ratios of medians to OSU and each one's run-to-run spread
((max - min) / median over the repeats), over shared memory and TCP loopback. A benchmark run, not a test; writes
OUT/osu_interleaved.md and every repeat's value in OUT/osu_interleaved.json.

  tests/perf/osu_interleaved.py --osu DIR [--build build] [--repeats 5] [--transports shm,tcp] [--max 4M] [--out DIR]
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


VARIANTS = {"one block": ["--min-time", "0"], "default": []}


def osu(binary, transport, max_bytes):
    """{size: value} from an OSU table (latency in us, bandwidth in MB/s)."""
    values = {}
    for line in mpirun(transport, [binary, "-m", f"1:{max_bytes}"]).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            values[int(parts[0])] = float(parts[1])
    return values


def fabric(build, transport, scratch, repeat, variant, max_bytes):
    out = pathlib.Path(scratch) / f"{transport}-{repeat}.h5"
    mpirun(transport, [build / "benchmarks" / "fabric-p2p", "--test", "all", "--sizes", f"1:{max_bytes}", "--output", out,
                       "--force", "-q", "--no-checks"] + VARIANTS[variant])
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
    p.add_argument("--max", default=4194304, type=int, help="largest size in bytes (default 4 MiB)")
    a = p.parse_args()
    bins = a.osu / "libexec" / "osu-micro-benchmarks" / "mpi" / "pt2pt"
    lines = []
    raw = {}  # transport -> tool -> test -> size -> every repeat's value, in order
    tools = [f"fabric-p2p {v}" for v in VARIANTS] + ["osu"]
    with tempfile.TemporaryDirectory() as scratch:
        for transport in a.transports.split(","):
            values = {tool: {t: {} for t in TESTS} for tool in tools}
            for r in range(a.repeats):
                steps = [("fabric", v) for v in VARIANTS] + [("osu", t) for t in TESTS]
                for kind, what in (steps if r % 2 == 0 else steps[::-1]):
                    if kind == "fabric":
                        for t, sizes in fabric(a.build, transport, scratch, r, what, a.max).items():
                            for size, v in sizes.items():
                                values[f"fabric-p2p {what}"][t].setdefault(size, []).append(v)
                    else:
                        for size, v in osu(bins / TESTS[what], transport, a.max).items():
                            values["osu"][what].setdefault(size, []).append(v)
            raw[transport] = values
            lines += [f"\n### {transport} ({a.repeats} interleaved repeats; latency in us, bandwidth in MB/s)\n",
                      "| test | size | OSU | fabric one block | fabric default | one block / OSU | default / OSU | "
                      "OSU spread | one block spread | default spread |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for test in TESTS:
                for size in sorted(values["osu"][test]):
                    series = [values[tool][test].get(size) for tool in tools]
                    if not all(series):
                        continue
                    one, default, theirs = (statistics.median(x) for x in series)
                    spreads = " | ".join(f"{spread(x):.1%}" for x in (series[2], series[0], series[1]))
                    lines.append(f"| {test} | {size} | {theirs:.4g} | {one:.4g} | {default:.4g} | {one / theirs:.3f} | "
                                 f"{default / theirs:.3f} | {spreads} |")
    text = "\n".join(lines)
    print(text)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "osu_interleaved.md").write_text(text + "\n")
    (a.out / "osu_interleaved.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
