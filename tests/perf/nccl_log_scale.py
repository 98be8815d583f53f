#!/usr/bin/env python3
"""What reading a job's NCCL log costs at scale (issue 48): fabric-doctor --nccl-log on the NCCL_DEBUG=INFO output
of a made-up job of N ranks, 8 per host, in NCCL 2.28's line shapes behind mpirun's --tag-output tags: per rank its
version, NET/IB, network, two channel lines and its Init START/COMPLETE lines (host, pid, rank, nranks, one commId),
then ITERATIONS iterations, each announced by rank 0's "iteration N" line (tagged [1,0], as a Megatron-style job
prints it) and holding per rank the COLL lines of ITERATION below (opCount 0, as 2.28 logs it), and a last marker
line. Prints, per N, the wall time, peak memory and CPU time (GNU time's %e, %M and %U+%S) of each binary given,
the median of --repeat runs with the range, and the ratios to the first binary. Logs go to --dir (/tmp) and are
deleted after. A benchmark, not a test: run it by hand on a quiet machine.

  tests/perf/nccl_log_scale.py BUILD/benchmarks/fabric-doctor [/tmp/doctor-before] [--ranks 1000,10000,100000]
      [--repeat 3] [--pids unique|per-host]

--pids per-host gives every host's ranks the same pids (100..107), as containers with their own pid namespace do;
unique (the default) gives rank r pid 4000+r."""
import argparse
import os
import pathlib
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

# (kind, count, datatype) per rank per iteration.
ITERATION = [("AllReduce", 262144, 9), ("AllReduce", 4194304, 7), ("AllGather", 131072, 9)]
MARKER = "iteration +[0-9]+"


def make_log(path, ranks, iterations, pids, per_host=8):
    def prefix(r):
        pid = 100 + r % per_host if pids == "per-host" else 4000 + r
        return f"[1,{r}]<stdout>:node{r // per_host:05d}:{pid}:{pid} [{r % per_host}] NCCL INFO "

    def comm(r):
        return f"0x{0x55000000 + r:x}"

    bus = "busId {0}000 commId 0x858d63bf52fc5bbc"
    with open(path, "w", buffering=1 << 20) as out:
        block = []
        for r in range(ranks):
            p, d = prefix(r), r % per_host
            ident = f"comm {comm(r)} rank {r} nranks {ranks} cudaDev {d} nvmlDev {d} {bus.format(d)}"
            via = "NET/IB/0/GDRDMA" if (r + 1) % per_host == 0 else "P2P/CUMEM"
            block += [p + "NCCL version 2.28.9+cuda13.0",
                      p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>",
                      p + "Using network IB",
                      p + f"ncclCommInitRankConfig {ident} - Init START",
                      p + f"Channel 00/0 : {r}[{d}] -> {(r + 1) % ranks}[{(r + 1) % per_host}] via {via}",
                      p + f"Channel 01/0 : {r}[{d}] -> {(r + 1) % ranks}[{(r + 1) % per_host}] via {via}",
                      p + f"ncclCommInitRankConfig {ident} localSize {per_host} used 1320 bytes on core 0 "
                          f"- Init COMPLETE"]
            if len(block) > 65536:
                out.write("\n".join(block) + "\n")
                block = []
        out.write("\n".join(block) + "\n")
        prefixes = [prefix(r) for r in range(ranks)]
        for i in range(1, iterations + 2):
            out.write(f"[1,0]<stdout>: iteration {i:8d}/ 10000000 | elapsed time per iteration (ms): 412.3\n")
            if i > iterations:
                break
            for kind, count, dtype in ITERATION:
                tail = (f": opCount 0 sendbuff 0x7f1c2a000000 recvbuff 0x7f1c2c000000 count {count} datatype {dtype} "
                        f"op 0 root 0 comm ")
                out.write("".join(f"{prefixes[r]}{kind}{tail}{comm(r)} [nranks={ranks}] stream 0x5603e8b1c0a0\n"
                                  for r in range(ranks)))
    return os.path.getsize(path)


def measure(binary, log, workdir, timeout, memory_gib):
    def limit():
        cap = memory_gib << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    stats = os.path.join(workdir, "time.txt")
    cmd = ["/usr/bin/time", "-o", stats, "-f", "%e %M %U %S", binary, "--nccl-log", log, "--iteration-marker", MARKER,
           "--output", os.path.join(workdir, "out.h5"), "--force"]
    # Its own process group: on a timeout the tool goes with GNU time (killing time alone left it running).
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=limit,
                          cwd=workdir, start_new_session=True) as run:
        try:
            _, stderr = run.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
            return None, None, None, f"over {timeout} s"
    lines = [x for x in pathlib.Path(stats).read_text().split("\n") if x.strip()]
    wall, kib, user, system = lines[-1].split()
    if run.returncode not in (0, 1):  # 1: a finding failed; anything else: the run did not finish
        said = [x for x in stderr.splitlines() if x.strip() and not x.startswith("---")][:1]
        return None, None, None, f"exit {run.returncode} after {float(wall):.1f} s at {int(kib) / 1024:.0f} MB: {said}"
    return float(wall), int(kib) / 1024, float(user) + float(system), ""


def summary(values, unit, fmt):
    if not values:
        return "-"
    return f"{statistics.median(values):{fmt}} {unit} ({min(values):{fmt}}-{max(values):{fmt}})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+", help="fabric-doctor binaries to compare (the first is the reference)")
    ap.add_argument("--ranks", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--pids", choices=["unique", "per-host"], default="unique")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run; a run past it is reported, not timed")
    ap.add_argument("--memory-gib", type=int, default=8, help="address-space limit per run (RLIMIT_AS)")
    a = ap.parse_args()
    print(f"# fabric-doctor --nccl-log LOG --iteration-marker '{MARKER}' --output OUT.h5: wall s and peak RSS MB, "
          f"median of {a.repeat} (range); pids {a.pids}; {a.iterations} iterations of {len(ITERATION)} COLL lines "
          f"per rank", flush=True)
    print("| ranks | log | binary | wall | peak RSS | CPU (user+sys) | wall / first | RSS / first |\n"
          "|---|---|---|---|---|---|---|---|", flush=True)
    for n in (int(x) for x in a.ranks.split(",")):
        workdir = tempfile.mkdtemp(prefix="nccl_log_scale.", dir=a.dir)
        try:
            log = os.path.join(workdir, f"job{n}.log")
            size = make_log(log, n, a.iterations, a.pids)
            first = None
            for binary in a.binaries:
                walls, rss, cpu, why = [], [], [], ""
                for _ in range(a.repeat):
                    w, m, c, why = measure(binary, log, workdir, a.timeout, a.memory_gib)
                    if w is None:
                        break
                    walls.append(w), rss.append(m), cpu.append(c)
                mid = (statistics.median(walls), statistics.median(rss)) if walls else None
                first = first or mid
                ratio = (f"{mid[0] / first[0]:.2f} | {mid[1] / first[1]:.2f}" if mid and first and first[0] > 0
                         else "- | -")
                shown = why or summary(walls, "s", ".2f")
                print(f"| {n:,} | {size / 1e6:.0f} MB | {binary} | {shown} | {summary(rss, 'MB', '.0f')} | "
                      f"{summary(cpu, 's', '.2f')} | {ratio} |", flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
