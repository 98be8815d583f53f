"""fabric-report: look at fabricbench HDF5 results without writing Python.

  fabric-report show RUN.h5               status, environment summary and the results tables
  fabric-report excel RUN.h5 OUT.xlsx     one sheet per table (--samples to include per-iteration times)
  fabric-report csv RUN.h5 DIR            one CSV per table
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from .results import load, to_csv_dir, to_excel


def _show(run) -> None:
    for key in ("tool", "tool_version", "command_line", "started_at", "finished_at", "status", "world_size", "hosts"):
        print(f"{key:>14}: {run.attrs.get(key, '')}")
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 500):
        for name, frame in run.tables.items():
            if name.startswith("results/"):
                print(f"\n[{name}] {len(frame)} rows")
                print(frame.to_string(index=False))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fabric-report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a run's status and results")
    show.add_argument("run")
    excel = sub.add_parser("excel", help="write an .xlsx workbook")
    excel.add_argument("run")
    excel.add_argument("out")
    excel.add_argument("--samples", action="store_true", help="include the per-iteration samples")
    csv = sub.add_parser("csv", help="write one CSV per table")
    csv.add_argument("run")
    csv.add_argument("directory")
    args = parser.parse_args(argv)
    try:
        run = load(args.run)
    except (OSError, KeyError) as e:
        print(f"fabric-report: {args.run}: cannot read: {e}", file=sys.stderr)
        return 2
    if args.command == "show":
        _show(run)
    elif args.command == "excel":
        to_excel(run, args.out, include_samples=args.samples)
    else:
        for path in to_csv_dir(run, args.directory):
            print(path)
    return 0 if run.complete else 1


if __name__ == "__main__":
    sys.exit(main())
