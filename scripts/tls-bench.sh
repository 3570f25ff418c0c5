#!/usr/bin/env bash
# What TLS costs: jobs/s of scenarios/skip-locked.toml (10,000 jobs, no work) with TLS against
# without, at 8 and 32 workers, median of ROUNDS runs each (release build). Two targets:
#   machine    the PostgreSQL service at localhost:5432 (trust for root): sslmode=disable against
#              sslmode=require, both over TCP, so the difference is TLS alone;
#   ephemeral  queuebench's own cluster: its Unix socket (the default) against --tls (TCP to
#              localhost with verify-full against the cluster's CA): TCP and TLS together.
# Prints a Markdown table (docs/production-postgres.md keeps the figures).
#
#   scripts/tls-bench.sh [--rounds N] [--targets "machine ephemeral"] [--workers "8 32"]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
command -v jq > /dev/null || { echo "jq not found: apt-get install jq" >&2; exit 3; }

rounds=3
targets="machine ephemeral"
workers="8 32"
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --targets) targets=$2; shift ;;
    --workers) workers=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

scenario="$root/scenarios/skip-locked.toml"
machine="postgres://root@localhost:5432/postgres"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# libpq's default files of whoever runs this play no part.
export HOME="$work/home"
mkdir -p "$HOME"

# One run → its jobs/s.
once() { # out-name, workers, args...
  local name=$1 w=$2
  shift 2
  "$qb" run "$scenario" --quiet --set "workers.count=$w" --out "$work/$name" "$@" > /dev/null
  jq -r '.throughput.jobs_per_sec' "$work/$name/summary.json"
}

# shellcheck source=bench/lib.sh
. "$root/scripts/bench/lib.sh"

echo "| target | workers | without TLS (jobs/s) | with TLS (jobs/s) | with ÷ without |"
echo "|---|---:|---:|---:|---:|"
for target in $targets; do
  for w in $workers; do
    : > "$work/plain" && : > "$work/tls"
    for r in $(seq "$rounds"); do
      # Alternate which goes first, so a drift of the machine does not favour one side.
      sides="plain tls"
      [ $((r % 2)) -eq 0 ] && sides="tls plain"
      for side in $sides; do
        case $target/$side in
          machine/plain) once "$target-$w-$r-$side" "$w" --database-url "$machine?sslmode=disable" >> "$work/$side" ;;
          machine/tls) once "$target-$w-$r-$side" "$w" --database-url "$machine?sslmode=require" >> "$work/$side" ;;
          ephemeral/plain) once "$target-$w-$r-$side" "$w" >> "$work/$side" ;;
          ephemeral/tls) once "$target-$w-$r-$side" "$w" --tls >> "$work/$side" ;;
          *) echo "unknown target $target (machine, ephemeral)" >&2; exit 2 ;;
        esac
      done
    done
    plain=$(median_lines < "$work/plain")
    tls=$(median_lines < "$work/tls")
    label=$([ "$target" = machine ] && echo "localhost:5432, disable vs require" || echo "ephemeral, Unix socket vs --tls")
    awk -v l="$label" -v w="$w" -v p="$plain" -v t="$tls" 'BEGIN { printf "| %s | %d | %.0f | %.0f | %.2f |\n", l, w, p, t, (p > 0 ? t / p : 0) }'
  done
done
echo
echo "median of $rounds rounds each; $("$qb" --version | head -1); $(nproc) cores"
