#!/usr/bin/env bash
# fabric-doctor's cheap checks on this node alone, for Slurm's HealthCheckProgram or a Prolog: a failed check drains
# the node with the finding as the reason; a warning is only logged; a doctor that cannot run is logged, never a
# reason to drain. Nothing else on the node is touched. docs/operations.md has the slurm.conf lines.
#
#   healthcheck.sh [--bin DIR] [--node NAME] [--strict] [--dry-run] [--prolog] [--log FILE]
#                  [--baseline FILE [--bandwidth 'TOOL ARGS'] [--ranks N]]
# With --baseline, the node's own bandwidth too: TOOL (default fabric-coll over the node's GPUs) under a local mpirun,
# held against FILE (fabric-report baseline of a healthy node's run of the same command); a value below it fails.
#
# Exit status: 0, whatever was found: Slurm takes no action on a HealthCheckProgram's status (the drain is ours) and a
# Prolog that exits non-zero makes Slurm drain the node itself. As a Prolog (--prolog, or SLURM_SCRIPT_CONTEXT=
# prolog_slurmd): 1 after draining for a failed check, so Slurm requeues the job instead of starting it on a node that
# just failed; never for a warning or a doctor that could not run. 2: bad options.
set -uo pipefail
# slurmd runs health checks and prologs without a search path.
export PATH=${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}
[ -n "$PATH" ] || PATH=/usr/sbin:/usr/bin:/sbin:/bin
prog=fabricbench-healthcheck

usage() {
  cat <<EOF
usage: healthcheck.sh [--bin DIR] [--node NAME] [--strict] [--dry-run] [--prolog] [--log FILE]
                      [--baseline FILE [--bandwidth 'TOOL ARGS'] [--ranks N]]
Runs fabric-doctor --checks cheap on this node (one process, no mpirun). A failed check drains the node:
  scontrol update nodename=NODE state=drain reason="fabricbench: CHECK SUBJECT VALUE"
a warning is only logged (--strict: drains too); a doctor that cannot run is logged and drains nothing.
  --bin DIR    where fabric-doctor is (default: \$FABRICBENCH_BIN, else next to this script's install)
  --node NAME  the Slurm node name (default: \$SLURMD_NODENAME, else hostname -s)
  --strict     drain on a warning too
  --dry-run    print the scontrol command instead of running it
  --prolog     exit 1 after a drain so Slurm requeues the job (default when SLURM_SCRIPT_CONTEXT=prolog_slurmd)
  --log FILE   also append every log line to FILE (syslog through logger where present, and stderr, always)
  --baseline FILE   also measure this node's bandwidth and fail when a value is below FILE (fabric-report baseline
               of a healthy node's run of the same command); a run that cannot say (timeout, a baseline that does not
               match the command) is logged and drains nothing
  --bandwidth 'TOOL ARGS'   that command (default: '$default_bandwidth')
  --ranks N    its processes, one per GPU (default: the GPUs nvidia-smi lists, else 2)
EOF
}

refuse() { echo "$prog: $1 (see --help)" >&2; exit 2; }

bin=${FABRICBENCH_BIN:-}
node=${SLURMD_NODENAME:-}
strict=0
dry_run=0
prolog=0
[ "${SLURM_SCRIPT_CONTEXT:-}" = prolog_slurmd ] && prolog=1
logfile=
baseline=
default_bandwidth="fabric-coll --backend nccl --op all_reduce -b 64M -e 1G -f 4"
bandwidth=$default_bandwidth
ranks=
while [ $# -gt 0 ]; do
  case "$1" in
    --bin|--node|--log|--baseline|--bandwidth|--ranks)
      [ $# -ge 2 ] && [ -n "$2" ] || refuse "$1 needs a value"
      case "$1" in --bin) bin=$2 ;; --node) node=$2 ;; --log) logfile=$2 ;; --baseline) baseline=$2 ;;
        --bandwidth) bandwidth=$2 ;; --ranks) ranks=$2 ;; esac
      shift 2 ;;
    --bin=*) bin=${1#*=}; [ -n "$bin" ] || refuse "--bin needs a value"; shift ;;
    --node=*) node=${1#*=}; [ -n "$node" ] || refuse "--node needs a value"; shift ;;
    --log=*) logfile=${1#*=}; [ -n "$logfile" ] || refuse "--log needs a value"; shift ;;
    --strict) strict=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --prolog) prolog=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) refuse "unknown option '$1'" ;;
  esac
done
[ -n "$node" ] || node=$(hostname -s 2>/dev/null || hostname)
if [ -n "$baseline" ]; then
  [ -f "$baseline" ] && [ -r "$baseline" ] || refuse "--baseline '$baseline': no readable file"
  case "${bandwidth%% *}" in fabric-coll|fabric-p2p|fabric-verbs) ;;
    *) refuse "--bandwidth '$bandwidth': a command of fabric-coll, fabric-p2p or fabric-verbs and its options" ;; esac
  [ -z "$ranks" ] || [[ "$ranks" =~ ^[1-9][0-9]{0,3}$ ]] || refuse "--ranks '$ranks': a whole number from 1"
  baseline=$(readlink -f "$baseline")
fi
[[ "$node" =~ ^[A-Za-z0-9._-]+$ ]] || refuse "--node '$node': a Slurm node name (letters, digits, . _ -)"

# One line to stderr, to syslog where logger is, and to --log FILE. PRIORITY: warning, err or notice.
log() {
  local priority=$1 line="$prog: $node: $2"
  echo "$line" >&2
  command -v logger >/dev/null 2>&1 && logger -t "$prog" -p "daemon.$priority" -- "$2" 2>/dev/null
  [ -z "$logfile" ] || echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $line" >> "$logfile" 2>/dev/null
  return 0
}

if [ -z "$bin" ]; then
  here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
  # Installed: <prefix>/share/fabricbench/slurm/healthcheck.sh beside <prefix>/bin; a source tree: build/benchmarks.
  for d in "$here/../../../bin" "$here/../../build/benchmarks"; do
    [ -x "$d/fabric-doctor" ] && { bin=$d; break; }
  done
fi
doctor=${bin:+$bin/}fabric-doctor
if [ -z "$bin" ] || [ ! -x "$doctor" ]; then
  log err "fabric-doctor not found (${bin:-no --bin, \$FABRICBENCH_BIN or installed prefix}): no check ran, node left as it is"
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabricbench-healthcheck.XXXXXX") || { log err "cannot make a temporary folder: no check ran"; exit 0; }
trap 'rm -rf "$tmp"' EXIT

# The findings come from --csv (/doctor/findings as RFC 4180 CSV: a header naming the columns, fields with commas or
# quotes quoted), read without Python; the terminal table is for people and its widths change. A singleton MPI run:
# Slurm's and PMIx's variables are removed so Open MPI does not take the prolog's job for a direct launch by srun.
# HealthCheckProgram is killed after 60 s, so the doctor gets 40.
(
  cd "$tmp" || exit 3
  for v in $(compgen -e); do case "$v" in SLURM_*|SLURMD_*|PMIX_*|PMI_*) unset "$v" ;; esac; done
  exec timeout -k 5 40 "$doctor" --checks cheap --output "$tmp/doctor.h5" --csv "$tmp/findings.csv" --quiet \
    --timeout 30 </dev/null
) >"$tmp/doctor.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  why="exit status $rc"; [ "$rc" -eq 124 ] && why="timed out after 40 s"; [ "$rc" -gt 128 ] && why="killed by signal $((rc - 128))"
  log err "fabric-doctor did not finish ($why): no check counted, node left as it is; $(tail -n 1 "$tmp/doctor.out" | tr -d '\r')"
  exit 0
fi

# Rows of the findings whose status is warn or fail, as STATUS<TAB>CHECK<TAB>SUBJECT<TAB>VALUE (columns by name).
problems=$(awk '
  function split_csv(line,    i, c, f, n, quoted) {
    n = 0; f = ""; quoted = 0
    for (i = 1; i <= length(line); i++) {
      c = substr(line, i, 1)
      if (quoted) {
        if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { f = f c; i++ } else quoted = 0 }
        else f = f c
      } else if (c == "\"") quoted = 1
      else if (c == ",") { field[++n] = f; f = "" }
      else f = f c
    }
    field[++n] = f
    return quoted ? -1 : n
  }
  function clean(s) { gsub(/[\t\r\n]+/, " ", s); return s }
  {
    record = pending == "" ? $0 : pending "\n" $0
    n = split_csv(record)
    if (n < 0) { pending = record; next }  # a quoted field goes on over the next line
    pending = ""
    if (!header) { for (i = 1; i <= n; i++) col[field[i]] = i; header = 1; next }
    s = field[col["status"]]
    if (s == "fail" || s == "warn")
      print s "\t" clean(field[col["check"]]) "\t" clean(field[col["subject"]]) "\t" clean(field[col["value"]])
  }
  END { if (!header || !("status" in col) || !("check" in col)) exit 3 }
' "$tmp/findings.csv" 2>/dev/null)
if [ $? -ne 0 ]; then
  log err "fabric-doctor exited $rc but its findings ($tmp/findings.csv) are missing or unreadable: node left as it is"
  exit 0
fi

fails=()
warns=()
while IFS=$'\t' read -r status check subject value; do
  [ -n "$status" ] || continue
  finding="$check $subject${value:+ $value}"
  if [ "$status" = fail ]; then fails+=("$finding"); else warns+=("$finding"); fi
done <<< "$problems"
if [ "$rc" -eq 1 ] && [ ${#fails[@]} -eq 0 ]; then
  log err "fabric-doctor exited 1 but recorded no failed check: node left as it is"
  exit 0
fi

# The node's own bandwidth against --baseline: the command under a local mpirun, one rank per GPU, as the doctor
# without Slurm's variables. Below the baseline is a failure like a check's; a run that gives no answer is logged only.
if [ -n "$baseline" ]; then
  if [ -z "$ranks" ]; then
    ranks=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    [ "$ranks" -ge 1 ] 2>/dev/null || ranks=2
  fi
  read -r -a words <<< "$bandwidth"
  as_root=()
  [ "$(id -u)" -eq 0 ] && as_root=(--allow-run-as-root)
  (
    cd "$tmp" || exit 3
    for v in $(compgen -e); do case "$v" in SLURM_*|SLURMD_*|PMIX_*|PMI_*) unset "$v" ;; esac; done
    exec timeout -k 5 40 mpirun "${as_root[@]}" -np "$ranks" --bind-to none "$bin/${words[0]}" "${words[@]:1}" \
      --baseline "$baseline" --output "$tmp/bandwidth.h5" --quiet --timeout 30 </dev/null
  ) >"$tmp/bandwidth.out" 2>&1
  brc=$?
  below=$(grep -m1 "below baseline: " "$tmp/bandwidth.out" | sed 's/.*below baseline: //' | tr -d '\r')
  if [ "$brc" -eq 0 ]; then
    log notice "bandwidth within the baseline: $bandwidth on $ranks rank(s) against $baseline"
  elif [ "$brc" -eq 1 ] && [ -n "$below" ]; then
    # "[results/coll 3] busbw_gbps (op=all_reduce, ...): 120.3 against 330.9 (higher is better, ...)": the reason
    # keeps the entry, the column and the two figures; the log keeps the whole line.
    log err "bandwidth below the baseline: $below"
    fails+=("bandwidth $(echo "$below" | sed -E 's/ \([^)]*\): / /; s/ \((higher|lower) is better.*//' | tr -d '[]')")
  else
    why="exit status $brc"; [ "$brc" -eq 124 ] && why="timed out after 40 s"
    said=$(grep -m1 -E '^fabric-[a-z0-9]+: ' "$tmp/bandwidth.out" | tr -d '\r')
    [ -n "$said" ] || said=$(grep -v '^[-[:space:]]*$' "$tmp/bandwidth.out" | tail -n 1 | tr -d '\r')
    log err "bandwidth against the baseline gave no answer ($why): node left as it is; $said"
  fi
fi

for w in "${warns[@]}"; do log warning "warning: $w"; done
drain_for=("${fails[@]}")
[ "$strict" -eq 1 ] && drain_for+=("${warns[@]}")
[ ${#drain_for[@]} -gt 0 ] || exit 0

# The reason: the first finding, short (sinfo -R shows the first 20 characters by default), plus how many others.
first=${drain_for[0]}
first=${first//[^A-Za-z0-9 ._:\/=+,()@%-]/_}  # nothing a shell or scontrol's parser would read
[ ${#first} -le 80 ] || first="${first:0:77}..."
reason="fabricbench: $first"
[ ${#drain_for[@]} -gt 1 ] && reason+=" (+$((${#drain_for[@]} - 1)) more)"
for f in "${fails[@]}"; do log err "fail: $f"; done

if [ "$dry_run" -eq 1 ]; then
  echo "scontrol update nodename=$node state=drain reason=\"$reason\""
else
  state=$(scontrol -o show node "$node" 2>/dev/null | tr ' ' '\n' | sed -n 's/^State=//p')
  if [[ "$state" == *DRAIN* ]]; then
    log notice "already drained ($state): reason left as it is"
  elif out=$(scontrol update nodename="$node" state=drain reason="$reason" 2>&1); then
    log err "drained: $reason"
  else
    log err "scontrol could not drain the node: $(echo "$out" | tr '\n' ' ')"
  fi
fi
[ "$prolog" -eq 1 ] && exit 1
exit 0
