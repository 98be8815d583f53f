"""fabric-report import on the peers' real output (tests/fixtures/imports: nccl-tests 2.19.6 and OSU 7.4 on 2 x H100,
perftest over Soft-RoCE; public multi-node outputs with their source): every figure equal to the source's, the odd
but real shapes read or refused in one line, the file a fabricbench file every command of fabric-report takes, and
the judgement of the suite's model (docs/import.md)."""
import contextlib
import io
import json
import math
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import unittest

import fabricbench_analysis as fa
from fabricbench_analysis import cli
from fbtest import LaunchTest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "imports"
GPU = FIXTURES / "gpu-h100x2"
NT, OSU, PERFTEST = GPU / "nccl-tests", GPU / "osu", FIXTURES / "rxe" / "perftest"
OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv", "gather", "scatter",
       "hypercube", "alltoallv"]


def report(*argv) -> tuple:
    """(exit status, stdout, stderr) of fabric-report in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def answer_judged(run) -> dict:
    from fabricbench_analysis.judge.answer import answer
    return answer(run).judged


def source_rows(path: pathlib.Path) -> list:
    """The data rows of a plain nccl-tests table, read here independently of the importer: the lines of 13 fields
    that start with the size (redop left blank by hypercube: 12)."""
    rows = []
    for line in path.read_text().splitlines():
        w = line.split()
        if w and w[0].isdigit() and len(w) in (12, 13) and w[0] != "0":
            if len(w) == 12:
                w.insert(3, "none")
            rows.append(w)
    return rows


class Imported(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def load(self, source, *options, status=0):
        out = self.dir / (pathlib.Path(source).name + ".h5")
        code, stdout, stderr = report("import", source, "--out", out, *options)
        self.assertEqual(code, status, stderr)
        return fa.load(out), stdout

    # Every figure equal to the source's
    def test_every_nccl_tests_figure_is_the_one_printed(self):
        for op in OPS:
            with self.subTest(op=op):
                run, _ = self.load(NT / f"{op}.txt")
                frame = run.tables["results/coll"]
                rows = source_rows(NT / f"{op}.txt")
                self.assertEqual(len(frame), 2 * len(rows))
                for k, w in enumerate(rows):
                    for in_place, first in ((0, 5), (1, 9)):
                        got = frame.iloc[2 * k + in_place]
                        self.assertEqual((got.op, got.bytes, got["count"], got["dtype"], got.redop, got.root, got.in_place),
                                         (op, int(w[0]), int(w[1]), w[2], w[3], int(w[4]), in_place))
                        self.assertEqual([got.time_us, got.algbw_gbps, got.busbw_gbps, got.wrong],
                                         [float(w[first]), float(w[first + 1]), float(w[first + 2]),
                                          -1 if w[first + 3] == "N/A" else int(w[first + 3])])
                self.assertEqual(set(frame.ranks), {2})
                self.assertEqual(run.attrs["tool"], "nccl-tests")
                self.assertEqual(run.attrs["tool_version"], "2.19.6")

    def test_the_json_of_a_run_gives_the_figures_of_its_text(self):
        for op in OPS:
            with self.subTest(op=op):
                text = self.load(NT / f"{op}.txt")[0].tables["results/coll"]
                doc = json.loads((NT / f"{op}.json").read_text())
                js = self.load(NT / f"{op}.json")[0]
                frame = js.tables["results/coll"]
                self.assertEqual(list(frame.bytes), list(text.bytes))
                exact = [r["out_of_place"]["bus_bw"] for r in doc["results"] if r["size"]]
                self.assertEqual(list(frame.busbw_gbps[frame.in_place == 0]), exact)
                for a, b in zip(frame.time_us, text.time_us):  # the text prints 2 decimals, or 7 characters
                    self.assertLessEqual(abs(a - b), 0.006 + 1e-3 * b)
                self.assertIn("all_reduce_perf" if op == "all_reduce" else f"{op}_perf", js.attrs["command_line"])
                self.assertEqual(js.tables["env/hosts"].nccl.iloc[0], "2.28.3")

    def test_every_osu_figure_is_the_one_printed(self):
        cases = {"osu_latency.txt": ("latency", "latency_us"), "osu_bw.txt": ("bw", "bw_mbps"),
                 "osu_bibw.txt": ("bibw", "bw_mbps"), "osu_xccl_bw.txt": ("bw", "bw_mbps"),
                 "osu_xccl_latency.txt": ("latency", "latency_us")}
        for name, (test, column) in cases.items():
            with self.subTest(name=name):
                frame = self.load(OSU / name)[0].tables["results/p2p"]
                rows = [l.split() for l in (OSU / name).read_text().splitlines() if re.match(r"^\d+\s+[\d.]+$", l)]
                self.assertEqual(list(frame.bytes), [int(r[0]) for r in rows])
                self.assertEqual(list(frame[column]), [float(r[1]) for r in rows])
                self.assertEqual(set(frame.test), {test})
                self.assertEqual(set(frame.backend), {"nccl" if "xccl" in name else "mpi"})
                self.assertEqual(set(frame.memory), {"device" if "xccl" in name else "host"})
        mbw = self.load(OSU / "osu_mbw_mr.txt")[0].tables["results/p2p"]
        rows = [l.split() for l in (OSU / "osu_mbw_mr.txt").read_text().splitlines() if re.match(r"^\d+\s", l)]
        self.assertEqual(list(mbw.bw_mbps), [float(r[1]) for r in rows])
        self.assertEqual(list(mbw.msg_rate_mps), [float(r[2]) / 1e6 for r in rows])

    def test_osu_collectives_keep_their_latency_and_need_the_ranks_where_osu_sizes_one_part(self):
        run, _ = self.load(OSU / "osu_allreduce-full.txt", "--ranks", "2")
        frame = run.tables["results/coll"]
        rows = [l.split() for l in (OSU / "osu_allreduce-full.txt").read_text().splitlines() if re.match(r"^\d+\s", l)]
        self.assertEqual(list(frame.time_us), [float(r[1]) for r in rows])
        self.assertEqual(list(frame.time_us_rank_max), [float(r[3]) for r in rows])
        self.assertEqual(list(frame.busbw_gbps), [int(r[0]) / float(r[1]) / 1e3 * 2 * 1 / 2 for r in rows])
        code, _, err = report("import", OSU / "osu_allgather.txt", "--out", self.dir / "ag.h5")
        self.assertEqual(code, 2)
        self.assertRegex(err, r"osu_allgather.txt:\d+: .*give --ranks N")
        frame = self.load(OSU / "osu_allgather.txt", "--ranks", "2")[0].tables["results/coll"]
        first = [l.split() for l in (OSU / "osu_allgather.txt").read_text().splitlines() if re.match(r"^\d+\s", l)][0]
        self.assertEqual(frame.bytes.iloc[0], 2 * int(first[0]), "nccl-tests' size: the whole buffer")

    def test_every_perftest_figure_is_the_one_printed(self):
        # debian-send_bw.txt: its client hung under emulation and was stopped after its table's header (refused below)
        clients = [p for p in sorted(PERFTEST.glob("*.txt"))
                   if not p.name.endswith(".server.txt") and p.name != "debian-send_bw.txt"]
        self.assertGreaterEqual(len(clients), 8)
        for path in clients:
            with self.subTest(path=path.name):
                # debian-write_bw-all.txt: perftest warned of its clock and stopped after 128 KiB ("Can't produce a
                # report"): the rows so far, and a run that did not complete (exit 1)
                stopped = path.name == "debian-write_bw-all.txt"
                run = self.load(path, status=1 if stopped else 0)[0]
                self.assertEqual(run.complete, not stopped, run.attrs["status"])
                frame = run.tables["results/verbs"]
                lines = path.read_text().splitlines()
                header = next(l for l in lines if "#bytes" in l)
                rows = [l.split() for l in lines if re.match(r"^\s*\d+\s+\d+\s", l)]
                self.assertEqual(list(frame.bytes), [int(r[0]) for r in rows])
                first = "latency_us" if "t_typical" in header else \
                    ("bw_peak_gbitps" if "Gb/sec" in header else "bw_peak_mibps")
                values = frame[first] if first != "latency_us" else frame.time_us_min
                self.assertEqual(list(values), [float(r[2]) for r in rows])
                self.assertEqual(set(frame.device), {"rxe0"})

    def test_perftests_json_gives_the_figures_its_text_printed(self):
        pairs = sorted(PERFTEST.glob("new-*.json"))
        self.assertGreaterEqual(len(pairs), 12)
        for js in pairs:
            with self.subTest(json=js.name):
                text = js.with_suffix(".txt")
                from_json = self.load(js)[0].tables["results/verbs"]
                from_text = self.load(text)[0].tables["results/verbs"].iloc[[-1]]  # -a: the JSON keeps the last size
                self.assertEqual(len(from_json), 1)
                for column in from_text.columns:
                    if column in from_json.columns and column not in ("expected_gbps", "pct_expected", "port"):
                        a, b = from_json[column].iloc[0], from_text[column].iloc[0]
                        if isinstance(a, float) and math.isnan(a):
                            self.assertTrue(math.isnan(b), column)
                        else:
                            self.assertEqual(a, b, column)
        gbits = self.load(PERFTEST / "new-write_bw-gbits.json")[0].tables["results/verbs"]
        self.assertEqual(gbits.bw_avg_gbitps.iloc[0], 0.21, "Gb/s, told from MsgRate: the JSON does not say")
        self.assertNotIn("bw_avg_mibps", gbits.columns)

    # Odd but real
    def test_crlf_srun_labels_and_mpirun_tags_read_as_the_plain_output(self):
        plain = self.load(NT / "all_reduce.txt")[0].tables["results/coll"]
        crlf = self.dir / "all_reduce-crlf.txt"
        crlf.write_bytes((NT / "all_reduce.txt").read_bytes().replace(b"\n", b"\r\n"))
        labelled = self.dir / "all_reduce-srun.txt"
        log = [l for l in (NT / "all_reduce-info.txt").read_text().splitlines() if "NCCL INFO" in l]
        lines = []
        for k, line in enumerate((NT / "all_reduce.txt").read_text().splitlines()):
            lines.append(f"0: {line}")
            if k < len(log):
                lines.append(f"1: {log[k]}")  # the other rank's NCCL lines, interleaved as srun -l shows them
        labelled.write_text("\n".join(lines) + "\n")
        for path in (crlf, labelled):
            with self.subTest(path=path.name):
                frame = self.load(path)[0].tables["results/coll"]
                self.assertTrue(frame[["bytes", "time_us", "busbw_gbps"]].equals(plain[["bytes", "time_us",
                                                                                         "busbw_gbps"]]))
        tagged = self.load(NT / "all_gather-tagged.txt")[0].tables["results/coll"]
        self.assertEqual(len(tagged), 10)

    def test_rows_cut_by_nccls_own_lines_are_joined(self):
        run, _ = self.load(NT / "all_reduce-2nodes-RING.txt")
        frame = run.tables["results/coll"]
        self.assertEqual(list(frame.bytes.unique()), [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30])
        # The in-place time of 1 MiB stands alone on its line; out-of-place followed a glued NCCL line.
        self.assertEqual(frame.time_us[(frame.bytes == 1 << 20) & (frame.in_place == 1)].item(), 4530.05)
        self.assertEqual(sorted(set(run.tables["env/ranks"].host)), ["gpunode0", "gpunode1"])

    def test_zero_byte_rows_and_unchecked_rows(self):
        run, out = self.load(NT / "all_gather.txt")
        self.assertNotIn(0, set(run.tables["results/coll"].bytes))
        self.assertIn("0 B left out", out)
        c0 = self.load(NT / "all_reduce-c0.txt")[0].tables["results/coll"]
        self.assertEqual(set(c0.wrong), {-1}, "#wrong N/A (-c 0): -1, not 0 wrong")

    def test_a_cut_table_is_kept_and_the_file_says_the_run_did_not_complete(self):
        lines = (NT / "all_reduce.txt").read_text().splitlines()
        end = next(k for k, l in enumerate(lines) if l.split()[:1] == ["2097152"])
        cut = self.dir / "all_reduce-cut.txt"
        cut.write_text("\n".join(lines[:end + 1]) + "\n")
        out = self.dir / "cut.h5"
        code, _, _ = report("import", cut, "--out", out)
        self.assertEqual(code, 1, "a run that did not complete")
        run = fa.load(out)
        self.assertTrue(run.attrs["status"].startswith("failed: the source ends at line"))
        self.assertEqual(run.tables["results/coll"].bytes.max(), 2 << 20)

    # Refused in one line
    def test_what_cannot_be_read_is_one_line_naming_file_and_line_and_nothing_is_written(self):
        text = (NT / "all_reduce.txt").read_text()
        row = next(l for l in text.splitlines() if l.split()[:1] == ["8388608"])
        bad = self.dir / "all_reduce-bad.txt"
        w = row.split()
        bad.write_text(text.replace(row, row.replace(w[7], f"{float(w[7]) * 2:.2f}", 1)))
        number = text.splitlines().index(row) + 1
        cases = {bad: f"all_reduce-bad.txt:{number}: ", OSU / "osu_bw-cuda.txt": "osu_bw-cuda.txt:5: not a row",
                 self.dir / "empty.txt": "not output of nccl-tests, OSU or perftest",
                 PERFTEST / "debian-send_bw.txt": "no row of perftest's result table",
                 GPU / "gpus.txt": "not output of nccl-tests, OSU or perftest"}
        (self.dir / "empty.txt").write_text("")
        for source, message in cases.items():
            with self.subTest(source=source.name):
                out = self.dir / "out.h5"
                code, stdout, err = report("import", source, "--out", out)
                self.assertEqual(code, 2)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertIn(message, err)
                if source == bad:
                    self.assertIn("not a row nccl-tests wrote", err)
                self.assertFalse(out.exists())
                self.assertEqual([p for p in self.dir.iterdir() if p.name.startswith(".out.h5")], [])
        for option, value in (("--ranks", "0"), ("--nic-rate", "fast"), ("--nic-rate", "inf"), ("--tool", "iperf"),
                              ("--op", "allreduce"), ("--window", "-3"), ("--nodes", "1.5"),
                              ("--nics-per-node", "x"), ("--link-gbps", "0"), ("--configs", "/nonexistent")):
            code, _, err = report("import", NT / "all_reduce.txt", "--out", self.dir / "x.h5", option, value)
            self.assertEqual((code, len(err.strip().splitlines())), (2, 1), err)
            self.assertIn(option, err)
        # Options of one tool's output refused on another's (used or refused, never ignored)
        for source, option, value in ((NT / "all_reduce.txt", "--ranks", "2"), (OSU / "osu_bw.txt", "--op",
                                                                                   "all_reduce"),
                                      (NT / "all_reduce.txt", "--window", "64")):
            code, _, err = report("import", source, "--out", self.dir / "x.h5", option, value)
            self.assertEqual((code, len(err.strip().splitlines())), (2, 1), err)
            self.assertIn(f"{option} is for", err)
            self.assertFalse((self.dir / "x.h5").exists())

    def test_a_folder_of_any_mix_becomes_a_folder_of_files_and_one_comparison(self):
        src = self.dir / "src"
        src.mkdir()
        for name in ("all_reduce.txt", "all_reduce.json", "all_reduce-graph.txt"):
            shutil.copy(NT / name, src)
        shutil.copy(OSU / "osu_bw.txt", src)
        code, out, err = report("import", src, "--out", self.dir / "runs")
        self.assertEqual(code, 0, err)
        files = sorted(p.name for p in (self.dir / "runs").iterdir())
        self.assertEqual(files, ["all_reduce-graph.txt.h5", "all_reduce.json.h5", "all_reduce.txt.h5", "comparison.csv",
                                 "osu_bw.txt.h5"])
        import pandas as pd
        table = pd.read_csv(self.dir / "runs" / "comparison.csv")
        one = table[(table.curve == "all_reduce out-of-place") & (table.bytes == 2 << 20)].iloc[0]
        self.assertAlmostEqual(one["all_reduce.txt.h5"], one["all_reduce.json.h5"], delta=0.01)
        self.assertIn("the headline figures side by side", out)

    def test_a_1_gb_style_log_is_read_in_bounded_memory(self):
        big = self.dir / "big.log"
        noise = "".join(l + "\n" for l in (NT / "all_reduce-info.txt").read_text().splitlines() if "NCCL INFO" in l)
        table = (NT / "all_reduce.txt").read_text()
        with open(big, "w") as f:
            for _ in range(60):  # a long job's log: NCCL's lines by the thousand, then the table
                f.write(noise * 200)
            f.write(table)
        self.assertGreater(big.stat().st_size, 100 << 20)
        code = ("import resource, sys; from fabricbench_analysis import cli; rc = cli.main(sys.argv[1:]); "
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(rc)")
        r = subprocess.run([sys.executable, "-c", code, "import", big, "--out", self.dir / "big.h5"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rss_mib = int(r.stdout.strip().splitlines()[-1]) / 1024
        self.assertLess(rss_mib, 250, f"{rss_mib:.0f} MiB for a {big.stat().st_size >> 20} MiB log")
        big_run = fa.load(self.dir / "big.h5")
        self.assertEqual(len(big_run.tables["results/coll"]), 26)
        # NCCL's channel lines, repeated 12,000 times in the log, count once each (as in one run's log)
        self.assertIn("NCCL path: P2P/CUMEM (48 connections)", big_run.attrs["notes"])


class Judged(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def imported(self, source, *options):
        out = self.dir / "run.h5"
        code, stdout, stderr = report("import", source, "--out", out, *options)
        self.assertEqual(code, 0, stderr)
        return fa.load(out), stdout

    def test_healthy_h100_rows_are_within_their_curves_and_the_shm_fallback_is_below(self):
        for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"):
            with self.subTest(op=op):
                run, out = self.imported(NT / f"{op}.txt")
                frame = run.tables["results/coll"]
                judged = frame[(frame.bytes >= 1 << 20) & (frame.expected_from == "calibrated")]
                self.assertGreater(len(judged), 0)
                self.assertGreater(judged.pct_expected.min(), 70)
                self.assertIn("bandwidth within expected", out)
        run, out = self.imported(NT / "all_reduce-shm-info.txt")
        self.assertIn("row(s) below 70% of a healthy system's curve", out)
        self.assertIn("SHM/direct/direct", out)
        self.assertEqual(set(run.tables["results/coll"].path), {"SHM/direct/direct"})

    def test_across_nodes_a_figure_above_the_nics_is_not_a_network_measurement(self):
        run, out = self.imported(NT / "all_reduce-2nodes-TREE.txt", "--nics-per-node", "1", "--nic-rate", "10")
        frame = run.tables["results/coll"]
        above = frame[frame.busbw_gbps > 1.25]
        self.assertGreater(len(above), 0)
        self.assertEqual(set(above.expected_from), {"not_network"})
        self.assertIn("not a network measurement", out)
        self.assertIn("NCCL used TREE", out)
        self.assertNotIn("Nothing wrong", out)
        run, out = self.imported(NT / "all_reduce-2nodes-RING.txt", "--nics-per-node", "1", "--nic-rate", "10")
        self.assertIn("ring algorithm only", out)
        _, out = self.imported(NT / "all_reduce-2nodes-RING.txt")
        self.assertIn("uncalibrated: 2 nodes, but the NICs' count and rate are not known", out)
        self.assertIn("GPUDirect RDMA: off: NCCL used sockets", out)

    def test_across_nodes_the_nics_times_a_healthy_busbw_per_nic_judge_the_largest_size(self):
        # The two "nodes" talked over sockets at 2.1-2.5 GB/s. Held to 1 NIC of 100 Gb/s (the shipped reference: 11.5
        # GB/s busbw per NIC), the 1 GiB rows are a fallback far below; held to a made-up 20 Gb/s NIC whose healthy
        # busbw is 2.2 GB/s they pass, and only 1 GiB is judged.
        run, out = self.imported(NT / "all_reduce-2nodes-RING.txt", "--nics-per-node", "1", "--nic-rate", "100")
        frame = run.tables["results/coll"]
        self.assertEqual(set(frame.expected_from), {"network"})
        self.assertEqual(set(frame.expected_gbps), {11.5})
        self.assertIn("2 row(s) below 80% of a healthy fabric's busbw per NIC", out)
        self.assertIn("nccl-tests#119", out)
        configs = self.dir / "configs"
        shutil.copytree(FIXTURES.parents[2] / "configs", configs)
        with open(configs / "expected-network.csv", "a") as f:
            f.write("20,2.2,a made-up NIC for this test\n")
        run, out = self.imported(NT / "all_reduce-2nodes-RING.txt", "--nics-per-node", "1", "--nic-rate", "20",
                                 "--configs", configs)
        frame = run.tables["results/coll"]
        big = frame[frame.bytes == 1 << 30]
        self.assertTrue((big.pct_expected >= 80).all(), big.pct_expected)
        self.assertIn("bandwidth within expected", out)
        self.assertEqual(answer_judged(run), {"network": 2})

    def test_the_page_says_where_the_run_came_from_and_the_path_of_each_row_below(self):
        run, _ = self.imported(NT / "all_reduce-shm-info.txt")
        code, _, err = report("html", self.dir / "run.h5", self.dir / "run.html")
        self.assertEqual(code, 0, err)
        page = (self.dir / "run.html").read_text()
        self.assertIn("imported from", page)
        self.assertIn("<h2>Notes</h2>", page)
        self.assertIn("NCCL path: SHM/direct/direct (8 connections)", page)
        self.assertEqual(page.count("SHM/direct/direct</td>"), 10 + 10, "each row below, and each row of the table")

    def test_log_axes_are_labelled_in_plain_numbers_and_sizes_in_binary_units(self):
        from .figures import drawn
        self.imported(NT / "all_reduce.txt")
        for name, fig in drawn(self.dir / "run.h5").items():
            for ax in fig.axes:
                labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
                self.assertFalse([t for t in labels if "$" in t], f"{name}: mathtext drawn as raw text")
                if ax.get_xscale() == "log":
                    sizes = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
                    self.assertLessEqual(len(sizes), 14, sizes)
                    self.assertTrue(all(re.fullmatch(r"[\d.]+[KMG]?", t) for t in sizes), sizes)
                    self.assertTrue(any(t.endswith("K") for t in sizes) and any(t.endswith("M") for t in sizes))

    def test_an_imported_run_takes_every_command_of_fabric_report(self):
        run, _ = self.imported(NT / "all_reduce-c0.txt")
        for argv, made in ((["html", self.dir / "run.h5", self.dir / "run.html"], "run.html"),
                           (["excel", self.dir / "run.h5", self.dir / "run.xlsx"], "run.xlsx"),
                           (["plot", self.dir / "run.h5", "--out", self.dir / "plots"], "plots"),
                           (["baseline", self.dir / "run.h5", self.dir / "base.ini"], "base.ini")):
            code, _, err = report(*argv)
            self.assertEqual(code, 0, err)
            self.assertTrue((self.dir / made).exists())
        code, out, _ = report("check", self.dir / "run.h5", "--baseline", self.dir / "base.ini")
        self.assertEqual(code, 0, out)
        shutil.copy(self.dir / "run.h5", self.dir / "a.h5")
        self.imported(NT / "all_reduce-shm-info.txt")
        code, out, _ = report("compare", self.dir / "a.h5", self.dir / "run.h5")
        self.assertEqual(code, 1, "SHM against NVLink: a regression")
        self.assertIn("REGRESSION", out)
        self.assertIn("curves over NVLink", (self.dir / "run.html").read_text() + run.attrs["notes"])


class PathNamed(unittest.TestCase):
    """The path NCCL took, from its INFO lines: the device's logs (P2P, SHM, sockets) and recorded public logs of IB
    clusters (tests/fixtures/nccl-logs/public/README.md says where each comes from)."""
    LOGS = FIXTURES.parent / "nccl-logs" / "public"

    def text(self, path) -> str:
        from fabricbench_analysis.imports.lines import read_lines
        from fabricbench_analysis.imports.nccl_lines import NcclLines
        log = NcclLines()
        for line in read_lines(path):
            log.take(line)
        return log.path_text() or log.gdr_text()

    def test_gdr_on_off_and_why_and_the_transports(self):
        self.assertEqual(self.text(self.LOGS / "aks-36-gdrdma.log"),
                         "NCCL path: NET/IB (7 connections); GPUDirect RDMA: on (NIC IB device 0, IB device 4, "
                         "IB device 6)")
        off = self.text(self.LOGS / "nccl-899-gdr-no-module.log")
        self.assertIn("GPUDirect RDMA: off", off)
        self.assertIn("'GPU Direct RDMA Disabled' (no module)", off)
        self.assertIn("nvidia_peermem", off)
        roce = self.text(self.LOGS / "nccl-1537-gdr-disabled-roce.log")
        self.assertTrue(roce.startswith("GPUDirect RDMA: off: the NIC cannot reach GPU memory (mlx5_0, mlx5_1"), roce)
        self.assertEqual(self.text(NT / "all_reduce-info.txt"), "NCCL path: P2P/CUMEM (48 connections)")
        self.assertEqual(self.text(NT / "all_reduce-shm-info.txt"), "NCCL path: SHM/direct/direct (8 connections)")
        self.assertIn("GPUDirect RDMA: off: NCCL used sockets", self.text(NT / "all_reduce-2nodes-RING.txt"))

    def test_a_log_given_beside_the_output_names_the_path_on_every_row(self):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-import-"))
        try:
            code, out, err = report("import", NT / "all_reduce.txt", "--out", tmp / "r.h5", "--nccl-log",
                                    self.LOGS / "aks-36-gdrdma.log")
            self.assertEqual(code, 0, err)
            paths = set(fa.load(tmp / "r.h5").tables["results/coll"].path)
            self.assertEqual(paths, {"NET/IB; GPUDirect RDMA: on (NIC IB device 0, IB device 4, IB device 6)"})
            self.assertIn("NCCL settings in the log: NCCL_NET_GDR_LEVEL=SYS", out)
            code, _, err = report("import", NT / "all_reduce.txt", "--out", tmp / "x.h5", "--nccl-log",
                                  OSU / "osu_bw.txt")
            self.assertEqual(code, 2)
            self.assertIn("--nccl-log", err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class SameColumnsAsTheTools(LaunchTest):
    def test_imported_columns_are_declared_as_fabric_coll_and_fabric_p2p_declare_them(self):
        for tool, args, source, table in (
                ("fabric-coll", ["--op", "all_reduce", "-b", "8", "-e", "1K"], NT / "all_reduce.txt", "results/coll"),
                ("fabric-p2p", ["--test", "latency,bw", "--sizes", "8"], OSU / "osu_bw.txt", "results/p2p")):
            with self.subTest(tool=tool):
                r = self.mpirun(2, tool, args + ["--output", f"{tool}.h5", "-q"])
                self.assertEqual(r.returncode, 0, r.stderr)
                theirs = fa.load(self.dir / f"{tool}.h5").columns[table]
                code, _, err = report("import", source, "--out", self.dir / f"{tool}-imported.h5")
                self.assertEqual(code, 0, err)
                ours = fa.load(self.dir / f"{tool}-imported.h5").columns[table]
                extra = set(ours) - set(theirs) - {"path"}
                self.assertEqual(extra, set(), "columns the tool does not have")
                for name, column in ours.items():
                    if name in theirs:
                        self.assertEqual(column, theirs[name], name)


if __name__ == "__main__":
    unittest.main()
