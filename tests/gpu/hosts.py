"""Several "hosts" on the GPU machine, for the slow-rank judge across nodes (issue 56; RIGS.md "Several hosts on the
GPU machine"). Each host is a network namespace with its own host name (a UTS namespace) and NCCL_HOSTID, joined to
the others by a veth on a bridge in the root namespace (10.77.0.<i>/24); NCCL's socket transport (P2P and SHM off)
moves every byte between them through the veths, its proxy posting every send and receive as between nodes. One
`fabric-watchdog --no-ras --slow DIR` per host on one shared DIR, as under srun (SLURM_PROCID tells the first, whose
judge prints the lines). With as many GPUs as there are hosts each host has its own; with fewer, hosts share them.

Faults from outside the job, as the issue lists them:
  nic-both  the host's veth shaped to 1 Gbit/s both ways (tbf on its eth0 and on the bridge's end)
  nic-send  the same on its sends only (its eth0)
  stall     the host's rank process stopped 100 ms of every 200 ms (SIGSTOP/SIGCONT: a CPU quota, a hypervisor)
  starve    every thread of the rank on one CPU beside three busy processes
  quota     the rank's process in a cgroup of its own whose cpu.max allows 20% of one CPU (cgroup v2)
  neighbour another process's matmuls on the host's GPU (named only where the host has a GPU of its own)

The GPU machine has no iproute2: `ip` and `tc` come carried in .carry/iproute2 (launch/carry-gpu-build.sh) with their
libraries, run with LD_LIBRARY_PATH set for them alone; the job starts with `nsenter --net=` so it never inherits it."""
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = pathlib.Path(os.environ.get("FABRICBENCH_BIN", ROOT / ".carry" / "bin"))
IPROUTE = pathlib.Path(os.environ.get("FABRICBENCH_IPROUTE", ROOT / ".carry" / "iproute2"))
RATE = "1gbit"
# The shaped queue: 5 ms at RATE (~625 KB), a switch port's or NIC ring's worth. A queue of 200 ms (25 MB) takes a
# whole FSDP all-gather's sends at once: the sender's completions then never wait, and only the receivers (every one
# of them, the ring waiting behind the slow link) show the slowdown (seen on the GPU machine, 2026-11-29).
QUEUE = "5ms"
NEIGHBOUR = ("import sys, time, torch\n"
             "m = torch.randn(8192, 8192, device='cuda') / 8192; m @ m; torch.cuda.synchronize()\n"
             "start = time.time(); end = start + float(sys.argv[1])\n"
             "while time.time() < end:\n"
             "    for _ in range(4): m @ m\n"
             "    torch.cuda.synchronize()\n"
             "open(sys.argv[2], 'w').write(f'{start} {time.time()}')\n")
BUSY = "import os\nos.sched_setaffinity(0, {%d})\nwhile True: pass\n"
SETHOST = "import os, socket, sys\nsocket.sethostname(sys.argv[1])\nos.execvp(sys.argv[2], sys.argv[2:])\n"


def tool(name, *args, check=True):
    """A carried iproute2 command (or the machine's own, where it has one), its libraries for it alone."""
    carried = IPROUTE / "bin" / name
    env = dict(os.environ, LD_LIBRARY_PATH=str(IPROUTE / "lib")) if carried.exists() else os.environ
    exe = str(carried) if carried.exists() else name
    r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: {r.stderr.strip()}")
    return r


