"""fabric-report on a sweep that did not test what it planned (a budget spent before the first round, hosts left out):
fabric-sweep's root attributes hosts_planned, hosts_tested, pairs_planned, pairs_tested and coverage ("complete" or
"incomplete: <why>") and its verdicts of kind untested (one per host no pair test reached). The answer says "Not a
pass" first and never that all hosts pass, the page shows it in the failing colour, `metrics` exports the counts and
sweep_coverage_complete, and the plots draw an untested host grey (not tested), never starred or red (measured bad).
Synthetic files (sweep_files.py): no build needed."""
import re
import unittest

import fabricbench_analysis as fa
from fabricbench_analysis.export import html, prometheus
from fabricbench_analysis.judge.answer import answer
from fbtest import LaunchTest

from . import figures
from . import sweep_files as sf

HOSTS = [f"node{i}" for i in range(8)]
WHY = "0 of 28 pairs and 0 of 8 hosts tested (--budget 2s)"


def untested(*hosts):
    """Verdict rows as fabric-sweep writes them for hosts no pair test measured (no metric)."""
    return [("untested", h, "", "no pair test measured this host (--budget 2s)", "") for h in hosts]


def gauges(text):
    """name -> value of the series without labels but tool, from the exposition text."""
    return {m[1]: float(m[2]) for m in re.finditer(r'^fabricbench_(\w+)\{tool="fabric-sweep"\} (\S+)$', text, re.M)}


class SweepCoverage(LaunchTest):
    def write(self, name, **kwargs):
        path = self.dir / name
        sf.write_single_rail(path, **kwargs)
        return fa.load(path)

    def spent(self):
        """The budget spent before any test: nothing measured, every host untested."""
        return self.write("spent.h5", hosts=HOSTS, tested=[], verdicts=untested(*HOSTS),
                          attrs={"hosts_planned": 8, "hosts_tested": 0, "pairs_planned": 28, "pairs_tested": 0,
                                 "coverage_complete": 0})

    def test_an_incomplete_sweep_is_not_a_pass_first(self):
        found = answer(self.spent())
        lines = found.lines()
        self.assertEqual(lines[0], f"Not a pass: {WHY}")
        self.assertFalse(found.nothing_wrong)
        self.assertFalse([line for line in lines if "hosts pass" in line or "Nothing wrong" in line], lines)
        self.assertIn(f"Not tested: {', '.join(HOSTS)} (no pair test reached them).", lines)

    def test_the_page_shows_it_in_the_failing_colour(self):
        page = html.page(self.spent())
        lead = page[page.index("<section id='answer'"):page.index("</section>")]
        self.assertIn("<section id='answer' class='wrong'>", lead)
        first = re.search(r"<p class='line (\w+)'>([^<]*)</p>", lead)
        self.assertEqual(first.groups(), ("fail", f"Not a pass: {WHY}"))
        self.assertNotIn("hosts pass", page)
        self.assertNotIn("Nothing wrong", page)

    def test_fewer_hosts_tested_than_planned_is_not_a_pass_without_the_coverage_attribute(self):
        run = self.write("older.h5", tested=["node0", "node1", "node2"],
                         attrs={"hosts_planned": 4, "hosts_tested": 3, "pairs_planned": 6, "pairs_tested": 3})
        lines = answer(run).lines()
        self.assertEqual(lines[0], "Not a pass: 3 of 6 pairs and 3 of 4 hosts tested")
        self.assertIn("No verdict about the hosts tested.", lines)
        self.assertNotIn("All 4 hosts pass: no verdict.", lines)
        # The coverage attribute alone says it, and so do untested rows alone (no counts, no coverage).
        lines = answer(self.write("coverage.h5", attrs={"coverage_complete": 0, "hosts_planned": 4, "hosts_tested": 4,
                                                        "pairs_planned": 6, "pairs_tested": 5})).lines()
        self.assertEqual(lines[0], "Not a pass: 5 of 6 pairs and 4 of 4 hosts tested")
        run = self.write("rows.h5", tested=HOSTS[:6], hosts=HOSTS, verdicts=untested("node6", "node7"))
        lines = answer(run).lines()
        self.assertEqual(lines[0], "Not a pass: 2 of 8 hosts not tested")
        # Every host tested but not every pair: one untested row without a host.
        why = "3 of 6 planned pairs not tested (--budget 2s); /sweep/untested lists them"
        lines = answer(self.write("pairs.h5", verdicts=[("untested", "", "", why, "")])).lines()
        self.assertEqual(lines[:2], [f"Not a pass: {why}", "No verdict about the hosts tested."])

    def test_a_complete_sweep_still_passes(self):
        run = self.write("complete.h5", attrs={"hosts_planned": 4, "hosts_tested": 4, "pairs_planned": 6,
                                               "pairs_tested": 6, "coverage_complete": 1})
        found = answer(run)
        self.assertTrue(found.nothing_wrong)
        self.assertEqual(found.lines()[0], "All 4 hosts pass: no verdict.")

    def test_metrics_export_what_was_tested_of_the_plan(self):
        text = prometheus.exposition(self.spent())
        got = gauges(text)
        self.assertEqual({k: got[k] for k in ("sweep_hosts_planned", "sweep_hosts_tested", "sweep_pairs_planned",
                                              "sweep_pairs_tested", "sweep_coverage_complete")},
                         {"sweep_hosts_planned": 8, "sweep_hosts_tested": 0, "sweep_pairs_planned": 28,
                          "sweep_pairs_tested": 0, "sweep_coverage_complete": 0})
        self.assertEqual(got["sweep_verdicts"], 8, "the untested rows are verdicts: an alert on > 0 fires")
        for name in ("sweep_hosts_planned", "sweep_coverage_complete"):
            self.assertRegex(text, rf"# HELP fabricbench_{name} \S.*\n# TYPE fabricbench_{name} gauge\n")
        self.assertIn("\nfabricbench_sweep_hosts_tested{tool=\"fabric-sweep\"} 0\n", text, "an integer, as written")
        complete = gauges(prometheus.exposition(self.write("complete.h5", attrs={
            "hosts_planned": 4, "hosts_tested": 4, "pairs_planned": 6, "pairs_tested": 6, "coverage_complete": 1})))
        self.assertEqual(complete["sweep_coverage_complete"], 1)
        # Without the attributes (files of older sweeps) none of these series.
        self.assertNotIn("coverage", prometheus.exposition(self.write("old.h5")))

    def test_untested_hosts_are_drawn_as_not_tested_not_as_bad(self):
        path = self.dir / "part.h5"
        sf.write_single_rail(path, hosts=HOSTS, tested=HOSTS[:6], slow="node2",
                             verdicts=[("node", "node2", "", "3 of its 5 pairs suspect")] + untested("node6", "node7"),
                             attrs={"hosts_planned": 8, "hosts_tested": 6})
        drawn = figures.drawn(path)
        heat = drawn["sweep_p2p_bw.png"].axes[0]
        for labels in (heat.get_xticklabels(), heat.get_yticklabels()):
            self.assertEqual(figures.starred(labels), {"node2"})
            colors = figures.tick_colors(labels)
            self.assertEqual(colors["* node2"], "red")
            self.assertEqual({colors["node6"], colors["node7"]}, {"darkgray"})
        self.assertIn("grey: not tested", heat.get_title())
        bars = drawn["sweep_nodes.png"].axes[0]
        names = [t.get_text() for t in bars.get_xticklabels()]
        red = [n for n, bar in zip(names, bars.patches) if bar.get_facecolor()[:3] == (1.0, 0.0, 0.0)]
        self.assertEqual(red, ["node2"])
        self.assertNotIn("node6", names, "no bar: nothing measured")
        self.assertEqual(bars.get_xlabel(), "not tested (no bar): node6, node7")


if __name__ == "__main__":
    unittest.main()
