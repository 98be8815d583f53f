"""The slow-rank proof across hosts (issue 56) on the multi-host rig (tests/gpu/hosts.py): real DDP and FSDP jobs
(tests/gpu/hosts_job.py) with a tiny all_reduce beside the big collectives, faults from outside the job, and what
fabric-watchdog named, when. Run as root from the repository root with a carried build in .carry:

  record     two rigs of 4 hosts side by side: a DDP and an FSDP job of 150 s, one fault of each network kind
             (nic-both, stall, starve, nic-send) of 20 s after a 30 s healthy lead-in: record folders to replay on CPU.
  ddp, fsdp  two rigs of 4 hosts side by side: that job with INJECTIONS (10) faults of 20 s, 10 s apart, of every
             kind in turn on hosts drawn from a fixed seed (a neighbour on a GPU where each host has one of its own),
             and the same job healthy for 300 s from its start (nothing may be named there).
  evidence   (issue 57) one DDP job of 4 hosts with one fault of each kind the hosts' samplers explain (stall,
             starve, quota, nic-send, neighbour) and what each naming said after "because:"; then the same job
             healthy and alone for 120 s (nothing named; its samplers' folder replayed on CPU says no evidence).
  neighbour  (issue 57) HOSTS=2 on two GPUs: a DDP job of 50 s, another process's matmuls on the last host's own GPU
             from 20 to 40 s, and what the naming said after "because:".
  cost       what watching costs a step: the DDP job and the FSDP job on one rig, 30 s each, watched (the plugin in
             its NCCL, a watchdog per host) and not, PAIRS (2) interleaved pairs alternating which goes first; rank
             0's median step from 5 s in, and per job the ratio of the medians.
HOSTS_WMEM=BYTES caps every host's TCP send buffer (net.ipv4.tcp_wmem's maximum), so that a send completes when the
wire has taken it, as an RDMA send does (tests/gpu/hosts.py, Rig).

Writes <out>/<mode>.json (per fault: found, seconds to the naming; the wrong namings; step times) and
<out>/<mode>.tar.gz (the runs' folders: records, plans, logs, steps)."""
import json
import os
import pathlib
import random
import re
import sys
import tarfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import hosts  # noqa: E402


def plan(seed, ranks, count, first, span, gap, kinds):
    rnd = random.Random(seed)
    out, at = [], first
    for k in range(count):
        out.append({"kind": kinds[k % len(kinds)], "rank": rnd.randrange(ranks), "start": at, "end": at + span})
        at += span + gap
    return out


