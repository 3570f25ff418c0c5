#!/usr/bin/env bash
# Soak: one long open-model run, with the harness's resident memory sampled
# every few seconds from /proc/PID/status (VmRSS, and VmHWM: the peak so far),
# and its true peak, end of run included, from /usr/bin/time when present.
#
#   scripts/soak.sh [DURATION] [SCENARIO]       # default 30m, scenarios/open-model-overload.toml
#
# The scenario's phases are replaced by one steady phase of DURATION at RATE
# times the classes' rates (default 0.5: 50 jobs/s, below what 2 workers
# drain, so the queue stays short and only the harness's own state can grow).
# Writes soak-rss.csv (t_s,rss_kb,hwm_kb) and the run folder under OUT (default
# results/soak-<time>/) and prints the start, peak and end RSS.
#
# Environment: QUEUEBENCH (binary; default: the release build wherever cargo
# puts it, built if missing), RATE, INTERVAL (seconds between samples; default 10), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-30m}
SCENARIO=${2:-scenarios/open-model-overload.toml}
RATE=${RATE:-0.5}
INTERVAL=${INTERVAL:-10}
OUT=${OUT:-results/soak-$(date -u +%Y%m%dT%H%M%S)}
BIN=${QUEUEBENCH:-$(scripts/queuebench-bin.sh)}
mkdir -p "$OUT"
CSV="$OUT/soak-rss.csv"
echo "t_s,rss_kb,hwm_kb" >"$CSV"

TIMER=()
[ -x /usr/bin/time ] && TIMER=(/usr/bin/time -v -o "$OUT/time.txt")
"${TIMER[@]}" "$BIN" run "$SCENARIO" --out "$OUT/run" --quiet \
  --set "run.phases=[{ name = \"soak\", duration = \"$DURATION\", rate = $RATE }]" \
  --set run.timeout=24h \
  --set 'expect={}' \
  >"$OUT/run.log" 2>&1 &
PID=$!
START=$(date +%s)
# Under /usr/bin/time the harness is its child.
HARNESS=$PID
for _ in 1 2 3 4 5 6 7 8 9 10; do
  [ ${#TIMER[@]} -eq 0 ] && break
  CHILD=$(pgrep -P "$PID" | head -1 || true)
  [ -n "$CHILD" ] && HARNESS=$CHILD && break
  sleep 0.2
done
while kill -0 "$PID" 2>/dev/null; do
  LINE=$(awk '/^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2} END {if (r) print r "," h}' "/proc/$HARNESS/status" 2>/dev/null || true)
  [ -n "$LINE" ] && echo "$(($(date +%s) - START)),$LINE" >>"$CSV"
  sleep "$INTERVAL"
done
set +e
wait "$PID"
CODE=$?
set -e
cat "$OUT/run.log"
awk -F, 'NR == 2 {start = $2} NR > 1 {if ($2 > peak) peak = $2; end = $2; t = $1}
  END {printf "rss start %.1f MiB, peak %.1f MiB, end %.1f MiB over %d s (%d samples, every '"$INTERVAL"' s)\n",
       start / 1024, peak / 1024, end / 1024, t, NR - 1}' "$CSV"
if [ -f "$OUT/time.txt" ]; then
  awk -F': ' '/Maximum resident set size/ {printf "max rss %.1f MiB (whole run, end-of-run checks included)\n", $2 / 1024}' "$OUT/time.txt"
fi
echo "samples: $CSV  run: $OUT/run  exit: $CODE"
exit "$CODE"
