# Sourced by the scripts in ci/ and launch/: CUDA compiler where one is installed, and mpirun as root.
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# The configuration of one-off builds (ci/test.sh, launch/quickstart.sh): Ninja, and unity batches of 16 C++ files (the
# shared headers parsed once a batch: half the compile time of one file a compile; docs/testing.md). The presets stay one
# file a compile for the edit-compile loop, where a batch would recompile 16 files for one edit. --fresh: a tree made
# before with another generator is configured anew. Usage: fabricbench_configure PRESET [-DVAR=VALUE...]
fabricbench_configure() {
  cmake --preset "$1" --fresh -G Ninja -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "${@:2}" >/dev/null
}
