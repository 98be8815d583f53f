#!/usr/bin/env bash
# A real Slurm on the emulated cluster of netns_cluster.sh (facts from shared/RIGS.md): munge with its own key and
# socket, slurmctld in the root namespace on the bridge address, one slurmd per namespace host; every path under
# the rig's run folder and the controller's port derived from NET, so rigs can run side by side. Needs root.
#
#   slurm_cluster.sh up RIG [CONF] (after: netns_cluster.sh up RIG NET N); CONF: more slurm.conf lines (a file)
#   slurm_cluster.sh down RIG
#   slurm_cluster.sh env RIG       prints the variables srun/sbatch need (SLURM_CONF, OMPI_MCA_* for TCP)
set -euo pipefail
cmd=${1:?usage: slurm_cluster.sh up|down|env RIG}
rig=${2:?rig id}
[[ "$rig" =~ ^[a-z][a-z0-9]{0,5}$ ]] || { echo "rig id '$rig': 1-6 lowercase letters/digits" >&2; exit 2; }
state=/run/fabricbench-rig-$rig
dir=$state/slurm

# KILL every daemon named by the pid files and wait until each is gone (up to 10 s). The rig is thrown away with its
# folder, so no daemon needs to save its state: on TERM slurmctld and slurmd took about 2 s each to stop, and `down`
# 3.4-5.3 s; the jobs' processes inside the hosts go with their namespaces (netns_cluster.sh down).
stop_pid_files() {
  local f pid pids=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$f"
  done
  for _ in $(seq 1 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
}

case "$cmd" in
up)
  [ -f "$state/net" ] || { echo "no netns rig '$rig': run netns_cluster.sh up first" >&2; exit 2; }
  net=$(cat "$state/net")
  mapfile -t hosts < <(awk '{print $2}' "$state/hosts")
  mkdir -p "$dir/state" "$dir/log"
  for h in "${hosts[@]}"; do mkdir -p "$dir/spool/$h" "$dir/tmp/$h"; done
  # munge: its own key, socket and pid file.
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge.key"
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed"
  port=$((6900 + net))
  {
    echo "ClusterName=fb$rig"
    echo "SlurmctldHost=$(hostname)(10.77.$net.254)"
    echo "SlurmctldPort=$port"
    echo "SlurmdPort=$((port + 300))"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge.sock"
    echo "CredType=cred/munge"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "TmpFS=$dir/tmp/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SelectType=select/cons_tres"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "PropagateResourceLimits=NONE"
    echo "SlurmdTimeout=30"
    [ -z "${3:-}" ] || cat "$3"
    for i in "${!hosts[@]}"; do echo "NodeName=${hosts[$i]} NodeAddr=10.77.$net.$((i + 1)) CPUs=2 State=UNKNOWN"; done
    echo "PartitionName=fb Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
  } > "$dir/slurm.conf"
  slurmctld -f "$dir/slurm.conf"
  for h in "${hosts[@]}"; do
    nsenter --net=/run/netns/"$h" --uts="$state/uts/$h" -- slurmd -f "$dir/slurm.conf" -N "$h"
  done
  # Up: every node registered, idle or drained (a health check in CONF may drain one as slurmd starts).
  for _ in $(seq 1 100); do
    idle=$(SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T %D' 2>/dev/null | awk '$1=="idle"||$1=="drained"{n+=$2} END{print n}')
    [ "${idle:-0}" = "${#hosts[@]}" ] && exit 0
    sleep 0.2
  done
  echo "slurm did not come up; see $dir/log" >&2
  exit 1
  ;;
down)
  [ -d "$dir" ] || exit 0
  stop_pid_files "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munged.pid"
  rm -rf "$dir"
  ;;
env)
  net=$(cat "$state/net")
  echo "SLURM_CONF=$dir/slurm.conf"
  echo "OMPI_MCA_btl=self,tcp"
  echo "OMPI_MCA_btl_tcp_if_include=10.77.$net.0/24"
  echo "OMPI_MCA_mpi_yield_when_idle=1"
  ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac
