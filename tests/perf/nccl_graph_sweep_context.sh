#!/usr/bin/env bash
# Where nccl-tests' extra 0.1-0.2 us per graph-captured operation appears (issue 14;
# docs/measurements/perf-nccl-small-h200x2.md):
# all_gather in CUDA graphs (-n 200 -G 100) from nccl-tests as a sweep (-b 128 -e 512K, with and without its data
# check -c) and one size at a time (-b = -e: no buffer rotation across a larger allocation), and from fabric-coll.
#   tests/perf/nccl_graph_sweep_context.sh BIN NCCL_TESTS      (2 GPUs; a benchmark run, not a test)
set -u
bin=$1 peers=$2
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun -np 2 --bind-to none"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
times() { awk '$1 ~ /^[0-9]+$/ && NF >= 12 {printf "%s:%s ", $1, $6}'; }  # bytes:out-of-place time (us)
for r in 1 2; do
  for c in 1 0; do
    echo "nccl-tests sweep -c $c run $r: $($M "$peers/all_gather_perf" -b 128 -e 524288 -f 16 -n 200 -w 20 -G 100 -g 1 -c $c 2>&1 | times)"
  done
  $M "$bin/fabric-coll" --op all_gather -b 128 -e 524288 -f 16 -n 200 -w 20 -G 100 --in-place 0 -q --no-checks \
      --output "$tmp/r.h5" --force >/dev/null 2>&1
  echo "fabric-coll sweep run $r: $(python3 -c "
import h5py; t = h5py.File('$tmp/r.h5')['results/coll'][:]; print(' '.join(f'{int(b)}:{x:.2f}' for b, x in zip(t['bytes'], t['time_us'])))")"
  echo "nccl-tests one size at a time run $r: $(for s in 128 2048 32768 524288; do
      $M "$peers/all_gather_perf" -b $s -e $s -n 200 -w 20 -G 100 -g 1 2>&1 | times; done)"
done
