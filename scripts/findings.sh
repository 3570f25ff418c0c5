#!/usr/bin/env bash
# What queuebench finds in the current releases of the libraries it ships adapters and clients for
# (docs/findings.md keeps the figures). Two parts:
# 1. explore over every shipped adapter scenario, with one crash and two ticks of the clock
#    (cargo xtask explore-adapters --crashes 1): each counterexample's steps and psql script go to
#    OUT/explore/NAME/;
# 2. every client fault scenario (scenarios/clients/*-{kill-backend,pause,crash}.toml), ROUNDS runs
#    each: the exit code, the failed checks and the extra executions by cause (needs the reference
#    clients: clients/install.sh).
#
#   scripts/findings.sh [--depth N] [--seconds N] [--rounds N] [--out DIR] [--only explore|clients]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
depth=12 seconds=120 rounds=1 out= only=
while [ $# -gt 0 ]; do
  case $1 in
    --depth) depth=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "findings.sh: unknown argument $1 (accepted: --depth, --seconds, --rounds, --out, --only)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/qb-findings.XXXXXX")
mkdir -p "$out"

if [ "$only" != clients ]; then
  (cd "$root" && QUEUEBENCH=$qb cargo xtask explore-adapters --crashes 1 --depth "$depth" --seconds "$seconds" --out "$out/explore")
  echo
fi
[ "$only" != explore ] || exit 0
mkdir -p "$out/clients"
echo "client fault scenarios, $rounds round(s) each; run folders in $out/clients"
echo
echo "| scenario | exit | failed checks | extra executions (race / lease / crash / after completion) | faults injected |"
echo "|---|---:|---|---|---:|"
for f in "$root"/scenarios/clients/*-kill-backend.toml "$root"/scenarios/clients/*-pause.toml "$root"/scenarios/clients/*-crash.toml; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .toml)
  for round in $(seq 1 "$rounds"); do
    run=$out/clients/$name-$round
    rc=0
    "$qb" run "$f" --out "$run" --force --quiet >"$run.log" 2>&1 || rc=$?
    row=$(python3 - "$run/summary.json" <<'PY' 2>/dev/null || echo "| (no summary.json) | |"
import json, sys
s = json.load(open(sys.argv[1]))
e = s.get("executions", {})
causes = " / ".join(str(e.get(k, "?")) for k in ("duplicate_race", "duplicate_lease_expired", "duplicate_after_crash", "duplicate_after_completion"))
print(f"| {', '.join(s.get('failed_checks', [])) or '-'} | {causes} | {s.get('faults', {}).get('injected', '?')} |")
PY
)
    echo "| $name | $rc $row"
  done
done
