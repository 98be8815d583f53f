"""The analysis package loads every table of a real run into pandas and writes Excel and CSV."""
import subprocess
import sys
import unittest

import openpyxl

import fabricbench_analysis as fa
from fabricbench_analysis import cli
from fbtest import LaunchTest


class LoadRun(LaunchTest):
    def setUp(self):
        super().setUp()
        r = self.mpirun(2, "fabric-p2p", ["--sizes", "8,1K", "-n", "10", "--output", "run.h5", "-q"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.run_ = fa.load(self.dir / "run.h5")

    def test_every_table_is_a_dataframe_with_text_as_str(self):
        expected = {"results/p2p", "samples/p2p", "env/ranks", "env/hosts", "env/variables", "env/checks", "env/expected"}
        self.assertEqual(set(self.run_.tables), expected)
        for name, frame in self.run_.tables.items():
            if name != "env/expected":  # empty on a host without NVLink, PCIe GPUs or RDMA ports
                self.assertGreater(len(frame), 0, name)
        self.assertIsInstance(self.run_.tables["results/p2p"]["test"].iloc[0], str)
        self.assertIsInstance(self.run_.tables["env/hosts"]["host"].iloc[0], str)
        self.assertTrue(self.run_.complete)

    def test_columns_say_their_unit_role_and_better_direction(self):
        columns = self.run_.columns["results/p2p"]
        self.assertEqual(list(columns), list(self.run_.tables["results/p2p"].columns), "one declaration per column")
        self.assertEqual(columns["bw_mbps"].unit, "MB/s")
        self.assertEqual(columns["bw_mbps"].role, "measured")
        self.assertEqual(columns["bw_mbps"].better, "higher")
        self.assertEqual(columns["latency_us"].better, "lower")
        self.assertEqual(columns["time_us_p99"].role, "statistic")
        self.assertEqual(columns["bytes"].unit, "B")
        self.assertEqual(self.run_.keys("results/p2p"), ["test", "memory", "backend", "bytes", "pairs", "window"])
        self.assertEqual(self.run_.columns["samples/p2p"]["time_us"].unit, "us")
        self.assertEqual(self.run_.attrs["schema_version"], 2)

    def test_plain_h5py_and_pandas_just_work(self):
        import h5py
        import pandas as pd
        with h5py.File(self.dir / "run.h5") as f:
            frame = pd.DataFrame(f["results/p2p"][:])
        self.assertEqual(len(frame), 6)

    def test_excel_has_a_sheet_per_table(self):
        out = self.dir / "run.xlsx"
        fa.to_excel(self.run_, out)
        book = openpyxl.load_workbook(out)
        self.assertEqual(set(book.sheetnames), {"summary", "run", "results_p2p", "env_ranks", "env_hosts", "env_variables",
                                                "env_checks", "env_expected", "chart_p2p"})
        sheet = book["results_p2p"]
        self.assertEqual(sheet.cell(1, 1).value, "test")
        self.assertEqual(sheet.max_row, 7)

    def test_report_cli(self):
        self.assertEqual(cli.main(["csv", str(self.dir / "run.h5"), str(self.dir / "csv")]), 0)
        self.assertTrue((self.dir / "csv" / "results_p2p.csv").exists())
        self.assertEqual(cli.main(["show", str(self.dir / "missing.h5")]), 2)


if __name__ == "__main__":
    unittest.main()
