#!/usr/bin/env python3
"""fabric-sim at a small size (64 hosts x 2 rails, leaves of 8, 3 seeds): all-pairs and adaptive find every injected
node, NIC, uplink and hung fault (recall 1.0), all-pairs every link too, and adaptive takes fewer rounds; adaptive with
a budget that covers every pair finds the links and names the host slow 30% of the time as a node; pervasive noise on
a clean fabric names no host but one "noise" verdict, the usual noise no verdict. The numbers
come from the run, not from this file; adaptive-duplex (covering in duplex rounds) gives the same answers in fewer
rounds; bad options are refused in one line with exit 2."""
import json
import subprocess
import sys

sim = sys.argv[1]
out = subprocess.run([sim, "--hosts", "64", "--rails", "2", "--leaf", "8", "--seeds", "3", "--plan", "all-pairs,adaptive",
                      "--json"], check=True, capture_output=True, text=True, timeout=50).stdout
results = {r["plan"]: r for r in json.loads(out)["results"]}
failures = []
for plan, kinds in (("all-pairs", ("node", "nic", "link", "hung", "uplink")), ("adaptive", ("node", "nic", "hung", "uplink"))):
    r = results[plan]
    if not r["simulated"]:
        failures.append(f"{plan}: not simulated ({r['note']})")
        continue
    for kind in kinds:
        k = r["kinds"][kind]
        if k["injected"] != 3 or k["recall"] != 1.0:
            failures.append(f"{plan}: {kind}: found {k['found']} of {k['injected']} injected (recall {k['recall']})")
        if k["precision"] is not None and k["precision"] < 1.0:
            failures.append(f"{plan}: {kind}: precision {k['precision']} ({k['true_positives']} of {k['verdicts']} verdicts)")
    if r["kinds"].get("noise", {}).get("verdicts", 0):
        failures.append(f"{plan}: injected faults under the usual noise were called noise")
if results["adaptive"]["rounds_max"] >= results["all-pairs"]["schedule_rounds"]:
    failures.append(f"adaptive took {results['adaptive']['rounds_max']} rounds, all-pairs' schedule "
                    f"{results['all-pairs']['schedule_rounds']}")
# With a budget that fits every pair (63 rounds of 0.8 s, plus judging and hangs), adaptive goes on with untested pairs:
# the links too, and the host slow 30% of the time named `node` in every seed, no link verdict naming it.
# adaptive-duplex covers in duplex rounds (N pairs a round): the same answers in fewer rounds.
out = subprocess.run([sim, "--hosts", "64", "--rails", "2", "--leaf", "8", "--seeds", "3", "--plan",
                      "adaptive,adaptive-duplex", "--budget", "150", "--json"], check=True, capture_output=True,
                     text=True, timeout=50).stdout
covered = {r["plan"]: r for r in json.loads(out)["results"]}
for plan, r in covered.items():
    for kind in ("node", "nic", "link", "hung", "uplink"):
        k = r["kinds"][kind]
        if k["injected"] != 3 or k["recall"] != 1.0 or (k["precision"] is not None and k["precision"] < 1.0):
            failures.append(f"{plan} --budget 150: {kind}: found {k['found']} of {k['injected']}, "
                            f"{k['true_positives']} of {k['verdicts']} verdicts right")
    flaky = r["flaky"]
    if flaky["named_node"] != 3 or "link" in flaky["verdicts_naming_it"]:
        failures.append(f"{plan} --budget 150: flaky host named node in {flaky['named_node']} of 3 seeds, "
                        f"verdicts naming it {flaky['verdicts_naming_it']}")
# Every pair of 64 hosts: the circle method's 63 rounds against 32 shift steps, each after the same judging rounds.
if not covered["adaptive-duplex"]["rounds_max"] < 0.75 * covered["adaptive"]["rounds"]:
    failures.append(f"adaptive-duplex --budget 150: {covered['adaptive-duplex']['rounds_max']} rounds at most, "
                    f"adaptive {covered['adaptive']['rounds']} on average")
bad = subprocess.run([sim, "--plan", "everything"], capture_output=True, text=True, timeout=10)
if bad.returncode != 2 or bad.stderr.count("\n") != 1 or "--plan" not in bad.stderr or "adaptive" not in bad.stderr:
    failures.append(f"--plan everything: exit {bad.returncode}, stderr {bad.stderr!r}")
# Pervasive noise and no fault: the judge names no host (no node, NIC or link verdict), and says the run was too
# noisy to judge; with the usual noise and no fault, no verdict at all.
for noise, want_noise in (("0.8", True), ("0.03", False)):
    out = subprocess.run([sim, "--hosts", "64", "--rails", "2", "--leaf", "8", "--seeds", "3", "--plan",
                          "all-pairs,adaptive", "--scenarios", "clean", "--noise", noise, "--json"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        failures.append(f"--scenarios clean --noise {noise}: exit {out.returncode}: {out.stderr[-500:]}")
        continue
    for row in json.loads(out.stdout)["results"]:
        kinds = row["kinds"]
        named = {k: v["verdicts"] for k, v in kinds.items() if k != "noise" and v["verdicts"]}
        if named:
            failures.append(f"--noise {noise}, {row['plan']}: verdicts naming hosts on a clean fabric: {named}")
        noise_verdicts = kinds.get("noise", {}).get("verdicts", 0)
        if want_noise != (noise_verdicts > 0):
            failures.append(f"--noise {noise}, {row['plan']}: {noise_verdicts} noise verdicts")
# Counts are whole numbers: a fraction is refused in one line, not truncated (--rails 2.5 ran 2 rails before).
for option, value in (("--rails", "2.5"), ("--hosts", "64.9"), ("--seeds", "1.5"), ("--seeds", "1e1"),
                      ("--noise", "9"), ("--scenarios", "chaos"), ("--duplex-pair-time", "0"),
                      ("--duplex-setup-time", "-1")):
    bad = subprocess.run([sim, option, value], capture_output=True, text=True, timeout=10)
    if bad.returncode != 2 or bad.stderr.count("\n") != 1 or f"{option} '{value}'" not in bad.stderr:
        failures.append(f"{option} {value}: exit {bad.returncode}, stderr {bad.stderr!r}")
for line in failures:
    print(line)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
