#!/usr/bin/env bash
# What PgBouncer costs: jobs/s of scenarios/skip-locked.toml (10,000 jobs, no work) direct to
# queuebench's ephemeral cluster against through PgBouncer (queuebench starts it on a Unix
# socket in the cluster's directory) in session pooling (named prepared statements, as direct)
# and in transaction pooling (unnamed statements), at 8 and 32 workers with a pool of one server
# connection per worker; then pool saturation: the workers against a pool of 4 and 8 in
# transaction pooling, with the claim's latency (the wait for a server connection is in it).
# Median of ROUNDS runs each (release build). Prints Markdown tables (docs/production-postgres.md).
#
#   scripts/pgbouncer-bench.sh [--rounds N] [--workers "8 32"] [--pools "4 8"]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
command -v jq > /dev/null || { echo "jq not found: apt-get install jq" >&2; exit 3; }

rounds=3
workers="8 32"
pools="4 8"
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --workers) workers=$2; shift ;;
    --pools) pools=$2; shift ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

scenario="$root/scenarios/skip-locked.toml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run → "jobs/s claim-p50 claim-p99".
once() { # out-name, workers, args...
  local name=$1 w=$2
  shift 2
  "$qb" run "$scenario" --quiet --set "workers.count=$w" --out "$work/$name" "$@" > /dev/null
  jq -r '"\(.throughput.jobs_per_sec) \(.latency_ms.claim.p50) \(.latency_ms.claim.p99)"' "$work/$name/summary.json"
}

# shellcheck source=bench/lib.sh
. "$root/scripts/bench/lib.sh"

# Median of column COL of a results file.
col() { awk -v c="$2" '{ print $c }' "$1" | median_lines; }

sides="direct session transaction"
args_of() { # side, pool-size
  case $1 in
    direct) ;;
    *) echo "--set postgres.pgbouncer.pool_mode=$1 --set postgres.pgbouncer.pool_size=$2" ;;
  esac
}

echo "| workers | direct (jobs/s) | PgBouncer session (jobs/s) | PgBouncer transaction (jobs/s) | transaction ÷ direct |"
echo "|---:|---:|---:|---:|---:|"
for w in $workers; do
  for side in $sides; do : > "$work/$side"; done
  for r in $(seq "$rounds"); do
    for side in $sides; do
      # shellcheck disable=SC2046 # the arguments are words on purpose
      once "$side-$w-$r" "$w" $(args_of "$side" "$w") >> "$work/$side"
    done
  done
  d=$(col "$work/direct" 1) s=$(col "$work/session" 1) t=$(col "$work/transaction" 1)
  printf '| %s | %.0f | %.0f | %.0f | %.2f |\n' "$w" "$d" "$s" "$t" "$(echo "$t / $d" | bc -l)"
done

echo
echo "| workers | pool size (transaction) | jobs/s | claim p50 (ms) | claim p99 (ms) |"
echo "|---:|---:|---:|---:|---:|"
for w in $workers; do
  # shellcheck disable=SC2086 # the lists are words on purpose
  for pool in $(printf '%s\n' $pools "$w" | sort -un); do
    : > "$work/sat"
    for r in $(seq "$rounds"); do
      # shellcheck disable=SC2046
      once "sat-$w-$pool-$r" "$w" $(args_of transaction "$pool") >> "$work/sat"
    done
    printf '| %s | %s | %.0f | %.2f | %.2f |\n' "$w" "$pool" "$(col "$work/sat" 1)" "$(col "$work/sat" 2)" "$(col "$work/sat" 3)"
  done
done
