#!/usr/bin/env bash
# The pool-mode table of docs/production-postgres.md ("Connection poolers"): every shipped
# adapter's scenario (scenarios/adapters/*.toml, the real-schema ones aside: they need the
# reference clients) and the LISTEN/NOTIFY scenario, run through PgBouncer in session and in
# transaction pooling (queuebench starts it: --set postgres.pgbouncer.pool_mode=MODE), and the
# sqlx client (scenarios/sqlx-pool-exhaustion.toml). Each verdict is what the checkers and
# the summary said: duplicates, lost wake-ups, errors (by SQLSTATE), or clean. A run is cut
# at run.timeout = 60s so a design that cannot drain still ends.
#
#   scripts/pgbouncer-table.sh [--modes "session transaction"]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
command -v jq > /dev/null || { echo "jq not found: apt-get install jq" >&2; exit 3; }
modes="session transaction"
while [ $# -gt 0 ]; do
  case $1 in
    --modes) modes=$2; shift ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run → a table row: scenario, mode, exit, completed/enqueued, duplicates, notifications, errors, verdict.
row() { # scenario-file, mode
  local file=$1 mode=$2 name rc=0 dir
  name=$(basename "$file" .toml)
  dir="$work/$name-$mode"
  "$qb" run "$file" --quiet --out "$dir" --set "postgres.pgbouncer.pool_mode=$mode" \
    --set run.timeout=60s > "$dir.out" 2>&1 || rc=$?
  if [ ! -f "$dir/summary.json" ]; then
    echo "| $name | $mode | $rc | – | – | – | $(head -c 200 "$dir.out" | tr '\n|' '  ') | refused |"
    return
  fi
  jq -r --arg name "$name" --arg mode "$mode" --arg rc "$rc" '
    (.errors.by_code // {} | to_entries | map("\(.key) × \(.value)") | join(", ")) as $codes
    | (if (.wakeup.mode // "") == "listen" then .wakeup else null end) as $w
    | ($w != null and ($w.committed_notify_delivered // 1) == 0) as $lost
    | [ (if .executions.duplicate > 0 then "duplicates" else empty end),
        (if $lost then "lost wake-ups" else empty end),
        (if .errors.total > 0 then "errors" else empty end),
        (if .jobs.completed < .jobs.enqueued then "unfinished" else empty end) ] as $bad
    | "| \($name) | \($mode) | \($rc) | \(.jobs.completed)/\(.jobs.enqueued) | \(.executions.duplicate) | "
      + (if $w == null then "–" else "\($w.notifications_received) (probe \($w.committed_notify_delivered)/1)" end)
      + " | \(if $codes == "" then "0" else "\(.errors.total): \($codes)" end) | "
      + (if ($bad | length) == 0 then "clean" else ($bad | join(", ")) end) + " |"' "$dir/summary.json"
}

echo "| scenario | pool mode | exit | completed | duplicates | notifications | errors | verdict |"
echo "|---|---|---:|---:|---:|---|---|---|"
for file in "$root"/scenarios/adapters/*.toml "$root/scenarios/idle-listen-notify.toml" "$root/scenarios/sqlx-pool-exhaustion.toml"; do
  case $file in *-real-schema.toml) continue ;; esac
  for mode in $modes; do
    row "$file" "$mode"
  done
done
