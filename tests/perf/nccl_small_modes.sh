#!/usr/bin/env bash
# What sets the time of a small NCCL operation, which repeats within a process but differs between processes
# (issue 14: 128 B all_reduce on 2 x H200 at ~7 or ~10 us per run, both tools alike). A benchmark run, not a test.
#   tests/perf/nccl_small_modes.sh BIN NCCL_TESTS [VCPU_SPEED]
#   BIN: fabric-coll's directory; NCCL_TESTS: nccl-tests' *_perf; VCPU_SPEED: tests/perf/vcpu_speed.c built.
# Prints, per process, the 128 B all_reduce time of several rows (each row ~0.1 s of timed blocks), under four
# views: host clock (fabric-coll's default), CUDA events per operation, a CUDA graph (no per-operation launch from
# the CPU), and nccl-tests; then how steady the CPUs are (vcpu_speed). If the graph's time repeats between
# processes while the host-clock time does not, the mode is on the CPU's side of the launch.
set -uo pipefail
bin=$1 peers=$2 spin=${3:-}
np=${NP:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows() {  # the time_us of every row of $1, then the blocks' spread
  python3 - "$1" <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1], "r")["results/coll"][:]
print(" ".join(f"{v:.2f}" for v in t["time_us"]), "us | spread %:", " ".join(f"{v:.0f}" for v in t["time_us_spread_pct"]))
PY
}
coll() {  # label, fabric-coll options
  local label=$1; shift
  for run in 1 2 3 4; do
    if timeout 120 mpirun -np "$np" --bind-to none "$bin/fabric-coll" --op all_reduce --in-place 0 -q --no-checks \
        --output "$tmp/r.h5" --force "$@" >"$tmp/out" 2>&1; then
      echo "$label run $run: $(rows "$tmp/r.h5")"
    else
      echo "$label run $run: failed"; tail -3 "$tmp/out"
    fi
  done
}
echo "== 128 B all_reduce, $np ranks, one line per process =="
coll "host clock, 6 rows" --sizes 128,128,128,128,128,128
coll "CUDA events, 3 rows of -n 2000" --sizes 128,128,128 -n 2000 --per-iter
coll "CUDA graph, 3 rows of -n 200 -G 10" --sizes 128,128,128 -n 200 -G 10
for run in 1 2 3 4; do
  echo "nccl-tests run $run: $(timeout 120 mpirun -np "$np" --bind-to none "$peers/all_reduce_perf" -b 128 -e 128 -n 2000 -w 50 \
      -g 1 2>&1 | awk '$1 == 128 {print "out-of-place", $6, "us, in-place", $10, "us"}')"
done
for run in 1 2; do
  echo "nccl-tests -G 10 run $run: $(timeout 120 mpirun -np "$np" --bind-to none "$peers/all_reduce_perf" -b 128 -e 128 -n 200 -G 10 -w 50 \
      -g 1 2>&1 | awk '$1 == 128 {print "out-of-place", $6, "us, in-place", $10, "us"}')"
done
if [ -n "$spin" ]; then
  echo "== vcpu_speed: 400 chunks of fixed work, ms each (summary line), one core at a time =="
  for core in 0 1 2 3; do echo "core $core: $(taskset -c $core "$spin" | tail -1)"; done
  echo "== vcpu_speed: cores 0 and 1 busy at once =="
  taskset -c 0 "$spin" | tail -1 > "$tmp/s0" & taskset -c 1 "$spin" | tail -1 > "$tmp/s1"; wait
  echo "core 0: $(cat "$tmp/s0")"; echo "core 1: $(cat "$tmp/s1")"
fi
