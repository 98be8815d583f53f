#!/usr/bin/env bash
# An emulated cluster on one machine: hosts in network + UTS namespaces on a bridge, for fabric-sweep's tests.
# Facts from shared/RIGS.md. Every name, address and port derives from RIG (a short id) and NET (the third octet),
# so two rigs can run side by side. Needs root.
#
#   netns_cluster.sh up RIG NET HOSTS        create hosts RIG-h1..RIG-hN (10.77.NET.1..N, bridge at .254)
#   netns_cluster.sh down RIG                remove everything of RIG
#   netns_cluster.sh shape-host RIG HOST RATE         TBF on both ends of HOST's link (e.g. 50mbit)
#   netns_cluster.sh shape-link RIG HOST_A HOST_B RATE   HTB + u32: only traffic between A and B is slowed
#   netns_cluster.sh drop-mpi RIG HOST PORT_MIN       drop every packet of MPI's TCP transport (ports PORT_MIN ..
#                                                     PORT_MIN+63, PORT_MIN a multiple of 64) on HOST's link; Open
#                                                     MPI's own control traffic still passes (mpirun can clean up)
#   netns_cluster.sh restore RIG HOST                 remove what shape-host or drop-mpi put on HOST's link
#   netns_cluster.sh mpirun RIG NP HOSTS -- ARGS...   mpirun across the hosts (rsh agent entering namespaces)
#   netns_cluster.sh mpirun-opts RIG                  those mpirun options, one per line
#   netns_cluster.sh exec RIG -- CMD...               CMD (a launcher given those options) with the rig's name lookups
set -euo pipefail
cmd=${1:?usage: netns_cluster.sh up|down|shape-host|shape-link|mpirun RIG ...}
rig=${2:?rig id}
. "$(dirname "$0")/netns_hosts.sh"

case "$cmd" in
up)
  net=${3:?NET (third octet)}; n=${4:?number of hosts}
  [[ "$net" =~ ^[0-9]+$ && "$net" -le 255 && "$n" =~ ^[0-9]+$ && "$n" -ge 2 && "$n" -le 32 ]] || { echo "bad NET or HOSTS" >&2; exit 2; }
  rig_hosts_up "$n"
  echo "$net" > "$state/net"
  ip link add "${rig}br" type bridge
  ip addr add "10.77.$net.254/24" dev "${rig}br"
  ip link set "${rig}br" up
  for i in $(seq 1 "$n"); do
    h=$rig-h$i
    ip link add "${rig}v$i" type veth peer name "${rig}p$i"
    ip link set "${rig}v$i" master "${rig}br" up
    ip link set "${rig}p$i" netns "$h"
    ip -n "$h" link set "${rig}p$i" name eth0
    ip -n "$h" addr add "10.77.$net.$i/24" dev eth0
    ip -n "$h" link set eth0 up
    echo "10.77.$net.$i $h" >> "$state/hosts"
  done
  ;;
down)
  rig_down "^${rig}v[0-9]"
  ip link del "${rig}br" 2>/dev/null || true
  ;;
shape-host)
  h=$3; rate=$4; i=$(host_index "$h")
  tc qdisc replace dev "${rig}v$i" root tbf rate "$rate" burst 32kbit latency 50ms
  in_host "$h" tc qdisc replace dev eth0 root tbf rate "$rate" burst 32kbit latency 50ms
  ;;
shape-link)
  a=$3; b=$4; rate=$5; net=$(cat "$state/net")
  for pair in "$a $b" "$b $a"; do
    set -- $pair
    peer_ip=10.77.$net.$(host_index "$2")
    in_host "$1" tc qdisc replace dev eth0 root handle 1: htb default 10
    in_host "$1" tc class add dev eth0 parent 1: classid 1:10 htb rate 10gbit
    in_host "$1" tc class add dev eth0 parent 1: classid 1:20 htb rate "$rate"
    in_host "$1" tc filter add dev eth0 protocol ip parent 1: prio 1 u32 match ip dst "$peer_ip/32" flowid 1:20
  done
  ;;
drop-mpi)
  # No drop action in this kernel (no act_gact, no prio qdisc): an HTB class of 8 bit/s holds those packets until
  # its queue overflows, which drops them all in practice (one 1500-byte packet would take 25 minutes).
  h=$3; port=$4; i=$(host_index "$h")
  [[ "$port" =~ ^[0-9]+$ && $((port % 64)) -eq 0 ]] || { echo "PORT_MIN '$port': a multiple of 64" >&2; exit 2; }
  for side in root host; do
    if [ "$side" = host ]; then where=(in_host "$h"); d=eth0; else where=(); d=${rig}v$i; fi
    "${where[@]}" tc qdisc replace dev "$d" root handle 1: htb default 10
    "${where[@]}" tc class add dev "$d" parent 1: classid 1:10 htb rate 10gbit
    "${where[@]}" tc class add dev "$d" parent 1: classid 1:20 htb rate 8bit ceil 8bit
    for field in sport dport; do
      "${where[@]}" tc filter add dev "$d" protocol ip parent 1: prio 1 u32 match ip "$field" "$port" 0xffc0 flowid 1:20
    done
  done
  ;;
restore)
  h=$3; i=$(host_index "$h")
  tc qdisc del dev "${rig}v$i" root 2>/dev/null || true
  in_host "$h" tc qdisc del dev eth0 root 2>/dev/null || true
  ;;
mpirun-opts)  # the options below, one per line (for launch/fabric-mpirun --mpirun-opt)
  net=$(cat "$state/net")
  printf '%s\n' --oversubscribe --mca plm_rsh_agent "$state/agent" --mca mpi_yield_when_idle 1 --mca btl self,tcp \
    --mca btl_tcp_if_include "10.77.$net.0/24" --mca oob_tcp_if_include "10.77.$net.0/24"
  ;;
mpirun)
  np=$3; hosts=$4; shift 4; [ "${1:-}" = "--" ] && shift
  net=$(cat "$state/net")
  # mpi_yield_when_idle: all emulated hosts share this machine's cores. Busy-polling ranks whose two ends land on
  # one core alternate in scheduler slices and a pair collapses to ~35 MB/s (seen here, sticky across re-tests);
  # yielding while idle removes that. Real hosts have cores of their own.
  rig_exec_files_only mpirun --allow-run-as-root --oversubscribe -np "$np" --host "$hosts" \
    --mca plm_rsh_agent "$state/agent" --mca mpi_yield_when_idle 1 \
    --mca btl self,tcp --mca btl_tcp_if_include "10.77.$net.0/24" --mca oob_tcp_if_include "10.77.$net.0/24" \
    --bind-to none "$@"
  ;;
exec)  # any command (launch/fabric-mpirun with the options above) with the rig's name lookups, as mpirun above
  shift 2; [ "${1:-}" = "--" ] && shift
  rig_exec_files_only "$@"
  ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac
