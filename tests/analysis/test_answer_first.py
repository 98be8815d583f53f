"""The HTML page and the Excel summary lead with the answer: the sweep's verdicts (or "all N hosts pass"), the failed
and warned checks, the rows below their expected share, with the run's identity; then the pictures; the full tables
after, folded (<details>). Checked in the page's text, in headless Chromium (where the verdict sits on the first
screen of 1280 x 900, laid out by the browser, and a screenshot of it), and in the workbook. fabric-coll --op all
draws one panel per op with in-place and out-of-place as line styles and words, no "-1" root."""
import json
import pathlib
import re
import shutil
import subprocess
import tempfile
import unittest

import h5py
import matplotlib
import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis.draw import plots
from fabricbench_analysis.export import excel, html
from fbtest import LaunchTest

FAKE_HOSTS = ["--emulate-hosts", "1"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREEN = (1280, 900)
# Appended to a copy of the page: where the browser laid out the answer, the first picture and the folded tables.
MEASURE = """<script>
const box = e => { const r = e.getBoundingClientRect(); return [r.top + scrollY, r.bottom + scrollY]; };
const verdict = [...document.querySelectorAll('#answer p.line')].map(box);
const out = {answer: box(document.getElementById('answer')), lines: verdict,
             first_picture: box(document.querySelector('#pictures img')),
             details: document.querySelectorAll('details').length,
             open: document.querySelectorAll('details[open]').length,
             tables_outside: [...document.querySelectorAll('table')].filter(
                 t => !t.closest('details') && !t.closest('#answer')).length};
const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def fake_rdma_root(root, rate):
    port = root / "sys/class/infiniband/mlx5_7/ports/1"
    for name, text in (("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"), ("link_layer", "Ethernet"), ("rate", rate),
                       ("gids/1", "0000:0000:0000:0000:0000:ffff:0a00:0001"), ("gid_attrs/types/1", "RoCE v2"),
                       ("gid_attrs/ndevs/0", "eth7")):
        (port / name).parent.mkdir(parents=True, exist_ok=True)
        (port / name).write_text(text + "\n")


def section(page, name):
    """The text of <section id='name'> ... </section>."""
    start = page.index(f"<section id='{name}'")
    return page[start:page.index("</section>", start)]


class AnswerFirst(LaunchTest):
    @classmethod
    def setUpClass(cls):
        cls.runs = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-answer-"))
        runner = LaunchTest()
        runner.dir = cls.runs
        (cls.runs / "base.ini").write_text("[baseline]\n[sweep/pairs bw]\nmetric = p2p_bw\nvalue = 1e12\n")
        fast = cls.runs / "fast-nic"
        fake_rdma_root(fast, "800 Gb/sec (8X XDR)")  # 100 GB/s expected: shared memory here reaches far less
        for name, exe, np_, args, env in (
                ("sweep.h5", "fabric-sweep", 4, FAKE_HOSTS + ["--metric", "p2p_bw", "--sizes", "64K", "-n", "3", "-w",
                                                              "1", "--retest", "0", "--baseline", cls.runs / "base.ini"],
                 None),
                ("coll.h5", "fabric-coll", 2, ["--backend", "mpi", "--op", "all", "-b", "1K", "-e", "16K", "-f", "4",
                                               "-n", "3"], None),
                ("p2p.h5", "fabric-p2p", 2, FAKE_HOSTS + ["--test", "bw", "--sizes", "64K,1M", "-n", "5"],
                 {"FABRICBENCH_TEST_SYSROOT": str(fast)})):
            r = runner.mpirun(np_, exe, args + ["-q", "--output", name], env=env)
            assert r.returncode in (0, 1), (name, r.stdout + r.stderr)
        # The same sweep with no verdict: what the page says when nothing is wrong.
        shutil.copy(cls.runs / "sweep.h5", cls.runs / "clean.h5")
        with h5py.File(cls.runs / "clean.h5", "a") as f:
            f["sweep/verdicts"].resize((0,))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.runs, ignore_errors=True)

    def page(self, name):
        return html.page(fa.load(self.runs / name))

    def test_the_verdicts_come_first_then_the_pictures_then_the_folded_tables(self):
        page = self.page("sweep.h5")
        answer = page.index("<section id='answer'")
        self.assertLess(answer, page.index("<section id='pictures'"))
        self.assertLess(page.index("<section id='pictures'"), page.index("<section id='tables'"))
        lead = section(page, "answer")
        self.assertRegex(lead, r"[0-9]+ verdict\(s\), naming node0, node1, node2, node3")
        self.assertEqual(lead.count("3 of its 3 pairs suspect"), 4, "each node's verdict row")
        tables = section(page, "tables")
        self.assertEqual(tables.count("<table>") + tables.count("<p>(empty)</p>"), tables.count("<details>"),
                         "every full table folded")
        self.assertNotIn("<details open", tables)
        self.assertIn("<summary>env/checks (", tables)
        self.assertNotIn("env/checks", lead, "ok and skipped checks are not in the answer")

    def test_nothing_wrong_says_so_first(self):
        lead = section(self.page("clean.h5"), "answer")
        self.assertIn("All 4 hosts pass: no verdict.", lead)
        self.assertIn("class='clean'", lead)
        self.assertNotIn("<table>", lead)

    def test_rows_below_their_expected_share_are_in_the_answer(self):
        run = fa.load(self.runs / "p2p.h5")
        rows = run.tables["results/p2p"]
        big = rows[rows["bytes"] == 1048576].iloc[0]
        self.assertLess(big.pct_expected, 80, "shared memory against an 800 Gb/s NIC")
        lead = section(html.page(run), "answer")
        # A port's line rate (expected_from rated); the old words for a file written before the column.
        words = "the line rate" if "expected_from" in rows else "the expected bandwidth"
        self.assertIn(f"1 row(s) below 80% of {words}.", lead)
        self.assertIn("bw host mpi 1 MiB", lead)
        self.assertNotIn("64 KiB", lead, "the rule judges the largest size only")

    def test_failed_and_warned_checks_lead_and_ok_ones_do_not(self):
        run = fa.load(self.runs / "sweep.h5")
        checks = run.tables["env/checks"]
        bad = checks[checks.status.isin(["fail", "warn"])]
        lead = section(html.page(run), "answer")
        if bad.empty:
            self.assertNotIn("check(s)", lead)
        else:
            self.assertIn(f"{(bad.status == 'fail').sum()} failed and {(bad.status == 'warn').sum()} warned check(s)",
                          lead)
            for check in bad.check:
                self.assertIn(check, lead)
        for check in set(checks[checks.status.isin(["ok", "skip"])].check) - set(bad.check):
            self.assertNotIn(f">{check}<", lead)

    def test_the_excel_summary_leads_with_the_answer(self):
        out = self.dir / "sweep.xlsx"
        excel.to_excel(fa.load(self.runs / "sweep.h5"), out)
        book = openpyxl.load_workbook(out)
        self.assertEqual(book.sheetnames[0], "summary")
        sheet = book["summary"]
        column = [sheet.cell(r, 1).value for r in range(1, sheet.max_row + 1)]
        line = next(i for i, v in enumerate(column, 1) if v and "verdict(s), naming" in str(v))
        self.assertLess(line, 10, "on the first rows")
        self.assertTrue(sheet.cell(line, 1).font.b)
        self.assertEqual(sheet.cell(line, 1).font.color.rgb[-6:], "B00020")
        self.assertEqual(column[line + 1], "Verdicts")

    def test_collectives_of_op_all_get_one_panel_per_op_with_words_for_the_curves(self):
        matplotlib.rcParams["svg.fonttype"] = "none"
        try:
            run = fa.load(self.runs / "coll.h5")
            paths = plots.plot_run(run, self.dir / "plots", "svg")
        finally:
            matplotlib.rcParams["svg.fonttype"] = "path"
        names = {p.name for p in paths}
        self.assertIn("coll_bandwidth.svg", names)
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", (self.dir / "plots" / "coll_bandwidth.svg").read_text())
        ops = list(dict.fromkeys(run.tables["results/coll"].op))
        self.assertGreaterEqual(len(ops), 7)
        for op in ops:
            self.assertIn(op, texts, "a panel titled by its op")
        self.assertIn("in-place", texts)
        self.assertIn("out-of-place", texts)
        for text in texts:
            self.assertNotRegex(text, r"in_place=|root=|(^| )-1( |$)", "labels a person reads")
        # Line styles tell in- and out-of-place apart: the curves of a panel are not all solid.
        svg = (self.dir / "plots" / "coll_bandwidth.svg").read_text()
        self.assertIn("stroke-dasharray", svg)

    def test_chromium_shows_the_verdict_on_the_first_screen(self):
        if not CHROMIUM:
            self.skipTest("no Chromium here (Debian package chromium; ci/install-deps.sh installs it as root)")
        page = self.page("sweep.h5")
        measured = self.dir / "measured.html"
        measured.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
        flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={SCREEN[0]},{SCREEN[1]}"]
        r = subprocess.run(flags + ["--virtual-time-budget=5000", "--dump-dom", measured.as_uri()],
                           capture_output=True, text=True, timeout=180)
        found = re.search(r'<pre id="measure">([^<]*)</pre>', r.stdout)
        self.assertIsNotNone(found, r.stdout[-2000:] + r.stderr[-2000:])
        box = json.loads(found.group(1).replace("&quot;", '"'))
        self.assertLess(box["lines"][0][1], SCREEN[1], f"the verdict line is on the first screen: {box}")
        self.assertLess(box["answer"][0], box["first_picture"][0])
        self.assertGreater(box["details"], 5)
        self.assertEqual((box["open"], box["tables_outside"]), (0, 0))
        # And the screenshot a person would see: the first screen holds the verdict's red text.
        shot = self.dir / "first-screen.png"
        page_file = self.dir / "page.html"
        page_file.write_text(page, encoding="utf-8")
        r = subprocess.run(flags + [f"--screenshot={shot}", page_file.as_uri()], capture_output=True, text=True,
                           timeout=180)
        self.assertTrue(shot.exists(), r.stderr[-2000:])
        import matplotlib.image
        pixels = matplotlib.image.imread(str(shot))[:, :, :3]
        self.assertEqual(pixels.shape[:2], (SCREEN[1], SCREEN[0]))
        red = (abs(pixels[:, :, 0] - 0xb0 / 255) < 0.1) & (pixels[:, :, 1] < 0.15) & (pixels[:, :, 2] < 0.25)
        rows = red.any(axis=1).nonzero()[0]
        self.assertGreater(red.sum(), 500, "the verdict's red text is drawn")
        self.assertLess(rows.min(), SCREEN[1] // 2, "in the upper half of the first screen")


if __name__ == "__main__":
    unittest.main()
