#!/bin/sh
# Rails of Soft-RoCE inside the QEMU guest of rxe_vm.sh (runs there, as root): fake hosts (fabric-sweep's
# --emulate-hosts) each with one rxe device per rail, whose traffic really crosses a network that tc
# can shape. The guest's kernel has rxe in its first network namespace only, so the "hosts" share it: per rail r a
# bridge fbr<r>; per host h (0-based) and rail r a veth pair h<h>r<r> (10.10.<r>.<h+1>/24, the rxe device rxe_h<h>r<r>
# on it) whose other end b<h>r<r> is a port of the rail's bridge.
#
# Two local addresses would talk through lo, and rxe drops what arrives on a netdev without an rxe device (and
# loops back inside itself, past tc, between two ends of one device), so the routing is changed: the local table is
# looked up after rules that send what this machine itself sends from 10.10.<r>.<h+1> to another address out of
# h<h>r<r> (to the address itself it stays on lo, as a TCP connect's second route lookup needs); a packet
# arriving on a veth is still delivered locally (accept_local: its source is one of this machine's addresses).
#
#   rxe_rails.sh up HOSTS RAILS          build it
#   rxe_rails.sh delay HOST RAIL MS      delay host HOST's rail RAIL by MS milliseconds each way (netem on both ends
#                                        of its veth): rxe keeps at most 128 packets unacknowledged, so a longer round
#                                        trip caps the rail's bandwidth
#   rxe_rails.sh clear                   remove every delay
#   rxe_rails.sh exec RAILS CMD...       (a rank's wrapper under mpirun) run CMD with FABRICBENCH_RAIL_NIC naming the
#                                        rank's rail device, as a launcher's nearest-NIC choice would
set -eu
cmd=${1:?usage: rxe_rails.sh up HOSTS RAILS | delay HOST RAIL MS | clear | exec RAILS CMD...}
shift

sys() { echo "$2" > "/proc/sys/net/ipv4/conf/$1"; }

up() {
  hosts=$1 rails=$2
  for scope in all default; do
    sys "$scope/rp_filter" 0
    sys "$scope/accept_local" 1
    sys "$scope/arp_ignore" 1  # answer ARP only on the veth that holds the address
  done
  ip rule add pref 1000 lookup local
  ip rule del pref 0
  r=0
  while [ "$r" -lt "$rails" ]; do
    ip link add "fbr$r" type bridge
    ip link set "fbr$r" up
    h=0
    while [ "$h" -lt "$hosts" ]; do
      dev="h${h}r$r" addr="10.10.$r.$((h + 1))" table=$((100 + r * 64 + h))
      ip link add "$dev" type veth peer name "b${h}r$r"
      ip link set "b${h}r$r" master "fbr$r" up
      ip addr add "$addr/24" dev "$dev"
      ip link set "$dev" up
      ip route add "10.10.$r.0/24" dev "$dev" src "$addr" table "$table"
      ip rule add pref 10 from "$addr" iif lo lookup "$table"
      ip rule add pref 5 from "$addr" to "$addr" lookup local  # to itself (a TCP connect's second lookup): lo
      rdma link add "rxe_$dev" type rxe netdev "$dev"
      h=$((h + 1))
    done
    r=$((r + 1))
  done
}

delay() {
  for dev in "h${1}r$2" "b${1}r$2"; do
    tc qdisc replace dev "$dev" root netem delay "${3}ms" limit 10000
  done
}

clear_delays() {
  for dev in $(ls /sys/class/net); do
    case "$dev" in h*r* | b*r*) tc qdisc del dev "$dev" root 2>/dev/null || true ;; esac
  done
}

case "$cmd" in
up) up "$@" ;;
delay) delay "$@" ;;
clear) clear_delays ;;
exec)
  rails=$1
  shift
  rank=${OMPI_COMM_WORLD_RANK:?rxe_rails.sh exec: run under mpirun}
  FABRICBENCH_RAIL_NIC="rxe_h$((rank / rails))r$((rank % rails)):1" exec "$@"
  ;;
*) echo "rxe_rails.sh: unknown command '$cmd' (up, delay, clear, exec)" >&2; exit 2 ;;
esac
