"""fabric-report metrics: the Prometheus text format of every tool's file (fabric-p2p, fabric-coll, fabric-sweep with
verdicts, fabric-doctor with a failed check and a NIC's expected bandwidth; fabric-verbs where this machine has an
RDMA device) passes Debian's `promtool check metrics` and parses with python3-prometheus-client to the values of the
HDF5 rows, converted to base units here by hand; label values with a quote or backslash are escaped; the file is
replaced whole, readable by node_exporter, with no temporary *.prom left beside it."""
import calendar
import math
import os
import pathlib
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

import h5py

import fabricbench_analysis as fa
from fbtest import LaunchTest

WRAPPER = pathlib.Path(__file__).resolve().parents[2] / "analysis" / "fabric-report"
FAKE_HOSTS = ["--emulate-hosts", "1"]
PROMTOOL = shutil.which("promtool")
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # Debian: python3-prometheus-client (ci/install-deps.sh)
    text_string_to_metric_families = None


def fake_rdma_root(root, gid_type):
    """One Active 100 Gb/s RoCE port under a sysfs root the tools read through FABRICBENCH_TEST_SYSROOT."""
    port = root / "sys/class/infiniband/mlx5_7/ports/1"
    files = {port / "state": "4: ACTIVE", port / "phys_state": "5: LinkUp", port / "link_layer": "Ethernet",
             port / "rate": "100 Gb/sec (4X EDR)", port / "gids/1": "0000:0000:0000:0000:0000:ffff:0a00:0001",
             port / "gid_attrs/types/1": gid_type, port / "gid_attrs/ndevs/0": "eth7",
             root / "sys/class/infiniband/mlx5_7/fw_ver": "28.39.1002"}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def samples(text):
    """{(name, frozenset(labels)): value} of an exposition, through prometheus_client's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"a series twice: {key}"
            out[key] = s.value
    return out


def key(name, tool, **labels):
    """A series as `samples` gives it; an empty label is no label (Prometheus' reading)."""
    return name, frozenset({"tool": tool, **{k: str(v) for k, v in labels.items() if str(v) != ""}}.items())


def rail_labels(row, *columns):
    """The labels of a sweep row's rail columns where its table has them (issue 21): rail unless -1 (a verdict about
    no one rail), the NIC and switch names (an empty one is no label, as `key` reads it)."""
    out = {}
    for column in columns:
        if hasattr(row, column):
            value = getattr(row, column)
            if column != "rail" or value >= 0:
                out[column] = value
    return out


class Metrics(LaunchTest):
    @classmethod
    def setUpClass(cls):
        cls.runs = pathlib.Path(tempfile.mkdtemp(prefix="fabricbench-metrics-"))
        runner = LaunchTest()
        runner.dir = cls.runs
        active = cls.runs / "active-root"
        fake_rdma_root(active, "RoCE v2")
        v1 = cls.runs / "v1-root"
        fake_rdma_root(v1, "IB/RoCE v1")  # the doctor's rdma.link fails: RoCE without a v2 GID
        (cls.runs / "base.ini").write_text("[baseline]\ntolerance = 10%\n[sweep/pairs bw]\nmetric = p2p_bw\n"
                                           "value = 1e12\n")  # no pair reaches 1 PB/s: every node gets a verdict
        cls.tools = {"p2p.h5": "fabric-p2p", "coll.h5": "fabric-coll", "sweep.h5": "fabric-sweep",
                     "doctor.h5": "fabric-doctor"}
        for name, np_, args, env, codes in (
                ("p2p.h5", 2, FAKE_HOSTS + ["--test", "latency,bw", "--sizes", "8,64K", "-n", "10", "-q"],
                 {"FABRICBENCH_TEST_SYSROOT": str(active)}, (0,)),  # two hosts: the NIC's share applies
                ("coll.h5", 2, ["--backend", "mpi", "--op", "all_reduce,broadcast", "-b", "1K", "-e", "64K", "-f", "8",
                                "-n", "5", "-q"], None, (0,)),
                ("sweep.h5", 4, FAKE_HOSTS + ["--metric", "p2p_bw,p2p_latency", "--sizes", "16K", "-n", "3", "-w", "1",
                                              "--retest", "0", "-q", "--baseline", str(cls.runs / "base.ini")],
                 None, (1,)),
                ("doctor.h5", 2, [], {"FABRICBENCH_TEST_SYSROOT": str(v1)}, (1,))):
            r = runner.mpirun(np_, cls.tools[name], args + ["--output", name], env=env)
            assert r.returncode in codes, (name, r.stdout + r.stderr)
        if pathlib.Path("/sys/class/infiniband").is_dir() and any(pathlib.Path("/sys/class/infiniband").iterdir()):
            r = runner.mpirun(2, "fabric-verbs", ["--test", "write_bw,write_lat", "-n", "100", "--output", "verbs.h5"])
            if r.returncode == 0:
                cls.tools["verbs.h5"] = "fabric-verbs"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.runs, ignore_errors=True)

    def setUp(self):
        super().setUp()
        if text_string_to_metric_families is None:
            self.skipTest("python3-prometheus-client is not installed (ci/install-deps.sh installs it)")

    def metrics(self, name, out=None):
        """The .prom text of run `name`, written through the shell wrapper to `out` (a file in the scratch folder)."""
        out = out or self.dir / (pathlib.Path(name).stem + ".prom")
        r = subprocess.run([str(WRAPPER), "metrics", str(self.runs / name), str(out)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return out.read_text()

    def test_promtool_accepts_the_file_of_every_tool(self):
        if not PROMTOOL:
            self.skipTest("promtool is missing (Debian package prometheus; ci/install-deps.sh installs it)")
        if "verbs.h5" not in self.tools:
            print("\nfabric-verbs: no RDMA device here; its file is checked on the Soft-RoCE rig only when it runs there")
        for name in self.tools:
            with self.subTest(name=name):
                self.metrics(name)
                prom = self.dir / (pathlib.Path(name).stem + ".prom")
                with open(prom) as f:
                    r = subprocess.run([PROMTOOL, "check", "metrics"], stdin=f, capture_output=True, text=True)
                self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""), name)
        # promtool does find fault: a counter named without _total and a HELP line missing its text.
        with subprocess.Popen([PROMTOOL, "check", "metrics"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as p:
            said, _ = p.communicate("# HELP x_bytes\n# TYPE x_bytes counter\nx_bytes 1\n")
        self.assertNotEqual((p.returncode, said), (0, ""))

    def test_results_rows_become_series_in_base_units(self):
        got = samples(self.metrics("p2p.h5"))
        run = fa.load(self.runs / "p2p.h5")
        rows = run.tables["results/p2p"]
        checked = 0
        for row in rows.itertuples(index=False):
            labels = {"test": row.test, "memory": row.memory, "backend": row.backend, "bytes": row.bytes,
                      "pairs": row.pairs, "window": row.window}
            for name, value in (("fabricbench_p2p_latency_seconds", row.latency_us / 1e6),
                                ("fabricbench_p2p_bw_bytes_per_second", row.bw_mbps * 1e6),
                                ("fabricbench_p2p_of_expected_ratio", row.pct_expected / 100),
                                ("fabricbench_p2p_expected_bytes_per_second", row.expected_gbps * 1e9),
                                ("fabricbench_p2p_wrong_bytes", row.wrong)):
                k = key(name, "fabric-p2p", **labels)
                if math.isnan(value):
                    self.assertNotIn(k, got, "a value the row does not have is no series")
                    continue
                self.assertTrue(math.isclose(got[k], value, rel_tol=1e-12), (k, got[k], value))
                checked += 1
        # Two sizes: latency rows have their figure and wrong, bandwidth rows also the expected figure and the share.
        self.assertEqual(checked, 2 * 2 + 2 * 4)
        self.assertEqual(rows.test.tolist().count("latency"), 2)
        # The run itself: status, start time, tool.
        self.assertEqual(got[key("fabricbench_run_status", "fabric-p2p", status="complete")], 1)
        self.assertEqual(got[key("fabricbench_run_status", "fabric-p2p", status="failed")], 0)
        self.assertEqual(got[key("fabricbench_run_ranks", "fabric-p2p")], 2)
        started = run.attrs["started_at"]
        self.assertEqual(got[key("fabricbench_run_start_timestamp_seconds", "fabric-p2p")],
                         calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ")))
        # The NIC's expected bandwidth: 100 Gb/s is 12.5 GB/s per direction.
        host = run.tables["env/expected"].host.iloc[0]
        self.assertEqual(got[key("fabricbench_expected_bytes_per_second", "fabric-p2p", host=host, kind="rdma_port",
                                 subject="mlx5_7/1")], 12.5e9)

    def test_collective_bus_bandwidth_per_row(self):
        got = samples(self.metrics("coll.h5"))
        rows = fa.load(self.runs / "coll.h5").tables["results/coll"]
        self.assertGreater(len(rows), 0)
        for row in rows.itertuples(index=False):
            labels = {k: getattr(row, k) for k in ("op", "backend", "dtype", "redop", "root", "in_place", "bytes",
                                                   "count", "ranks", "timing")}
            value = got[key("fabricbench_coll_busbw_bytes_per_second", "fabric-coll", **labels)]
            self.assertTrue(math.isclose(value, row.busbw_gbps * 1e9, rel_tol=1e-12), (labels, value))
        series = [k for k in got if k[0] == "fabricbench_coll_busbw_bytes_per_second"]
        self.assertEqual(len(series), len(rows), "one series per row")

    def test_sweep_pairs_nodes_and_verdicts(self):
        got = samples(self.metrics("sweep.h5"))
        run = fa.load(self.runs / "sweep.h5")
        pairs = run.tables["sweep/pairs"]
        for row in pairs.itertuples(index=False):
            name, value = (("fabricbench_sweep_pair_latency_seconds", row.value / 1e6) if row.unit == "us" else
                           ("fabricbench_sweep_pair_bandwidth_bytes_per_second", row.value * 1e6))
            self.assertEqual(row.unit, "us" if row.metric == "p2p_latency" else "MB/s")
            k = key(name, "fabric-sweep", metric=row.metric, host_a=row.host_a, host_b=row.host_b,
                    direction=row.direction, bytes=row.bytes, **rail_labels(row, "rail", "nic_a", "nic_b"))
            self.assertTrue(math.isclose(got[k], value, rel_tol=1e-12), (k, got[k], value))
        for row in run.tables["sweep/nodes"].itertuples(index=False):
            name, value = (("fabricbench_sweep_node_median_latency_seconds", row.median / 1e6) if row.unit == "us" else
                           ("fabricbench_sweep_node_median_bandwidth_bytes_per_second", row.median * 1e6))
            self.assertTrue(math.isclose(got[key(name, "fabric-sweep", metric=row.metric, host=row.host,
                                                 **rail_labels(row, "rail", "nic"))], value, rel_tol=1e-12))
        verdicts = run.tables["sweep/verdicts"]
        self.assertEqual(got[key("fabricbench_sweep_verdicts", "fabric-sweep")], len(verdicts))
        nodes = verdicts[(verdicts.kind == "node") & (verdicts.metric == "p2p_bw")]  # latency's depend on noise
        self.assertEqual(len(nodes), 4, verdicts)
        for row in nodes.itertuples(index=False):
            self.assertEqual(got[key("fabricbench_sweep_verdict", "fabric-sweep", kind="node", metric=row.metric,
                                     host=row.host_a, reason=row.reason, **rail_labels(row, "rail", "nic", "switch"))],
                             1)

    def test_the_doctors_findings_one_gauge_per_check_and_status(self):
        got = samples(self.metrics("doctor.h5"))
        findings = fa.load(self.runs / "doctor.h5").tables["doctor/findings"]
        for row in findings.itertuples(index=False):
            labels = {"host": row.host, "check": row.check, "subject": row.subject}
            if row.rank >= 0:
                labels["rank"] = row.rank
            for status in ("ok", "warn", "fail", "skip"):
                k = key("fabricbench_check_status", "fabric-doctor", status=status, **labels)
                self.assertEqual(got[k], 1 if row.status == status else 0, k)
        fail = findings[(findings.check == "rdma.link") & (findings.subject == "mlx5_7/1")].iloc[0]
        self.assertEqual(fail.status, "fail")
        for status in ("ok", "warn", "fail", "skip"):
            self.assertEqual(got[key("fabricbench_checks", "fabric-doctor", status=status)],
                             (findings.status == status).sum())

    def test_names_follow_prometheus_conventions_and_files_of_several_tools_share_a_folder(self):
        helps = {}
        seen = set()
        for name, tool in self.tools.items():
            text = self.metrics(name)
            families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
            self.assertEqual(len(families), len(set(families)), "one HELP and TYPE per family")
            self.assertEqual(len(families), sum(1 for line in text.splitlines() if line.startswith("# HELP ")))
            for line in text.splitlines():
                if line.startswith("# HELP "):
                    family, help_text = line.split(" ", 3)[2:]
                    # node_exporter merges the folder's files: a family's HELP must be the same in every file.
                    self.assertEqual(helps.setdefault(family, help_text), help_text, family)
            for family in text_string_to_metric_families(text):
                self.assertRegex(family.name, r"^fabricbench_[a-z0-9_]+$")
                self.assertNotRegex(family.name, r"_(us|ms|gbps|mbps|mibps|pct|total)(_|$)", "base units in names")
                self.assertEqual(family.type, "gauge")
                for s in family.samples:
                    self.assertEqual(s.labels["tool"], tool)
                    series = (s.name, frozenset(s.labels.items()))
                    self.assertNotIn(series, seen, "no series in two files")
                    seen.add(series)

    def test_a_host_name_with_a_quote_and_a_backslash_is_escaped(self):
        odd = 'q"b\\s'
        run = self.dir / "odd.h5"
        shutil.copy(self.runs / "sweep.h5", run)
        with h5py.File(run, "a") as f:
            for table, columns in (("sweep/pairs", ("host_a", "host_b")), ("sweep/nodes", ("host",)),
                                   ("sweep/verdicts", ("host_a",)), ("env/checks", ("host",))):
                data = f[table][:]
                for column in columns:
                    data[column] = [odd.encode() if v == b"node1" else v for v in data[column]]
                f[table][...] = data
            f.attrs["hosts"] = f.attrs["hosts"].replace("node1", odd)
        out = self.dir / "odd.prom"
        r = subprocess.run([str(WRAPPER), "metrics", str(run), str(out)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = out.read_text()
        self.assertIn('host="q\\"b\\\\s"', text)  # q\"b\\s in the file
        self.assertNotIn('host="q"b', text)
        got = samples(text)
        hosts = {dict(labels).get("host") for _, labels in got}
        self.assertIn(odd, hosts, "parsed back to the name as written")
        if PROMTOOL:
            with open(out) as f:
                r = subprocess.run([PROMTOOL, "check", "metrics"], stdin=f, capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_the_file_is_replaced_whole_and_readable_by_the_collector(self):
        collector = self.dir / "textfile"
        collector.mkdir()
        out = collector / "fabricbench-p2p.prom"
        out.write_text("# an older run\n")
        os.chmod(out, 0o600)
        old_umask = os.umask(0o022)
        try:
            text = self.metrics("p2p.h5", out)
        finally:
            os.umask(old_umask)
        self.assertTrue(text.startswith("# HELP fabricbench_run_info "), text[:200])
        self.assertEqual(stat.S_IMODE(out.stat().st_mode), 0o644, "node_exporter (another user) reads it")
        self.assertEqual([p.name for p in collector.iterdir()], ["fabricbench-p2p.prom"], "no temporary file left")
        # Without OUT: stdout, the same text.
        r = subprocess.run([str(WRAPPER), "metrics", str(self.runs / "p2p.h5")], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (0, text))


if __name__ == "__main__":
    unittest.main()
