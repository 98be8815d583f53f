"""The slow-rank proof of issue 45 on the GPU machine: a real PyTorch job (tests/gpu/slow_job.py under torchrun) behind
fabric-watchdog --slow, slowed on purpose, and what the watchdog named, when.

  smoke     2 GPUs, 45 s: another process running matmuls on GPU 1 from 15 s to 30 s.
  full      4 GPUs at once: a healthy job on GPUs 0,1 for 300 s beside a job on GPUs 2,3 with 12 injections of 12 s
            every 24 s, then one job on all 4 with 8 more of 10 s every 20 s (20 in all): which rank, when, how strong
            (a neighbour's matmuls of 4096 or 8192, or a synchronize-and-sleep of 10, 20 or 40 ms before each
            all_reduce), from a fixed seed. A neighbour's span is the one it really ran (CUDA's start-up: ~6 s later).
  overhead  2 GPUs: the job alone and behind the watchdog with the plugin, interleaved, 4 pairs of 20 s runs: the
            median step time of each.
  network   4 GPUs whose traffic NCCL sends over sockets on the loopback (P2P and SHM off: proxy operations, as between
            nodes): 40 s healthy, then 60 s where from 20 s to 40 s rank 2's NCCL network threads (its socket helpers
            and proxy progress thread, named by NCCL_SET_THREAD_NAME) share one CPU with 3 busy processes: its NIC
            made slow, on one host.
  network-overhead  the same job over sockets alone and watched, 2 pairs of 25 s, interleaved: the plugin's cost
            where it sees every proxy step.

An injection is found when its rank is named (a "slow rank: rank R" line) within its span or 3 s after; a naming that
overlaps no injection of its rank (its span plus the window that still holds it) is a false one. Writes <out>/<mode>.json
and a tar of the runs' record folders and logs. Run from the repository root with a carried build in .carry:
  python3 tests/gpu/slow_rank_proof.py smoke $OUT"""
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tarfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = pathlib.Path(os.environ.get("FABRICBENCH_BIN", ROOT / ".carry" / "bin"))
WATCHDOG = str(BIN / "fabric-watchdog")
# Another process's matmuls on the rank's GPU; it writes when its loop really ran (CUDA's start-up takes seconds).
NEIGHBOUR = ("import sys, time, torch\n"
             "torch.cuda.set_device(0); n = int(sys.argv[1])\n"
             "m = torch.randn(n, n, device='cuda') / n; m @ m; torch.cuda.synchronize()\n"
             "start = time.time(); end = start + float(sys.argv[2])\n"
             "while time.time() < end:\n"
             "    for _ in range(4): m @ m\n"
             "    torch.cuda.synchronize()\n"
             "open(sys.argv[3], 'w').write(f'{start} {time.time()}')\n")


class Job:
    def __init__(self, out, name, gpus, seconds, plan, watchdog=True, port=29500, window="10s", env=None):
        self.dir = out / name
        self.dir.mkdir(parents=True)
        self.name, self.gpus, self.plan, self.lines = name, gpus, plan, []
        (self.dir / "sleeps.json").write_text(json.dumps([i for i in plan if i["kind"] == "sleep"]))
        job = ["torchrun", "--nproc-per-node", str(len(gpus)), "--master-port", str(port), str(HERE / "slow_job.py"),
               "--seconds", str(seconds), "--sleeps", str(self.dir / "sleeps.json"), "--out", str(self.dir)]
        front = [WATCHDOG, "--no-ras", "--slow", str(self.dir / "slow"), "--slow-window", window, "--"] if watchdog else []
        self.env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(map(str, gpus)), **(env or {}))
        self.proc = subprocess.Popen(front + job, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=self.env)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._neighbours, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def t0(self, wait=180):
        f = self.dir / "t0"
        for _ in range(wait * 10):
            if f.exists() and f.read_text().strip():
                return float(f.read_text())
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: the job did not start")

    def _neighbours(self):
        t0 = self.t0()
        for k, inj in enumerate(self.plan):
            if inj["kind"] != "neighbour":
                continue
            time.sleep(max(0.0, t0 + inj["start"] - time.time()))
            inj["file"] = str(self.dir / f"neighbour-{k}")
            subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(inj["size"]), str(inj["end"] - inj["start"]),
                              inj["file"]], env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(self.gpus[inj["rank"]])))

    def wait(self):
        self.proc.wait()
        time.sleep(0.5)
        (self.dir / "log").write_text("\n".join(f"{t:.3f} {l}" for t, l in self.lines) + "\n")
        return self

    def steps(self):
        out = {}
        for f in self.dir.glob("steps-*"):
            out[int(f.name.split("-")[1])] = [float(x) for x in f.read_text().split()]
        return out

    def judged(self, window_s=10):
        """Per injection: found and after how long; the namings that match none."""
        t0 = float((self.dir / "t0").read_text())
        for inj in self.plan:  # a neighbour's span as it really ran
            if inj.get("file") and pathlib.Path(inj["file"]).exists():
                start, end = (float(x) for x in pathlib.Path(inj["file"]).read_text().split())
                inj["start"], inj["end"] = round(start - t0, 2), round(end - t0, 2)
        # A naming: (rank, start, end, peer); a link names its sending rank and its peer, the rest peer -1.
        named, open_ = [], {}
        for t, line in self.lines:
            if m := re.search(r"slow link: the link from rank (\d+) .*? to rank (\d+) ", line):
                open_[("link", int(m.group(1)))] = (t - t0, int(m.group(2)))
            elif m := re.search(r"slow (rank|network): (?:the network of )?rank (\d+) ", line):
                open_[(m.group(1), int(m.group(2)))] = (t - t0, -1)
            elif m := re.search(r"gone: (?:the (link from|network of) )?rank (\d+) ", line):
                key = ({"link from": "link", "network of": "network"}.get(m.group(1), "rank"), int(m.group(2)))
                if key in open_:
                    start, peer = open_.pop(key)
                    named.append((key[1], start, t - t0, peer))
        end = self.lines[-1][0] - t0 if self.lines else 0
        named += [(key[1], start, end, peer) for key, (start, peer) in open_.items()]
        result = {"injections": [], "namings": [list(n) for n in named], "false": []}

        def touches(inj, r, peer):
            return inj["rank"] in (r, peer)

        for inj in self.plan:
            hit = [s for r, s, e, p in named if touches(inj, r, p) and s <= inj["end"] + 3 and e >= inj["start"]]
            result["injections"].append(dict(inj, found=bool(hit), after_s=round(max(0.0, hit[0] - inj["start"]), 1)
                                             if hit else None))
        for r, s, e, p in named:
            if not any(touches(i, r, p) and s <= i["end"] + 3 and e >= i["start"] for i in self.plan):
                result["false"].append([r, s, e, p])
        result["lines"] = [l for _, l in self.lines if "fabric-watchdog" in l and "#" not in l[:2]][:60]
        return result


# NCCL between the GPUs of one host as between nodes: over sockets on the loopback, one proxy operation per
# connection and channel.
SOCKETS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket",
           "NCCL_SOCKET_IFNAME": "lo", "NCCL_SET_THREAD_NAME": "1"}
STARVE = "import os\nos.sched_setaffinity(0, {%d})\nwhile True: pass\n"


def starve_network(job, rank, start, end):
    """From `start` to `end` s of the job's loop: the rank's NCCL network threads on one CPU with 3 busy processes."""
    t0 = job.t0()
    time.sleep(max(0.0, t0 + start - time.time()))
    pid = int((job.dir / f"pid-{rank}").read_text())
    cpu = max(os.sched_getaffinity(0))
    threads = {}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        if name.startswith(("NCCL Sock", "NCCL Progress")):
            threads[int(task.name)] = name
    hogs = [subprocess.Popen([sys.executable, "-c", STARVE % cpu]) for _ in range(3)]
    try:  # the busy processes end with this script, whatever happens
        for tid in threads:
            os.sched_setaffinity(tid, {cpu})
        (job.dir / "starved.json").write_text(json.dumps({"pid": pid, "cpu": cpu, "threads": threads,
                                                          "at": time.time() - t0}))
        time.sleep(max(0.0, t0 + end - time.time()))
        every = os.sched_getaffinity(0)
        for tid in threads:
            try:
                os.sched_setaffinity(tid, every)
            except ProcessLookupError:
                pass
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def plan(seed, ranks, count, first, period, span):
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        start = first + i * period
        if rnd.random() < 0.5:
            out.append({"kind": "neighbour", "rank": rnd.randrange(ranks), "start": start, "end": start + span,
                        "size": rnd.choice([4096, 8192])})
        else:
            out.append({"kind": "sleep", "rank": rnd.randrange(ranks), "start": start, "end": start + span,
                        "ms": rnd.choice([10, 20, 40])})
    return out


def main():
    mode, out = sys.argv[1], pathlib.Path(sys.argv[2])
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    if (BIN.parent / "lib").is_dir():  # a carried prefix's libraries (its libcudart)
        os.environ["LD_LIBRARY_PATH"] = str(BIN.parent / "lib")
    work = pathlib.Path(os.environ.get("SLOW_PROOF_WORK", "/tmp/slow-proof"))
    summary = {"mode": mode}
    if mode == "smoke":
        j = Job(work, "smoke", [0, 1], 45, [{"kind": "neighbour", "rank": 1, "start": 15, "end": 30, "size": 8192}]).wait()
        summary["smoke"] = j.judged()
        summary["smoke"]["log_tail"] = [l for _, l in j.lines][-40:]
    elif mode == "full":
        healthy = Job(work, "healthy", [0, 1], 300, [], port=29501)
        pair = Job(work, "inject2", [2, 3], 300, plan(45, 2, 12, 10, 24, 12), port=29502)
        summary["healthy"], summary["inject2"] = healthy.wait().judged(), pair.wait().judged()
        (out / "full-part.json").write_text(json.dumps(summary, indent=1))
        four = Job(work, "inject4", [0, 1, 2, 3], 175, plan(46, 4, 8, 10, 20, 10), port=29503).wait()
        summary["inject4"] = four.judged()
        injections = summary["inject2"]["injections"] + summary["inject4"]["injections"]
        namings = sum(len(summary[k]["namings"]) for k in ("healthy", "inject2", "inject4"))
        false = sum(len(summary[k]["false"]) for k in ("healthy", "inject2", "inject4"))
        found = sum(i["found"] for i in injections)
        summary["recall"] = found / len(injections)
        summary["precision"] = (namings - false) / namings if namings else None
        summary["after_s"] = sorted(i["after_s"] for i in injections if i["found"])
    elif mode == "network":
        healthy = Job(work, "net-healthy", [0, 1, 2, 3], 40, [], port=29520, env=SOCKETS).wait()
        summary["net-healthy"] = healthy.judged()
        inj = [{"kind": "network", "rank": 2, "start": 20, "end": 40}]
        j = Job(work, "net-starved", [0, 1, 2, 3], 60, inj, port=29521, env=SOCKETS)
        starve_network(j, 2, 20, 40)
        j.wait()
        summary["net-starved"] = j.judged()
        summary["net-starved"]["starved"] = json.loads((j.dir / "starved.json").read_text())
        steps, at, spans = j.steps().get(0, []), 0.0, {"before": [], "during": [], "after": []}
        for st in steps:  # rank 0's steps by when they started in the loop (2-3 s kept clear of each edge)
            span = "before" if at < 19 else "during" if 22 <= at < 38 else "after" if at >= 43 else None
            if span:
                spans[span].append(st)
            at += st
        summary["net-starved"]["step_ms"] = {k: 1e3 * sorted(v)[len(v) // 2] if v else None for k, v in spans.items()}
    elif mode == "network-overhead":
        runs = []
        for k in range(2):
            for watched in (k % 2 == 0, k % 2 == 1):
                o = Job(work, f"netover{k}{'w' if watched else 'b'}", [0, 1, 2, 3], 25, [], watchdog=watched,
                        port=29530 + 2 * k + watched, env=SOCKETS).wait()
                st = sorted(t for v in o.steps().values() for t in v[5:])
                runs.append({"watched": watched, "median_ms": 1e3 * st[len(st) // 2], "steps": len(st)})
        summary["overhead"] = runs
    elif mode == "overhead":
        runs = []
        for k in range(4):
            for watched in (k % 2 == 0, k % 2 == 1):
                j = Job(work, f"over{k}{'w' if watched else 'b'}", [0, 1], 20, [], watchdog=watched, port=29510 + k).wait()
                steps = [t for v in j.steps().values() for t in v[5:]]
                steps.sort()
                runs.append({"watched": watched, "median_ms": 1e3 * steps[len(steps) // 2], "steps": len(steps)})
        summary["overhead"] = runs
    (out / f"{mode}.json").write_text(json.dumps(summary, indent=1))
    with tarfile.open(out / f"{mode}.tar.gz", "w:gz") as t:
        if mode == "network":  # the judged runs (the cost runs' records are not kept)
            for name in ("net-healthy", "net-starved"):
                t.add(work / name, arcname=f"slow-proof-{mode}/{name}")
        else:
            t.add(work, arcname=f"slow-proof-{mode}")
    shown = ("recall", "precision", "after_s", "overhead")
    print(json.dumps({k: v for k, v in summary.items() if k in shown}))
    for k in ("net-healthy", "net-starved"):
        if k in summary:
            print(k, json.dumps({x: summary[k].get(x) for x in ("injections", "namings", "false", "step_ms",
                                                                 "starved")}))
            print("\n".join(summary[k]["lines"][:20]))


if __name__ == "__main__":
    main()
