"""The pictures and lines of fabric-report's page say what they mean: the mesh's hosts over time each in their own
colour and marker, a verdict marking only the plots of its own metric, no title clipped at its figure's edge, and a
recovery ("... back to ...") shown as good news, not as a fault. Synthetic files (sweep_files.py), the figures read
back as matplotlib artists (figures.py): no build needed."""
import re
import unittest
from html import unescape

import matplotlib.colors

import fabricbench_analysis as fa
from fabricbench_analysis.export import html
from fabricbench_analysis.judge.answer import answer
from fbtest import LaunchTest

from . import figures
from . import sweep_files as sf

HOSTS = [f"node{i}" for i in range(8)]
NEW = "node node{h}: p2p_latency to every peer 100 -> 2000 us from pass {k}, 06:27:{s}Z (all of its pairs suspect)"
BACK = "node node{h}: p2p_latency back to 100 us from pass {k}, 06:27:{s}Z (was 2000)"


def changes(*rows):
    """(pass, change, host number) -> /sweep/changes rows with the tool's text."""
    return [(k, change, f"node{h}", (NEW if change == "new" else BACK).format(h=h, k=k, s=10 * k))
            for k, change, h in rows]


def write_mesh(path, hosts):
    """node1 and node2 go bad in pass 2, node3 in pass 3 and back in pass 4."""
    sf.write_mesh(path, hosts, 4, {2: ["node1", "node2"], 3: ["node1", "node2", "node3"], 4: ["node1", "node2"]},
                  changes((2, "new", 1), (2, "new", 2), (3, "new", 3), (4, "recovered", 3)))


class ReportPictures(LaunchTest):
    def over_time(self, hosts):
        path = self.dir / "mesh.h5"
        write_mesh(path, hosts)
        return figures.drawn(path)["sweep_over_time_p2p_latency.png"].axes[0]

    def test_each_changed_host_of_the_mesh_has_its_own_colour_and_marker(self):
        for hosts in (HOSTS[:4], [f"node{i}" for i in range(16)]):  # each host coloured; the unchanged grey
            ax = self.over_time(hosts)
            lines = {line.get_label().split(" ")[0]: line for line in ax.get_lines()}  # "node1 (changed)" -> node1
            changed = [f"node{h}" for h in (1, 2, 3)]
            styles = {(matplotlib.colors.to_hex(lines[n].get_color()), lines[n].get_marker()) for n in changed}
            self.assertEqual(len(styles), 3, (len(hosts), styles))
            legend = [t.get_text() for t in ax.get_legend().get_texts()]
            self.assertEqual([n for n in legend if "changed" in n], [f"{n} (changed)" for n in changed])
            self.assertEqual(len(set(legend)), len(legend))
            if len(hosts) > 9:
                self.assertEqual(lines["_child0"].get_color(), "lightgray", "an unchanged host of many")

    def test_a_verdict_marks_only_the_plots_of_its_metric(self):
        path = self.dir / "two.h5"
        sf.write_single_rail(path, slow="node2", metrics=("p2p_bw", "p2p_latency"),
                             verdicts=[("node", "node2", "", "3 of its 3 pairs suspect"),
                                       ("node", "node1", "", "3 of its 3 pairs suspect", "p2p_latency")])
        drawn = figures.drawn(path)
        for metric, host in (("p2p_bw", "node2"), ("p2p_latency", "node1")):
            heat = drawn[f"sweep_{metric}.png"].axes[0]
            self.assertEqual(figures.starred(heat.get_yticklabels()), {host}, metric)
            self.assertEqual(figures.starred(heat.get_xticklabels()), {host}, metric)
        for ax in drawn["sweep_nodes.png"].axes:
            names = [t.get_text() for t in ax.get_xticklabels()]
            red = [n for n, bar in zip(names, ax.patches) if bar.get_facecolor()[:3] == (1.0, 0.0, 0.0)]
            self.assertEqual(red, ["node1" if "p2p_latency" in ax.get_title() else "node2"], ax.get_title())

    def test_no_title_is_clipped(self):
        single, rails, mesh = self.dir / "single.h5", self.dir / "rails.h5", self.dir / "mesh.h5"
        sf.write_single_rail(single, hosts=HOSTS, slow="node3", metrics=("p2p_bw", "p2p_latency"))
        sf.write_rails(rails)
        write_mesh(mesh, HOSTS)
        for path in (single, rails, mesh):
            for name, fig in figures.drawn(path).items():
                self.assertEqual(figures.clipped_titles(fig), [], f"{path.name}: {name}")

    def test_a_recovery_is_not_shown_as_a_fault(self):
        path = self.dir / "mesh.h5"
        write_mesh(path, HOSTS[:4])
        back, new = BACK.format(h=3, k=4, s=40), NEW.format(h=3, k=3, s=30)
        shown = {unescape(text): style
                 for style, text in re.findall(r"<p class='line (\w+)'>([^<]*)</p>", html.page(fa.load(path)))}
        self.assertEqual((shown[back], shown[new]), ("ok", "fail"))
        styled = {line: style for style, line in answer(fa.load(path)).styled_lines()}  # the workbook's colours
        self.assertEqual((styled[back], styled[new]), ("ok", "fail"))


if __name__ == "__main__":
    unittest.main()
