"""fabric-report on fabric-sweep's rails and switch topology (issue 21), on synthetic files written with h5py in the
layout the sweep writes (sweep_files.py): 2 rails x 8 hosts with two leaf switches per rail, an uplink verdict on
rail 1 and a NIC verdict on rail 0. The plot draws one heat map per rail, titled by it, with the hosts grouped by that
rail's leaves (leaves as first seen in /sweep/topology, hosts in job order within a leaf) and a line at each leaf
boundary; the page and the workbook carry the per-NIC and per-switch tables after the verdicts, suspect rows first
and highlighted, and the answer names where each verdict points; `metrics` labels rail, nic and switch. A file of
today's single-rail layout (no rail column at all) plots, pages and books as before."""
import re
import shutil
import subprocess
import unittest

import h5py
import matplotlib
import numpy as np
import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis.draw import plots
from fabricbench_analysis.draw.layout import heat_layout
from fabricbench_analysis.export import excel, html, prometheus
from fabricbench_analysis.judge import rails
from fabricbench_analysis.judge.answer import answer
from fbtest import LaunchTest

from . import sweep_files as sf

PROMTOOL = shutil.which("promtool")


def section(page, name):
    start = page.index(f"<section id='{name}'")
    return page[start:page.index("</section>", start)]


def svg_texts(path):
    return re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())


def svg_row_labels(path):
    """The heat map's row labels (right-aligned at the left of the map) from top to bottom, with their y."""
    found = re.findall(r'<text style="[^"]*text-anchor: end" x="[0-9.]+" y="([0-9.]+)"[^>]*>([^<]*)</text>',
                       path.read_text())
    return sorted((float(y), label.removeprefix("* ")) for y, label in found)


def svg_line_y(path, gid):
    """The y of a horizontal line drawn with `gid` (matplotlib writes the gid as the group's id)."""
    found = re.search(rf'<g id="{re.escape(gid)}">\s*<path d="M [0-9.]+ ([0-9.]+)\s*L [0-9.]+ ([0-9.]+)', path.read_text())
    assert found, f"no line {gid} in {path.name}"
    assert found.group(1) == found.group(2), "horizontal"
    return float(found.group(1))


