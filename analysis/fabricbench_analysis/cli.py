"""fabric-report: look at fabricbench HDF5 results without writing Python.

  fabric-report show RUN.h5                       status, environment summary and the results tables
  fabric-report plot RUN.h5 [--out DIR] [--format png|svg]
                                                  busbw/time, latency/bandwidth against size, sweep heat maps,
                                                  per-node medians, a stability profile
  fabric-report compare A.h5 B.h5 [--threshold 5%]
                                                  A, B and B/A for every measured value; exit 1 on a regression
  fabric-report baseline RUN.h5 OUT.ini [--tolerance 10%]
                                                  a baseline from a run (format: docs/analysis.md)
  fabric-report check RUN.h5 --baseline FILE      exit 1 when a value is worse than its baseline
  fabric-report html RUN.h5 [B.h5] OUT.html       one self-contained page (with B: the comparison of RUN against B)
  fabric-report excel RUN.h5 OUT.xlsx             summary, one sheet per table, charts, colour-scaled matrices
  fabric-report csv RUN.h5 DIR [--table T]        one CSV per table
  fabric-report json RUN.h5 [OUT.jsonl] [--table T]
                                                  every table as JSON lines (stdout without OUT)

Bad input (a missing or foreign file, a run still "running", an unknown table) gets one line and exit 2.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import pandas as pd

from .results import load, to_csv_dir, to_excel, to_json_lines


class BadInput(Exception):
    pass


def _show(run) -> None:
    for key in ("tool", "tool_version", "command_line", "started_at", "finished_at", "status", "world_size", "hosts"):
        print(f"{key:>14}: {run.attrs.get(key, '')}")
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 500):
        for name, frame in run.tables.items():
            if name.startswith("results/"):
                print(f"\n[{name}] {len(frame)} rows")
                print(frame.to_string(index=False))


def _open(path: str, allow_running: bool = False):
    try:
        run = load(path)
    except (OSError, KeyError) as e:
        raise BadInput(f"{path}: cannot read: {e}") from None
    if run.attrs.get("format") != "fabricbench":
        raise BadInput(f"{path}: not a fabricbench results file (no format=fabricbench attribute)")
    if run.attrs.get("status") == "running" and not allow_running:
        raise BadInput(f"{path}: status 'running': the run has not finished or was killed before it could say so "
                       "(fabric-report show reads it as it is)")
    return run


def _tables(run, wanted) -> list:
    if not wanted:
        return list(run.tables)
    for t in wanted:
        if t not in run.tables:
            raise BadInput(f"--table {t}: unknown table; allowed: {', '.join(run.tables)}")
    return wanted


def _fraction(text: str, option: str) -> float:
    from .compare import parse_fraction
    try:
        return parse_fraction(text, option)
    except ValueError as e:
        raise BadInput(str(e)) from None


def _compare(args) -> int:
    from . import compare as cmp

    a, b = _open(args.a), _open(args.b)
    threshold = _fraction(args.threshold, "--threshold")
    result = cmp.compare(a, b, threshold)
    if not result.tables:
        raise BadInput(f"{args.a} and {args.b} have no results table in common")
    with pd.option_context("display.width", 250, "display.max_columns", 60, "display.max_rows", 1000):
        for name, frame in result.tables.items():
            print(f"\n[{name}] A = {a.path.name}, B = {b.path.name}")
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("\n# what changed in /env:" if result.env_changes else "\n# /env: the same")
    for line in result.env_changes:
        print(f"#   {line}")
    for line in result.regressions:
        print(f"REGRESSION {line}")
    print(f"# {len(result.regressions)} regression(s) beyond {threshold:.0%}")
    return 1 if result.regressions else 0


def _check(args) -> int:
    from . import compare as cmp

    run = _open(args.run)
    if not pathlib.Path(args.baseline).exists():
        raise BadInput(f"--baseline {args.baseline}: no such file")
    try:
        failures, checked = cmp.check(run, args.baseline)
    except ValueError as e:
        raise BadInput(str(e)) from None
    for line in failures:
        print(f"BELOW BASELINE {line}")
    print(f"# {checked} value(s) checked against {args.baseline}: {len(failures)} failed")
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fabric-report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a run's status and results")
    show.add_argument("run")
    plot = sub.add_parser("plot", help="write the plots of a run")
    plot.add_argument("run")
    plot.add_argument("--out", default=None, help="folder (default: <RUN>-plots next to the file)")
    plot.add_argument("--format", default="png", choices=["png", "svg"])
    comp = sub.add_parser("compare", help="compare two runs")
    comp.add_argument("a")
    comp.add_argument("b")
    comp.add_argument("--threshold", default="5%")
    base = sub.add_parser("baseline", help="write a baseline from a run")
    base.add_argument("run")
    base.add_argument("out")
    base.add_argument("--tolerance", default="10%")
    chk = sub.add_parser("check", help="check a run against a baseline")
    chk.add_argument("run")
    chk.add_argument("--baseline", required=True)
    page = sub.add_parser("html", help="one self-contained HTML page")
    page.add_argument("files", nargs="+", help="RUN.h5 [B.h5] OUT.html")
    page.add_argument("--threshold", default="5%")
    excel = sub.add_parser("excel", help="write an .xlsx workbook")
    excel.add_argument("run")
    excel.add_argument("out")
    excel.add_argument("--samples", action="store_true", help="include the per-iteration samples")
    csv = sub.add_parser("csv", help="write one CSV per table")
    csv.add_argument("run")
    csv.add_argument("directory")
    csv.add_argument("--table", action="append")
    js = sub.add_parser("json", help="every table as JSON lines")
    js.add_argument("run")
    js.add_argument("out", nargs="?")
    js.add_argument("--table", action="append")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except BadInput as e:
        print(f"fabric-report: {e}", file=sys.stderr)
        return 2


def _run(args) -> int:
    if args.command == "compare":
        return _compare(args)
    if args.command == "check":
        return _check(args)
    if args.command == "html":
        if len(args.files) not in (2, 3):
            raise BadInput("html: give RUN.h5 [B.h5] OUT.html")
        from .html import write_html
        run = _open(args.files[0])
        other = _open(args.files[1]) if len(args.files) == 3 else None
        write_html(run, args.files[-1], other, _fraction(args.threshold, "--threshold"))
        print(args.files[-1])
        return 0
    run = _open(args.run, allow_running=args.command == "show")
    if args.command == "show":
        _show(run)
        return 0 if run.complete else 1
    if args.command == "plot":
        from .plots import plot_run
        out = pathlib.Path(args.out) if args.out else run.path.with_name(run.path.stem + "-plots")
        for path in plot_run(run, out, args.format):
            print(path)
    elif args.command == "baseline":
        from . import compare as cmp
        try:
            count = cmp.write_baseline(run, args.out, args.tolerance)
        except ValueError as e:
            raise BadInput(str(e)) from None
        print(f"# {count} entries written to {args.out}")
    elif args.command == "excel":
        to_excel(run, args.out, include_samples=args.samples)
    elif args.command == "json":
        tables = _tables(run, args.table)
        to_json_lines(run, args.out or "/dev/stdout", tables)
    else:
        tables = _tables(run, args.table)
        for path in to_csv_dir(run, args.directory, tables):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
