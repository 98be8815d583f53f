#!/usr/bin/python3
"""How often fabric-sweep names what was injected (issue 48): a benchmark over runs, not a test. Each scenario runs the
rails rig (tests/rigs/rails_fabric.sh: 8 hosts x 2 rails, leaves under a spine per rail) RUNS times, each run on a
fresh rig with one fault injected the way tests/rigs/test_rails_sweep.py injects it, at that test's sizes, iterations
and rules, and counts the runs whose verdicts are exactly the fault (its kind, host, rail, switch):
  quiet   nothing shaped                    -> no verdict
  nic     one host's rail-1 veth shaped     -> nic (that host, rail 1)
  node    every rail of one host shaped     -> node (that host)
  link    one host pair on rail 1 (HTB+u32) -> link (that pair, rail 1)
  uplink  leaf 2's rail-1 uplink, leaves 3,3,2 -> uplink (rail1-leaf2)
  noise   pervasive noise: while the sweep runs, a thread keeps setting a random host's links (every rail) to a random
          rate from 2 to 1000 Mbit/s (test_netns_sweep.py's flicker, its --retest 0)  -> noise verdicts only, no
          host named
  nic200  issue 48's own case: a rail-1 NIC at 200 Mbit/s, --sizes 256K -n 5 -w 1, the shipped rules -> nic
Needs root and a build (FABRICBENCH_BIN, default build/benchmarks). The machine is shared: run one at a time.
  tests/perf/sweep_verdict_rates.py [--runs 20] [--scenarios quiet,nic,...] [--json rates.json]"""
import argparse
import collections
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import threading
import time

import h5py

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RIG_SCRIPT = ROOT / "tests" / "rigs" / "rails_fabric.sh"
BIN = pathlib.Path(os.environ.get("FABRICBENCH_BIN", ROOT / "build" / "benchmarks"))
RIG_RULES = ROOT / "configs" / "rigs" / "netns-sweep.ini"
SLOW = "100mbit"  # tests/rigs/test_rails_sweep.py's
# test_rails_sweep.py's ARGS
TEST_ARGS = ["--sizes", "128K", "-W", "4", "-n", "4", "-w", "1", "--rules", str(RIG_RULES), "--retest", "1",
             "--metric", "p2p_bw", "--rails"]
ISSUE_ARGS = ["--sizes", "256K", "-n", "5", "-w", "1", "--metric", "p2p_bw", "--rails"]
# Pervasive noise at the tests' sizes and iterations, without re-tests as test_netns_sweep.py's flicker test (a
# re-test keeps a pair's best, which noise passes), and with the shipped rules: the rig's (suspect below 0.2 x the
# median) sit below what the flicker gives (slowest pairs ~0.25 x the median: no suspect, nothing to call noise).
NOISE_ARGS = ["--sizes", "128K", "-W", "4", "-n", "4", "-w", "1", "--retest", "0", "--metric", "p2p_bw", "--rails"]


def flicker_rate(pick):
    """2 to 1000 Mbit/s, even on a log scale: a continuum (test_netns_sweep.py's five fixed rates, 3x apart, leave
    3x gaps between the pairs they slow; from 10 Mbit/s up, 1 run in 3 had no pair below half the median)."""
    return f"{2 * 500 ** pick.random():.0f}mbit"


def rig(*args, check=True):
    return subprocess.run([str(RIG_SCRIPT)] + [str(a) for a in args], capture_output=True, text=True, check=check)


def host(rig_id, i):
    return f"{rig_id}-h{i}"


# name -> (leaf sizes, inject(rig_id), expected verdicts as (kind, host_a, host_b, rail, switch), sweep args)
def scenarios(rig_id):
    h = lambda i: host(rig_id, i)  # noqa: E731
    return {
        "quiet": ("4,4", lambda: None, [], TEST_ARGS),
        "nic": ("4,4", lambda: rig("shape-nic", rig_id, h(3), 1, SLOW), [("nic", h(3), "", 1, "")], TEST_ARGS),
        "node": ("4,4", lambda: rig("shape-host", rig_id, h(6), SLOW), [("node", h(6), "", -1, "")], TEST_ARGS),
        "link": ("4,4", lambda: rig("shape-link", rig_id, h(1), h(7), 1, SLOW), [("link", h(1), h(7), 1, "")],
                 TEST_ARGS),
        "uplink": ("3,3,2", lambda: rig("shape-uplink", rig_id, 1, 2, SLOW), [("uplink", "", "", 1, "rail1-leaf2")],
                   TEST_ARGS),
        "noise": ("4,4", lambda: None, "noise", NOISE_ARGS),
        "nic200": ("4,4", lambda: rig("shape-nic", rig_id, h(3), 1, "200mbit"), [("nic", h(3), "", 1, "")],
                   ISSUE_ARGS),
    }


