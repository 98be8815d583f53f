"""fabric-report import's reported defects, each held to the import's rule: a file whose figures equal the source's, or
one line on stderr naming the file (and line) and what is wrong, exit 2, and nothing written; never a traceback, never
a silent loss. Every source here is a real output of the peers (tests/fixtures/imports) or a copy of one cut, joined or
with one figure changed the way the defect's report describes."""
import json
import pathlib
import shutil
import tempfile
import unittest

import fabricbench_analysis as fa

from .test_import import NT, OSU, PERFTEST, report, source_rows


class Refused(unittest.TestCase):
    """Shared: a source imported or refused, as the rule says."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def source(self, name: str, text: str) -> pathlib.Path:
        path = self.dir / name
        path.write_text(text)
        return path

    def refused(self, source, *options, message="") -> str:
        out = self.dir / "refused.h5"
        code, _, err = report("import", source, "--out", out, *options)
        self.assertEqual(code, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn(str(source), err)
        self.assertIn(message, err)
        self.assertEqual([p.name for p in self.dir.iterdir() if p.name.startswith((".refused", "refused"))], [])
        return err

    def imported(self, source, *options, status=0):
        out = self.dir / "out.h5"
        code, stdout, err = report("import", source, "--out", out, *options)
        self.assertEqual(code, status, err)
        return fa.load(out), stdout


def replaced(path: pathlib.Path, size: str, fields: dict) -> tuple:
    """`path`'s text with the row of `size` given other fields ({index: text}), and that row's line number."""
    lines = path.read_text().splitlines()
    k = next(k for k, line in enumerate(lines) if line.split()[:1] == [size])
    words = lines[k].split()
    for i, text in fields.items():
        words[i] = text
    lines[k] = " ".join(words)
    return "\n".join(lines) + "\n", k + 1


class NanRows(Refused):
    """1. A row of nan bandwidth was stored and judged 'within expected' (a comparison with nan never fails)."""

    def test_a_nan_or_inf_figure_is_refused_naming_its_line(self):
        for fields in ({6: "nan", 7: "nan"}, {10: "nan", 11: "nan"}, {5: "nan"}, {9: "inf"}, {7: "-nan"}):
            with self.subTest(fields=fields):
                text, number = replaced(NT / "all_reduce.txt", "8388608", fields)
                err = self.refused(self.source("all_reduce.txt", text), message=f"all_reduce.txt:{number}: ")
                self.assertRegex(err, r"nan|inf|not a time")

    def test_nan_in_nccl_tests_json_and_in_osu_is_refused(self):
        doc = json.loads((NT / "all_reduce.json").read_text())
        doc["results"][5]["out_of_place"]["bus_bw"] = float("nan")
        doc["results"][5]["out_of_place"]["alg_bw"] = float("nan")
        self.refused(self.source("all_reduce.json", json.dumps(doc)), message="nan")
        text, number = replaced(OSU / "osu_latency.txt", "8", {1: "nan"})
        self.refused(self.source("osu_latency.txt", text), message=f"osu_latency.txt:{number}: ")

    def test_the_answer_never_says_within_expected_of_a_row_without_a_figure(self):
        text, _ = replaced(NT / "all_reduce.txt", "134217728", {6: "nan", 7: "nan", 10: "nan", 11: "nan"})
        code, out, err = report("import", self.source("all_reduce.txt", text), "--out", self.dir / "out.h5")
        self.assertNotIn("within expected", out)
        self.assertEqual(code, 2, err)


class HugeSizes(Refused):
    """2. A size of 2^64 bytes ended in a traceback (OverflowError), exit 1."""
    HUGE = str(1 << 64)

    def test_a_size_past_the_files_64_bit_columns_is_one_line(self):
        text, number = replaced(NT / "all_reduce.txt", "134217728", {0: self.HUGE})
        err = self.refused(self.source("all_reduce.txt", text), message=f"all_reduce.txt:{number}: size {self.HUGE}")
        self.assertIn("out of range", err)
        doc = json.loads((NT / "all_reduce.json").read_text())
        doc["results"][-1]["size"] = 1 << 64
        self.refused(self.source("all_reduce.json", json.dumps(doc)), message="out of range")
        for source, size in ((OSU / "osu_bw.txt", "4194304"), (PERFTEST / "new-write_bw-all.txt", "4194304")):
            with self.subTest(source=source.name):
                text, number = replaced(source, size, {0: self.HUGE})
                self.refused(self.source(source.name, text), message=f"{source.name}:{number}: ")
        huge = (OSU / "osu_allgather.txt").read_text().replace("\n1048576 ", f"\n{1 << 62} ")
        self.refused(self.source("osu_allgather.txt", huge), "--ranks", "4", message="out of range")


class BrokenJson(Refused):
    """4. JSON of the right tool but the wrong shape ended in tracebacks (AttributeError, ValueError, RecursionError,
    TypeError), exit 1."""

    def nccl(self, change) -> pathlib.Path:
        doc = json.loads((NT / "all_reduce.json").read_text())
        change(doc)
        return self.source("all_reduce.json", json.dumps(doc))

    def test_nccl_tests_json_of_another_shape_is_one_line(self):
        cases = {"results[0] is 8, an object wanted": lambda d: d.update(results=[8, 32, 128]),
                 "results[2].size 'eight' is not a whole number": lambda d: d["results"][2].update(size="eight"),
                 "config is a list, an object wanted": lambda d: d.update(config=[1]),
                 "config.devices[1] is 'x', an object wanted": lambda d: d["config"].update(
                     devices=d["config"]["devices"][:1] + ["x"]),
                 "results[3].out_of_place.time is a list, not a number": lambda d: d["results"][3]["out_of_place"]
                 .update(time=[1.0]),
                 "results[3].in_place is 7, an object wanted": lambda d: d["results"][3].update(in_place=7),
                 "args is 'all_reduce_perf', a list wanted": lambda d: d.update(args="all_reduce_perf")}
        for message, change in cases.items():
            with self.subTest(message=message):
                self.refused(self.nccl(change), message=message)

    def test_json_nested_past_any_depth_is_one_line(self):
        for name, text in (("all_reduce.json", "[" * 100000 + "]" * 100000),
                           ("deep.json", '{"results": ' + "[" * 100000 + "]" * 100000 + "}"),
                           ("new-write_bw.json", '{"test_info": ' + '{"a": ' * 100000 + "1" + "}" * 100001)):
            with self.subTest(name=name):
                self.refused(self.source(name, text), message="nested deeper")

    def test_perftest_json_with_a_list_where_a_figure_belongs_is_one_line(self):
        for key, value, message in (("BW_average", [42.33], "results.BW_average is a list, not a number"),
                                    ("MsgRate", "fast", "results.MsgRate 'fast' is not a number"),
                                    ("MsgSize", 0, "MsgSize 0: not a message size"),
                                    ("MsgSize", None, "results.MsgSize null is not a whole number"),
                                    ("BW_peak", {"a": 1}, "is an object, not a number")):
            with self.subTest(key=key, value=value):
                doc = json.loads((PERFTEST / "new-write_bw.json").read_text())
                doc["results"][key] = value
                self.refused(self.source("new-write_bw.json", json.dumps(doc)), message=message)
        doc = json.loads((PERFTEST / "new-write_bw.json").read_text())
        doc["test_info"] = ["RDMA_Write_BW_Test"]
        self.refused(self.source("new-write_bw.json", json.dumps(doc)), message="not the JSON perftest writes")


class SameNames(Refused):
    """5. Sources whose output names collided: one source's file replaced another's, nothing said."""

    def test_every_source_gets_a_file_of_its_own(self):
        src = self.dir / "src"
        (src / "sub").mkdir(parents=True)
        for target, origin in (("sub/osu_bw.txt", "osu_bw.txt"), ("sub_osu_bw.txt", "osu_bibw.txt"),
                               ("osu_bw.txt", "osu_latency.txt")):
            shutil.copy(OSU / origin, src / target)
        code, out, err = report("import", src / "sub" / "osu_bw.txt", src / "sub_osu_bw.txt", src / "osu_bw.txt",
                                "--out", self.dir / "runs")
        self.assertEqual(code, 0, err)
        files = sorted(p.name for p in (self.dir / "runs").glob("*.h5"))
        self.assertEqual(len(files), 3, files)
        tests = {fa.load(self.dir / "runs" / f).tables["results/p2p"].test.iloc[0] for f in files}
        self.assertEqual(tests, {"bw", "bibw", "latency"}, "each source's rows in a file of its own")
        for f in files:
            self.assertIn(f"runs/{f}: osu", out)
        code, out, err = report("import", src, "--out", self.dir / "all")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(list((self.dir / "all").glob("*.h5"))), 3)


def figures(run, table="results/coll") -> list:
    frame = run.tables[table]
    columns = [c for c in ("op", "test", "bytes", "in_place", "time_us", "algbw_gbps", "busbw_gbps", "latency_us",
                           "bw_mbps", "ranks") if c in frame.columns]
    return frame[columns].values.tolist()


class RunsInOneLog(Refused):
    """3. A job's log of all_reduce_perf then all_gather_perf was refused for the wrong reason (the '#  Rank' lines of
    both counted as one job of 4 ranks); OSU's table after nccl-tests' was dropped without a word."""

    def test_two_nccl_tests_runs_are_each_read_as_their_own(self):
        log = self.source("slurm-1234.out", (NT / "all_reduce.txt").read_text() + (NT / "all_gather.txt").read_text())
        code, out, err = report("import", log, "--out", self.dir / "runs")
        self.assertEqual(code, 0, err)
        files = sorted(p.name for p in (self.dir / "runs").glob("*.h5"))
        self.assertEqual(files, ["slurm-1234.out.1-all_reduce.h5", "slurm-1234.out.2-all_gather.h5"])
        for name, origin in zip(files, ("all_reduce.txt", "all_gather.txt")):
            run = fa.load(self.dir / "runs" / name)
            self.assertEqual(figures(run), figures(self.imported(NT / origin)[0]), name)
            self.assertEqual(len(run.tables["env/ranks"]), 2)
        self.assertIn("one of 2 runs in slurm-1234.out", out)
        err = self.refused(log, message="holds 2 runs (nccl-tests all_reduce from line 1, nccl-tests all_gather from "
                                        "line ")
        self.assertIn("give --out a folder", err)

    def test_osu_after_nccl_tests_is_read_too(self):
        log = self.source("job.log", (NT / "all_reduce.txt").read_text() + (OSU / "osu_bw.txt").read_text()
                          + (PERFTEST / "new-write_bw.txt").read_text())
        code, out, err = report("import", log, "--out", self.dir / "runs")
        self.assertEqual(code, 0, err)
        runs = {p.name: fa.load(p) for p in sorted((self.dir / "runs").glob("*.h5"))}
        self.assertEqual(list(runs), ["job.log.1-all_reduce.h5", "job.log.2-bw.h5", "job.log.3-write_bw.h5"])
        self.assertEqual(figures(runs["job.log.2-bw.h5"], "results/p2p"),
                         figures(self.imported(OSU / "osu_bw.txt")[0], "results/p2p"))
        self.assertEqual(len(runs["job.log.3-write_bw.h5"].tables["results/verbs"]), 1)

    def test_a_repeated_run_of_one_test_is_read_twice(self):
        log = self.source("log.txt", (NT / "all_reduce.txt").read_text() * 2)
        code, _, err = report("import", log, "--out", self.dir / "runs")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(list((self.dir / "runs").glob("*.h5"))), 2)


def without(path: pathlib.Path, drop) -> str:
    """`path`'s text without the lines `drop` (a predicate of the line) picks."""
    return "".join(line for line in path.read_text().splitlines(keepends=True) if not drop(line))


