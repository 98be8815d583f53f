#!/usr/bin/env bash
# Soft-RoCE inside a QEMU guest: real verbs traffic on a machine whose kernel has no RDMA (facts in
# shared/RIGS.md). The guest is Debian 12 (the host's release), so binaries built here run there unchanged; they
# reach it over 9p at the same paths as here. Needs root (mmdebstrap, mke2fs -d).
#
#   rxe_vm.sh build                      make the root file system, kernel, initrd and disk image (cached; a no-op
#                                        when they exist). Cache: $FABRICBENCH_VM_CACHE, else
#                                        /var/cache/fabricbench-vm (outside the clone).
#   rxe_vm.sh run JOB OUT [SHARE...]     boot, run the shell script JOB as root in the guest with rdma_rxe loaded
#                                        (rxe0 on dum0 10.9.0.1, Active; rxe1 on dum1, left down), OUT shared
#                                        read-write at the same path (the job writes its results there), every
#                                        SHARE folder read-only at the same path; power off. The job's exit status
#                                        is OUT/job.rc, its output OUT/job.log, the guest console OUT/console.log.
set -euo pipefail
cmd=${1:?usage: rxe_vm.sh build | run JOB OUT [SHARE...]}
cache=${FABRICBENCH_VM_CACHE:-/var/cache/fabricbench-vm}
image=$cache/disk.img
# The guest's packages: rxe and 9p need the full kernel (the -cloud flavour lacks both); perftest is the peer;
# the libraries are the run-time ones of fabricbench's build (Open MPI, HDF5, Boost.PO, fmt, verbs).
packages=linux-image-amd64,initramfs-tools,kmod,iproute2,procps,ibverbs-providers,ibverbs-utils,perftest,\
rdmacm-utils,openmpi-bin,libopenmpi3,libhdf5-103-1,libboost-program-options1.74.0,libfmt9,libibverbs1,\
librdmacm1,python3

