#!/usr/bin/env bash
# An emulated two-level fabric with rails on one machine (shared/RIGS.md, "A two-level fabric with rails"): hosts in
# network + UTS namespaces, one veth per rail in each host (eth0, eth1, ...), per rail a leaf bridge per group of
# hosts and a spine bridge above them, each leaf joined to its spine by a veth pair (the leaf's uplink). Rail r is the
# subnet 10.(100+r).NET.0/24. Every name derives from RIG (a short id) and NET, so two rigs can run side by side.
# Needs root.
#
#   rails_fabric.sh up RIG NET HOSTS RAILS LEAVES   hosts RIG-h1..RIG-hN; LEAVES: leaf sizes, e.g. 4,4 or 3,3,2
#   rails_fabric.sh down RIG
#   rails_fabric.sh topology RIG                    the switch tree in Slurm's topology.conf format (Rail= per switch)
#   rails_fabric.sh rail-map RIG                    the rail map (RAIL net=SUBNET per line)
#   rails_fabric.sh shape-nic RIG HOST RAIL RATE    TBF on both ends of HOST's veth on RAIL (a bad NIC or cable)
#   rails_fabric.sh shape-host RIG HOST RATE        every rail of HOST (a bad node)
#   rails_fabric.sh shape-uplink RIG RAIL LEAF RATE TBF on both ends of LEAF's (1-based) uplink on RAIL
#   rails_fabric.sh shape-link RIG A B RAIL RATE    HTB + u32 on RAIL: only traffic between A and B is slowed
#   rails_fabric.sh misbind RIG HOST                HOST's rail-1 rank is given rail 0's subnet, and its packets
#                                                   from that address leave by eth0 (policy routing): its rail-1
#                                                   traffic goes by the rail-0 NIC
#   rails_fabric.sh mpirun RIG HOSTS -- ARGS...     one rank per rail on each host, each rank's MPI on its rail
set -euo pipefail
cmd=${1:?usage: rails_fabric.sh up|down|topology|rail-map|shape-*|misbind|mpirun RIG ...}
rig=${2:?rig id}
. "$(dirname "$0")/netns_hosts.sh"
tbf() { "$@" root tbf rate "$rate" burst 32kbit latency 50ms; }

case "$cmd" in
up)
  net=${3:?NET}; n=${4:?HOSTS}; rails=${5:?RAILS}; leaves=${6:?LEAVES}
  [[ "$net" =~ ^[0-9]+$ && "$net" -le 255 && "$n" =~ ^[0-9]+$ && "$n" -ge 2 && "$n" -le 32 && "$rails" =~ ^[1-8]$ ]] \
    || { echo "bad NET, HOSTS or RAILS" >&2; exit 2; }
  IFS=, read -ra sizes <<< "$leaves"
  total=0; for s in "${sizes[@]}"; do total=$((total + s)); done
  [ "$total" -eq "$n" ] || { echo "LEAVES $leaves: sizes must add up to $n hosts" >&2; exit 2; }
  rig_hosts_up "$n"
  echo "$net" > "$state/net"; echo "$rails" > "$state/rails"; echo "$leaves" > "$state/leaves"; echo "$n" > "$state/hosts"
  for r in $(seq 0 $((rails - 1))); do
    ip link add "${rig}s$r" type bridge
    ip link set "${rig}s$r" up
    first=1
    for j in $(seq 1 "${#sizes[@]}"); do
      leaf=${rig}l${r}x$j
      ip link add "$leaf" type bridge
      ip link set "$leaf" up
      ip link add "${rig}u${r}x$j" type veth peer name "${rig}d${r}x$j"   # the uplink: leaf side u, spine side d
      ip link set "${rig}u${r}x$j" master "$leaf" up
      ip link set "${rig}d${r}x$j" master "${rig}s$r" up
      for i in $(seq "$first" $((first + sizes[j - 1] - 1))); do
        h=$rig-h$i
        ip link add "${rig}v${i}r$r" type veth peer name "${rig}p${i}r$r"
        ip link set "${rig}v${i}r$r" master "$leaf" up
        ip link set "${rig}p${i}r$r" netns "$h"
        ip -n "$h" link set "${rig}p${i}r$r" name "eth$r"
        ip -n "$h" addr add "10.$((100 + r)).$net.$i/24" dev "eth$r"
        ip -n "$h" link set "eth$r" up
      done
      first=$((first + sizes[j - 1]))
    done
  done
  # mpirun's daemons talk over rail 0: the root namespace gets an address on rail 0's spine.
  ip addr add "10.100.$net.254/24" dev "${rig}s0"
  # Each rank's MPI on its rail (local rank r -> rail r's subnet), unless this host's rail 1 is misbound.
  cat > "$state/rail-exec" <<EXEC
