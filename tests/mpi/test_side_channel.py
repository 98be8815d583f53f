"""The failure-report side channel answers only its own job: requests without the job's secret (or with a wrong one)
get no answer and take no backtrace, a flood of them leaves the bandwidth figure alone, and the socket is bound to
one address (loopback here, where the whole job is on one machine), not to every interface."""
import os
import re
import socket
import statistics
import subprocess
import threading
import time

from fbtest import LaunchTest, mpirun_command

BW = ["--test", "bw", "--sizes", "1M", "-n", "600", "--min-time", "0"]


def side_channel_ports(pids):
    """UDP sockets of the given processes: [(address, port)], read from ss."""
    out = subprocess.run(["ss", "-u", "-a", "-n", "-p"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        if not any(f"pid={p}," in line for p in pids):
            continue
        local = line.split()[3]  # State Recv-Q Send-Q Local Peer Process (UNCONN rows)
        address, _, port = local.rpartition(":")
        found.append((address.strip("[]"), int(port)))
    return found


def tool_pids(name, cwd):
    """Processes whose command line has `name` and whose working folder is `cwd`: this test's ranks, not those of a
    test running beside it."""
    out = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout
    mine = []
    for p in out.split():
        try:
            if os.readlink(f"/proc/{p}/cwd") == str(cwd):
                mine.append(int(p))
        except OSError:
            pass
    return mine


class SideChannel(LaunchTest):
    def start(self, name):
        cmd = mpirun_command(2, "fabric-p2p", BW + ["--output", name])
        return subprocess.Popen(cmd, cwd=self.dir, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def wait_for_sockets(self, proc):
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None:
            ports = side_channel_ports(tool_pids("fabric-p2p", self.dir.resolve()))
            if len(ports) >= 2:
                return ports
            time.sleep(0.05)
        self.fail("the ranks' side-channel sockets did not show up")

    def knock(self, ports, payloads, listen_s=1.0):
        """Sends every payload to every port from one socket; returns what came back within listen_s."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.05)
        for payload in payloads:
            for address, port in ports:
                s.sendto(payload, ("127.0.0.1" if address in ("*", "0.0.0.0") else address, port))
        got = []
        end = time.time() + listen_s
        while time.time() < end:
            try:
                got.append(s.recv(65536))
            except socket.timeout:
                pass
        s.close()
        return got

    def test_a_request_without_the_secret_gets_no_answer(self):
        proc = self.start("k.h5")
        ports = self.wait_for_sockets(proc)
        for address, _ in ports:
            self.assertNotIn(address, ("*", "0.0.0.0"), f"bound to every interface: {ports}")
            self.assertEqual(address, "127.0.0.1", "one machine: loopback")
        got = self.knock(ports, [b"FBREQ", b"FBREQ" + os.urandom(16), b"FBREQ" + b"\0" * 16, b"FBREC\n0\nforged"])
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertEqual(got, [], "a stranger got an answer")
        line = re.search(r"failure side channel: (\d+) datagram\(s\) refused .*, (\d+) request\(s\) answered", out)
        self.assertIsNotNone(line, out)
        self.assertGreaterEqual(int(line.group(1)), 6, out)  # 3 requests x 2 ranks (the forged record: rank 0 only
        self.assertEqual(int(line.group(2)), 0, "no backtrace was taken for anyone")  # reads it while collecting)
        self.assertEqual(list(self.load("k.h5").tables.get("failure/ranks", [])), [], "nothing in /failure/ranks")

    def bandwidth(self, name, flood_job):
        """One run with 10,000 requests without the secret sent to each of its ranks (flood_job) or, as the control,
        to a socket of this test that nobody reads: the same flooding process, the same CPU, another target."""
        proc = self.start(name)
        ports = self.wait_for_sockets(proc)
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.bind(("127.0.0.1", 0))
        targets = ports if flood_job else [sink.getsockname()] * len(ports)
        sent = [0]
        stop = threading.Event()

        def send():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            payload = b"FBREQ" + b"\1" * 16
            while sent[0] < 10000 and not stop.is_set():
                for address, port in targets:
                    s.sendto(payload, (address, port))
                sent[0] += 1
                if sent[0] % 100 == 0:
                    time.sleep(0.005)
            s.close()
        t = threading.Thread(target=send)
        t.start()
        out, err = proc.communicate(timeout=180)
        stop.set()
        t.join()
        sink.close()
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertEqual(sent[0], 10000, "the flood ended after the run: make the run longer")
        if flood_job:
            self.assertIn("0 request(s) answered", out)
        return float(self.load(name).tables["results/p2p"].bw_mbps.iloc[0])

    def test_a_flood_of_strangers_leaves_the_figure_alone(self):
        # Interleaved: four control runs and three flooded ones between them. The flooded runs' median stays within
        # what the control runs vary by (at least 25%, for two busy vCPUs: a flood that cost the ranks real work, as
        # answering it would, halves the figure). With two flooded runs, one run on a vCPU slowed for a few seconds
        # was half the median: a CI run failed at 0.995 of the line with controls within 3% ([17221, 17474, 16943]
        # against [14776, 15866]); on the same machine three repeats of seven runs gave ratios of medians 0.96-1.02.
        # With a floor of 10%, a clean-clone run of 2026-11-30 failed at 0.999 of the line: controls 13349-15884,
        # flooded 9917, 11204 and 19119 (the highest of all seven).
        control, flooded = [], []
        for k, flood in enumerate([False, True, False, True, False, True, False]):
            (flooded if flood else control).append(self.bandwidth(f"r{k}.h5", flood))
        spread = max(control) / min(control)
        self.assertGreaterEqual(statistics.median(flooded), min(control) / max(spread, 1.25), (control, flooded))


if __name__ == "__main__":
    import unittest
    unittest.main()
