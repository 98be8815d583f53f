#!/usr/bin/env bash
# fabric-watchdog in front of a real torchrun job (2 GPUs, all_reduce loop): SIGTERM and SIGINT to the watchdog end
# torchrun and both workers; SIGKILL to the watchdog too (the guard). Run from the repository root with a carried
# build in .carry (launch/carry-gpu-build.sh), on a machine with 2 GPUs and PyTorch:  bash tests/gpu/watchdog_signals.sh
# Seen on 2 x H200, PyTorch 2.11 (2026-11-27): no job process left after each signal; the watchdog exits with torchrun's
# status (1) after SIGTERM and SIGINT; after SIGKILL the hook's folder under /tmp stays (no handler runs).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=$PWD/.carry/bin/fabric-watchdog
export LD_LIBRARY_PATH=$PWD/.carry/lib
d=$(mktemp -d); cd "$d"
cat > worker.py <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl"); r = dist.get_rank(); torch.cuda.set_device(r)
x = torch.ones(1 << 24, device="cuda")
print(f"rank {r} pid {os.getpid()} up", flush=True)
while True:
    dist.all_reduce(x); torch.cuda.synchronize(); time.sleep(0.01)
PY
for sig in TERM INT KILL; do
  $W --timeout 10m --no-ras -- torchrun --nproc-per-node 2 worker.py > out.$sig 2>&1 &
  wp=$!
  for i in $(seq 60); do [ "$(grep -c ' up' out.$sig)" = 2 ] && break; sleep 1; done
  pids=$(pgrep -f "worker.py" | tr '\n' ' ')
  echo "== SIG$sig: watchdog $wp, job processes: $pids"
  start=$(date +%s%N)
  kill -$sig $wp; wait $wp; rc=$?
  for i in $(seq 40); do left=$(for p in $pids; do [ -e /proc/$p ] && grep -qv '^State:\sZ' /proc/$p/status 2>/dev/null && echo $p; done); [ -z "$left" ] && break; sleep 0.25; done
  echo "watchdog exit $rc; after $(( ($(date +%s%N) - start) / 1000000 )) ms left: [${left}]"
  grep -E "fabric-watchdog" out.$sig | head -3
done
ls /tmp | grep -c fabric-watchdog- || true
