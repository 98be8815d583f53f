#!/usr/bin/env bash
# Installs what fabricbench needs on Debian 12 / Ubuntu (apt, when root); without root it only says what is missing.
#   ci/install-deps.sh build   what ci/test.sh's builds need (compilers, clang for the sanitized tree, CMake, Ninja,
#                              the libraries' development packages, GoogleTest): installed first, the rest while the
#                              first tree compiles
#   ci/install-deps.sh main    what the main job (launch/quickstart.sh) uses: the build, the analysis package's
#                              plots and workbooks (matplotlib, openpyxl: the next steps it prints, fabric-report
#                              plot, html and excel, run), and as root the emulated cluster (iproute2) and the
#                              Soft-RoCE guest (QEMU, mmdebstrap)
#   ci/install-deps.sh         (or tests) all of it: the main job's, plus Prometheus for the metrics test, Chromium
#                              for the report's pictures, Hypothesis for the importers' property tests and, as root,
#                              the Slurm rig (slurm-wlm, munge)
set -euo pipefail
mode=${1:-tests}
case "$mode" in build | main | tests) ;; *) echo "ci/install-deps.sh: '$mode': allowed values are build, main, tests" >&2; exit 2 ;; esac
packages=(build-essential cmake ninja-build libopenmpi-dev openmpi-bin libhdf5-dev libboost-program-options-dev libfmt-dev
          libgtest-dev googletest libibverbs-dev)
[ "$mode" != main ] && packages+=(clang)  # ci/test.sh's compiler of the sanitized tree
[ "$mode" != build ] && packages+=(python3-h5py python3-pandas python3-numpy python3-openpyxl python3-matplotlib)
[ "$mode" = tests ] && packages+=(prometheus python3-prometheus-client python3-venv python3-setuptools python3-pip
                                  chromium python3-hypothesis)
# The rigs (emulated cluster, Soft-RoCE guest, real Slurm) run as root only; then their tools are installed too.
# The Soft-RoCE guest is a Debian image built with mmdebstrap (cached outside the clone) booted under QEMU.
if [ "$(id -u)" -eq 0 ] && [ "$mode" != build ]; then
  packages+=(iproute2 util-linux qemu-system-x86 mmdebstrap e2fsprogs)
  [ "$mode" = tests ] && packages+=(slurm-wlm munge)
fi
# clang's sanitizer runtimes: on Debian 12 a package of their own (libclang-rt-14-dev), which clang only recommends.
# Prints its name while clang is there without them.
clang_runtime() {
  [ "$mode" != main ] && command -v clang >/dev/null || return 0
  compgen -G "$(clang -print-resource-dir)/lib/*/libclang_rt.asan*" >/dev/null ||
    echo "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
}
missing=($(clang_runtime))
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "fabricbench: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "fabricbench: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists once: not again within the hour of the last update that changed them (ci/test.sh installs in
# two steps).
[ -n "$(find /var/lib/apt/lists -maxdepth 0 -mmin -60 2>/dev/null)" ] || apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
runtime=$(clang_runtime)  # clang itself was among them
[ -z "$runtime" ] || apt-get install -y -qq --no-install-recommends "$runtime" >/dev/null
