#!/usr/bin/python3
"""Whether two fabric-sim binaries give the same answers (rounds, simulated time, records, verdicts, precision and
recall; everything in the JSON but CPU times) on a few fabrics and plans: the check that a change to the planners or
the judge moved code and changed no behaviour. A check to run by hand, not a test: build the binary before the change
somewhere, then
  tests/sim/same_answers.py OLD/fabric-sim build/tests/fabric-sim
Prints one line per case; exit 1 when any differs."""
import json
import subprocess
import sys

CASES = ["--hosts 64 --rails 2 --leaf 8 --seeds 3 --plan all-pairs,quick,adaptive",
         "--hosts 128 --rails 4 --leaf 16 --seeds 4 --plan adaptive --budget 300",
         "--hosts 64 --rails 1 --leaf 8 --seeds 3 --plan shift,all-pairs",
         "--hosts 256 --rails 8 --leaf 32 --seeds 4 --plan adaptive",
         "--hosts 96 --rails 2 --leaf 12 --seeds 3 --plan adaptive --budget 900"]


def answers(exe, args):
    out = subprocess.run([exe] + args.split() + ["--json"], capture_output=True, text=True, check=True).stdout
    return strip(json.loads(out))


def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if "cpu" not in k}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    differ = 0
    for args in CASES:
        same = answers(sys.argv[1], args) == answers(sys.argv[2], args)
        differ += not same
        print("same     " if same else "DIFFERENT", args)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
