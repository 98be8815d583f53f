#!/usr/bin/env bash
# Builds the gpu preset here and packs what a GPU machine without build tools needs into DIR (default .carry):
# DIR/bin (executables, unit tests), DIR/lib (libcudart of this CUDA, in case the machine's differs).
# Then on the GPU machine: ci/gpu-test.sh --prebuilt DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.carry}
. "$root/ci/env.sh"
(cd "$root" && cmake --preset gpu >/dev/null && cmake --build --preset gpu -j "${FABRICBENCH_JOBS:-2}" >/dev/null)
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
cp "$root"/build-gpu/benchmarks/fabric-* "$root/build-gpu/tests/fabricbench_unit_tests" "$out/bin/"
[ -x "$root/build-gpu/tests/nccl_peer" ] && cp "$root/build-gpu/tests/nccl_peer" "$out/bin/"
cudart=$(ldd "$out/bin/fabric-coll" | awk '/libcudart/ {print $3}')
[ -n "$cudart" ] && cp -L "$cudart" "$out/lib/"
du -sh "$out"
