"""A training job shaped like the ones people run, for the multi-host slow-rank rig (tests/gpu/hosts.py): a small
transformer (d 512, 2 layers, ~25 MB of gradients) under DDP or FSDP, and at the end of every step a tiny all_reduce
(4 bytes: the "go on" flag, as a loss, a gradient norm or a barrier would be). One process per "host"; RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT come from the environment. Every rank stops at the same step (the flag).
Writes <out>/t0 (the loop's start, Unix time, rank 0), <out>/pid-<rank> and <out>/steps-<rank> (each step's seconds,
one per line, with the step's start in seconds of the loop)."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, required=True)
p.add_argument("--shard", choices=["ddp", "fsdp"], default="ddp")
p.add_argument("--out", default=".")
a = p.parse_args()
torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
rank = dist.get_rank()
with open(os.path.join(a.out, f"pid-{rank}"), "w") as f:
    f.write(f"{os.getpid()}\n")
torch.manual_seed(rank)
layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda()
if a.shard == "ddp":
    model = nn.parallel.DistributedDataParallel(model)
else:
    from torch.distributed.fsdp import fully_shard
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(16, 128, 512, device="cuda")
flag = torch.zeros(1, device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    model(x).pow(2).mean().backward()
    opt.step()


for _ in range(5):
    step()
torch.cuda.synchronize()
dist.barrier()
start = time.monotonic()
if rank == 0:
    with open(os.path.join(a.out, "t0"), "w") as f:
        f.write(f"{time.time():.3f}\n")
times = []
while True:
    s = time.monotonic()
    step()
    flag[0] = 1.0 if s - start >= a.seconds else 0.0
    dist.all_reduce(flag)
    stop = flag.item() > 0  # synchronizes, as a loss.item() does
    times.append((s - start, time.monotonic() - s))
    if stop:
        break
with open(os.path.join(a.out, f"steps-{rank}"), "w") as f:
    f.write("".join(f"{at:.3f} {t:.6f}\n" for at, t in times))
med = sorted(t for _, t in times)[len(times) // 2]
print(f"rank {rank} pid {os.getpid()}: {len(times)} steps, median {1e3 * med:.2f} ms", flush=True)
dist.destroy_process_group()
