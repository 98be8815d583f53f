"""fabric-report: look at fabricbench HDF5 results without writing Python.

  fabric-report show RUN.h5                       status, environment summary and the results tables
  fabric-report plot RUN.h5 [--out DIR] [--format png|svg]
                                                  busbw/time, latency/bandwidth against size, sweep heat maps (one
                                                  per rail, hosts grouped by leaf switch given a topology),
                                                  per-node medians, a stability profile, a slow-rank report's
                                                  ranks against time (fabric-watchdog --slow)
  fabric-report compare A.h5 B.h5 [--threshold 5%]
                                                  A, B and B/A for every measured value; exit 1 on a regression
  fabric-report baseline RUN.h5 OUT.ini [--tolerance 10%]
                                                  a baseline from a run (format: docs/analysis.md)
  fabric-report check RUN.h5 --baseline FILE      exit 1 when a value is worse than its baseline
  fabric-report html RUN.h5 [B.h5] OUT.html [--threshold 5%]
                                                  one self-contained page (with B: the comparison of RUN against B;
                                                  --threshold only with B)
  fabric-report excel RUN.h5 OUT.xlsx             summary, one sheet per table, charts, colour-scaled matrices
  fabric-report csv RUN.h5 DIR [--table T]        one CSV per table
  fabric-report json RUN.h5 [OUT.jsonl] [--table T]
                                                  every table as JSON lines (stdout without OUT)
  fabric-report metrics RUN.h5 [OUT.prom]        Prometheus text format for node_exporter's textfile collector
                                                  (stdout without OUT; docs/operations.md)
  fabric-report import SOURCE... --out OUT        nccl-tests, OSU or perftest output (text or JSON) as fabricbench
                                                  files, judged by the suite's model: one SOURCE -> OUT.h5; several,
                                                  or a folder -> the folder OUT, one file each, and a table comparing
                                                  them (docs/import.md)

Bad input gets one line naming the file or option and what is allowed, and exit 2: a missing, foreign, truncated
or damaged file, a directory where a file is expected, an output that cannot be written, an unknown table or
option value, an option the subcommand does not use or one given twice, and a run still "running" (killed before it
could say so, or not finished), which only `show` reads: it shows the rows written so far, says so in one line on
stderr and exits 1, as for any run that did not complete. Outputs are written under a temporary name and renamed,
so a failure leaves none half-written. Every field printed (host names, command lines, statuses, paths) is shown by
printable(): a control character, bidi override or byte that is not UTF-8 as text, never raw on the terminal.
"""
from __future__ import annotations

import argparse
import os
import sys

import pandas as pd

from .read.files import (BadInput, WriteFailed, one_line, open_run, open_text, output_dir, output_file, written_dir,
                    written_file)
from .export.csv_dir import to_csv_dir
from .export.excel import to_excel
from .export.json_lines import to_json_lines
from .read.printable import printable


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as one line (BadInput) instead of its usage text and a second line."""

    def error(self, message):
        command = self.prog.removeprefix("fabric-report").strip()
        raise BadInput(f"{command + ': ' if command else ''}{one_line(message)}; see {self.prog} --help")


def say(line="", file=None) -> None:
    """The one way fabric-report writes a line for a person, on stdout or stderr (issue 48). Whatever a results
    file, a baseline or the command line put in it (a host name from a server, a command line, a status, a path) is
    shown by printable(): no terminal escape reaches the terminal, no line feed in a field starts a line of its own.
    Tables come through here line by line (say_table)."""
    print(printable(line), file=sys.stdout if file is None else file)


def say_table(frame: pd.DataFrame, **options) -> None:
    """A table as pandas lays it out, its column names and text cells through printable() first (a line feed in a
    cell would otherwise break the table's lines, an escape sequence act on the terminal), then line by line."""
    cells = frame.rename(columns=printable)
    for column in cells.columns:
        if cells[column].dtype == object:
            cells[column] = cells[column].map(lambda v: printable(v) if isinstance(v, str) else v)
    for line in cells.to_string(index=False, **options).split("\n"):
        say(line)


def _show(run) -> None:
    for key in ("tool", "tool_version", "command_line", "started_at", "finished_at", "status", "world_size", "hosts"):
        say(f"{key:>14}: {run.attrs.get(key, '')}")
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 500):
        for name, frame in run.tables.items():
            if name.startswith("results/"):
                say()
                say(f"[{name}] {len(frame)} rows")
                say_table(frame)


def _open(path: str, allow_running: bool = False):
    return open_run(path, allow_running)


def _tables(run, wanted) -> list:
    if not wanted:
        return list(run.tables)
    for t in wanted:
        if t not in run.tables:
            raise BadInput(f"--table {t}: unknown table; allowed: {', '.join(run.tables)}")
    return wanted


