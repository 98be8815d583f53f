"""A DDP-like training loop for the slow-rank proof (issue 45), run by torchrun: per step 8 matmuls of 4096 x 4096,
then an all_reduce of 64 MiB, then a synchronize (as a loss.item() does; 21.7 ms a step on H100 in the issue).
--sleeps FILE: a JSON list of {"rank", "start", "end", "ms"}: between start and end seconds of the loop, that rank
synchronizes and sleeps ms before its all_reduce (a host-side delay longer than the queued GPU work). Every rank stops
at the same step (a stop flag rides in the all_reduce). Writes <out>/t0 (the loop's start, Unix time), <out>/pid-<rank>
(its process id, at the start) and <out>/steps-<rank> (each step's seconds)."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, required=True)
p.add_argument("--sleeps", default="")
p.add_argument("--out", default=".")
a = p.parse_args()
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
with open(os.path.join(a.out, f"pid-{rank}"), "w") as f:
    f.write(f"{os.getpid()}\n")
sleeps = [s for s in (json.load(open(a.sleeps)) if a.sleeps else []) if s["rank"] == rank]
m = torch.randn(4096, 4096, device="cuda") / 64
g = torch.zeros(16 << 20, device="cuda")
for _ in range(5):
    m @ m
    dist.all_reduce(g)
torch.cuda.synchronize()
dist.barrier()
start = time.monotonic()
if rank == 0:
    with open(os.path.join(a.out, "t0"), "w") as f:
        f.write(f"{time.time():.3f}\n")
times = []
while True:
    s = time.monotonic()
    now = s - start
    for _ in range(8):
        m @ m
    for inj in sleeps:
        if inj["start"] <= now < inj["end"]:
            torch.cuda.synchronize()
            time.sleep(inj["ms"] / 1000)
    g[0] = 1.0 if now >= a.seconds else 0.0
    dist.all_reduce(g)
    stop = g[0].item() > 0  # synchronizes
    times.append(time.monotonic() - s)
    if stop:
        break
with open(os.path.join(a.out, f"steps-{rank}"), "w") as f:
    f.write("\n".join(f"{t:.6f}" for t in times) + "\n")
times.sort()
print(f"rank {rank} pid {os.getpid()}: {len(times)} steps, median {1e3 * times[len(times) // 2]:.2f} ms", flush=True)
dist.destroy_process_group()
