#!/usr/bin/env bash
# Why fabric-coll's CUDA-graph times read 2-6% below nccl-tests' -G at small sizes (issue 14). nccl-tests times the
# first launch of a freshly instantiated graph with the others; fabric-coll launches it once untimed first (the
# first launch uploads the graph to the GPU). If that is the whole difference, nccl-tests' time per operation falls
# towards fabric-coll's as -G grows (the upload spread over more launches), and fabric-coll's does not move.
#   tests/perf/nccl_graph_first_launch.sh BIN NCCL_TESTS     (a benchmark run, not a test)
set -uo pipefail
bin=$1 peers=$2
np=${NP:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for size in 8192 131072; do
  for op in all_reduce reduce; do
    for g in 1 10 100; do
      for run in 1 2; do
        theirs=$(timeout 120 mpirun -np "$np" --bind-to none "$peers/${op}_perf" -b $size -e $size -n 200 -w 20 -G $g -g 1 2>&1 |
                 awk -v s=$size '$1 == s {print $6}')
        timeout 120 mpirun -np "$np" --bind-to none "$bin/fabric-coll" --op $op --sizes $size -n 200 -w 20 -G $g \
            --in-place 0 -q --no-checks --output "$tmp/r.h5" --force >/dev/null 2>&1
        ours=$(python3 -c "import h5py; print(f\"{h5py.File('$tmp/r.h5')['results/coll'][:]['time_us'][0]:.2f}\")")
        echo "$op $size B -n 200 -G $g run $run: nccl-tests $theirs us, fabric-coll $ours us"
      done
    done
  done
done
