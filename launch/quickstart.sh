#!/usr/bin/env bash
# The README's main command: install (apt, when root), build, and run the default local suite on this machine:
#   fabric-doctor first (every check; one rank per GPU where there are GPUs, else 2), its failures do not stop the rest;
#   fabric-p2p latency, bw and bibw on 2 ranks over shared memory;
#   fabric-coll: NCCL all_reduce on every GPU where there are GPUs, else every MPI collective on 2 ranks;
#   fabric-sweep (as root): all pairs of an emulated 4-host cluster in network namespaces;
#   fabric-verbs: on the RDMA device here, else (as root) on Soft-RoCE inside a QEMU guest.
# Prints the tables and the HDF5 (and CSV) paths, under ./results/. Extra arguments go to fabric-p2p.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/install-deps.sh" main
. "$root/ci/env.sh"
if [ ! -x "$root/build/benchmarks/fabric-coll" ] || [ "${FABRICBENCH_REBUILD:-1}" = 1 ]; then
  # The tools only (no tests: ci/test.sh configures the tree anew with them).
  (cd "$root" && fabricbench_configure default -DBUILD_TESTING=OFF && cmake --build --preset default -j "${FABRICBENCH_JOBS:-2}" >/dev/null)
fi
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
limit=${FABRICBENCH_TIMEOUT:-600}
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
timeout "$limit" mpirun -np "$([ "${gpus:-0}" -ge 2 ] && echo "$gpus" || echo 2)" --oversubscribe --bind-to none \
  "$root/build/benchmarks/fabric-doctor" --output "results/fabricbench-doctor-$stamp.h5" --timeout 120 \
  || echo "# fabric-doctor: a check failed (see the table above); the benchmarks run anyway"
echo
timeout "$limit" mpirun -np 2 --oversubscribe --bind-to core --mca btl self,vader \
  "$root/build/benchmarks/fabric-p2p" --test all --output "results/fabricbench-p2p-$stamp.h5" \
  --csv "results/fabricbench-p2p-$stamp.csv" --timeout 120 "$@"
echo
if [ "${gpus:-0}" -ge 1 ]; then
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  timeout "$limit" mpirun -np "$gpus" --bind-to none "$root/build/benchmarks/fabric-coll" --backend nccl \
    --op all_reduce -b 8 -e 1G -f 2 --output "results/fabricbench-coll-$stamp.h5" --csv "results/fabricbench-coll-$stamp.csv" --timeout 120
else
  timeout "$limit" mpirun -np 2 --oversubscribe --bind-to core --mca btl self,vader "$root/build/benchmarks/fabric-coll" \
    --backend mpi --op all -b 8 -e 4M -f 8 --output "results/fabricbench-coll-$stamp.h5" \
    --csv "results/fabricbench-coll-$stamp.csv" --timeout 120
fi
echo
# fabric-sweep needs several hosts: as root, over an emulated 4-host cluster in network namespaces (tests/rigs).
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && command -v nsenter >/dev/null; then
  rig=qs$$; rig=${rig:0:6}
  trap '"$root/tests/rigs/netns_cluster.sh" down "$rig" >/dev/null 2>&1 || true' EXIT
  "$root/tests/rigs/netns_cluster.sh" up "$rig" 123 4
  timeout "$limit" "$root/tests/rigs/netns_cluster.sh" mpirun "$rig" 4 "$rig-h1,$rig-h2,$rig-h3,$rig-h4" -- \
    "$root/build/benchmarks/fabric-sweep" --sizes 256K -W 8 -n 5 --metric p2p_bw,p2p_latency \
    --rules "$root/configs/rigs/netns-sweep.ini" --output "$PWD/results/fabricbench-sweep-$stamp.h5" --timeout 120 \
    2> >(grep -v --line-buffered 'plm:rsh: Warning: setpgid' >&2) || true
  # (Open MPI's rsh launcher forks, the child puts itself in a new process group and execs the agent, and the parent
  # then does the same for the child: when the local agent has already exec'd, the parent's setpgid fails with
  # EACCES and Open MPI prints a warning it then ignores ("the child is off and running", plm_rsh_module.c). A real
  # ssh is slower to exec than this rig's nsenter agent, so users rarely see it; the main job leaves it out.)
else
  echo "# fabric-sweep skipped: it tests pairs of hosts; this machine emulates them only as root (network namespaces)"
fi
echo
# fabric-verbs needs an RDMA device: the machine's own, else (as root) Soft-RoCE inside a QEMU guest (tests/rigs;
# the guest's image is built once, about 3 minutes, and cached outside the clone).
verbs_args=(--test write_bw,read_bw,send_bw,write_lat,read_lat,send_lat --check -n 500)
if [ ! -x "$root/build/benchmarks/fabric-verbs" ]; then
  echo "# fabric-verbs skipped: this build has no libibverbs"
elif [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  timeout "$limit" mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader "$root/build/benchmarks/fabric-verbs" \
    "${verbs_args[@]}" --output "results/fabricbench-verbs-$stamp.h5" --timeout 120 || true
elif [ "$(id -u)" -eq 0 ] && command -v qemu-system-x86_64 >/dev/null && command -v mmdebstrap >/dev/null; then
  echo "# fabric-verbs: no RDMA device here; running it on Soft-RoCE (rdma_rxe) in a QEMU guest"
  out="$PWD/results/verbs-guest-$stamp"
  mkdir -p "$out"
  # The guest also has rxe1, left down for the rigs' bad-port test; the main job uses rxe0 only, so it goes.
  echo "rdma link delete rxe1; ulimit -l unlimited; cd $out && mpirun --allow-run-as-root -np 2 --bind-to none --mca btl self,vader $root/build/benchmarks/fabric-verbs ${verbs_args[*]} --output $out/fabricbench-verbs-$stamp.h5 --timeout 120" > "$out/verbs.sh"
  libs=$(ldd "$root/build/benchmarks/fabric-verbs" | awk '/=> \//{print $3}' | xargs -r -n1 dirname | xargs -r -n1 realpath \
         | grep -v -E '^/(usr/)?lib(64)?(/|$)' | sort -u | tr '\n' ' ')
  FABRICBENCH_VM_LDPATH=$(echo $libs | tr ' ' ':') timeout "$limit" "$root/tests/rigs/rxe_vm.sh" run "$out/verbs.sh" "$out" "$root/build" $libs \
    && cat "$out/job.log" || echo "# fabric-verbs in the guest failed: see $out"
else
  echo "# fabric-verbs skipped: no RDMA device here, and the Soft-RoCE guest needs root"
fi
