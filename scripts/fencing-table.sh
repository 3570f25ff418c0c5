#!/usr/bin/env bash
# The headline of the fault harness: one stop-the-world pause past the lease,
# under each fencing mode. Runs scenarios/gc-pause-fencing-{none,status,
# attempts,token}.toml and prints a Markdown table of what the late
# completion did.
#
#   scripts/fencing-table.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | awk '{print $2}'; }
echo "| fencing | stale completions accepted | stale completions rejected | executions (3 jobs) | duplicates after lease expiry | verdict |"
echo "|---|---|---|---|---|---|"
for f in none status attempts token; do
  "$qb" run "$root/scenarios/gc-pause-fencing-$f.toml" --out "$work/$f" --quiet > /dev/null && verdict=passed || verdict="FAILED ($?)"
  s="$work/$f/summary.json"
  printf '| `%s` | %s | %s | %s | %s | %s |\n' "$f" "$(num "$s" stale_accepted)" "$(num "$s" stale_rejected)" \
    "$(num "$s" total)" "$(num "$s" duplicate_lease_expired)" "$verdict"
done
