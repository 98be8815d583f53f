"""Every option a fabric-report subcommand does not use is refused, not ignored (issue 48): exit 2 and one line that
names the subcommand and the option (and what it has instead), nothing written. Three ways an option went unused:
an option of another subcommand (argparse refused it, but in a line that named neither the subcommand nor what it
takes), html's --threshold without a reference run B (accepted and ignored: with one run nothing is compared), and an
option given twice (argparse kept the last and dropped the first without a word)."""
import contextlib
import io
import pathlib
import unittest
from unittest import mock

from fabricbench_analysis import cli
from fbtest import LaunchTest
from .sweep_files import write_single_rail

# Each subcommand's argv before its options, and the options it takes; RUN, B and OUT are names in the scratch folder.
COMMANDS = {
    "show": (["show", "RUN"], set()),
    "plot": (["plot", "RUN"], {"--out", "--format"}),
    "compare": (["compare", "RUN", "B"], {"--threshold"}),
    "baseline": (["baseline", "RUN", "OUT"], {"--tolerance"}),
    "check": (["check", "RUN", "--baseline", "BASE"], {"--baseline"}),
    "html": (["html", "RUN", "B", "OUT"], {"--threshold"}),
    "excel": (["excel", "RUN", "OUT"], {"--samples"}),
    "csv": (["csv", "RUN", "OUT"], {"--table"}),
    "json": (["json", "RUN", "OUT"], {"--table"}),
    "metrics": (["metrics", "RUN", "OUT"], set()),
    "import": (["import", "RUN", "--out", "OUT"], {"--out", "--tool", "--op", "--ranks", "--window", "--nodes",
                                                   "--nics-per-node", "--nic-rate", "--link-gbps", "--nccl-log",
                                                   "--configs"}),
}
# Every option of fabric-report with a value it would take (--samples takes none).
OPTIONS = {"--out": ["o"], "--format": ["svg"], "--threshold": ["7%"], "--tolerance": ["20%"], "--baseline": ["b.ini"],
           "--samples": [], "--table": ["results/p2p"]}
# Two values for each option that takes one, both allowed (--format's choices).
TWICE = {"--out": ("o1", "o2"), "--format": ("svg", "png"), "--threshold": ("7%", "9%"), "--tolerance": ("20%", "30%"),
         "--baseline": ("b.ini", "c.ini")}


class UnusedOptions(LaunchTest):
    def main(self, argv):
        """cli.main in this process (parsing is all that runs): exit status, stdout, stderr."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(self.dir / a) if a in ("RUN", "B", "OUT", "BASE") else a for a in argv])
        return code, out.getvalue(), err.getvalue()

    def assert_refused(self, argv, *fragments):
        code, out, err = self.main(argv)
        self.assertEqual((code, out), (2, ""), err)
        self.assertEqual(len(err.splitlines()), 1, err)
        for fragment in fragments:
            self.assertIn(fragment, err)
        self.assertEqual(list(self.dir.iterdir()), [], "nothing written")

    def test_an_option_of_another_subcommand_is_refused_naming_both(self):
        for command, (argv, own) in COMMANDS.items():
            for option, value in OPTIONS.items():
                if option in own:
                    continue
                with self.subTest(command=command, option=option):
                    self.assert_refused(argv + [option, *value],
                                        f"fabric-report: {command}: {option}: not an option of fabric-report {command}",
                                        "its options: " if own else "it has no options", *own)
        self.assert_refused(["metrics", "RUN", "OUT", "more"], "metrics: more: an argument too many")

    def test_html_refuses_a_threshold_without_a_reference_run(self):
        self.assert_refused(["html", "RUN", "OUT", "--threshold", "7%"],
                            "html: --threshold goes with a reference run (html RUN.h5 B.h5 OUT.html)")
        # With B it is what the comparison uses.
        write_single_rail(self.dir / "RUN")
        write_single_rail(self.dir / "B")
        with mock.patch("fabricbench_analysis.export.html.write_html") as write:
            code, out, err = self.main(["html", "RUN", "B", "OUT", "--threshold", "7%"])
        self.assertEqual(code, 0, err)
        self.assertAlmostEqual(write.call_args.args[3], 0.07)

    def test_an_option_given_twice_is_refused(self):
        for command, (argv, own) in COMMANDS.items():
            for option in sorted(own & set(TWICE)):  # --table adds a table each time; --samples is a switch
                first, second = TWICE[option]
                start = argv[:argv.index(option)] if option in argv else argv  # check's --baseline BASE
                with self.subTest(command=command, option=option):
                    self.assert_refused(start + [option, first, option, second],
                                        f"fabric-report: {command}: {option} given twice ({first} and {second})")


if __name__ == "__main__":
    unittest.main()
