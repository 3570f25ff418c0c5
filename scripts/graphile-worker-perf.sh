#!/usr/bin/env bash
# graphile-worker's own performance test, run on this machine, next to queuebench at the same
# settings (docs/clients.md, "At full speed"). The perfTest folder is not in graphile-worker's
# npm package, so give a checkout of its repository (the 0.17.x line, as clients/ pins 0.17.3):
#
#   scripts/graphile-worker-perf.sh [--jobs N] /path/to/graphile-worker-checkout
#
# It follows perfTest/run.js with the installed package's CLI in place of the repository's
# build: on a throw-away cluster, install the schema (`--schema-only`), time a `--once` start and
# stop, add N jobs of the `log_if_999` task with perfTest/init.js, then time 4 `--once` workers
# draining them with perfTest/graphile.config.js (24 concurrent jobs, a local queue of 500,
# batched completion) and print jobs/s the way run.js computes it (N ÷ (drain − startup)).
# Then queuebench runs graphile-worker through clients/graphile-worker at the same settings
# (4 processes × 24 handlers, batch 500, no work time, N jobs) and prints its jobs/s.
# N defaults to 200,000 (run.js's JOB_COUNT). Needs bash clients/install.sh.
set -euo pipefail
jobs=200000
if [ "${1:-}" = --jobs ]; then jobs=${2:?--jobs takes a number}; shift 2; fi
checkout=${1:?usage: scripts/graphile-worker-perf.sh [--jobs N] /path/to/graphile-worker-checkout}
case $jobs in *[!0-9]* | '') echo "graphile-worker-perf.sh: --jobs takes a whole number" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
modules=$root/clients/graphile-worker/node_modules
[ -d "$modules/graphile-worker" ] || { echo "graphile-worker-perf.sh: install the clients first: bash clients/install.sh" >&2; exit 2; }
[ -f "$checkout/perfTest/run.js" ] || { echo "graphile-worker-perf.sh: $checkout/perfTest/run.js not found (give a checkout of graphile-worker's repository)" >&2; exit 2; }
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$checkout/perfTest" "$work/perfTest"

cat >"$work/drive.sh" <<'DRIVE'
set -euo pipefail
cd "$PERF_DIR"
export PERF_DATABASE_URL=$DATABASE_URL NO_LOG_SUCCESS=1 NODE_PATH=$MODULES
cli="node $MODULES/graphile-worker/dist/cli.js"
ms() { date +%s%N | awk '{printf "%d", $1 / 1e6}'; }
exec 2> >(grep -v "Failed to load task" >&2)
$cli --schema-only >/dev/null
t0=$(ms); $cli --once >/dev/null; startup=$(( $(ms) - t0 ))
node ./init.js "$JOBS" >/dev/null
t0=$(ms)
pids=
for _ in 1 2 3 4; do $cli --once >/dev/null & pids="$pids $!"; done
wait $pids
drain=$(( $(ms) - t0 ))
left=$(psql "$DATABASE_URL" -Atc "select count(*) from graphile_worker._private_jobs")
awk -v n="$JOBS" -v d="$drain" -v s="$startup" -v left="$left" 'BEGIN {
  printf "graphile-worker perfTest: %d jobs, drain %d ms, startup %d ms, %d left: %.0f jobs/s\n", n, d, s, left, 1000 * n / (d - s) }'
DRIVE
echo "graphile-worker's perfTest (its run.js steps, the installed 0.17.3 CLI):"
PERF_DIR=$work/perfTest MODULES=$modules JOBS=$jobs "$qb" cluster -- bash "$work/drive.sh"

mkdir -p "$work/scenarios/clients"
cat >"$work/scenarios/clients/graphile-worker-perf.toml" <<TOML
name = "graphile-worker-perf"
client = "$root/clients/graphile-worker"
[jobs]
preload = $jobs
[workers]
count = 4
concurrency = 24
batch = 500
work = "0ms"
[run]
stop = "drained"
timeout = "20m"
history = false
TOML
echo "queuebench, clients/graphile-worker at the same settings (4 processes × 24, batch 500):"
"$qb" run "$work/scenarios/clients/graphile-worker-perf.toml" --out "$work/run" >"$work/run.log" 2>&1 || { tail -20 "$work/run.log"; exit 1; }
python3 - "$work/run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"queuebench: {s['jobs']['completed']} jobs completed, {s['executions']['duplicate']} duplicates, "
      f"{s['throughput']['jobs_per_sec']:.0f} jobs/s over {s['throughput']['duration_s']:.1f} s")
PY
