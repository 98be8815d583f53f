#!/usr/bin/env python3
"""Writes the NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET,COLL output of a made-up training job: RANKS ranks on
HOSTS hosts, every rank's lines interleaved behind mpirun's --tag-output tags, an "iteration N" line per iteration
(what Megatron-style jobs print), and per iteration per rank the collectives of ITERATION below, in NCCL 2.21's
line shapes. Stops after the iteration that passes --bytes. Prints what fabric-doctor --nccl-log must count.

    tests/perf/make_nccl_log.py --bytes 1G --output /tmp/job.log     # the throughput figure of docs/nccl-log.md
"""
import argparse
import json
import sys

# (kind, count, datatype, datatype size) per rank per iteration: a data-parallel step of a small model.
ITERATION = [("AllReduce", 262144, 9, 2)] * 6 + [("AllReduce", 4194304, 7, 4)] * 2 + [
    ("AllGather", 131072, 9, 2), ("ReduceScatter", 131072, 9, 2), ("Broadcast", 16, 4, 8)]


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bytes", default="1M", help="stop after the iteration that passes this size (1G, 64M, 4096)")
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--output", default="-")
    a = ap.parse_args()
    limit = size(a.bytes)
    per_host = a.ranks // a.hosts
    prefix = [f"[1,{r}]<stdout>:node{r // per_host}:{4000 + r}:{4000 + r} [{r % per_host}] NCCL INFO "
              for r in range(a.ranks)]
    head = []
    for r in range(a.ranks):
        p = prefix[r]
        head += [p + "NCCL version 2.21.5+cuda12.4",
                 p + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>",
                 p + "Using network IB",
                 p + f"ncclCommInitRank comm 0x55{r:04x} rank {r} nranks {a.ranks} cudaDev {r % per_host} nvmlDev "
                     f"{r % per_host} busId {r % per_host}000 commId 0x7e57 - Init START",
                 p + f"Channel 00/0 : {r}[{r % per_host}] -> {(r + 1) % a.ranks}[{(r + 1) % per_host}] via "
                     + ("NET/IB/0/GDRDMA" if (r + 1) % per_host == 0 else "P2P/IPC"),
                 p + f"comm 0x55{r:04x} rank {r} nranks {a.ranks} cudaDev {r % per_host} nvmlDev {r % per_host} "
                     f"busId {r % per_host}000 commId 0x7e57 - Init COMPLETE"]
    out = sys.stdout if a.output == "-" else open(a.output, "w", buffering=1 << 20)
    written = out.write("\n".join(head) + "\n")
    iterations, op_count = 0, 0
    while written < limit:
        iterations += 1
        block = [f"[1,0]<stdout>: iteration {iterations:8d}/ 10000000 | elapsed time per iteration (ms): 412.3"]
        for kind, count, dtype, _ in ITERATION:
            for r in range(a.ranks):
                block.append(f"{prefix[r]}{kind}: opCount {op_count:x} sendbuff 0x7f1c2a000000 recvbuff 0x7f1c2c000000 "
                             f"count {count} datatype {dtype} op 0 root 0 comm 0x55{r:04x} [nranks={a.ranks}] "
                             f"stream 0x5603e8b1c0a0")
            op_count += 1
        written += out.write("\n".join(block) + "\n")
    if out is not sys.stdout:
        out.close()
    calls = {}
    for kind, count, _, type_size in ITERATION:
        c = calls.setdefault(kind, {"calls": 0, "bytes": 0})
        c["calls"] += iterations
        c["bytes"] += iterations * count * type_size
    print(json.dumps({"bytes": written, "iterations": iterations, "ranks": a.ranks, "per_rank": calls}),
          file=sys.stderr if a.output == "-" else sys.stdout)


if __name__ == "__main__":
    main()
