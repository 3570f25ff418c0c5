#!/usr/bin/env bash
# Failover under load, asynchronous against synchronous replication: runs
# scenarios/failover-async.toml and scenarios/failover-sync.toml RUNS times
# each (default 3) and prints a Markdown table, one row per run, of what the
# failover cost: acknowledged completions and enqueues lost, the executions
# those losses caused, the standby's lag when the primary died, the WAL it
# never received, and how long the workers were without a server.
#
#   scripts/failover-table.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d, o = s["durability"], s["outage"]
print("| {} | {} | {} of {} | {} of {} ({} ids reissued) | {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {} |".format(
    d["replication"], sys.argv[2], d["lost_completions"], d["acknowledged_completions"], d["lost_enqueues"],
    d["acknowledged_enqueues"], d["ids_reissued"], d["reexecutions"], d["lag_bytes_at_failure"] / 1024,
    d["wal_lost_bytes"] / 1024, o["server_down_ms"], o["longest_worker_outage_ms"], sys.argv[3]))
PY
}
echo "| replication | run | acknowledged completions lost | acknowledged enqueues lost | re-executions | lag at failure (KiB) | WAL never received (KiB) | server down (ms) | longest worker outage (ms) | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mode in async sync; do
  for i in $(seq 1 "$runs"); do
    out="$work/$mode-$i"
    "$qb" run "$root/scenarios/failover-$mode.toml" --out "$out" --quiet > /dev/null 2>&1 && verdict=passed || verdict="FAILED ($?)"
    row "$out/summary.json" "$i" "$verdict"
  done
done
