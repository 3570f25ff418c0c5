#!/usr/bin/env bash
# The issue-sized runs of the reference clients (docs/clients.md#at-full-size), beyond the small
# scenarios the smoke gate runs: for each library,
#   contention  its scenarios/clients/<client>-contention.toml with JOBS jobs (default 5,000):
#               4 processes x 4 handlers = 16 workers, 5 ms jobs
#   crash       its <client>-crash.toml with the SIGKILL of p1 repeated every 2 s (interval =
#               "2s", each killed worker started again 500 ms later) for 20 s
#   kill        its <client>-kill-backend.toml where there is one (pg_terminate_backend on p1's
#               connections 2 s in)
# Each run's own expectations are left out (`expect={}`): the table reports what happened.
# Needs the reference clients installed (bash clients/install.sh).
#
#   scripts/clients-table.sh [--jobs N] [--only pg-boss,graphile-worker,procrastinate,pgqueuer]
set -euo pipefail
jobs=5000 only=pg-boss,graphile-worker,procrastinate,pgqueuer
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() {
  python3 - "$@" <<'PY'
import json, sys
name, kind, path, rc = sys.argv[1:5]
try:
    s = json.load(open(path))
except OSError:
    print(f"| {name} | {kind} | exit {rc}: no summary | | | | | |")
    sys.exit()
ex, j, f = s["executions"], s["jobs"], s["faults"]["by_kind"]
fired = ", ".join(f"{k} {v}" for k, v in sorted(f.items()) if v) or "—"
print(f"| {name} | {kind} | {s['throughput']['jobs_per_sec']:.0f} | {j['enqueued']} / {j['completed']} | "
      f"{ex['distinct_jobs']} | {ex['duplicate']} ({ex['duplicate_race']} race, {ex['duplicate_lease_expired']} "
      f"after expiry) | {j['lost']} lost, {j['stuck_running']} still running | {fired} |")
PY
}
echo "| client | run | jobs/s | enqueued / completed | executed (distinct) | duplicates | at the end | faults |"
echo "|---|---|---:|---|---:|---|---|---|"
for c in ${only//,/ }; do
  out="$work/$c-contention"
  rc=0
  "$qb" run "$root/scenarios/clients/$c-contention.toml" --set "jobs.preload=$jobs" --set run.timeout=10m \
    --set 'expect={}' --out "$out" --quiet > /dev/null 2>&1 || rc=$?
  row "$c" "contention, $jobs jobs" "$out/summary.json" "$rc"
  # The crash every 2 s: the shipped file with an interval on its fault and a 20 s run.
  sed -e 's/^respawn_after = .*/&\ninterval = "2s"/' -e 's/^stop = .*/stop = "20s"/' \
    -e 's/^timeout = .*/timeout = "60s"/' "$root/scenarios/clients/$c-crash.toml" > "$work/$c-crash.toml"
  out="$work/$c-crash"
  rc=0
  "$qb" run "$work/$c-crash.toml" --set 'expect={}' --out "$out" --quiet > /dev/null 2>&1 || rc=$?
  row "$c" "SIGKILL every 2 s, 20 s" "$out/summary.json" "$rc"
  if [ -f "$root/scenarios/clients/$c-kill-backend.toml" ]; then
    out="$work/$c-kill"
    rc=0
    "$qb" run "$root/scenarios/clients/$c-kill-backend.toml" --set 'expect={}' --out "$out" --quiet > /dev/null 2>&1 || rc=$?
    row "$c" "kill_backend at 2 s" "$out/summary.json" "$rc"
  fi
done
