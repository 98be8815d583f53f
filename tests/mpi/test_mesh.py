"""fabric-sweep --repeat: the continuous mesh on one machine split into fake hosts. Passes that end by themselves,
a stop after the pass in flight on SIGTERM (to the ranks) and on SIGUSR1 (to mpirun, which forwards it), a --resume
that continues the passes, the Prometheus file rewritten after each pass, and bad input. A host shaped after the
third pass is named in the pass where it changed on the emulated cluster (rigs/test_netns_sweep.py)."""
import math
import os
import shutil
import signal
import subprocess
import tempfile

from fbtest import LaunchTest, mpirun_command

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # Debian: python3-prometheus-client (ci/install-deps.sh installs it)
    text_string_to_metric_families = None

FAKE_HOSTS = ["--emulate-hosts", "1"]
ARGS = ["--metric", "p2p_latency", "-n", "200", "-w", "10", "--retest", "0", "-q"]
PROMTOOL = shutil.which("promtool")


class Mesh(LaunchTest):
    def start(self, args, name):
        """The mesh in the background, its stdout line by line (each pass's line is flushed when the pass ends)."""
        cmd = ["timeout", "120"] + mpirun_command(4, "fabric-sweep", FAKE_HOSTS + ARGS[:-1] + args + ["--output", name])
        return subprocess.Popen(cmd, cwd=self.dir, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def wait_for_pass(self, proc, k):
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith(f"# pass {k} "):
                return seen
        self.fail(f"no pass {k}: {''.join(seen)} {proc.stderr.read()}")

    def rank_pids(self, name):
        r = subprocess.run(["pgrep", "-f", rf"^\S*fabric-sweep .*--output {name}"], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split() if int(p) != os.getpid()]

    def test_five_passes_every_two_seconds_end_by_themselves(self):
        r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ARGS + ["--repeat", "5", "--every", "2s", "--prometheus",
                                                                "mesh.prom", "--output", "mesh.h5"])
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)  # a latency verdict depends on this machine's noise
        run = self.load("mesh.h5")
        self.assertEqual(run.attrs["status"], "complete")
        self.assertEqual(run.attrs["passes"], 5)
        self.assertEqual(run.attrs["repeat"], 5)
        passes = run.tables["sweep/passes"]
        self.assertEqual(list(passes["pass"]), [1, 2, 3, 4, 5])
        self.assertTrue((passes["pairs"] == 6).all())
        starts = passes["start_s"].to_numpy()
        # Whole seconds (UTC stamps): 2 s apart, give or take the stamp's rounding.
        gaps = starts[1:] - starts[:-1]
        self.assertTrue(((gaps >= 1) & (gaps <= 3)).all(), gaps)
        self.assertGreaterEqual(starts[-1] - starts[0], 7, starts)
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(sorted(set(pairs["pass"])), [1, 2, 3, 4, 5])
        for k in range(1, 6):
            part = pairs[pairs["pass"] == k]
            self.assertEqual(len({tuple(sorted(p)) for p in zip(part.host_a, part.host_b)}), 6, f"pass {k}: every pair")
        self.assertEqual(len(set(pairs["round"])), 15, "round numbers go on across the passes")
        self.assertEqual(sorted(set(run.tables["sweep/rounds"]["pass"])), [1, 2, 3, 4, 5])
        lines = [line for line in r.stdout.splitlines() if line.startswith("# pass ")]
        self.assertEqual(len(lines), 0, "-q: no terminal")
        # The Prometheus file after the last pass: its pair figures are the last pass's rows, in seconds.
        text = (self.dir / "mesh.prom").read_text()
        if PROMTOOL:
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
            self.assertEqual((check.returncode, check.stdout + check.stderr), (0, ""))
        if text_string_to_metric_families is None:
            self.skipTest("python3-prometheus-client is not installed (ci/install-deps.sh installs it)")
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples.setdefault(s.name, []).append(s)
        self.assertEqual(samples["fabricbench_sweep_pass"][0].value, 5)
        self.assertEqual(samples["fabricbench_run_info"][0].labels["status"], "complete")
        last = pairs[pairs["pass"] == 5]
        got = {(s.labels["host_a"], s.labels["host_b"]): s.value for s in samples["fabricbench_sweep_pair_latency_seconds"]}
        self.assertEqual(len(got), 6)
        for row in last.itertuples():
            self.assertTrue(math.isclose(got[(row.host_a, row.host_b)], row.value / 1e6, rel_tol=1e-12),
                            (row.host_a, row.host_b))
        self.assertEqual(samples["fabricbench_sweep_verdicts"][0].value, len(run.tables.get("sweep/verdicts", [])))
        self.assertEqual(self.files(), ["mesh.h5", "mesh.prom"], "no temporary file left")
        # fabric-report: each host over time and a heat map per pass, in the plots and on the HTML page.
        from fabricbench_analysis.draw import plots
        from fabricbench_analysis.export import html
        drawn = {p.name for p in plots.plot_run(run, self.dir / "plots")}
        self.assertTrue({"sweep_over_time_p2p_latency.png", "sweep_passes_p2p_latency.png"} <= drawn, drawn)
        self.assertFalse(any(name.startswith(("sweep_passes.", "sweep_changes.")) for name in drawn),
                         "the mesh's tables are not drawn as bars")
        page = html.page(run)
        self.assertIn('alt="sweep_over_time_p2p_latency"', page)
        self.assertIn('alt="sweep_passes_p2p_latency"', page)

    def test_sigterm_to_the_ranks_stops_after_the_pass_in_flight(self):
        proc = self.start(["--repeat", "0", "--every", "1s"], "term.h5")
        seen = self.wait_for_pass(proc, 2)
        pids = self.rank_pids("term.h5")
        self.assertEqual(len(pids), 4, pids)
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        self.assertIn(proc.returncode, (0, 1), "".join(seen) + out + err)
        run = self.load("term.h5")
        self.assertEqual(run.attrs["status"], "complete", "a stop request is a clean end")
        done = int(run.attrs["passes"])
        self.assertGreaterEqual(done, 2)
        self.assertLessEqual(done, 3, "the pass in flight ends, no other starts")
        self.assertEqual(list(run.tables["sweep/passes"]["pass"]), list(range(1, done + 1)))
        self.assertEqual(sorted(set(run.tables["sweep/pairs"]["pass"])), list(range(1, done + 1)))

    def test_sigusr1_to_mpirun_stops_the_mesh_and_a_resume_continues_the_passes(self):
        proc = self.start(["--repeat", "6", "--every", "1s"], "usr.h5")
        seen = self.wait_for_pass(proc, 2)
        # mpirun itself (the child of `timeout`, which does not pass SIGUSR1 on): it forwards SIGUSR1 to every rank.
        mpirun = subprocess.run(["pgrep", "-P", str(proc.pid), "mpirun"], capture_output=True, text=True).stdout.split()
        self.assertEqual(len(mpirun), 1, mpirun)
        os.kill(int(mpirun[0]), signal.SIGUSR1)
        out, err = proc.communicate(timeout=60)
        self.assertIn(proc.returncode, (0, 1), "".join(seen) + out + err)
        run = self.load("usr.h5")
        self.assertEqual(run.attrs["status"], "complete")
        done = int(run.attrs["passes"])
        self.assertIn(done, (2, 3))
        r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ARGS + ["--repeat", "6", "--every", "1s", "--resume", "usr.h5"])
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        run = self.load("usr.h5")
        self.assertEqual(run.attrs["status"], "complete")
        self.assertEqual(run.attrs["passes"], 6)
        self.assertEqual(list(run.tables["sweep/passes"]["pass"]), [1, 2, 3, 4, 5, 6])
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(sorted(set(pairs["pass"])), [1, 2, 3, 4, 5, 6])
        self.assertEqual(len(pairs), 36, "six passes of six pairs, none twice")
        self.assertEqual(len(set(pairs["round"])), 18, "the resumed passes go on with the round numbers")
        for args, expected in ((["--repeat", "6"], "--resume usr.h5: its 6 passes are done; ask for more with --repeat 7 or 0"),
                               ([], "--resume usr.h5: a mesh (--repeat); give --repeat")):
            r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ARGS + args + ["--resume", "usr.h5"], refused=True)
            ours = [line for line in r.stderr.splitlines() if line.startswith("fabric-sweep:")]
            self.assertEqual((r.returncode, len(ours)), (2, 1), r.stderr)
            self.assertIn(expected, ours[0])
        self.assertEqual(self.load("usr.h5").attrs["passes"], 6, "a refused resume leaves the file alone")

    def test_bandwidth_every_second_pass_latency_every_pass(self):
        r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ["--metric", "p2p_latency,p2p_bw", "--sizes", "64K", "-n", "5",
                                                         "-w", "1", "--retest", "0", "-q", "--repeat", "4",
                                                         "--bw-every", "2", "--output", "bw.h5"])
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        run = self.load("bw.h5")
        pairs = run.tables["sweep/pairs"]
        self.assertEqual(sorted(set(pairs[pairs.metric == "p2p_latency"]["pass"])), [1, 2, 3, 4])
        self.assertEqual(sorted(set(pairs[pairs.metric == "p2p_bw"]["pass"])), [1, 3], "bandwidth in passes 1 and 3")
        nodes = run.tables["sweep/nodes"]
        self.assertTrue(nodes[nodes.metric == "p2p_bw"]["median"].notna().all(),
                        "the last pass (4) is judged with pass 3's bandwidth")

    CASES = [
        (["--bw-every", "2"], "--bw-every: give --repeat N too"),
        (["--repeat", "3", "--bw-every", "2", "--metric", "p2p_bw"], "--bw-every 2: give --metric with a latency metric"),
        (["--every", "2s"], "--every: give --repeat N too"),
        (["--repeat", "-1"], "--repeat"),
        (["--repeat", "3", "--every", "soon"], "--every 'soon'"),
        (["--repeat", "3", "--every", "-1s"], "--every '-1s': give a duration such as 0, 30, 30s"),
        (["--repeat", "3", "--budget", "1m"], "--budget caps one sweep; with --repeat each pass is the whole plan"),
        (["--prometheus", "/nonexistent/m.prom"], "--prometheus /nonexistent/m.prom: the folder /nonexistent does not exist"),
        (["--prometheus", "m.txt"], "--prometheus m.txt: give a file ending in .prom"),
    ]

    def test_prometheus_without_repeat_writes_once_and_every_zero_runs_passes_back_to_back(self):
        # Before, --prometheus without --repeat wrote nothing and said nothing; --every 0s was refused, 0 accepted.
        r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ARGS + ["--prometheus", "one.prom", "--output", "one.h5"])
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        text = (self.dir / "one.prom").read_text()
        self.assertIn('fabricbench_sweep_pairs_tested{tool="fabric-sweep"} 6\n', text)
        self.assertIn('fabricbench_sweep_coverage_complete{tool="fabric-sweep"} 1\n', text)
        for every in ("0", "0s"):
            r = self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ARGS + ["--repeat", "2", "--every", every,
                                                                    "--output", f"e{every}.h5"])
            self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
            self.assertEqual(self.load(f"e{every}.h5").attrs["passes"], 2)

    def test_a_prometheus_path_that_can_never_be_written_is_refused_before_the_run(self):
        folder = tempfile.mkdtemp(suffix=".prom")  # outside the test's folder, which must stay empty
        self.addCleanup(os.rmdir, folder)
        self.assert_refused(self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ["--prometheus", folder]), "fabric-sweep",
                            f"--prometheus {folder}: a folder; give a file ending in .prom")
        self.assert_refused(self.mpirun(4, "fabric-sweep", FAKE_HOSTS + ["--prometheus", "/proc/m.prom"]),
                            "fabric-sweep", "--prometheus /proc/m.prom: cannot create a file beside it (")

    def test_each_bad_option(self):
        runs = self.mpiruns(4, "fabric-sweep", [FAKE_HOSTS + args for args, _ in self.CASES], refused=True)
        for (args, expected), r in zip(self.CASES, runs):
            with self.subTest(args=args):
                self.assert_refused(r, "fabric-sweep", expected)
        self.assertEqual(self.files(), [])
