#!/usr/bin/env bash
# The measured table of docs/adapters.md: every shipped adapter beside the
# built-in skip-locked, on the same load, in the same run.
#
#   scripts/adapters-table.sh [--quick] [--rounds N] [--out DIR] [--only contention,crash,pause]
#
# Three sections, each one run folder per queue (and round) under DIR (default
# results/adapters-table-<time>/), then scripts/adapters/table.py prints the
# Markdown tables (also written to DIR/table.md):
#   contention  10,000 preloaded jobs, zero work, 8 and 16 workers, the adapter's
#               own default lease, no faults; ROUNDS rounds (default 2), the
#               queues interleaved in each round so skip-locked and the adapters
#               see the same machine: jobs/s, ratio to skip-locked (per round,
#               then the median), claim p99, exactly-once and duplicates by cause
#   crash       5,000 jobs, 8 workers, 1 % of jobs crash their worker right after
#               the claim (connection dropped, respawn after 100 ms), the
#               adapter's reclaim as a reaper every 250 ms (none where the design
#               has no reclaim statement: pgmq and PgQueuer re-read in the claim,
#               Que and GoodJob lose their advisory lock with the connection)
#   pause       2 jobs, 2 workers, 500 ms of work: w1 freezes just before it
#               acknowledges for lease + 1 s, the lease runs out, the reaper (or
#               the claim) gives the job back and w2 re-claims it (w2 pauses
#               1.5 s mid-work on that second job, so it still holds it when w1
#               wakes); w1 then sends its completion: did it land?
# Leases: the project's real default where a run can wait for it (30 s: pgmq,
# PgQueuer, procrastinate); otherwise lease.duration is shortened (5 s crash,
# 3 s pause) and the tables say so. Adapter [constants] that are heartbeat
# intervals tied to the lease (solid_queue's process_heartbeat_interval,
# procrastinate's update_heartbeat_interval) are scaled with it in a generated
# copy of the adapter, at the project's own ratio (time_scale does not reach
# them). --quick: 2,000 jobs, 1 round, 2 s leases everywhere: a check of the
# script, the figures mean nothing (~4 minutes). The full run takes ~20 minutes.
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
quick=false rounds=2 out= only=contention,crash,pause
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=true ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    -h | --help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (accepted: --quick, --rounds N, --out DIR, --only contention,crash,pause)" >&2; exit 2 ;;
  esac
  shift
done
want() { [[ ",$only," == *",$1,"* ]]; }
command -v python3 > /dev/null || { echo "python3 not found" >&2; exit 3; }

# The release binary wherever cargo puts it (QUEUEBENCH names another); rebuilt when sources changed.
if [ -z "${QUEUEBENCH:-}" ]; then (cd "$root" && cargo build --release --quiet --bins); fi
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}

out=${out:-$root/results/adapters-table-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out"
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
manifest=$out/manifest.tsv
started=$(date +%s)

queues=(skip-locked river pg-boss graphile-worker pgmq que oban solid_queue good_job procrastinate pgqueuer)
if $quick; then
  jobs=2000 crash_jobs=2000 rounds=1
else
  jobs=10000 crash_jobs=5000
fi

# secs DURATION: a TOML duration ("1h", "60m", "30s", "500ms") in seconds.
secs() {
  awk -v d="$1" 'BEGIN {
    n = d + 0; u = d; sub(/^[0-9.]+/, "", u)
    f = (u == "h") ? 3600 : (u == "m") ? 60 : (u == "s") ? 1 : (u == "ms") ? 0.001 : -1
    if (f < 0) { print "bad duration " d > "/dev/stderr"; exit 1 }
    print n * f }'
}
# default_lease QUEUE: the lease the queue uses when a scenario leaves lease.duration out.
default_lease() {
  if [ "$1" = skip-locked ]; then echo 90s; return; fi
  sed -n 's/^lease = "\(.*\)".*/\1/p' "$root/adapters/$1.toml"
}
has_reclaim() { [ "$1" = skip-locked ] || grep -Eq '^(reclaim *=|\[reclaim\])' "$root/adapters/$1.toml"; }
# Que and GoodJob have no lease at all: an advisory lock held by the worker's session.
leaseless() { [ "$1" = que ] || [ "$1" = good_job ]; }
# lease_for QUEUE SHORT: the real default when it is 30 s or less (or the queue has no lease),
# else SHORT (and always SHORT with --quick).
lease_for() {
  local d
  d=$(default_lease "$1")
  if leaseless "$1"; then echo "$d"
  elif $quick; then echo "$2"
  elif awk -v s="$(secs "$d")" 'BEGIN { exit !(s <= 30) }'; then echo "$d"
  else echo "$2"; fi
}
# adapter_line QUEUE LEASE: the scenario's first lines for the queue; a generated copy of the
# adapter when one of its [constants] is a heartbeat interval that must scale with the lease.
adapter_line() {
  local q=$1 lease=$2 ls copy
  if [ "$q" = skip-locked ]; then printf '[workers]\nstrategy = "skip-locked"\n'; return; fi
  ls=$(secs "$lease")
  case $q in
    solid_queue) # process_heartbeat_interval 60 s against process_alive_threshold 5 min: 1/5
      copy=$gen/solid_queue-$ls.toml
      sed "s/^process_heartbeat_interval_secs = .*/process_heartbeat_interval_secs = $(awk -v l="$ls" 'BEGIN {print l / 5}')/" \
        "$root/adapters/solid_queue.toml" > "$copy"
      printf 'adapter = "%s"\n[workers]\n' "$copy" ;;
    procrastinate) # update_heartbeat_interval 10 s against the 30 s stall threshold: 1/3
      copy=$gen/procrastinate-$ls.toml
      sed "s/^update_heartbeat_interval_secs = .*/update_heartbeat_interval_secs = $(awk -v l="$ls" 'BEGIN {print l / 3}')/" \
        "$root/adapters/procrastinate.toml" > "$copy"
      printf 'adapter = "%s"\n[workers]\n' "$copy" ;;
    *) printf 'adapter = "%s"\n[workers]\n' "$q" ;;
  esac
}
# note QUEUE LEASE: what the lease column should say beside the number.
note() {
  local q=$1 lease=$2 d
  d=$(default_lease "$q")
  if leaseless "$q"; then echo "no lease (session advisory lock)"
  elif [ "$lease" = "$d" ]; then echo "real default"
  else
    case $q in
      solid_queue) echo "shortened; heartbeat interval $(awk -v l="$(secs "$lease")" 'BEGIN {print l / 5}') s (1/5, as 60 s / 5 min)" ;;
      procrastinate) echo "shortened; heartbeat interval $(awk -v l="$(secs "$lease")" 'BEGIN {printf "%.3g", l / 3}') s (1/3, as 10 s / 30 s)" ;;
      *) echo "shortened" ;;
    esac
  fi
}

# run SECTION QUEUE WORKERS ROUND LEASE FILE DIR: one run, its exit code and folder in the manifest.
run() {
  local section=$1 q=$2 w=$3 r=$4 lease=$5 file=$6 dir=$7 rc t0
  t0=$(date +%s)
  if "$qb" run "$file" --out "$dir" --quiet > "$dir.log" 2>&1; then rc=0; else rc=$?; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$q" "$w" "$r" "$lease" "$(default_lease "$q")" \
    "$(note "$q" "$lease")" "$rc" "$dir" >> "$manifest"
  printf '  %-11s %-16s w%-3s round %s  lease %-5s exit %s  %3ss\n' "$section" "$q" "$w" "$r" "$lease" "$rc" \
    "$(($(date +%s) - t0))" >&2
}

printf 'section\tqueue\tworkers\tround\tlease\tdefault_lease\tnote\texit\tdir\n' > "$manifest"

if want contention; then
  echo "== contention: $jobs jobs, zero work, 8 and 16 workers, $rounds round(s)" >&2
  mkdir -p "$out/contention"
  for r in $(seq 1 "$rounds"); do
    for w in 8 16; do
      for q in "${queues[@]}"; do
        lease=$(default_lease "$q") f=$gen/contention-$q-w$w.toml
        {
          printf 'name = "contention-%s-w%s"\nseed = %s\n' "$q" "$w" "$r"
          adapter_line "$q" "$lease"
          cat <<EOF
count = $w
work = "0ms"
[jobs]
preload = $jobs
[run]
stop = "drained"
timeout = "5m"
EOF
        } > "$f"
        run contention "$q" "$w" "$r" "$lease" "$f" "$out/contention/$q-w$w-r$r"
      done
    done
  done
fi

if want crash; then
  echo "== crash after claim: $crash_jobs jobs, 8 workers, 1 % of jobs" >&2
  mkdir -p "$out/crash"
  for q in "${queues[@]}"; do
    if $quick; then short=2s; else short=5s; fi
    lease=$(lease_for "$q" "$short") f=$gen/crash-$q.toml
    if has_reclaim "$q"; then reclaim=reaper; else reclaim=off; fi
    {
      printf 'name = "crash-%s"\nseed = 42\n' "$q"
      adapter_line "$q" "$lease"
      cat <<EOF
count = 8
work = "0ms"
[jobs]
preload = $crash_jobs
max_attempts = 5
[lease]
duration = "$lease"
reclaim = "$reclaim"
reaper_interval = "250ms"
[retry]
base = "100ms"
cap = "1s"
[[faults]]
kind = "crash"
point = "after_claim"
probability = 0.01
respawn_after = "100ms"
[run]
stop = "drained"
timeout = "4m"
EOF
    } > "$f"
    run crash "$q" 8 1 "$lease" "$f" "$out/crash/$q"
  done
fi

if want pause; then
  echo "== pause past the lease: 2 jobs, 2 workers" >&2
  mkdir -p "$out/pause"
  for q in "${queues[@]}"; do
    if $quick; then short=2s; else short=3s; fi
    lease=$(lease_for "$q" "$short") f=$gen/pause-$q.toml
    if has_reclaim "$q"; then reclaim=reaper; else reclaim=off; fi
    if leaseless "$q"; then pause=4000; else pause=$(awk -v l="$(secs "$lease")" 'BEGIN {printf "%d", l * 1000 + 1000}'); fi
    {
      printf 'name = "pause-%s"\nseed = 42\n' "$q"
      adapter_line "$q" "$lease"
      cat <<EOF
count = 2
work = "500ms"
[jobs]
preload = 2
[lease]
duration = "$lease"
reclaim = "$reclaim"
reaper_interval = "100ms"
[retry]
base = "0ms"
jitter = false
[[faults]]
kind = "pause"
point = "before_complete"
workers = "w1"
every = 1
limit = 1
duration = "${pause}ms"
[[faults]]
kind = "pause"
point = "mid_work"
workers = "w2"
every = 2
limit = 1
duration = "1500ms"
[run]
stop = "drained"
timeout = "2m"
[expect]
# What the late completion does is the finding, not a failure of the run: these checks are
# reported in the table, not gated.
"checks.exactly_once" = ">= 0"
"checks.stale_completions_accepted" = ">= 0"
"checks.ownership_overlap" = ">= 0"
"checks.attempts_within_budget" = ">= 0"
EOF
    } > "$f"
    run pause "$q" 2 1 "$lease" "$f" "$out/pause/$q"
  done
fi

cp "$gen"/*.toml "$out/" 2> /dev/null || true
elapsed=$(($(date +%s) - started))
{
  echo "Machine: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)," \
    "$(uname -sr). Release build $(git -C "$root" describe --always --dirty 2> /dev/null || echo '?')," \
    "run $(date -u '+%Y-%m-%d %H:%M UTC'), $((elapsed / 60)) min $((elapsed % 60)) s, command \`scripts/adapters-table.sh${args[*]:+ ${args[*]}}\`$($quick && echo ' (--quick: the figures mean nothing)')."
  echo
  python3 "$root/scripts/adapters/table.py" "$manifest"
} | tee "$out/table.md"
echo "results: $out" >&2