class CutHeaders(Refused):
    """6. Output as people post it (the header cut) was refused: the op and ranks are told from the table where one
    answer fits, and the notes say so; refused in one line where two fit."""

    def header_cut(self, op: str, keep: str) -> str:
        lines = (NT / f"{op}.txt").read_text().splitlines(keepends=True)
        k = next(k for k, line in enumerate(lines) if keep in line)
        return "".join(lines[k:])

    def test_an_op_one_answer_fits_is_read_and_said(self):
        for op in ("reduce_scatter", "broadcast", "reduce", "hypercube"):
            with self.subTest(op=op):
                text = without(NT / f"{op}.txt", lambda line: "Collective test starting" in line)
                run, out = self.imported(self.source("posted.txt", text))
                self.assertEqual(figures(run), figures(self.imported(NT / f"{op}.txt")[0]))
                self.assertIn(f"op {op}: told from the table", out)

    def test_the_table_alone_gives_its_op_and_ranks(self):
        run, out = self.imported(self.source("table.txt", self.header_cut("reduce_scatter", "out-of-place")))
        self.assertEqual(figures(run), figures(self.imported(NT / "reduce_scatter.txt")[0]))
        self.assertIn("ranks 2: told from the table", out)
        run, out = self.imported(self.source("table.txt", self.header_cut("broadcast", "out-of-place")))
        self.assertEqual(set(run.tables["results/coll"].op), {"broadcast"})
        self.assertEqual(set(run.tables["results/coll"].ranks), {-1})
        self.assertIn("ranks: not known", out)

    def test_only_the_last_rank_line_left_is_read_with_the_ranks_told_from_the_figures(self):
        text = self.header_cut("all_reduce", "Rank  1")
        run, out = self.imported(self.source("all_reduce.txt", text))
        self.assertEqual(figures(run), figures(self.imported(NT / "all_reduce.txt")[0]))
        self.assertIn("'#  Rank' lines are cut (rank 1 listed)", out)
        self.assertEqual(run.attrs["world_size"], 2)

    def test_where_two_answers_fit_it_is_refused_naming_them(self):
        for op, names in (("all_reduce", "all_reduce on 2 ranks, sendrecv"), ("all_gather", "all_gather on 2 ranks, "
                                                                              "alltoall on 2 ranks"),
                          ("gather", "gather on 2 ranks, scatter on 2 ranks")):
            with self.subTest(op=op):
                text = without(NT / f"{op}.txt", lambda line: "Collective test starting" in line)
                self.refused(self.source("posted.txt", text), message=names)
        text = without(NT / "all_gather.txt", lambda line: "Collective test starting" in line)
        run, out = self.imported(self.source("posted.txt", text), "--op", "all_gather")
        self.assertEqual(figures(run), figures(self.imported(NT / "all_gather.txt")[0]))


