#!/usr/bin/env bash
# Evidence for the 1-8 MiB gap between fabric-coll and nccl-tests (issue: same numbers as nccl-tests): nccl-tests
# moves its buffers by one message size every iteration across the whole -e sized allocation ("to avoid cache
# effects"), so with -e 4G every timed iteration of a 2 or 8 MiB message touches fresh memory, while with -e equal
# to the size it reuses one region, as fabric-coll did. If the gap is the L2 cache (H200: 60 MB), nccl-tests with
# -b S -e S agrees with fabric-coll and nccl-tests with -e 4G reads lower. Interleaved REPEATS times.
#   tests/perf/nccl_cache_rotation.sh BIN PEER [GPUS] [REPEATS]   (BIN: fabric-coll's folder; PEER: nccl-tests')
set -uo pipefail
bin=$1 peer=$2 gpus=${3:-2} repeats=${4:-3}
export NCCL_NVLS_ENABLE=0
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { mpirun -np "$gpus" --bind-to none "$@" 2>&1; }
for op in all_reduce reduce_scatter; do
  for size in 2097152 8388608; do
    for r in $(seq "$repeats"); do
      same=$(run "$peer/${op}_perf" -b "$size" -e "$size" -n 20 -w 5 | awk -v s="$size" '$1 == s {print $8}')
      wide=$(run "$peer/${op}_perf" -b "$size" -e 4G -f 512 -n 20 -w 5 | awk -v s="$size" '$1 == s {print $8}')
      ours=$(run "$bin/fabric-coll" --backend nccl --op "$op" -b "$size" -e "$size" -n 20 -w 5 --no-checks \
             | awk -v s="$size" '$1 == s {print $8}')
      oursw=$(run "$bin/fabric-coll" --backend nccl --op "$op" -b "$size" -e 4G -f 512 -n 20 -w 5 --no-checks \
             | awk -v s="$size" '$1 == s {print $8}')
      echo "$op $size repeat $r: nccl-tests -e size $same  nccl-tests -e 4G $wide  fabric-coll -e size $ours  fabric-coll -e 4G $oursw"
    done
  done
done
