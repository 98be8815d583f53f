# Sourced by the rigs (netns_cluster.sh, rails_fabric.sh): emulated hosts as network + UTS namespaces, the rsh agent
# mpirun enters them with, and their teardown. Expects $rig (the rig id); sets $state (its run folder).
[[ "$rig" =~ ^[a-z][a-z0-9]{0,5}$ ]] || { echo "rig id '$rig': 1-6 lowercase letters/digits, starting with a letter" >&2; exit 2; }
state=/run/fabricbench-rig-$rig

# "RIG-h3" -> 3; any other name is refused.
host_index() { [[ "$1" =~ ^$rig-h([0-9]+)$ ]] || { echo "unknown host '$1' (expected $rig-hN)" >&2; exit 2; }; echo "${BASH_REMATCH[1]}"; }
# Run a command inside a host's network and UTS namespaces.
in_host() { local h=$1; shift; nsenter --net=/run/netns/"$h" --uts="$state/uts/$h" -- "$@"; }

# Namespaces $rig-h1..$rig-hN, each with its own host name and lo up, and the agent.
rig_hosts_up() {
  local n=$1 i h
  mkdir -p "$state/uts"
  # A private mount so that namespace files can be bind-mounted onto files in it.
  mountpoint -q "$state/uts" || { mount --bind "$state/uts" "$state/uts" && mount --make-private "$state/uts"; }
  for i in $(seq 1 "$n"); do
    h=$rig-h$i
    ip netns add "$h"
    ip -n "$h" link set lo up
    touch "$state/uts/$h"
    unshare --uts="$state/uts/$h" hostname "$h"
  done
  # The rsh agent Open MPI calls as "agent HOST COMMAND...": run the command inside that host's namespaces.
  cat > "$state/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in $rig-h[0-9]*) ;; *) echo "agent: unknown host \$host" >&2; exit 1;; esac
exec nsenter --net=/run/netns/"\$host" --uts="$state/uts/\$host" -- /bin/sh -c "\$*"
AGENT
  chmod +x "$state/agent"
  # The name service of the rig's launches (rig_exec_files_only): the host's, with host names from files only.
  if [ -f /etc/nsswitch.conf ]; then
    { grep -v '^hosts:' /etc/nsswitch.conf || true; echo "hosts: files"; } > "$state/nsswitch.conf"
  fi
}

# Run "$@" (mpirun, or a launcher that calls it) with the host names resolved from files only: in a private mount
# namespace whose /etc/nsswitch.conf says `hosts: files`, which mpirun, its daemons and the ranks all inherit. The
# emulated hosts' names are in no DNS, so the answer is the same (not found), only without asking: mpirun looks each
# host's name up several times, and where the resolver drops a query glibc waits its 5 s timeout. Here one lookup in
# about 30 took 5 s, and mpirun across 8 emulated hosts started 5.2 s late every time (0.26 s with files only).
rig_exec_files_only() {
  [ -f /etc/nsswitch.conf ] && [ -f "$state/nsswitch.conf" ] || exec "$@"  # nothing to bind over: ask as the host does
  exec unshare --mount --propagation private \
    sh -c 'mount --bind "$0" /etc/nsswitch.conf && exec "$@"' "$state/nsswitch.conf" "$@"
}

# Everything of the rig: its hosts, the links whose names match the extended regex $1, its run folder.
rig_down() {
  local links=$1 ns link f
  # Processes still inside a host (a rank stuck on a cut link) keep its namespace and veth alive after `netns del`,
  # and the next `up` of the same rig would find them: kill them first, and delete the links by name.
  for ns in $(ip netns list | awk '{print $1}' | grep "^$rig-h" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  sleep 0.2
  for ns in $(ip netns list | awk '{print $1}' | grep "^$rig-h" || true); do ip netns del "$ns" || true; done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "$links" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if [ -d "$state/uts" ]; then
    for f in "$state"/uts/*; do [ -e "$f" ] && { umount "$f" 2>/dev/null || true; }; done
    umount "$state/uts" 2>/dev/null || true
  fi
  rm -rf "$state"
}
