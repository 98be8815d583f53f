"""`fabric-report import`: options checked, every source read and judged before anything is written (a source that
cannot be read is one line naming it, exit 2, and no output), then the files written whole, each run's answer printed
as the HTML page and the workbook will say it, and with several sources a table of their headline figures side by
side (also written as OUT/comparison.csv)."""
from __future__ import annotations

import math
import pathlib

import pandas as pd

from ..read.files import BadInput, output_dir, output_file, written_dir, written_file
from . import expect, nccl_tests
from .names import unique
from .source import Options, import_one, sources_of
from .write import write


def _positive(text, option: str, kind=int):
    if text is None:
        return kind(0)
    try:
        v = kind(text)
    except ValueError:
        v = 0
    if not (v > 0 and math.isfinite(v)):
        raise BadInput(f"import: {option} '{text}': allowed values are {'whole ' if kind is int else ''}numbers "
                       "above 0")
    return v


def options_of(args) -> Options:
    o = Options(tool=args.tool or "", op=args.op or "", ranks=_positive(args.ranks, "--ranks"),
                window=_positive(args.window, "--window"), nodes=_positive(args.nodes, "--nodes"),
                nics_per_node=_positive(args.nics_per_node, "--nics-per-node"),
                nic_gbitps=_positive(args.nic_rate, "--nic-rate", float),
                link_gbps=_positive(args.link_gbps, "--link-gbps", float), nccl_log=args.nccl_log or "")
    if o.op and o.op not in nccl_tests.FACTORS:
        raise BadInput(f"import: --op '{o.op}': allowed values are {', '.join(nccl_tests.FACTORS)}")
    if args.configs:
        o.configs = pathlib.Path(args.configs)
    if not o.configs.is_dir():
        raise BadInput(f"import: --configs {o.configs}: not a folder (give the suite's configs/, where "
                       "expected-curves.csv and expected-network.csv are)")
    return o


def comparison(runs: dict) -> pd.DataFrame:
    """Each run's headline figures side by side: one row per table, curve and size, one column per source."""
    from ..read.results import curve_keys, curve_label, load
    frames = []
    for name, path in runs.items():
        run = load(path)
        for table, frame in run.tables.items():
            if not table.startswith("results/"):
                continue
            keys, size = curve_keys(run, table, frame), run.size_key(table)
            for headline in run.headlines(table):
                for _, row in frame[frame[headline].notna()].iterrows():
                    frames.append({"table": table, "curve": curve_label(keys, tuple(row[k] for k in keys)),
                                   "bytes": row[size] if size else -1, "figure": headline, "source": name,
                                   "value": row[headline]})
    data = pd.DataFrame(frames)
    if data.empty:
        return data
    return data.pivot_table(index=["table", "curve", "figure", "bytes"], columns="source", values="value",
                            aggfunc="first", sort=False).reset_index()


def _folder_for_runs(text: str, source: pathlib.Path, runs: list) -> pathlib.Path:
    """--out for one source that holds several runs: a folder (each run a file of its own), never one file."""
    p = pathlib.Path(text)
    if p.suffix == ".h5" or (p.exists() and not p.is_dir()):
        where = ", ".join(f"{r.tool} {r.what} from line {r.first_line}" for r in runs)
        raise BadInput(f"{source}: holds {len(runs)} runs ({where}); give --out a folder (each run becomes a file "
                       f"of its own), not the file {text}")
    return output_dir(text, "--out")


def run_import(args, say, say_table) -> int:
    from ..judge.answer import answer, expected_rule
    from ..read.results import load
    o = options_of(args)
    sources = sources_of(args.sources)
    many = len(sources) > 1 or any(pathlib.Path(s).is_dir() for s in args.sources)
    out = output_dir(args.out, "--out") if many else output_file(args.out, "--out", sources)
    model = expect.Model(o.configs)
    rule = expected_rule()
    per_source = [import_one(p, o, model) for p in sources]  # all read and judged before anything is written
    imported = [imp for runs in per_source for imp in runs]
    stems = [p.name if len(runs) == 1 else f"{p.name}.{k}-{imp.what}"
             for p, runs in zip(sources, per_source) for k, imp in enumerate(runs, 1)]
    names = unique(stems, [imp.source for imp in imported])
    if len(imported) > 1 and not many:
        out, many = _folder_for_runs(args.out, sources[0], per_source[0]), True
    written = {}
    if many:
        with written_dir(out, "--out") as stage:
            for imp, name in zip(imported, names):
                write(imp, stage / name, rule)
            table = comparison({n: stage / n for n in names})
            if not table.empty:
                table.to_csv(stage / "comparison.csv", index=False)
        written = {n: out / n for n in names}
    else:
        with written_file(out, "--out") as tmp:
            write(imported[0], tmp, rule)
        written = {names[0]: out}
    worst = 0
    for imp, (name, path) in zip(imported, written.items()):
        run = load(path)
        say(f"{path}: {imp.tool} {imp.tool_version} from {imp.source}, {len(imp.rows)} rows in /{imp.table}"
            + (f", {len(imp.hosts)} host(s)" if imp.hosts else ""))
        for note in imp.notes:
            say(f"  note: {note}")
        for line in answer(run).lines():
            say(f"  {line}")
        worst = max(worst, 0 if run.complete else 1)
    if many:
        table = comparison(written)
        if not table.empty:
            say()
            say(f"# the headline figures side by side ({out / 'comparison.csv'})")
            with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_rows", 2000):
                say_table(table, float_format=lambda v: f"{v:.4g}")
    return worst