def _fraction(text: str, option: str) -> float:
    from .judge.compare import parse_fraction
    try:
        return parse_fraction(text, option)
    except ValueError as e:
        raise BadInput(str(e)) from None


def _compare(args) -> int:
    from .judge import compare as cmp

    a, b = _open(args.a), _open(args.b)
    threshold = _fraction("5%" if args.threshold is None else args.threshold, "--threshold")
    result = cmp.compare(a, b, threshold)
    if not result.tables:
        raise BadInput(f"{args.a} and {args.b} have no results table in common")
    with pd.option_context("display.width", 250, "display.max_columns", 60, "display.max_rows", 1000):
        for name, frame in result.tables.items():
            say()
            say(f"[{name}] A = {a.path.name}, B = {b.path.name}")
            say_table(frame, float_format=lambda v: f"{v:.4g}")
    say()
    say("# what changed in /env:" if result.env_changes else "# /env: the same")
    for line in result.env_changes:
        say(f"#   {line}")
    for line in result.regressions:
        say(f"REGRESSION {line}")
    say(f"# {len(result.regressions)} regression(s) beyond {threshold:.0%}")
    return 1 if result.regressions else 0


def _check(args) -> int:
    from .judge import compare as cmp

    import configparser

    run = _open(args.run)
    open_text(args.baseline, "--baseline")
    try:
        failures, checked = cmp.check(run, args.baseline)
    except (ValueError, configparser.Error) as e:
        raise BadInput(f"--baseline {args.baseline}: not a baseline file (format: docs/analysis.md): "
                       f"{one_line(e)}") from None
    for line in failures:
        say(f"BELOW BASELINE {line}")
    say(f"# {checked} value(s) checked against {args.baseline}: {len(failures)} failed")
    if not checked and not failures:  # a baseline that checked nothing passes nothing
        say(f"NOTHING CHECKED: no value of this run is in {args.baseline}: not a pass")
    return 1 if failures or not checked else 0