build() {
  [ -f "$image" ] && [ -f "$cache/vmlinuz" ] && [ -f "$cache/initrd.img" ] &&
    [ "$(cat "$cache/recipe" 2>/dev/null)" = "$recipe" ] && return 0
  [ "$(id -u)" -eq 0 ] || { echo "rxe_vm.sh build: needs root" >&2; exit 2; }
  mkdir -p "$cache"
  local root=$cache/rootfs.tmp
  # A build killed mid-way leaves mmdebstrap's mounts (proc, sys, dev/pts, dev/shm) in the half-made root: unmount
  # them, deepest first, and never let rm cross into another file system.
  { grep -o " $root/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf --one-file-system "$root" "$image.tmp"
  # An initrd that loads only what the root disk needs halves the boot under emulation. Its settings are in place
  # before the kernel's package is installed (after the essential packages), so that the kernel's own hook makes the
  # small initrd once: the whole image 40 s (36 s of CPU) against 73 (68) when the large one was made first and then
  # the small one (2026-11-30). A hook of our own, not /etc/initramfs-tools/modules: that file is a conffile of
  # initramfs-tools, which would find it already there.
  mmdebstrap --variant=minbase --include="$packages" \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks"
      echo MODULES=list > "$1/etc/initramfs-tools/conf.d/fabricbench.conf"
      printf "#!/bin/sh\n[ \"\$1\" = prereqs ] && exit 0\n. /usr/share/initramfs-tools/hook-functions\n%s\n" \
        "force_load virtio_pci; force_load virtio_blk; force_load ext4" > "$1/etc/initramfs-tools/hooks/fabricbench"
      chmod +x "$1/etc/initramfs-tools/hooks/fabricbench"' \
    --customize-hook='echo "127.0.0.1 localhost fbguest" > "$1/etc/hosts"; echo fbguest > "$1/etc/hostname"' \
    bookworm "$root" >"$cache/mmdebstrap.log" 2>&1 || { tail -20 "$cache/mmdebstrap.log" >&2; exit 1; }
  cp "$(ls "$root"/boot/vmlinuz-* | sort | tail -1)" "$cache/vmlinuz"
  cp "$(ls "$root"/boot/initrd.img-* | sort | tail -1)" "$cache/initrd.img"
  mkdir -p "$root/fabricbench"
  # The guest's init: mounts, the shares named on the kernel command line, rxe, the job, power off.
  cat > "$root/fabricbench/init.sh" <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /dev/pts /tmp; mount -t tmpfs tmpfs /dev/shm; mount -t tmpfs tmpfs /tmp
mount -t devpts devpts /dev/pts
hostname fbguest; ip link set lo up
out=""; libs=""
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    fb.out=*) out=${arg#fb.out=}; mkdir -p "$out"; mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 fbout "$out" ;;
    # The read-only shares (the build, the libraries) do not change while the guest runs: cached (cache=loose), a
    # process's start reads its executable and libraries from the guest's memory after the first, not again over 9p
    # (an MPI job of two ranks refused at its start 2.5-2.6 s against 3.4-4.9 uncached, 2026-11-30).
    fb.share*=*) kv=${arg#fb.share}; tag=fbs${kv%%=*}; dir=${kv#*=}; mkdir -p "$dir"
                 mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro,cache=loose "$tag" "$dir" ;;
    fb.ldpath=*) libs=${arg#fb.ldpath=} ;;
  esac
done
[ -n "$libs" ] && export LD_LIBRARY_PATH=$libs
modprobe rdma_rxe
ip link add dum0 type dummy; ip addr add 10.9.0.1/24 dev dum0; ip link set dum0 up
ip link add dum1 type dummy; ip addr add 10.9.1.1/24 dev dum1
rdma link add rxe0 type rxe netdev dum0; rdma link add rxe1 type rxe netdev dum1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sh "$out/job.sh" > "$out/job.log" 2>&1
echo $? > "$out/job.rc"
sync
echo o > /proc/sysrq-trigger 2>/dev/null
poweroff -f
EOF
  chmod +x "$root/fabricbench/init.sh"
  mke2fs -q -t ext4 -d "$root" "$image.tmp" 3G
  rm -rf "$root"
  mv "$image.tmp" "$image"
  echo "$recipe" > "$cache/recipe"
}

run() {
  local job=${1:?JOB script} out=${2:?OUT folder}; shift 2
  build
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  [ "$(realpath "$job")" = "$out/job.sh" ] || cp "$job" "$out/job.sh"
  rm -f "$out/job.rc" "$out/job.log"
  local args=() append="root=/dev/vda rw console=ttyS0 init=/fabricbench/init.sh panic=-1 quiet fb.out=$out" i=0 ld=""
  args+=(-virtfs "local,path=$out,mount_tag=fbout,security_model=none,id=fbout")
  for share in "$@"; do
    share=$(cd "$share" && pwd)
    args+=(-virtfs "local,path=$share,mount_tag=fbs$i,security_model=none,readonly=on,id=fbs$i")
    append+=" fb.share$i=$share"
    i=$((i + 1))
  done
  [ -n "${FABRICBENCH_VM_LDPATH:-}" ] && append+=" fb.ldpath=$FABRICBENCH_VM_LDPATH"
  # TCG: the host's /dev/kvm is KVM-PVM, which a stock guest kernel does not boot under.
  timeout "${FABRICBENCH_VM_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
    -nographic -no-reboot -kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" -append "$append" \
    -drive "file=$image,format=raw,if=virtio,snapshot=on" "${args[@]}" > "$out/console.log" 2>&1 || true
  [ -f "$out/job.rc" ] || { echo "rxe_vm.sh: the guest ended without finishing the job (see $out/console.log)" >&2; tail -15 "$out/console.log" >&2; exit 1; }
  return 0
}

# The image is made again when this recipe changes (the packages, the hooks, the guest's init): a cached image carries
# the init of the version that made it.
recipe=$(printf '%s\n' "$packages" "$(declare -f build)" | sha256sum | cut -c1-16)

case "$cmd" in
build) build ;;
run) shift; run "$@" ;;
*) echo "rxe_vm.sh: unknown command '$cmd' (build, run)" >&2; exit 2 ;;
esac
