#!/usr/bin/env bash
# Instructions the harness executes per job, counted by callgrind (repeatable
# on a busy machine, unlike wall time): two burn-downs of N and 2N jobs under
# valgrind, and (Ir(2N) − Ir(N)) ÷ N, so setup, checks and reports cancel out.
#
#   [HOT=1] scripts/bench/callgrind.sh [N] [--set key=value ...]      (N default 5000)
#
# Prints the per-job count and the top functions of the 2N run
# (callgrind_annotate). Without DATABASE_URL it starts an ephemeral cluster;
# the server is never under valgrind. Needs valgrind (apt-get install valgrind).
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/../.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
n=${1:-5000}
extra=("${@:2}")
command -v valgrind > /dev/null || { echo "valgrind not found: apt-get install valgrind" >&2; exit 3; }
if [ -z "${DATABASE_URL:-}" ]; then
  exec "$qb" cluster --scenario "$root/scripts/bench/server.toml" -- "$0" "$@"
fi
work=${CALLGRIND_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${CALLGRIND_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
# HOT=1: count only on the worker threads (run::lanes: the workers, their connections'
# driver tasks and those threads' runtimes), leaving out setup, the side tasks, checks and
# reports. Needs 2 workers or more (one worker runs on the main thread).
toggles=()
if [ "${HOT:-0}" = 1 ]; then
  toggles=(--toggle-collect='*lanes::lane_main*')
fi
ir() {
  valgrind --tool=callgrind "${toggles[@]}" --callgrind-out-file="$work/cg.$1" "$qb" run "$root/scripts/bench/burn-down.toml" \
    --set "jobs.preload=$1" --set workers.count=8 --set run.sample_interval=off "${extra[@]}" \
    --database-url "$DATABASE_URL" --out "$work/run.$1" --quiet > "$work/out.$1" 2>&1 ||
    { cat "$work/out.$1" >&2; exit 3; }
  sed -n 's/^summary: //p; s/^totals: //p' "$work/cg.$1" | head -1
}
a=$(ir "$n")
b=$(ir $((2 * n)))
echo "instructions: $n jobs $a, $((2 * n)) jobs $b"
echo "per job: $(( (b - a) / n )) instructions ($([ "${HOT:-0}" = 1 ] && echo "hot path only: the worker threads" || echo "whole process"); settings: ${extra[*]:-lease mode, effects on})"
# Where the per-job instructions go: each function's self cost in the 2N run minus the N run, per job.
top() { callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) ([ 0-9.]*%) *\(.*\)$/\1\t\2/p'; }
top "$work/cg.$n" > "$work/a.txt"
top "$work/cg.$((2 * n))" > "$work/b.txt"
echo "top functions per job (self instructions, 2N run minus N run, ÷ N):"
awk -F'\t' -v n="$n" 'NR == FNR { gsub(",", "", $1); a[$2] = $1; next }
  { gsub(",", "", $1); d = ($1 - a[$2]) / n; if (d > 0) printf "%8.0f  %s\n", d, substr($2, 1, 150) }' \
  "$work/a.txt" "$work/b.txt" | sort -rn | head -"${CALLGRIND_TOP:-25}"
