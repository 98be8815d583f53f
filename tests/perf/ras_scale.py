#!/usr/bin/env python3
"""What judging a running job through NCCL's RAS costs at scale (issue 48): a reply in NCCL 2.28.9's JSON layout
(tests/fixtures/ras/nccl-2.28.9-h200x2/*.json, one rank object per rank, 8 ranks per host) of N ranks in one
communicator, one of them a laggard, served by the tests' fake RAS service; fabric-doctor --nccl-ras asks it (two
looks, since a laggard is asked about twice) and fabric-watchdog --watch takes looks for its Prometheus file. Prints,
per N, the wall time and peak memory (GNU time's maximum resident set) of each, the median of --repeat runs with the
range. A benchmark, not a test: run it by hand on a quiet machine.

  tests/perf/ras_scale.py BUILD/benchmarks [--ranks 1024,4096,16384,100000] [--repeat 3]"""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1] / "analysis"))
from mpi.test_nccl_ras import FakeRas  # noqa: E402


def reply(ranks, laggard):
    def rank(r):
        return {"rank": r, "host": f"10.{r // 8 // 250}.{r // 8 % 250}.1", "pid": 1000 + r, "cuda_dev": r % 8,
                "nvml_dev": r % 8,
                "status": {"init_state": 0, "async_error": 0, "finalize_called": False, "destroy_flag": False,
                           "abort_flag": False},
                "collective_counts": {"Broadcast": 0, "Reduce": 0, "AllGather": 0, "ReduceScatter": 0,
                                      "AllReduce": 78 if r == laggard else 79}}
    return {"nccl_version": "2.28.9", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
            "timestamp": "2026-11-27 10:00:00", "communicators_count": 1,
            "communicators": [{"hash": "0xc04513ef3a63ea2e", "secondary_hash": "0x1:0x2", "size": ranks,
                               "ranks_count": ranks, "missing_ranks_count": 0,
                               "ranks": [rank(r) for r in range(ranks)], "missing_ranks": []}]}


def timed(cmd, cwd, until=None):
    """Wall seconds and peak RSS (MiB) of `cmd` under GNU time; `until(proc)` stops a command that runs on."""
    full = ["/usr/bin/time", "-f", "%e %M"] + cmd
    start = time.monotonic()
    p = subprocess.Popen(full, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if until:
        until(p)
    _, err = p.communicate(timeout=900)
    wall = time.monotonic() - start
    m = re.search(r"(\S+) (\d+)\s*$", err.strip())
    if not m:
        raise SystemExit(f"{cmd[0]}: no timing in {err[-500:]}")
    return wall, int(m.group(2)) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--ranks", default="1024,4096,16384,100000")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    bin_ = pathlib.Path(a.bin)
    print(f"{'ranks':>7} {'reply_MB':>8} {'doctor_s':>20} {'doctor_MiB':>22} {'watch_MiB':>22}")
    for n in [int(x) for x in a.ranks.split(",")]:
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            text = json.dumps(reply(n, laggard=n // 2), indent=2)
            (d / "big.json").write_text(text)
            doctor_s, doctor_mb, watch_mb = [], [], []
            for _ in range(a.repeat):
                ras = FakeRas(d, "big", replies=d)
                try:
                    s, mb = timed([str(bin_ / "fabric-doctor"), "--nccl-ras", ras.address, "--timeout", "600s",
                                   "--output", "r.h5", "--force", "-q"], d)
                    doctor_s.append(s), doctor_mb.append(mb)
                    prom = d / "w.prom"
                    prom.unlink(missing_ok=True)  # the last repeat's file would end this one at once

                    def two_looks(p):  # the second look's file has the laggard; then SIGTERM
                        deadline = time.monotonic() + 600
                        while time.monotonic() < deadline:
                            if prom.exists() and "laggard_ranks{tool=\"fabric-watchdog\"} 1" in prom.read_text():
                                break
                            time.sleep(0.1)
                        # GNU time dies of SIGTERM without passing it on: the watchdog, its child, is asked
                        for child in pathlib.Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split():
                            os.kill(int(child), signal.SIGTERM)
                    _, mb = timed([str(bin_ / "fabric-watchdog"), "--watch", "1s", "--prometheus", str(prom),
                                   "--ras", ras.address, "--ras-timeout", "600s"], d, until=two_looks)
                    watch_mb.append(mb)
                finally:
                    ras.close()

            def show(v, fmt):
                return f"{statistics.median(v):{fmt}} ({min(v):{fmt}}-{max(v):{fmt}})"
            print(f"{n:>7} {len(text) / 1e6:>8.1f} {show(doctor_s, '.2f'):>20} {show(doctor_mb, '.0f'):>22} "
                  f"{show(watch_mb, '.0f'):>22}", flush=True)


if __name__ == "__main__":
    main()
