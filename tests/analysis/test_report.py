"""fabric-report's plot, compare, baseline/check, html, excel and json on files made by real runs here (p2p over
shared memory and TCP loopback, coll on MPI, a sweep over fake hosts), and the C++ tools' --baseline."""
import json
import shutil
import struct
import subprocess
import unittest
import zlib

import h5py
import openpyxl

from fabricbench_analysis import cli
from fbtest import LaunchTest

P2P = ["--test", "bw", "--sizes", "64K,1M", "-n", "20", "-q"]


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], f"{path}: IHDR checksum"
    return width, height


class Report(LaunchTest):
    @classmethod
    def setUpClass(cls):
        # Runs shared by the tests of this class (each in the class's own folder).
        import pathlib
        import tempfile
        cls.runs = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-report-"))
        runner = LaunchTest()
        runner.dir = cls.runs
        for name, args, transport, np, env in (
                ("shm.h5", P2P, "vader", 2, None),
                ("tcp.h5", P2P, "tcp", 2, None),
                ("lat.h5", ["--test", "latency", "--sizes", "8,4K", "-n", "2000", "-q"], "vader", 2, None),
                ("coll.h5", ["--backend", "mpi", "--op", "all_reduce,all_gather", "-b", "1K", "-e", "256K", "-f", "8",
                             "-n", "10", "-q"], "vader", 2, None),
                ("sweep.h5", ["--emulate-hosts", "1", "--metric", "p2p_bw", "--sizes", "64K", "-n", "5", "-q"], "vader",
                 4, None)):
            exe = "fabric-sweep" if name == "sweep.h5" else "fabric-coll" if name == "coll.h5" else "fabric-p2p"
            r = runner.mpirun(np, exe, args + ["--output", name], transport=transport, env=env)
            assert r.returncode in (0, 1), r.stdout + r.stderr  # sweep: 1 is a verdict
        cls.last_line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        # Shared memory against TCP loopback is a real difference, but on 2 busy vCPUs it has come out reversed; the
        # tests that need a slower and a faster run use copies of the shared-memory run with the figures scaled.
        cls.scaled(cls.runs / "slow.h5", 0.4)
        cls.scaled(cls.runs / "fast.h5", 3.0)

    @classmethod
    def scaled(cls, path, factor, source=None):
        """A copy of `source` (default: the class's shared-memory run) with its bandwidth figures times `factor`."""
        shutil.copy(source or cls.runs / "shm.h5", path)
        with h5py.File(path, "a") as f:
            rows = f["results/p2p"][:]
            for column in ("bw_mbps", "bw_min_pair_mbps", "msg_rate_mps"):
                rows[column] *= factor
            f["results/p2p"][...] = rows

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.runs, ignore_errors=True)

    def report(self, *args):
        return subprocess.run(["/usr/bin/python3", "-m", "fabricbench_analysis.cli", *map(str, args)],
                              capture_output=True, text=True, cwd=self.dir)

    def test_plots_are_valid_images_of_sensible_size(self):
        expected = {"shm.h5": {"p2p_bandwidth.png", "stability_p2p.png"},
                    "lat.h5": {"p2p_latency.png", "stability_p2p.png"},
                    "coll.h5": {"coll_bandwidth.png", "stability_coll.png"},
                    "sweep.h5": {"sweep_p2p_bw.png", "sweep_nodes.png"}}
        for name, files in expected.items():
            out = self.dir / name
            r = self.report("plot", self.runs / name, "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual({p.name for p in out.iterdir()}, files, name)
            for p in out.iterdir():
                w, h = png_size(p)
                self.assertTrue(400 <= w <= 3000 and 300 <= h <= 3000, (p, w, h))
        r = self.report("plot", self.runs / "coll.h5", "--out", self.dir / "svg", "--format", "svg")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("<svg", (self.dir / "svg" / "coll_bandwidth.svg").read_text()[:2000])

    def test_compare_with_itself_is_all_ones_and_exits_0(self):
        for name in ("shm.h5", "coll.h5", "sweep.h5"):
            r = self.report("compare", self.runs / name, self.runs / name)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("0 regression(s)", r.stdout)
        from fabricbench_analysis import load
        from fabricbench_analysis.judge import compare
        c = compare.compare(load(self.runs / "coll.h5"), load(self.runs / "coll.h5"))
        frame = c.tables["results/coll"]
        ratios = [col for col in frame.columns if col.endswith("_ratio")]
        self.assertIn("busbw_gbps_ratio", ratios)
        for col in ratios:
            self.assertTrue((frame[col] == 1.0).all(), (col, frame[col]))
        self.assertEqual(c.env_changes, [])

    def test_compare_names_regressions_and_what_changed(self):
        r = self.report("compare", self.runs / "shm.h5", self.runs / "slow.h5", "--threshold", "5%")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # 0.4 x the bandwidth
        self.assertIn("REGRESSION results/p2p [test=bw", r.stdout)
        self.assertIn("bw_mbps", r.stdout)
        # What mpirun sets anew for every launch is not a change between the runs.
        self.assertNotIn("OMPI_MCA_orte_", r.stdout)
        self.assertNotIn("OMPI_ARGV", r.stdout)
        # A run whose host reports another kernel: compare names the change.
        changed = self.dir / "changed.h5"
        shutil.copy(self.runs / "shm.h5", changed)
        with h5py.File(changed, "a") as f:
            hosts = f["env/hosts"][:]
            old = hosts["kernel"][0].decode()
            hosts["kernel"][0] = b"6.99.0-test"
            f["env/hosts"][...] = hosts
        r = self.report("compare", self.runs / "shm.h5", changed)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"kernel: {old} -> 6.99.0-test", r.stdout)

    def test_a_baseline_fails_a_slower_run_and_passes_itself(self):
        base = self.dir / "shm.ini"
        r = self.report("baseline", self.runs / "shm.h5", base)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = base.read_text()
        self.assertIn("[baseline]", text)
        self.assertIn("[results/p2p 1]", text)
        r = self.report("check", self.runs / "shm.h5", "--baseline", base)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn(" 0 failed", r.stdout)
        r = self.report("check", self.runs / "slow.h5", "--baseline", base)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("BELOW BASELINE [results/p2p", r.stdout)
        # The tolerance: 0.7 x the run's figures passes its baseline written with 40%, not with the default 10%.
        loose = self.dir / "shm-40.ini"
        self.assertEqual(self.report("baseline", self.runs / "shm.h5", loose, "--tolerance", "40%").returncode, 0)
        self.scaled(self.dir / "shm70.h5", 0.7)
        r = self.report("check", self.dir / "shm70.h5", "--baseline", loose)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(self.report("check", self.dir / "shm70.h5", "--baseline", base).returncode, 1)
        # The C++ tool reads the same file: a run below it (here: below 3 x what shared memory did) exits 1 and says
        # which value; shared memory passes.
        fast = self.dir / "fast.ini"
        r = self.report("baseline", self.runs / "fast.h5", fast)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.mpirun(2, "fabric-p2p", P2P + ["--output", "t.h5", "--baseline", fast], transport="tcp")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("fabric-p2p: below baseline: [results/p2p", r.stderr)
        # A run passes in the C++ tool too. A new shared-memory run is no copy of an earlier one: on this machine's 2
        # vCPUs under load it varies by more than any useful tolerance (seen: 2,773 MB/s against 16,870 from the
        # class's run while a build ran; 2,634 then 287 MB/s at 64 KiB in two runs back to back), so its baseline is
        # a run made just before at 2% of its figures, with a 50% tolerance: it fails only below 1% of that run, as a
        # wrong unit or direction in the tool's check would make it.
        r = self.mpirun(2, "fabric-p2p", P2P + ["--output", "ref.h5"], transport="vader")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.scaled(self.dir / "low.h5", 0.02, self.dir / "ref.h5")
        wide = self.dir / "shm-wide.ini"
        r = self.report("baseline", self.dir / "low.h5", wide, "--tolerance", "50%")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.mpirun(2, "fabric-p2p", P2P[:-1] + ["--output", "s.h5", "--baseline", wide], transport="vader")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout,
                         r"baseline .*shm-wide.ini: 2 row\(s\) checked, 0 value\(s\) below, 0 entries matched no row")
        # A run that did not measure a size of the baseline fails it, as `fabric-report check` does.
        r = self.mpirun(2, "fabric-p2p", ["--test", "bw", "--sizes", "64K", "-n", "20", "-q", "--output", "part.h5",
                                          "--baseline", base], transport="vader")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("fabric-p2p: baseline entry not measured: [results/p2p", r.stderr)
        self.assertIn("no row of results/p2p with backend=mpi, bytes=1048576", r.stderr)
        # A bad baseline is refused before anything runs.
        bad = self.dir / "bad.ini"
        bad.write_text("[baseline]\ntolerance = 10%\n[results/p2p x]\nbw_nope = 3\n")
        r = self.mpirun(2, "fabric-p2p", P2P + ["--output", "b.h5", "--baseline", bad])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("bw_nope: table results/p2p has no such column", r.stderr)
        self.assertFalse((self.dir / "b.h5").exists())

    def test_a_baseline_that_checks_nothing_is_not_a_pass(self):
        # A baseline of entries for no table of the run: before, "0 value(s) checked ...: 0 failed", exit 0.
        empty = self.dir / "empty.ini"
        empty.write_text("[baseline]\ntolerance = 10%\n")
        r = self.report("check", self.runs / "shm.h5", "--baseline", empty)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("# 0 value(s) checked", r.stdout)
        self.assertIn("NOTHING CHECKED: no value of this run is in", r.stdout)

    def test_excel_has_charts_a_summary_and_colour_scaled_matrices(self):
        for name, chart_sheet in (("coll.h5", "chart_coll"), ("shm.h5", "chart_p2p")):
            out = self.dir / (name + ".xlsx")
            self.assertEqual(self.report("excel", self.runs / name, out).returncode, 0)
            book = openpyxl.load_workbook(out)
            self.assertEqual(book.sheetnames[0], "summary")
            self.assertGreater(len(book[chart_sheet]._charts), 0, book.sheetnames)
        out = self.dir / "sweep.xlsx"
        self.assertEqual(self.report("excel", self.runs / "sweep.h5", out).returncode, 0)
        book = openpyxl.load_workbook(out)
        heat = book["heat_p2p_bw"]
        self.assertEqual(len(heat.conditional_formatting), 1)
        self.assertEqual(heat.cell(1, 2).value, "node0")

    def test_a_cpu_run_without_expected_figures_says_not_judged(self):
        # Issue 46: MPI on the CPU, no row with an expected figure; the answer said 'no row below 80% of expected'.
        with h5py.File(self.runs / "coll.h5") as f:
            if (f["results/coll"]["pct_expected"] == f["results/coll"]["pct_expected"]).any():  # a number: not NaN
                self.skipTest("this machine gave the MPI run an expected figure")
        out = self.dir / "cpu.xlsx"
        self.assertEqual(self.report("excel", self.runs / "coll.h5", out).returncode, 0)
        sheet = openpyxl.load_workbook(out)["summary"]
        column = [str(c.value) for c in sheet["A"] if c.value]
        self.assertTrue([line for line in column if "bandwidth not judged (no row of 1 MiB" in line], column)
        self.assertFalse([line for line in column if "no row below" in line], column)
        widths = {d.min: d.width for d in sheet.column_dimensions.values() if d.min}  # unset: the clients' 8.43
        self.assertGreaterEqual(widths.get(1, 8.43), len("results/coll"), "the table names not cut")

    def test_html_holds_the_plots_and_the_comparison(self):
        out = self.dir / "page.html"
        r = self.report("html", self.runs / "tcp.h5", self.runs / "shm.h5", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        page = out.read_text()
        self.assertGreaterEqual(page.count("data:image/png;base64,"), 2)
        self.assertIn("Comparison with shm.h5", page)
        self.assertIn("results/p2p", page)
        self.assertIn("status: <span class='ok'>complete</span>", page)
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            self.skipTest("no Chromium here: the page was checked as text only")
        shot = self.dir / "page.png"
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                            "--window-size=1280,2000", out.as_uri()], capture_output=True, text=True, timeout=120)
        w, h = png_size(shot)
        self.assertEqual((w, h), (1280, 2000), r.stderr)
        self.assertGreater(shot.stat().st_size, 20000, "a rendered page, not a blank one")

    def test_json_lines_hold_every_row(self):
        out = self.dir / "rows.jsonl"
        self.assertEqual(self.report("json", self.runs / "coll.h5", out, "--table", "results/coll").returncode, 0)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        with h5py.File(self.runs / "coll.h5") as f:
            self.assertEqual(len(rows), len(f["results/coll"]))
        self.assertEqual(rows[0]["table"], "results/coll")
        self.assertIn("busbw_gbps", rows[0])

    def test_the_tools_last_line_names_the_plot_command(self):
        r = self.mpirun(2, "fabric-p2p", ["--test", "latency", "--sizes", "8", "-n", "10", "--output", "l.h5"])
        self.assertEqual(r.stdout.strip().splitlines()[-1], "# plots: fabric-report plot l.h5")

    def test_bad_input_gets_one_line_and_exit_2(self):
        foreign = self.dir / "foreign.h5"
        with h5py.File(foreign, "w") as f:
            f["x"] = [1, 2, 3]
        running = self.dir / "running.h5"
        shutil.copy(self.runs / "shm.h5", running)
        with h5py.File(running, "a") as f:
            f.attrs["status"] = "running"
        cases = [(["plot", self.dir / "missing.h5"], "cannot read"),
                 (["compare", foreign, self.runs / "shm.h5"], "not a fabricbench results file"),
                 (["html", running, self.dir / "x.html"], "status 'running'"),
                 (["json", self.runs / "shm.h5", "--table", "results/nope"], "--table results/nope: unknown table"),
                 (["csv", self.runs / "shm.h5", self.dir / "c", "--table", "nope"], "unknown table"),
                 (["check", self.runs / "shm.h5", "--baseline", self.dir / "none.ini"], "no such file"),
                 (["compare", self.runs / "shm.h5", self.runs / "shm.h5", "--threshold", "lots"], "--threshold = 'lots'"),
                 (["baseline", running, self.dir / "b.ini"], "status 'running'"),
                 (["baseline", self.runs / "shm.h5", self.dir / "t.ini", "--tolerance", "200%"],
                  "--tolerance = '200%': allowed values are 0% to 99%")]
        for args, message in cases:
            r = self.report(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (args, r.stderr))
            self.assertTrue(lines[0].startswith("fabric-report: "), lines[0])
            self.assertIn(message, lines[0], args)
        self.assertEqual(cli.main(["show", str(running)]), 1, "show reads a running file as it is")


if __name__ == "__main__":
    unittest.main()