def text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def verdicts(path):
    """The run's status, its verdicts (kind, host_a, host_b, rail, switch) and, to explain a wrong run, its three
    slowest pair tests and its median one."""
    with h5py.File(path, "r") as f:
        status = text(f.attrs.get("status", ""))
        rows = f["sweep/verdicts"][()] if "sweep/verdicts" in f else []
        pairs = sorted(f["sweep/pairs"][()], key=lambda p: p["value"]) if "sweep/pairs" in f else []
    found = sorted((text(r["kind"]), text(r["host_a"]), text(r["host_b"]), int(r["rail"]), text(r["switch"]))
                   for r in rows)
    slowest = [f"{text(p['host_a'])}-{text(p['host_b'])}/{int(p['rail'])}:{p['value']:.1f}" for p in pairs[:3]]
    median = f"median {pairs[len(pairs) // 2]['value']:.0f}" if len(pairs) else "no pairs"
    return status, found, " ".join(slowest + [median])


def one_run(name, rig_id, net, work, k):
    leaves, inject, expected, args = scenarios(rig_id)[name]
    rig("down", rig_id, check=False)
    rig("up", rig_id, net, 8, 2, leaves)
    try:
        (work / "topology.conf").write_text(rig("topology", rig_id).stdout)
        (work / "rails.map").write_text(rig("rail-map", rig_id).stdout)
        inject()
        stop = threading.Event()
        hosts = [host(rig_id, i) for i in range(1, 9)]

        def flicker():
            pick = random.Random(k)
            while not stop.is_set():
                rig("shape-host", rig_id, pick.choice(hosts), flicker_rate(pick), check=False)

        thread = threading.Thread(target=flicker) if expected == "noise" else None
        out = work / f"{name}{k}.h5"
        cmd = ["timeout", "170", str(RIG_SCRIPT), "mpirun", rig_id, ",".join(hosts), "--", str(BIN / "fabric-sweep"),
               "--output", str(out), "-q", "--rail-map", str(work / "rails.map"), "--topology",
               str(work / "topology.conf")] + args
        start = time.monotonic()
        if thread:
            thread.start()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        finally:
            stop.set()
            if thread:
                thread.join()
        took = time.monotonic() - start
    finally:
        rig("down", rig_id, check=False)
    if not out.exists():
        return "no file", [], took, r.returncode, r.stderr[-300:]
    status, found, figures = verdicts(out)
    out.unlink()
    if status != "complete":
        return f"status {status}", found, took, r.returncode, r.stderr[-300:]
    if expected == "noise":
        ok = bool(found) and all(v[0] == "noise" and v[1:3] == ("", "") for v in found)
    else:
        ok = found == sorted(expected)
    return ("right" if ok else "wrong"), found, took, r.returncode, "" if ok else f" slowest {figures}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--scenarios", default="quiet,nic,node,link,uplink,noise")
    ap.add_argument("--rig", default=f"r{os.getpid() % 10000}")
    ap.add_argument("--net", type=int, default=231)
    ap.add_argument("--json", help="also write the per-run outcomes here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (the rig makes network namespaces)")
    names = a.scenarios.split(",")
    unknown = [n for n in names if n not in scenarios(a.rig)]
    if unknown:
        sys.exit(f"--scenarios: unknown {','.join(unknown)}; allowed: {','.join(scenarios(a.rig))}")
    work = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-rates-"))
    record = {}
    # Interleaved (scenario by scenario within each repeat), so that the machine's load over time falls on all alike.
    for k in range(a.runs):
        for name in names:
            outcome, found, took, rc, err = one_run(name, a.rig, a.net, work, k)
            record.setdefault(name, []).append({"outcome": outcome, "verdicts": found, "s": round(took, 1), "rc": rc})
            print(f"run {k + 1} {name}: {outcome} exit {rc} {took:.0f} s {found if outcome != 'right' else ''}{err}",
                  flush=True)
    print("\nscenario  right/runs  outcomes (what was named in the wrong runs)")
    for name in names:
        runs = record[name]
        right = sum(r["outcome"] == "right" for r in runs)
        wrong = collections.Counter(",".join(v[0] for v in r["verdicts"]) or "nothing" for r in runs
                                    if r["outcome"] != "right")
        print(f"{name:8}  {right:2}/{len(runs):<2}       {dict(wrong) if wrong else ''}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