class Rig:
    """n hosts h1..hn on 10.77.<net>.0/24; `gpus` the machine's GPUs to spread them over. Several rigs can run at once
    (each its own tag, net and ports); `busy_cpu` is where a starved host's threads go."""

    def __init__(self, n, gpus, tag="fb", net=0, wmem_max=0):
        self.n, self.gpus, self.tag, self.subnet = n, gpus, tag, f"10.77.{net}"
        # A TCP socket's send buffer grows to 4 MB by default: a send then completes once the kernel holds it, and an
        # operation smaller than that never waits on a slow wire (an RDMA send completes when the peer has it).
        # wmem_max > 0 caps it in every host (net.ipv4.tcp_wmem is per network namespace).
        self.wmem_max = wmem_max
        self.bridge = f"{tag}br"
        self.busy_cpu = max(os.sched_getaffinity(0)) - net

    def ns(self, i):
        return f"{self.tag}h{i}"

    def veth(self, i):
        return f"{self.tag}v{i}"

    def gpu(self, i):
        return self.gpus[(i - 1) % len(self.gpus)]

    def up(self):
        self.down()
        tool("ip", "link", "add", self.bridge, "type", "bridge")
        tool("ip", "link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            tool("ip", "netns", "add", self.ns(i))
            tool("ip", "link", "add", self.veth(i), "type", "veth", "peer", "name", "eth0", "netns", self.ns(i))
            tool("ip", "link", "set", self.veth(i), "master", self.bridge, "up")
            tool("ip", "-n", self.ns(i), "addr", "add", f"{self.subnet}.{i}/24", "dev", "eth0")
            tool("ip", "-n", self.ns(i), "link", "set", "eth0", "up")
            tool("ip", "-n", self.ns(i), "link", "set", "lo", "up")
            if self.wmem_max:
                subprocess.run(["nsenter", f"--net=/run/netns/{self.ns(i)}", "sh", "-c",
                                f"echo '4096 65536 {self.wmem_max}' > /proc/sys/net/ipv4/tcp_wmem"], check=True)
        return self

    def down(self):
        for i in range(1, self.n + 1):
            tool("ip", "netns", "del", self.ns(i), check=False)
            tool("ip", "link", "del", self.veth(i), check=False)
        tool("ip", "link", "del", self.bridge, check=False)

    def shape(self, i, both, on=True):
        """Host i's link at RATE: its sends (eth0 in its namespace), and with `both` its receives (the bridge's end)."""
        ends = [("-n", self.ns(i), "eth0")] + ([(None, None, self.veth(i))] if both else [])
        for flag, ns, dev in ends:
            where = [flag, ns] if flag else []
            if on:
                tool("tc", *where, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", RATE, "burst", "256kb",
                     "latency", QUEUE)
            else:
                tool("tc", *where, "qdisc", "del", "dev", dev, "root", check=False)

    def start(self, i, command, env):
        """Command in host i: its network namespace, its own UTS namespace named h<i>."""
        full = ["nsenter", f"--net=/run/netns/{self.ns(i)}", "unshare", "--uts", sys.executable, "-c", SETHOST,
                f"h{i}", *command]
        return subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


class Job:
    """One training job across the rig's hosts, each host's rank behind its own watchdog, and a plan of faults
    ({"kind", "rank", "start", "end"} in seconds of the job's loop; rank r lives on host r + 1)."""

    def __init__(self, rig, out, name, seconds, plan, shard="ddp", watchdog=True, port=29600, window="10s"):
        self.rig, self.dir, self.name, self.plan = rig, out / name, name, plan
        self.dir.mkdir(parents=True)
        (self.dir / "plan.json").write_text(json.dumps(plan))
        self.lines, self.procs = [], []
        slow = self.dir / "slow"
        for i in range(1, rig.n + 1):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "SLURM_", "OMPI_", "PMI"))}
            env.pop("LD_LIBRARY_PATH", None)
            env.update(RANK=str(i - 1), WORLD_SIZE=str(rig.n), LOCAL_RANK="0", MASTER_ADDR=f"{rig.subnet}.1",
                       MASTER_PORT=str(port), SLURM_PROCID=str(i - 1), CUDA_VISIBLE_DEVICES=str(rig.gpu(i)),
                       NCCL_HOSTID=f"h{i}", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1",
                       NCCL_NET="Socket", NCCL_SOCKET_IFNAME="eth0", NCCL_SET_THREAD_NAME="1", NCCL_NVLS_ENABLE="0",
                       TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
            if (BIN.parent / "lib").is_dir():
                env["LD_LIBRARY_PATH"] = str(BIN.parent / "lib")  # the carried libcudart, for the watchdog
            job = [sys.executable, str(HERE / "hosts_job.py"), "--seconds", str(seconds), "--shard", shard, "--out",
                   str(self.dir)]
            front = [str(BIN / "fabric-watchdog"), "--no-ras", "--slow", str(slow), "--slow-window", window, "--"]
            proc = rig.start(i, (front if watchdog else []) + job, env)
            self.procs.append(proc)
            threading.Thread(target=self._read, args=(i, proc), daemon=True).start()
        self.faults = threading.Thread(target=self._faults, daemon=True)
        self.faults.start()

    def _read(self, host, proc):
        for line in proc.stdout:
            self.lines.append((time.time(), host, line.rstrip("\n")))

    def t0(self, wait=240):
        f = self.dir / "t0"
        for _ in range(wait * 10):
            if f.exists() and f.read_text().strip():
                return float(f.read_text())
            if any(p.poll() not in (None, 0) for p in self.procs):
                raise RuntimeError(f"{self.name}: a host's job ended before the loop: {self.lines[-20:]}")
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: the job did not start")

    def _faults(self):
        try:
            t0 = self.t0()
        except RuntimeError:
            return
        for k, inj in enumerate(sorted(self.plan, key=lambda x: x["start"])):
            time.sleep(max(0.0, t0 + inj["start"] - time.time()))
            host, kind, span = inj["rank"] + 1, inj["kind"], inj["end"] - inj["start"]
            inj["real_start"] = round(time.time() - t0, 2)
            pid = int((self.dir / f"pid-{inj['rank']}").read_text())
            if kind in ("nic-both", "nic-send"):
                self.rig.shape(host, kind == "nic-both")
                time.sleep(span)
                self.rig.shape(host, kind == "nic-both", on=False)
            elif kind == "stall":
                end = time.time() + span
                try:
                    while time.time() < end:
                        os.kill(pid, signal.SIGSTOP)
                        time.sleep(0.1)
                        os.kill(pid, signal.SIGCONT)
                        time.sleep(0.1)
                finally:  # never leave the rank stopped (the driver interrupted, the rank gone)
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
            elif kind == "starve":
                starve(pid, span, self.rig.busy_cpu)
            elif kind == "quota":
                inj["quota"] = quota(pid, span)
            elif kind == "neighbour":
                f = self.dir / f"neighbour-{k}"
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(self.rig.gpu(host)))
                neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(span), str(f)], env=env)
                inj["pid"] = neighbour.pid
                neighbour.wait()
                if f.exists():
                    a, b = (float(x) for x in f.read_text().split())
                    inj["real_start"], span = round(a - t0, 2), b - a
            inj["real_end"] = round(inj["real_start"] + span, 2)
        (self.dir / "plan.json").write_text(json.dumps(self.plan))

    def wait(self, limit=900):
        end = time.time() + limit
        for p in self.procs:
            try:
                p.wait(timeout=max(1.0, end - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
        self.faults.join(timeout=30)
        time.sleep(0.5)
        (self.dir / "log").write_text("\n".join(f"{t:.3f} h{h} {l}" for t, h, l in self.lines) + "\n")
        return self

    def steps(self):
        """Per rank: (start in seconds of the loop, the step's seconds)."""
        out = {}
        for f in self.dir.glob("steps-*"):
            out[int(f.name.split("-")[1])] = [tuple(map(float, l.split())) for l in f.read_text().splitlines()]
        return out

    def namings(self):
        """What the judge named: (kind, rank, peer, start, end) in seconds of the job's loop."""
        t0 = float((self.dir / "t0").read_text())
        end = self.lines[-1][0] - t0 if self.lines else 0
        return namings([(t - t0, l) for t, _, l in self.lines], end)

    def judged(self, window_s=10, within_s=10):
        out = judged(self.plan, self.namings(), window_s, within_s)
        t0 = float((self.dir / "t0").read_text())
        out["lines"] = [f"h{h} +{t - t0:.1f} {l}" for t, h, l in self.lines if "fabric-watchdog" in l][:80]
        return out


def namings(lines, end):
    """The judge's lines, each (seconds of the job's loop, text): what it named, as (kind, rank, peer, start, end);
    kind rank, network, link or collective (a slow collective, placed nowhere)."""
    named, open_ = [], {}
    for t, line in lines:
        if "fabric-watchdog:" not in line:
            continue
        if m := re.search(r"slow link: the link from rank (\d+) .*? to rank (\d+) ", line):
            open_.setdefault(("link", int(m.group(1)), int(m.group(2))), t)
        elif m := re.search(r"slow network: the network of rank (\d+) ", line):
            open_.setdefault(("network", int(m.group(1)), -1), t)
        elif m := re.search(r"slow rank: rank (\d+) ", line):
            open_.setdefault(("rank", int(m.group(1)), -1), t)
        elif re.search(r"slow collective: ", line):
            open_.setdefault(("collective", -1, -1), t)
        elif m := re.search(r"gone: (the link from |the network of )?rank (\d+) ", line):
            kind = {"the link from ": "link", "the network of ": "network"}.get(m.group(1) or "", "rank")
            peer = int(re.search(r" to rank (\d+) ", line).group(1)) if kind == "link" else -1
            key = (kind, int(m.group(2)), peer)
            if key in open_:
                named.append((*key, open_.pop(key), t))
        elif re.search(r"gone: \S+ of \d+ [KMG]?i?B on ", line) and ("collective", -1, -1) in open_:
            named.append(("collective", -1, -1, open_.pop(("collective", -1, -1)), t))
    named += [(*key, start, end) for key, start in open_.items()]
    return sorted(named, key=lambda n: n[3])


def right(inj, kind, rank, peer):
    """Whether a naming names the fault. A NIC slowed: that host's rank or network, or a link with the host at either
    end. A stalled or starved host: its rank, its network, or a link from it (the line leads with the host; a link
    into it leads with its neighbour: wrong). A shared GPU: its rank."""
    r = inj["rank"]
    if kind in ("rank", "network"):
        return rank == r and (kind == "rank" or inj["kind"] != "neighbour")
    if kind == "link" and inj["kind"] in ("stall", "starve"):
        return rank == r
    return kind == "link" and inj["kind"].startswith("nic") and r in (rank, peer)


def judged(plan, named, window_s=10, within_s=10):
    """Per fault: found (named right within `within_s` of its start) and after how long; the wrong namings (overlapping
    no fault they name right, the window after it included); the vague ones (a slow collective during a fault)."""

    def span(inj):
        return inj.get("real_start", inj["start"]), inj.get("real_end", inj["end"])

    out = {"faults": [], "namings": [list(n) for n in named], "false": [], "vague": []}
    for inj in plan:
        a, b = span(inj)
        hits = [s for k, r, p, s, e in named if right(inj, k, r, p) and a - window_s <= s <= b + 3 and e >= a]
        after = round(max(0.0, hits[0] - a), 1) if hits else None
        out["faults"].append(dict(inj, found=bool(hits) and after <= within_s, after_s=after))
    for k, r, p, s, e in named:
        overlaps = [i for i in plan if span(i)[0] - 1 <= e and s <= span(i)[1] + window_s]
        if any(right(i, k, r, p) for i in overlaps):
            continue
        (out["vague"] if k == "collective" and overlaps else out["false"]).append([k, r, p, round(s, 1), round(e, 1)])
    return out


def quota(pid, seconds, share=0.2):
    """pid (all its threads) in a cgroup of its own under the cgroup v2 root, cpu.max `share` of one CPU, for
    `seconds`; then back where it was. What went wrong where it cannot be done (a read-only cgroup tree)."""
    root = pathlib.Path("/sys/fs/cgroup")
    try:
        was = pathlib.Path(f"/proc/{pid}/cgroup").read_text().split("::", 1)[1].strip()
        if "cpu" not in (root / "cgroup.subtree_control").read_text().split():
            (root / "cgroup.subtree_control").write_text("+cpu")
        box = root / "fabricbench-quota"
        box.mkdir(exist_ok=True)
        (box / "cpu.max").write_text(f"{int(share * 100000)} 100000")
        (box / "cgroup.procs").write_text(str(pid))
    except OSError as e:
        time.sleep(seconds)
        return f"not possible here: {e}"
    try:
        time.sleep(seconds)
    finally:
        try:
            (root / was.lstrip("/") / "cgroup.procs").write_text(str(pid))
        except OSError:
            pass
    return "in " + str(box) + ", from " + was


def starve(pid, seconds, cpu):
    """Every thread of pid on CPU `cpu` beside three busy processes, for `seconds`; then back."""
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY % cpu]) for _ in range(3)]
    every = os.sched_getaffinity(0)
    try:
        end = time.time() + seconds
        while time.time() < end:  # threads made meanwhile are caught too
            for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
                try:
                    os.sched_setaffinity(int(task.name), {cpu})
                except (ProcessLookupError, PermissionError, OSError):
                    pass
            time.sleep(0.5)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        for task in pathlib.Path(f"/proc/{pid}/task").iterdir() if pathlib.Path(f"/proc/{pid}").exists() else []:
            try:
                os.sched_setaffinity(int(task.name), every)
            except (ProcessLookupError, OSError):
                pass