class SweepRails(LaunchTest):
    def setUp(self):
        super().setUp()
        self.rails_file = self.dir / "rails.h5"
        sf.write_rails(self.rails_file)
        self.old_file = self.dir / "old.h5"
        sf.write_single_rail(self.old_file, slow="node2", verdicts=[("node", "node2", "", "3 of its 3 pairs suspect")])

    def report(self, *args):
        return subprocess.run(["/usr/bin/python3", "-m", "fabricbench_analysis.cli", *map(str, args)],
                              capture_output=True, text=True, cwd=self.dir)

    def svg_plots(self, path, out):
        matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, to read it back
        try:
            return plots.plot_run(fa.load(path), out, "svg")
        finally:
            matplotlib.rcParams["svg.fonttype"] = "path"

    # --- plot ---------------------------------------------------------------------------------------------------------

    def test_plot_writes_one_heat_map_per_rail_titled_by_its_rail(self):
        r = self.report("plot", self.rails_file, "--out", self.dir / "png")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = sorted(p.name for p in (self.dir / "png").iterdir())
        self.assertEqual([n for n in names if n.startswith("sweep_p2p_bw")],
                         ["sweep_p2p_bw_rail0.png", "sweep_p2p_bw_rail1.png"])
        paths = {p.name: p for p in self.svg_plots(self.rails_file, self.dir / "svg")}
        for rail in (0, 1):
            texts = " ".join(svg_texts(paths[f"sweep_p2p_bw_rail{rail}.svg"]))
            self.assertIn(f"p2p_bw rail {rail} (MB/s)", texts)
            self.assertNotIn(f"p2p_bw rail {1 - rail} ", texts)

    def test_heat_map_hosts_follow_the_leaves_of_their_rail_with_a_line_at_each_boundary(self):
        run = fa.load(self.rails_file)
        for rail in (0, 1):
            layout = heat_layout(run, f"sweep/matrices/p2p_bw_rail{rail}")
            self.assertEqual((layout.metric, layout.rail), ("p2p_bw", rail))
            self.assertEqual(layout.hosts, sf.ORDER[rail])
            self.assertEqual(layout.boundaries, sf.BOUNDARIES[rail])
            self.assertEqual([leaf for leaf, _, _ in layout.leaves], list(sf.LEAVES[rail]), "as first seen")
        # The picture itself: rows top to bottom in that order, the boundary line between the leaves' rows.
        paths = {p.name: p for p in self.svg_plots(self.rails_file, self.dir / "svg")}
        for rail in (0, 1):
            svg = paths[f"sweep_p2p_bw_rail{rail}.svg"]
            rows = svg_row_labels(svg)
            self.assertEqual([label for _, label in rows], sf.ORDER[rail])
            (boundary,) = sf.BOUNDARIES[rail]
            y = svg_line_y(svg, f"leaf-boundary-row-{boundary}")
            self.assertLess(rows[boundary - 1][0], y)
            self.assertLess(y, rows[boundary][0])
            self.assertNotIn(f'id="leaf-boundary-row-{sf.BOUNDARIES[1 - rail][0]}"', svg.read_text())
            texts = svg_texts(svg)
            for leaf in sf.LEAVES[rail]:
                marked = rail == sf.SLOW_UPLINK[1] and leaf == sf.SLOW_UPLINK[0]
                self.assertIn(f"* {leaf}" if marked else leaf, texts, "the leaf named on the axis")
        # The hosts a verdict names are marked on the map of the verdict's rail only.
        self.assertIn("* node5", svg_texts(paths["sweep_p2p_bw_rail0.svg"]))
        self.assertNotIn("* node5", svg_texts(paths["sweep_p2p_bw_rail1.svg"]))

    def test_a_heat_map_of_1024_hosts_stays_legible(self):
        # 1024 hosts, one slow: the picture stays a screen's size, names only the slow host (no per-cell text, no
        # 1024 tick labels), and draws its row as itself.
        hosts = [f"n{i:04d}" for i in range(1024)]
        path = self.dir / "big.h5"
        values = np.full((1024, 1024), 10000.0)
        values[513, :] = values[:, 513] = 5000.0
        np.fill_diagonal(values, np.nan)
        with h5py.File(path, "w") as f:  # the matrix and the verdict only: 523776 pair rows are not what is tested
            sf._root(f, hosts, "fabric-sweep --metric p2p_bw --output big.h5")
            sf.write_table(f, "sweep/verdicts", sf._verdict_columns(False), [("p2p_bw", "node", "n0513", "", "slow")])
            sf.write_matrix(f, "sweep/matrices/p2p_bw", hosts, values)
        out = self.dir / "big"
        drawn = self.svg_plots(path, out)
        heat = next(p for p in drawn if p.name == "sweep_p2p_bw.svg")
        texts = svg_texts(heat)
        self.assertEqual([t for t in texts if t.startswith(("n0", "* n0"))], ["* n0513", "* n0513"], "row and column")
        self.assertLess(len(texts), 60, "no text per cell or per host")
        plots.plot_run(fa.load(path), out, "png")
        with open(out / "sweep_p2p_bw.png", "rb") as f:
            header = f.read(24)
        width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
        self.assertLessEqual(max(width, height), 1700, (width, height))

    def test_leaf_order_rules(self):
        run = fa.load(self.rails_file)
        hosts = list(run.matrices["sweep/matrices/p2p_bw_rail0"].index)
        order = rails.leaf_order(run, hosts, 1)
        self.assertEqual((order.hosts, order.boundaries), (sf.ORDER[1], [3]))
        self.assertEqual(order.leaves, [("leaf3", 0, 3), ("leaf4", 3, 8)])
        # Job order within a leaf follows the hosts as given, not their names.
        self.assertEqual(rails.leaf_order(run, list(reversed(hosts)), 0).hosts,
                         ["node6", "node4", "node2", "node0", "node7", "node5", "node3", "node1"])
        # A host the topology does not name goes last, under no leaf.
        order = rails.leaf_order(run, hosts + ["node9"], 0)
        self.assertEqual(order.hosts[-1], "node9")
        self.assertEqual(order.leaves[-1], ("", 8, 9))
        self.assertEqual(order.boundaries, [4, 8])
        # A matrix without rails takes the topology's first rail.
        self.assertEqual(rails.leaf_order(run, hosts, None).hosts, sf.ORDER[0])
        # No topology: the hosts as given, no leaf.
        old = fa.load(self.old_file)
        order = rails.leaf_order(old, ["node3", "node1"], 0)
        self.assertEqual((order.hosts, order.leaves, order.boundaries), (["node3", "node1"], [], []))

    def test_without_a_topology_the_rails_are_drawn_in_job_order(self):
        bare = self.dir / "bare.h5"
        sf.write_rails(bare, topology=False)
        run = fa.load(bare)
        self.assertNotIn("sweep/topology", run.tables)
        layout = heat_layout(run, "sweep/matrices/p2p_bw_rail1")
        self.assertEqual((layout.hosts, layout.boundaries, layout.leaves), (sf.HOSTS, [], []))
        paths = {p.name: p for p in self.svg_plots(bare, self.dir / "svg")}
        svg = paths["sweep_p2p_bw_rail1.svg"]
        self.assertEqual([label for _, label in svg_row_labels(svg)], sf.HOSTS)
        self.assertNotIn("leaf-boundary", svg.read_text())
        # The page: the per-NIC table, no per-switch table.
        page = section(html.page(run), "answer")
        self.assertIn("id='nics'", page)
        self.assertNotIn("id='switches'", page)

    # --- the answer, the page, the workbook -------------------------------------------------------------------------

    def test_the_answer_names_where_the_rail_verdicts_point(self):
        lines = answer(fa.load(self.rails_file)).lines()
        self.assertEqual(lines[0], "2 verdict(s), naming node5, leaf4.")
        self.assertIn("p2p_bw: uplink of leaf4 on rail 1", lines)
        self.assertIn("p2p_bw: NIC mlx5_0 (rail 0) of node5", lines)
        describe = rails.describe
        self.assertEqual(describe({"kind": "uplink", "rail": 1, "switch": "leaf1,leaf2"}),
                         "uplink of leaf1 or leaf2 on rail 1 (the two cannot be told apart)")
        self.assertEqual(describe({"kind": "switch", "rail": 0, "switch": "leaf3"}), "leaf switch leaf3 on rail 0")
        self.assertEqual(describe({"kind": "nic", "host_a": "node7", "rail": 1, "nic": "mlx5_1"}),
                         "NIC mlx5_1 (rail 1) of node7")
        self.assertEqual(describe({"kind": "path", "host_a": "node3", "host_b": "node4", "rail": 1, "nic": "mlx5_0"}),
                         "path of rail 1 of node3 to node4 (NIC mlx5_0)")
        self.assertEqual(describe({"kind": "node", "host_a": "node3", "host_b": "", "rail": -1}), "node node3")
        # Many rail verdicts: a few lines and how many more.
        many = self.dir / "many.h5"
        sf.write_rails(many, verdicts=[("nic", f"node{i % 8}", "", i % 2, f"mlx5_{i % 2}", "", "slow")
                                       for i in range(12)])
        lines = answer(fa.load(many)).lines()
        self.assertEqual(sum(line.startswith("p2p_bw: NIC ") for line in lines), 8)
        self.assertIn("... and 4 more verdict(s) about one rail (the table below).", lines)

    def test_the_page_has_the_per_nic_and_per_switch_tables_after_the_verdicts(self):
        out = self.dir / "rails.html"
        r = self.report("html", self.rails_file, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        page = out.read_text()
        lead = section(page, "answer")
        self.assertIn("uplink of leaf4 on rail 1", lead)
        self.assertIn("NIC mlx5_0 (rail 0) of node5", lead)
        verdicts, nics, switches = (lead.index("<h3>Verdicts</h3>"), lead.index("<h3 id='nics'>"),
                                    lead.index("<h3 id='switches'>"))
        self.assertLess(verdicts, nics)
        self.assertLess(nics, switches)
        nic_table = lead[nics:lead.index("</table>", nics)]
        rows = re.findall(r"<tr( class='suspect')?>(<td.*?)</tr>", nic_table)
        self.assertEqual(len(rows), 16, "8 hosts x 2 rails")
        cells = [re.findall(r"<td[^>]*>([^<]*)</td>", body) for _, body in rows]
        self.assertEqual(cells[0][:3], ["node5", "0", "mlx5_0"], "the most suspect first")
        flags = [bool(mark) for mark, _ in rows]
        suspect = [int(c[-1]) > 0 for c in cells]
        self.assertEqual(flags, suspect, "the suspect rows highlighted")
        self.assertEqual(flags, sorted(flags, reverse=True), "and first")
        self.assertIn(False, flags)
        switch_table = lead[switches:lead.index("</table>", switches)]
        self.assertIn("the sweep crossed 100% of the leaf pairs x rails", switch_table)
        rows = re.findall(r"<tr( class='suspect')?><td class=\"t\">(leaf[0-9])</td>", switch_table)
        self.assertEqual([(leaf, bool(mark)) for mark, leaf in rows],
                         [("leaf3", True), ("leaf4", True), ("leaf2", False), ("leaf1", False)])
        # The plots: one per rail.
        pictures = section(page, "pictures")
        self.assertIn('alt="sweep_p2p_bw_rail0"', pictures)
        self.assertIn('alt="sweep_p2p_bw_rail1"', pictures)
        self.assertIn("<summary>sweep/topology (16 rows)</summary>", section(page, "tables"))

    def test_the_workbook_has_the_per_nic_and_per_switch_sheets_and_blocks(self):
        out = self.dir / "rails.xlsx"
        r = self.report("excel", self.rails_file, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        book = openpyxl.load_workbook(out)
        for name in ("summary", "per_nic", "per_switch", "sweep_topology", "sweep_switches", "heat_p2p_bw_rail0",
                     "heat_p2p_bw_rail1"):
            self.assertIn(name, book.sheetnames)
        self.assertNotIn("heat_p2p_bw", book.sheetnames)
        nic = book["per_nic"]
        header = [c.value for c in nic[1]]
        self.assertEqual(header, ["host", "rail", "nic", "metric", "median", "unit", "pairs", "suspect_pairs"])
        self.assertEqual([c.value for c in nic[2]][:3], ["node5", 0, "mlx5_0"])
        for row in nic.iter_rows(min_row=2):
            filled = row[0].fill.fgColor.rgb[-6:] == excel.SUSPECT_FILL
            self.assertEqual(filled, row[-1].value > 0, [c.value for c in row])
        switch = book["per_switch"]
        self.assertEqual([switch.cell(r, 1).value for r in range(2, 6)], ["leaf3", "leaf4", "leaf2", "leaf1"])
        # The summary: the rail verdict lines, then the verdicts, the per-NIC and the per-switch blocks in that order.
        column = [book["summary"].cell(r, 1).value for r in range(1, book["summary"].max_row + 1)]
        self.assertIn("p2p_bw: uplink of leaf4 on rail 1", column)
        blocks = [column.index(t) for t in ("Verdicts", "Per NIC (host and rail)")]
        blocks.append(next(i for i, v in enumerate(column) if str(v).startswith("Per leaf switch")))
        self.assertEqual(blocks, sorted(blocks))
        self.assertEqual(column[blocks[1] + 2], "node5")
        self.assertEqual(book["summary"].cell(blocks[1] + 3, 1).fill.fgColor.rgb[-6:], excel.SUSPECT_FILL)
        # The heat sheets follow the leaves as the plots do.
        heat = book["heat_p2p_bw_rail1"]
        self.assertEqual([heat.cell(r, 2).value for r in range(2, 10)], sf.ORDER[1])
        self.assertEqual([heat.cell(1, c).value for c in range(3, 11)], sf.ORDER[1])

    # --- metrics ------------------------------------------------------------------------------------------------------

    def test_metrics_label_rail_nic_and_switch(self):
        path = self.dir / "labels.h5"
        sf.write_rails(path, verdicts=[("uplink", "", "", 1, "", "leaf3,leaf4", "crossing slow"),
                                       ("node", "node2", "", -1, "", "", "every rail slow")])
        text = prometheus.exposition(fa.load(path))
        self.assertIn('fabricbench_sweep_node_median_bandwidth_bytes_per_second{tool="fabric-sweep",metric="p2p_bw",'
                      'host="node5",rail="0",nic="mlx5_0"} 4000000000.0', text)
        self.assertRegex(text, r'fabricbench_sweep_pair_bandwidth_bytes_per_second\{[^}]*host_a="node0",'
                               r'host_b="node1"[^}]*rail="1",nic_a="mlx5_1",nic_b="mlx5_1"\}')
        self.assertIn('fabricbench_sweep_verdict{tool="fabric-sweep",kind="uplink",metric="p2p_bw",rail="1",'
                      'switch="leaf3,leaf4",reason="crossing slow"} 1', text)
        self.assertIn('fabricbench_sweep_verdict{tool="fabric-sweep",kind="node",metric="p2p_bw",host="node2",'
                      'reason="every rail slow"} 1', text, "rail -1: no rail label")
        self.assertIn('fabricbench_sweep_switch_suspect_pairs{tool="fabric-sweep",switch="leaf4",metric="p2p_bw",'
                      'rail="1",pairs="crossing"} 30.0', text)
        self.assertIn('fabricbench_sweep_leaf_pair_coverage_ratio{tool="fabric-sweep"} 1.0', text)
        # Every pair row a series of its own: the two rails of a host pair do not overwrite each other.
        pairs = len(fa.load(path).tables["sweep/pairs"])
        self.assertEqual(text.count("fabricbench_sweep_pair_bandwidth_bytes_per_second{"), pairs)
        if PROMTOOL:
            out = self.dir / "rails.prom"
            out.write_text(text)
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    # --- today's single-rail files --------------------------------------------------------------------------------

    def test_a_single_rail_file_without_rail_columns_reports_as_before(self):
        run = fa.load(self.old_file)
        self.assertNotIn("rail", run.tables["sweep/pairs"])
        r = self.report("plot", self.old_file, "--out", self.dir / "png")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(p.name for p in (self.dir / "png").iterdir()), ["sweep_nodes.png", "sweep_p2p_bw.png"])
        layout = heat_layout(run, "sweep/matrices/p2p_bw")
        self.assertEqual((layout.metric, layout.rail, layout.hosts, layout.leaves),
                         ("p2p_bw", None, ["node0", "node1", "node2", "node3"], []))
        paths = {p.name: p for p in self.svg_plots(self.old_file, self.dir / "svg")}
        texts = svg_texts(paths["sweep_p2p_bw.svg"])
        self.assertIn("p2p_bw (MB/s); * = named in a verdict", texts)
        self.assertIn("* node2", texts)
        self.assertNotIn("leaf-boundary", paths["sweep_p2p_bw.svg"].read_text())
        # The page and the workbook: no rail tables, the answer as before.
        out = self.dir / "old.html"
        r = self.report("html", self.old_file, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        lead = section(out.read_text(), "answer")
        self.assertIn("1 verdict(s), naming node2.", lead)
        self.assertNotIn("id='nics'", lead)
        self.assertNotIn("id='switches'", lead)
        self.assertNotIn("<th>where</th>", lead, "the verdicts table as the file has it")
        out = self.dir / "old.xlsx"
        r = self.report("excel", self.old_file, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        sheets = openpyxl.load_workbook(out).sheetnames
        self.assertIn("heat_p2p_bw", sheets)
        self.assertFalse({"per_nic", "per_switch"} & set(sheets))
        r = self.report("metrics", self.old_file)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("rail=", r.stdout)

    def test_one_rail_with_a_topology_groups_by_leaf_without_a_per_nic_table(self):
        # A sweep of one rail given a topology: rail columns all 0, one matrix named as today.
        path = self.dir / "one.h5"
        sf.write_rails(path)
        with h5py.File(path, "a") as f:
            for table in ("sweep/pairs", "sweep/nodes", "sweep/topology", "sweep/switches"):
                rows = f[table][:]
                rows = rows[rows["rail"] == 0]
                f[table].resize((len(rows),))
                f[table][...] = rows
            f.move("sweep/matrices/p2p_bw_rail0", "sweep/matrices/p2p_bw")
            del f["sweep/matrices/p2p_bw_rail1"]
            del f.attrs["rails"]
            f.attrs["leaf_pair_coverage"] = 0.5
        run = fa.load(path)
        layout = heat_layout(run, "sweep/matrices/p2p_bw")
        self.assertEqual((layout.rail, layout.hosts, layout.boundaries), (None, sf.ORDER[0], [4]))
        names = sorted(p.name for p in plots.plot_run(run, self.dir / "png"))
        self.assertEqual(names, ["sweep_nodes.png", "sweep_p2p_bw.png", "sweep_switches.png"])
        found = answer(run)
        self.assertIsNone(found.nics, "one rail: no per-NIC table")
        self.assertEqual(len(found.switches), 2)
        lead = section(html.page(run), "answer")
        self.assertNotIn("id='nics'", lead)
        self.assertIn("the sweep crossed 50% of the leaf pairs x rails", lead)


if __name__ == "__main__":
    unittest.main()
