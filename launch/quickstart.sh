#!/usr/bin/env bash
# The README's main command: install (apt, when root), build, and run the default local suite on this machine:
# fabric-p2p latency, bw and bibw on 2 ranks over shared memory. Prints the tables and the HDF5 path.
# Usage: launch/quickstart.sh [extra fabric-p2p options]   (results go to ./results/ unless --output is given)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/ci/install-deps.sh"
. "$root/ci/env.sh"
if [ ! -x "$root/build/benchmarks/fabric-p2p" ] || [ "${FABRICBENCH_REBUILD:-1}" = 1 ]; then
  (cd "$root" && cmake --preset default >/dev/null && cmake --build --preset default -j "${FABRICBENCH_JOBS:-2}" >/dev/null)
fi
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
timeout "${FABRICBENCH_TIMEOUT:-600}" mpirun -np 2 --oversubscribe --bind-to core --mca btl self,vader \
  "$root/build/benchmarks/fabric-p2p" --test all --output "results/fabricbench-p2p-$stamp.h5" \
  --csv "results/fabricbench-p2p-$stamp.csv" --timeout 120 "$@"