class _Once(argparse.Action):
    """An option that takes a value, refused when given twice (issue 48: an option is used or refused, never
    ignored): argparse would keep the last and drop the first without a word. Its default is None until resolved."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise BadInput(f"{parser.prog.removeprefix('fabric-report').strip()}: {option_string} given twice "
                           f"({getattr(namespace, self.dest)} and {values}); give it once")
        setattr(namespace, self.dest, values)


def _unused(command: str, extra: list, sub: argparse.ArgumentParser) -> str:
    """The line that refuses what `command` does not take: the first option of `extra` by name, with the options it
    has; else the first argument left over."""
    options = [o for a in sub._actions for o in a.option_strings if o not in ("-h", "--help")]
    has = f"its options: {', '.join(options)}" if options else "it has no options"
    for word in extra:
        if word.startswith("-") and word != "-":
            return f"{command}: {word.split('=', 1)[0]}: not an option of fabric-report {command} ({has}; see " \
                   f"fabric-report {command} --help)"
    return f"{command}: {extra[0]}: an argument too many (see fabric-report {command} --help)"


def _parser():
    """fabric-report's parser, and each subcommand's by name."""
    parser = _Parser(prog="fabric-report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a run's status and results")
    show.add_argument("run")
    plot = sub.add_parser("plot", help="write the plots of a run")
    plot.add_argument("run")
    plot.add_argument("--out", action=_Once, help="folder (default: <RUN>-plots next to the file)")
    plot.add_argument("--format", action=_Once, choices=["png", "svg"], help="png (default) or svg")
    comp = sub.add_parser("compare", help="compare two runs")
    comp.add_argument("a")
    comp.add_argument("b")
    comp.add_argument("--threshold", action=_Once, help="5%% unless given")
    base = sub.add_parser("baseline", help="write a baseline from a run")
    base.add_argument("run")
    base.add_argument("out")
    base.add_argument("--tolerance", action=_Once, help="10%% unless given")
    chk = sub.add_parser("check", help="check a run against a baseline")
    chk.add_argument("run")
    chk.add_argument("--baseline", required=True, action=_Once)
    page = sub.add_parser("html", help="one self-contained HTML page")
    page.add_argument("files", nargs="+", help="RUN.h5 [B.h5] OUT.html")
    page.add_argument("--threshold", action=_Once, help="with B.h5 only: 5%% unless given")
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
    prom = sub.add_parser("metrics", help="the run in Prometheus' text format (node_exporter textfile collector)")
    prom.add_argument("run")
    prom.add_argument("out", nargs="?", help="OUT.prom (written whole and renamed; default: stdout)")
    imp = sub.add_parser("import", help="nccl-tests, OSU or perftest output as fabricbench files")
    imp.add_argument("sources", nargs="+", help="output files of the peers, or folders of them")
    imp.add_argument("--out", required=True, action=_Once, help="OUT.h5 for one source, else a folder")
    imp.add_argument("--tool", action=_Once, choices=["nccl-tests", "osu", "perftest"],
                     help="the tool that wrote the sources (default: told from their lines)")
    imp.add_argument("--op", action=_Once, help="nccl-tests output that does not name its test: all_reduce, ...")
    imp.add_argument("--ranks", action=_Once, help="OSU collectives: the job's ranks (OSU does not print them)")
    imp.add_argument("--window", action=_Once, help="OSU bw/bibw: the -W the run used (default: OSU's 64)")
    imp.add_argument("--nodes", action=_Once, help="nodes, where the source does not name its hosts")
    imp.add_argument("--nics-per-node", action=_Once, help="RDMA NICs per node that NCCL used")
    imp.add_argument("--nic-rate", action=_Once, help="the NICs' line rate, Gb/s (400 for NDR)")
    imp.add_argument("--link-gbps", action=_Once, help="one GPU's NVLink figure, GB/s (one node; known for H100/H200)")
    imp.add_argument("--nccl-log", action=_Once, help="NCCL_DEBUG=INFO log of the same run (the path NCCL took)")
    imp.add_argument("--configs", action=_Once, help="the folder of expected-curves.csv and expected-network.csv")
    return parser, sub.choices


def main(argv=None) -> int:
    try:
        parser, commands = _parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # argparse's "unrecognized arguments" named no subcommand, nor what it takes
            raise BadInput(_unused(args.command, extra, commands[args.command]))
        return _run(args)
    except BadInput as e:
        say(f"fabric-report: {e}", sys.stderr)
        return 2
    except WriteFailed as e:
        say(f"fabric-report: {e}", sys.stderr)
        return 3
    except BrokenPipeError:
        # The reader of stdout left (`fabric-report show RUN.h5 | head`): stop quietly, as a killed pipe writer would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(args) -> int:
    if args.command == "import":
        from .imports.command import run_import
        return run_import(args, say, say_table)
    if args.command == "compare":
        return _compare(args)
    if args.command == "check":
        return _check(args)
    if args.command == "html":
        if len(args.files) not in (2, 3):
            raise BadInput("html: give RUN.h5 [B.h5] OUT.html")
        if args.threshold is not None and len(args.files) == 2:
            raise BadInput("html: --threshold goes with a reference run (html RUN.h5 B.h5 OUT.html): with one run "
                           "nothing is compared")
        from .export.html import write_html
        run = _open(args.files[0])
        other = _open(args.files[1]) if len(args.files) == 3 else None
        threshold = _fraction("5%" if args.threshold is None else args.threshold, "--threshold")
        out = output_file(args.files[-1], "OUT.html", args.files[:-1])
        with written_file(out, "OUT.html") as tmp:
            write_html(run, tmp, other, threshold)
        say(out)
        return 0
    run = _open(args.run, allow_running=args.command == "show")
    if args.command == "show":
        if run.attrs.get("status") == "running":
            say(f"fabric-report: {args.run}: status 'running': the run did not complete (killed before it could say "
                "so, or still measuring); shown are the rows written so far (exit 1)", file=sys.stderr)
        _show(run)
        return 0 if run.complete else 1
    if args.command == "plot":
        from .draw.plots import plot_run
        out = output_dir(args.out, "--out") if args.out is not None else run.path.with_name(run.path.stem + "-plots")
        with written_dir(out, "--out") as stage:
            names = [p.name for p in plot_run(run, stage, args.format or "png")]
        for name in names:
            say(out / name)
    elif args.command == "baseline":
        from .judge import compare as cmp
        tolerance = "10%" if args.tolerance is None else args.tolerance
        _fraction(tolerance, "--tolerance")
        out = output_file(args.out, "OUT.ini", [args.run])
        with written_file(out, "OUT.ini") as tmp:
            count = cmp.write_baseline(run, tmp, tolerance)
        say(f"# {count} entries written to {out}")
    elif args.command == "excel":
        out = output_file(args.out, "OUT.xlsx", [args.run])
        with written_file(out, "OUT.xlsx") as tmp:
            to_excel(run, tmp, include_samples=args.samples)
    elif args.command == "metrics":
        from .export.prometheus import exposition, write_metrics
        if args.out is None:
            sys.stdout.write(exposition(run))
        else:
            out = output_file(args.out, "OUT.prom", [args.run])
            with written_file(out, "OUT.prom") as tmp:
                write_metrics(run, tmp)
    elif args.command == "json":
        tables = _tables(run, args.table)
        if args.out is None:
            to_json_lines(run, sys.stdout, tables)
        else:
            out = output_file(args.out, "OUT.jsonl", [args.run])
            with written_file(out, "OUT.jsonl") as tmp:
                to_json_lines(run, tmp, tables)
    else:
        tables = _tables(run, args.table)
        out = output_dir(args.directory, "DIR")
        with written_dir(out, "DIR") as stage:
            names = [p.name for p in to_csv_dir(run, stage, tables)]
        for name in names:
            say(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
