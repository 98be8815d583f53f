#!/usr/bin/env bash
# Builds the gpu preset here and installs what a GPU machine without build tools needs into the prefix DIR
# (default .carry): DIR/bin (executables, wrappers, fabric-report, the unit tests and nccl_peer), DIR/share/fabricbench
# (configs, sbatch templates, the analysis package), DIR/lib (libcudart of this CUDA, in case the machine's differs),
# DIR/iproute2 (ip and tc with their libraries, for tests/gpu/hosts.py).
# The tools find their shipped files relative to themselves, so DIR works wherever it is unpacked.
# Then on the GPU machine: ci/gpu-test.sh --prebuilt DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.carry}
. "$root/ci/env.sh"
# A one-off build, configured as ci/test.sh's trees are (Ninja, unity batches; a tree made before with another
# generator is configured anew instead of refused).
(cd "$root" && fabricbench_configure gpu && cmake --build --preset gpu -j "${FABRICBENCH_JOBS:-2}" >/dev/null)
rm -rf "$out"
cmake --install "$root/build-gpu" --prefix "$out" >/dev/null
mkdir -p "$out/lib"
cp "$root/build-gpu/tests/fabricbench_unit_tests" "$root/build-gpu/tests/libfabricbench_fake_nvml.so" "$out/bin/"
# Not the fixtures (20 MB, tracked in tests/fixtures): ci/gpu-test.sh runs in the repository and points the unit tests
# at its copy (FABRICBENCH_FIXTURES), which keeps the prefix within what the lent machine takes (64 MiB).
[ -x "$root/build-gpu/tests/nccl_peer" ] && cp "$root/build-gpu/tests/nccl_peer" "$out/bin/"
# Debian's ip and tc with their libraries (the GPU machine has no iproute2; tests/gpu/hosts.py gives them
# LD_LIBRARY_PATH=DIR/iproute2/lib alone)
if command -v ip >/dev/null && command -v tc >/dev/null; then
  mkdir -p "$out/iproute2/bin" "$out/iproute2/lib"
  cp "$(command -v ip)" "$(command -v tc)" "$out/iproute2/bin/"
  ldd "$(command -v ip)" "$(command -v tc)" | awk '/=> \// {print $3}' | sort -u |
    grep -v -e '/libc\.so' -e '/libm\.so' | xargs -r cp -L -t "$out/iproute2/lib/"
fi
cudart=$(ldd "$out/bin/fabric-coll" | awk '/libcudart/ {print $3}')
[ -n "$cudart" ] && cp -L "$cudart" "$out/lib/"
du -sh "$out"