class RanAlone(Refused):
    """7. nccl-tests built without MPI, or started without mpirun: each process runs alone (one rank; or the headers
    of several processes in one file). Refused with a line that names it."""
    ALONE = "each process ran alone: nccl-tests built without MPI=1, or started without mpirun"

    def test_one_rank_is_refused_naming_the_mistake(self):
        text = without(NT / "broadcast.txt", lambda line: "Rank  1" in line)
        self.refused(self.source("broadcast.txt", text), message=self.ALONE)
        doc = json.loads((NT / "all_reduce.json").read_text())
        doc["config"]["devices"] = doc["config"]["devices"][:1]
        self.refused(self.source("all_reduce.json", json.dumps(doc)), message=self.ALONE)

    def test_busbw_0_on_every_row_is_refused_naming_the_mistake(self):
        """A table posted without its rank lines whose busbw is 0.00 on every row: what one process alone prints
        (all_reduce's busbw = algbw x 2(n-1)/n, 0 at n = 1). The real 2-GPU table with its busbw put at that."""
        rows = []
        for line in (NT / "all_reduce.txt").read_text().splitlines(keepends=True):
            if "Rank " in line:
                continue
            fields = line.split()
            if fields and fields[0].isdigit() and len(fields) == 13:
                fields[7] = fields[11] = "0.00"
                line = "  ".join(fields) + "\n"
            rows.append(line)
        err = self.refused(self.source("all_reduce.txt", "".join(rows)), message=self.ALONE)
        self.assertIn("busbw 0.00 on every row", err)

    def test_two_processes_headers_interleaved_are_refused_naming_the_mistake(self):
        lines = (NT / "all_reduce-g2.txt").read_text().splitlines()
        both = [line for pair in zip(lines, lines) for line in pair]
        self.refused(self.source("slurm.out", "\n".join(both) + "\n"), message=self.ALONE)
        labelled = [f"{k}: {line}" for pair in zip(lines, lines) for k, line in enumerate(pair)]
        self.refused(self.source("slurm.out", "\n".join(labelled) + "\n"), message=self.ALONE)


if __name__ == "__main__":
    unittest.main()
