#!/usr/bin/env bash
# explore against the pause table (docs/adapters.md): every shipped adapter scenario (and the
# built-in SKIP LOCKED with a token fence), 2 sessions, 1 job, no crash, two ticks of the clock
# past the lease (a rescue that reschedules with a backoff needs the second), searched until a
# stale completion or another counterexample turns up, or DEPTH steps, or SECONDS. Prints a Markdown
# table: the answer, the steps of the shortest counterexample, what it broke (docs/explore.md
# keeps the figures). Each counterexample's steps and psql script go to OUT/NAME/.
#
# --crashes N lets a session crash N times in a schedule (docs/findings.md runs it with 1).
#
#   scripts/explore-adapters.sh [--depth N] [--seconds N] [--crashes N] [--out DIR] [--only PATTERN]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
depth=16
seconds=300
out=
only=
crashes=0
while [ $# -gt 0 ]; do
  case $1 in
    --depth) depth=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    --crashes) crashes=$2; shift ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "explore-adapters.sh: unknown argument $1 (accepted: --depth, --seconds, --crashes, --out, --only)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/qb-explore-adapters.XXXXXX")
mkdir -p "$out"

echo "explore against the pause table: depth ≤ $depth, ≤ $seconds s each, $crashes crash(es), 2 ticks; $("$qb" --version); output in $out"
echo
echo "| scenario | answer | steps | broke | schedules | time |"
echo "|---|---|---:|---|---:|---:|"
for f in "$root/scenarios/gc-pause-fencing-token.toml" "$root"/scenarios/adapters/*.toml; do
  name=$(basename "$f" .toml)
  case $name in *"$only"*) ;; *) continue ;; esac
  case $name in *-real-schema) continue ;; esac  # the library's own schema: the same SQL as the adapter's
  rc=0
  text=$("$qb" explore "$f" --crashes "$crashes" --ticks 2 --depth "$depth" --time "$seconds" --out "$out/$name" 2>&1) || rc=$?
  tally=$(printf '%s\n' "$text" | grep -E 'schedules run' | tail -1 || true)
  schedules=$(printf '%s\n' "$tally" | grep -oE '[0-9]+ schedules run' | grep -oE '^[0-9]+' || true)
  secs=$(printf '%s\n' "$tally" | grep -oE '[0-9.]+ s:' | tr -d ' s:' || true)
  case $rc in
    1)
      steps=$(printf '%s\n' "$text" | grep -oE ', [0-9]+ steps\):' | grep -oE '[0-9]+')
      broke=$(printf '%s\n' "$text" | grep -oE '^  [a-z_]+:' | grep -v cause | tr -d ' :' | paste -sd, -)
      echo "| $name | counterexample | $steps | $broke | $schedules | $secs s |" ;;
    0)
      reached=$(printf '%s\n' "$text" | grep -oE 'no counterexample [^:]*' | head -1)
      echo "| $name | $reached | | | $schedules | $secs s |" ;;
    *)
      echo "| $name | error (exit $rc): $(printf '%s\n' "$text" | grep error | head -1 || true) | | | | |" ;;
  esac
done