#!/bin/sh
r=\${OMPI_COMM_WORLD_LOCAL_RANK:-0}
if [ -f "$state/misbind" ] && [ "\$(hostname)" = "\$(cat "$state/misbind")" ] && [ "\$r" = 1 ]; then r=0; fi
export OMPI_MCA_btl_tcp_if_include=10.\$((100 + r)).$net.0/24
exec "\$@"
EXEC
  chmod +x "$state/rail-exec"
  ;;
down)
  rig_down "^${rig}[vudls][0-9]"
  ;;
topology)
  rails=$(cat "$state/rails"); IFS=, read -ra sizes < "$state/leaves"
  for r in $(seq 0 $((rails - 1))); do
    first=1
    for j in $(seq 1 "${#sizes[@]}"); do
      echo "SwitchName=rail$r-leaf$j Nodes=$rig-h[$first-$((first + sizes[j - 1] - 1))] Rail=$r"
      first=$((first + sizes[j - 1]))
    done
    echo "SwitchName=rail$r-spine Switches=rail$r-leaf[1-${#sizes[@]}] Rail=$r"
  done
  ;;
rail-map)
  net=$(cat "$state/net"); rails=$(cat "$state/rails")
  for r in $(seq 0 $((rails - 1))); do echo "$r net=10.$((100 + r)).$net.0/24"; done
  ;;
shape-nic)
  h=$3; r=$4; rate=$5; i=$(host_index "$h")
  tbf tc qdisc replace dev "${rig}v${i}r$r"
  tbf in_host "$h" tc qdisc replace dev "eth$r"
  ;;
shape-host)
  h=$3; rate=$4; i=$(host_index "$h")
  for r in $(seq 0 $(($(cat "$state/rails") - 1))); do
    tbf tc qdisc replace dev "${rig}v${i}r$r"
    tbf in_host "$h" tc qdisc replace dev "eth$r"
  done
  ;;
shape-uplink)
  r=$3; j=$4; rate=$5
  tbf tc qdisc replace dev "${rig}u${r}x$j"
  tbf tc qdisc replace dev "${rig}d${r}x$j"
  ;;
shape-link)
  a=$3; b=$4; r=$5; rate=$6; net=$(cat "$state/net")
  for pair in "$a $b" "$b $a"; do
    set -- $pair
    peer_ip=10.$((100 + r)).$net.$(host_index "$2")
    in_host "$1" tc qdisc replace dev "eth$r" root handle 1: htb default 10
    in_host "$1" tc class add dev "eth$r" parent 1: classid 1:10 htb rate 10gbit
    in_host "$1" tc class add dev "eth$r" parent 1: classid 1:20 htb rate "$rate"
    in_host "$1" tc filter add dev "eth$r" protocol ip parent 1: prio 1 u32 match ip dst "$peer_ip/32" flowid 1:20
  done
  ;;
misbind)
  h=$3; i=$(host_index "$h"); net=$(cat "$state/net")
  echo "$h" > "$state/misbind"
  # Packets from the rail-0 address leave by eth0 whatever their destination; the peers' eth0 answer ARP for their
  # rail-1 addresses (Linux answers for any local address by default) and reply to rail 0's subnet by eth0.
  in_host "$h" ip rule add from "10.100.$net.$i" table 100
  in_host "$h" ip route add "10.0.0.0/8" dev eth0 table 100
  ;;
mpirun)
  hosts=$3; shift 3; [ "${1:-}" = "--" ] && shift
  net=$(cat "$state/net"); rails=$(cat "$state/rails")
  IFS=, read -ra list <<< "$hosts"
  slots=""; for h in "${list[@]}"; do slots+="${slots:+,}$h:$rails"; done
  # mpi_yield_when_idle: all emulated hosts share this machine's cores (see netns_cluster.sh).
  rig_exec_files_only mpirun --allow-run-as-root --oversubscribe -np $((${#list[@]} * rails)) --host "$slots" \
    --map-by "ppr:$rails:node" --mca plm_rsh_agent "$state/agent" --mca mpi_yield_when_idle 1 --mca btl self,vader,tcp \
    --mca oob_tcp_if_include "10.100.$net.0/24" --bind-to none "$state/rail-exec" "$@"
  ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac
