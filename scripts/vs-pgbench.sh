#!/usr/bin/env bash
# Harness against pgbench: the same statements, the same number of
# connections, the same server, alternating (who goes first changes every
# round and, in the grid, every cell), ROUNDS times.
#
#   scripts/vs-pgbench.sh SCENARIO [ROUNDS] [--set key=value ...]
#       one setting: a line per round and the median ratio
#   scripts/vs-pgbench.sh --grid [--jobs N] [--rounds R] [--conns "2 8 32"]
#                         [--modes "lease hold-transaction"] [--effects "off on"]
#       the overhead grid of scripts/bench/burn-down.toml (skip-locked, zero
#       work, burn-down of N jobs, default 100,000): a Markdown table with one
#       row per mode × effects ledger × connection count
#
# Without DATABASE_URL it starts an ephemeral cluster (queuebench cluster) with
# the scenario's [postgres.settings] (with --grid: scripts/bench/server.toml's).
# pgbench runs the script of `queuebench sql SCENARIO --pgbench` with
# run.effects_table = false: pgbench cannot batch the effects INSERT the way
# the harness does (one per 64 jobs). With the effects ledger "off" the
# statements per job are identical; with it "on" the harness also writes the
# effects table and so does strictly more work than pgbench.
#
# Both sides run under /usr/bin/time -v against the same server (never a child
# of either), so their CPU seconds are their own: the harness's include its
# setup, verification and report files. jobs/s: the harness's executions per
# second of run time; pgbench's tps (one job per transaction).
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/scripts/bench/lib.sh"
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
command -v pgbench > /dev/null || {
  echo "pgbench not found: install the PostgreSQL client (apt-get install postgresql-client)" >&2
  exit 3
}
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 3; }

orig=("$@")
grid=false
if [ "${1:-}" = "--grid" ]; then
  grid=true
  shift
  jobs=100000 rounds=1 conns="2 8 32" modes="lease hold-transaction" effects="off on"
  while [ $# -gt 0 ]; do
    case $1 in
      --jobs) jobs=$2 ;;
      --rounds) rounds=$2 ;;
      --conns) conns=$2 ;;
      --modes) modes=$2 ;;
      --effects) effects=$2 ;;
      *) echo "unknown option $1 (accepted: --jobs --rounds --conns --modes --effects)" >&2; exit 2 ;;
    esac
    shift 2
  done
  scenario=$root/scripts/bench/burn-down.toml
  server=$root/scripts/bench/server.toml
else
  scenario=${1:?usage: scripts/vs-pgbench.sh SCENARIO [ROUNDS] [--set key=value ...] | --grid [options]}
  rounds=${2:-3}
  # As before the grid existed: both sides without the effects table (a later --set can turn it on).
  extra=(--set run.effects_table=false "${@:3}")
  server=$scenario
fi

if [ -z "${DATABASE_URL:-}" ]; then
  exec "$qb" cluster --scenario "$server" -- "$0" "${orig[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 cells=1

# one_round SIDE_FIRST SETS...: prints "harness_jobs_per_s pgbench_jobs_per_s harness_cpu_s pgbench_cpu_s jobs pgbench_done"
one_round() {
  local first=$1
  shift
  local sets=("$@")
  # A folder of its own per round: one_round runs in a subshell ($(…)), so a counter would not
  # survive it, and the harness refuses an --out folder that holds an earlier run.
  local d
  d=$(mktemp -d "$work/round-XXXXXX")
  local n
  n=$(date +%s%N)
  "$qb" sql "$scenario" --pgbench "${sets[@]}" --set run.effects_table=false > "$d/script.sql"
  local args
  read -r -a args <<< "$(sed -n 's/^-- pgbench-args: //p' "$d/script.sql")"
  local schema="queuebench_pgbench_$$_$n"
  harness() {
    timed "$d/h.time" "$qb" run "$scenario" "${sets[@]}" --database-url "$DATABASE_URL" --out "$d/h" --quiet \
      > "$d/h.out" 2>&1 || [ -f "$d/h/summary.json" ] || { echo "harness run failed:" >&2; cat "$d/h.out" >&2; exit 3; }
  }
  bench() {
    "$qb" prepare "$scenario" "${sets[@]}" --database-url "$DATABASE_URL" --schema "$schema" > /dev/null
    PGOPTIONS="-c search_path=$schema" timed "$d/p.time" pgbench "${args[@]}" -f "$d/script.sql" "$DATABASE_URL" \
      > "$d/p.txt" 2>&1 || true
    grep -q "number of transactions actually processed" "$d/p.txt" || {
      echo "pgbench failed:" >&2
      cat "$d/p.txt" >&2
      exit 3
    }
    pdone=$(psql -At "$DATABASE_URL" -c "SELECT count(*) FROM $schema.jobs WHERE status = 'done'")
    drop_schema "$DATABASE_URL" "$schema"
  }
  if [ "$first" = harness ]; then harness; bench; else bench; harness; fi
  local h p jobs_done
  h=$(num "$d/h/summary.json" jobs_per_sec)
  p=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$d/p.txt" | head -1)
  jobs_done=$(num "$d/h/summary.json" total)
  echo "$h $p $(cpu_s "$d/h.time") $(cpu_s "$d/p.time") $jobs_done $pdone"
}

# cell SETS...: ROUNDS alternating rounds; prints the medians as "h p ratio hcpu10k pcpu10k jobs pdone".
cell() {
  local hs=() ps=() rs=() hc=() pc=() r line h p hcpu pcpu jobs_done pdone
  for r in $(seq 1 "$rounds"); do
    # Who goes first alternates by round and, for one-round grids, by cell.
    if [ $(((r + cells) % 2)) -eq 0 ]; then line=$(one_round harness "$@"); else line=$(one_round pgbench "$@"); fi
    read -r h p hcpu pcpu jobs_done pdone <<< "$line"
    hs+=("$h") ps+=("$p") rs+=("$(ratio "$h" "$p")")
    hc+=("$(per10k "$hcpu" "$jobs_done")") pc+=("$(per10k "$pcpu" "$pdone")")
    echo "    round $r: harness $(printf %.0f "$h") jobs/s, pgbench $(printf %.0f "$p") jobs/s, ratio $(ratio "$h" "$p"); CPU s/10k jobs harness ${hc[-1]}, pgbench ${pc[-1]}; jobs done $jobs_done / $pdone" >&2
  done
  echo "$(median "${hs[@]}") $(median "${ps[@]}") $(median "${rs[@]}") $(median "${hc[@]}") $(median "${pc[@]}") $jobs_done $pdone"
}

if ! $grid; then
  echo "scenario $scenario, $rounds rounds (harness and pgbench alternate)" >&2
  res=$(cell "${extra[@]}")
  read -r h p r hc pc _ _ <<< "$res"
  printf 'median: harness %.0f jobs/s, pgbench %.0f jobs/s, ratio %s; CPU s per 10k jobs: harness %s, pgbench %s\n' \
    "$h" "$p" "$r" "$hc" "$pc"
  echo "median ratio harness/pgbench: $r"
  exit 0
fi

echo "| mode | effects ledger | connections | harness jobs/s | pgbench jobs/s | ratio (goal ≥ 0.95) | | harness CPU s / 10k jobs | pgbench CPU s / 10k jobs |"
echo "|---|---|---|---:|---:|---:|---|---:|---:|"
for mode in $modes; do
  for eff in $effects; do
    for c in $conns; do
      # The preload must divide by the connection count (pgbench -t is per client).
      j=$((jobs / c * c))
      effects_table=$([ "$eff" = on ] && echo true || echo false)
      cells=$((cells + 1)) # (counted here: cell runs in a subshell)
      echo "  $mode, effects $eff, $c connections, $j jobs" >&2
      res=$(cell --set "jobs.preload=$j" --set "workers.count=$c" --set "workers.mode=$mode" \
        --set "run.effects_table=$effects_table")
      read -r h p r hc pc _ _ <<< "$res"
      printf '| %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s |\n' "$mode" "$eff" "$c" "$h" "$p" "$r" \
        "$(verdict "$r" '>=' 0.95)" "$hc" "$pc"
    done
  done
done