def step_ms(job, plan_, rank=0):
    """Rank 0's median step before the first fault and inside each (3 s off each edge)."""
    steps = job.steps().get(rank, [])

    def med(xs):
        xs = sorted(xs)
        return round(1e3 * xs[len(xs) // 2], 1) if xs else None

    first = min((i["start"] for i in plan_), default=1e9)
    out = {"healthy": med([t for at, t in steps if 5 <= at < first - 2])}
    for i in plan_:
        out[f"{i['kind']}@{i['start']}"] = med([t for at, t in steps if i["start"] + 3 <= at < i["end"] - 3])
    return out


def cost(rig, work, pairs, seconds=30):
    """Per job (ddp, fsdp): rank 0's median step watched and bare, run by run, and the ratio of the medians."""
    out, port = {}, 29640
    for shard in ("ddp", "fsdp"):
        runs = {"watched": [], "bare": []}
        for k in range(pairs):
            for watched in ((True, False) if k % 2 == 0 else (False, True)):
                name = f"cost-{shard}-{k}-{'watched' if watched else 'bare'}"
                port += 1
                job = hosts.Job(rig, work, name, seconds, [], shard=shard, watchdog=watched, port=port).wait()
                steps = sorted(t for at, t in job.steps().get(0, []) if at >= 5)
                runs["watched" if watched else "bare"].append(round(1e3 * steps[len(steps) // 2], 2) if steps else None)
                for f in (job.dir / "slow").glob("*"):  # the records are not kept
                    f.unlink()
        med = {k: sorted(v)[len(v) // 2] if None not in v else None for k, v in runs.items()}
        out[shard] = dict(runs, ratio=round(med["watched"] / med["bare"], 4) if None not in med.values() else None)
        print("cost", shard, json.dumps(out[shard]), flush=True)
    return out


# What a naming of each fault must say after "because:" (the evidence's words, host_evidence.cpp).
EXPECTED = {"stall": "stopped", "starve": "waited for a CPU", "quota": "throttled", "nic-send": "unsent",
            "nic-both": "unsent", "neighbour": "another process"}


def evidence(job):
    """Per fault: the first line naming it right (hosts.right) from its start to 10 s after its end, and whether
    its evidence says what the fault was."""
    t0 = float((job.dir / "t0").read_text())
    lines = [(t - t0, l) for t, _, l in job.lines if "fabric-watchdog:" in l and "gone:" not in l]
    out = []
    for inj in job.plan:
        a, b = inj.get("real_start", inj["start"]), inj.get("real_end", inj["end"])
        said = None
        for t, l in lines:
            if not a - 1 <= t <= b + 10:
                continue
            for kind, rank, peer, _, _ in hosts.namings([(t, l)], t):
                if kind != "collective" and hosts.right(inj, kind, rank, peer):
                    why = re.search(r"; ((?:its (?:sender|receiver)'s host, )?because: .*|no evidence on its host.*)$", l)
                    said = said or (round(t - a, 1), why.group(1) if why else "")
        out.append(dict(kind=inj["kind"], rank=inj["rank"], quota=inj.get("quota"), neighbour_pid=inj.get("pid"),
                        after_s=said[0] if said else None, evidence=said[1] if said else None,
                        right=bool(said) and EXPECTED[inj["kind"]] in said[1]))
    return out


def run_together(jobs):
    """Jobs started at once on rigs of their own (sharing the GPUs): each waited for."""
    return [j.wait() for j in jobs]


def main():
    mode, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)  # made first: a run of minutes must not end without its summary
    gpus = list(range(int(os.environ.get("GPUS", "0")) or len(
        [l for l in os.popen("nvidia-smi -L").read().splitlines() if l.startswith("GPU")])))
    n = int(os.environ.get("HOSTS", "4"))
    wmem = int(os.environ.get("HOSTS_WMEM", "0"))  # bytes; 0: the kernel's TCP send buffers (up to 4 MB)
    rigs = [hosts.Rig(n, gpus, tag=f"fb{k}", net=k, wmem_max=wmem).up() for k in range(2)]
    own_gpu = len(gpus) >= 2 * n
    work = pathlib.Path(os.environ.get("HOSTS_PROOF_WORK", "/tmp/hosts-proof"))
    summary, jobs = {"mode": mode, "gpus": len(gpus), "wmem_max": wmem}, []
    kinds = ["nic-both", "stall", "starve", "nic-send"] + (["neighbour"] if own_gpu else [])
    count = int(os.environ.get("INJECTIONS", "10"))
    try:
        if mode == "record":  # a DDP and an FSDP job side by side, one fault of each network kind
            jobs = run_together([hosts.Job(rigs[k], work, f"record-{shard}", 150, [
                dict(i, rank=r) for i, r in zip(plan(k, n, 4, 30, 20, 10, kinds[:4]), (1, 2, 3, 0))],
                shard=shard, port=29600 + k) for k, shard in enumerate(("ddp", "fsdp"))])
        elif mode in ("ddp", "fsdp"):  # injections into one job, a healthy job of 300 s from its start beside it
            p = plan({"ddp": 3, "fsdp": 4}[mode], n, count, 20, 20, 10, kinds)
            jobs = run_together([hosts.Job(rigs[0], work, f"inject-{mode}", p[-1]["end"] + 8, p, shard=mode,
                                           port=29620),
                                 hosts.Job(rigs[1], work, f"healthy-{mode}", 300, [], shard=mode, port=29621)])
        elif mode == "evidence":
            p = [dict(i, rank=r) for i, r in zip(plan(5, n, 5, 20, 20, 10, ["stall", "starve", "quota", "nic-send",
                                                                             "neighbour"]),
                                                    map(int, os.environ.get("EVIDENCE_RANKS", "1,2,3,0,1").split(",")))]
            jobs = [hosts.Job(rigs[0], work, "evidence-ddp", p[-1]["end"] + 8, p, port=29630).wait()]
            jobs.append(hosts.Job(rigs[0], work, "evidence-healthy", 120, [], port=29631).wait())
            summary["evidence"] = evidence(jobs[0])
            summary["samplers"] = [l for j in jobs for _, _, l in j.lines if "this host's sampler" in l]
        elif mode == "neighbour":  # (issue 57) HOSTS=2 on 2 GPUs: each host's rank on a GPU of its own
            p = [{"kind": "neighbour", "rank": n - 1, "start": 20, "end": 40}]
            jobs = [hosts.Job(rigs[0], work, "neighbour-ddp", 50, p, port=29640).wait()]
            summary["evidence"] = evidence(jobs[0])
        elif mode == "cost":
            summary["cost"] = cost(rigs[0], work, int(os.environ.get("PAIRS", "2")))
        else:
            raise SystemExit(f"hosts_proof.py: mode {mode!r}: allowed record, ddp, fsdp, evidence, neighbour, cost")
        for j in jobs:
            summary[j.name] = dict(j.judged(), step_ms=step_ms(j, j.plan))
        faults = [f for j in jobs for f in summary[j.name]["faults"]]
        if faults:
            summary["recall"] = sum(f["found"] for f in faults) / len(faults)
        namings = sum(len(summary[j.name]["namings"]) for j in jobs)
        false = sum(len(summary[j.name]["false"]) for j in jobs)
        summary["precision"] = (namings - false) / namings if namings else None
        summary["after_s"] = sorted(f["after_s"] for f in faults if f["found"])
    finally:
        for rig in rigs:
            rig.down()
        (out / f"{mode}.json").write_text(json.dumps(summary, indent=1))
        with tarfile.open(out / f"{mode}.tar.gz", "w:gz") as t:
            t.add(work, arcname=f"hosts-{mode}")
    for j in jobs:
        s = summary[j.name]
        print(j.name, "steps", json.dumps(s["step_ms"]))
        for f in s["faults"]:
            print("  fault", json.dumps({k: f.get(k) for k in ("kind", "rank", "start", "real_start", "found",
                                                                "after_s")}))
        print("  false", s["false"], "vague", s["vague"])
        print("\n".join("  " + l[:300] for l in s["lines"][:30]))
    for e in summary.get("evidence", []):
        print("evidence", json.dumps(e))
    print("\n".join(summary.get("samplers", [])))
    print(json.dumps({k: summary.get(k) for k in ("recall", "precision", "after_s")}))


if __name__ == "__main__":
    main()
