#!/usr/bin/env bash
# FOR UPDATE against FOR UPDATE SKIP LOCKED with the transaction held while
# working (5 ms): runs scenarios/for-update-convoy.toml and
# scenarios/skip-locked-hold.toml ROUNDS times each and prints jobs/s and the
# ratio of their medians.
#
#   scripts/convoy-ratio.sh [ROUNDS]
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | awk '{print $2}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for name in for-update-convoy skip-locked-hold; do
  : > "$work/$name"
  for r in $(seq 1 "$rounds"); do
    "$qb" run "$root/scenarios/$name.toml" --out "$work/$name-$r" --quiet > /dev/null
    num "$work/$name-$r/summary.json" jobs_per_sec >> "$work/$name"
  done
  printf '%-20s jobs/s: %s  (median %.0f)\n' "$name" "$(xargs printf '%.0f ' < "$work/$name")" "$(median < "$work/$name")"
done
awk -v a="$(median < "$work/skip-locked-hold")" -v b="$(median < "$work/for-update-convoy")" \
  'BEGIN { printf "skip-locked-hold / for-update-convoy = %.1fx\n", a / b }'
