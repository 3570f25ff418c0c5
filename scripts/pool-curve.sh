#!/usr/bin/env bash
# The direct client (a connection per worker) against the sqlx client (workers.pool) at
# pool sizes 2, 4 and 8: scenarios/skip-locked.toml with 16 workers, ROUNDS runs each.
# Prints the median jobs/s, acquire p99 and claim p99 of each (docs/pool.md).
#
#   scripts/pool-curve.sh [ROUNDS] [SIZES…]
set -euo pipefail
rounds=${1:-3}
shift || true
sizes=${*:-2 4 8}
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(eval('s' + sys.argv[2]))" "$@"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| client | jobs/s (median of %s) | acquire p99 ms | claim p99 ms |\n|---|---:|---:|---:|\n' "$rounds"
for size in direct $sizes; do
  sets=(--set workers.count=16)
  [ "$size" = direct ] || sets+=(--set "workers.pool={ size = $size, acquire_timeout = \"30s\" }")
  : > "$work/jps"; : > "$work/acq"; : > "$work/claim"
  for r in $(seq 1 "$rounds"); do
    out="$work/$size-$r"
    "$qb" run "$root/scenarios/skip-locked.toml" "${sets[@]}" --out "$out" --quiet > /dev/null
    field "$out/summary.json" "['throughput']['jobs_per_sec']" >> "$work/jps"
    field "$out/summary.json" "['latency_ms']['acquire']['p99']" >> "$work/acq"
    field "$out/summary.json" "['latency_ms']['claim']['p99']" >> "$work/claim"
  done
  label=$([ "$size" = direct ] && echo "direct (16 connections)" || echo "pool size $size")
  printf '| %s | %.0f | %.2f | %.2f |\n' "$label" "$(median < "$work/jps")" "$(median < "$work/acq")" "$(median < "$work/claim")"
done
