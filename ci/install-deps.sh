#!/usr/bin/env bash
# Installs what fabricbench needs to build, test and analyse on Debian 12 / Ubuntu (apt, when root).
# Without root it only says what is missing.
set -euo pipefail
packages=(build-essential cmake libopenmpi-dev openmpi-bin libhdf5-dev libboost-program-options-dev libfmt-dev
          libgtest-dev googletest libibverbs-dev python3-h5py python3-pandas python3-openpyxl python3-numpy python3-matplotlib
          prometheus python3-prometheus-client python3-venv python3-setuptools python3-pip chromium)
# The rigs (emulated cluster, real Slurm, Soft-RoCE guest) run as root only; then their tools are installed too.
# The Soft-RoCE rig boots a Debian guest under QEMU (its image built with mmdebstrap, cached outside the clone).
[ "$(id -u)" -eq 0 ] && packages+=(iproute2 util-linux slurm-wlm munge qemu-system-x86 mmdebstrap e2fsprogs)
missing=()
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
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
