#!/usr/bin/env bash
# Harness against pgbench: the same statements, the same number of
# connections, the same cluster, one after the other, ROUNDS times.
#
#   scripts/vs-pgbench.sh SCENARIO [ROUNDS] [--set key=value ...]
#
# Without DATABASE_URL it starts an ephemeral cluster (queuebench cluster)
# with the scenario's [postgres.settings]. Both sides run with
# run.effects_table = false, because pgbench cannot batch the effects INSERT
# the way the harness does; the statements per job are then identical
# (see `queuebench sql SCENARIO --pgbench`). Prints claims/s for both (pgbench's
# tps counts one claim per transaction) and the ratio harness / pgbench.
set -euo pipefail

scenario=${1:?usage: scripts/vs-pgbench.sh SCENARIO [ROUNDS] [--set key=value ...]}
rounds=${2:-3}
extra=("${@:3}")
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$root/target/release/queuebench}
if [ ! -x "$qb" ]; then
  (cd "$root" && cargo build --release --quiet)
fi
command -v pgbench >/dev/null || { echo "pgbench not found: install the PostgreSQL client (apt-get install postgresql-client)" >&2; exit 3; }

if [ -z "${DATABASE_URL:-}" ]; then
  exec "$qb" cluster --scenario "$scenario" -- "$0" "$@"
fi

sets=(--set run.effects_table=false "${extra[@]}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$qb" sql "$scenario" --pgbench "${sets[@]}" > "$work/script.sql"
read -r -a args <<< "$(sed -n 's/^-- pgbench-args: //p' "$work/script.sql")"

num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | awk '{print $2}'; }
printf '%-6s %14s %14s %8s %18s\n' round harness/s pgbench/s ratio "pgbench jobs done"
ratios=()
for r in $(seq 1 "$rounds"); do
  "$qb" run "$scenario" "${sets[@]}" --database-url "$DATABASE_URL" --out "$work/h$r" --quiet > /dev/null || true
  h=$(num "$work/h$r/summary.json" claims_per_sec)
  schema="queuebench_pgbench_$r"
  "$qb" prepare "$scenario" "${sets[@]}" --database-url "$DATABASE_URL" --schema "$schema" > /dev/null
  PGOPTIONS="-c search_path=$schema" pgbench "${args[@]}" -f "$work/script.sql" "$DATABASE_URL" > "$work/p$r.txt" 2>&1
  p=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/p$r.txt" | head -1)
  grep -q "number of transactions actually processed" "$work/p$r.txt" || { echo "pgbench failed:" >&2; cat "$work/p$r.txt" >&2; exit 3; }
  done_jobs=$(psql -At "$DATABASE_URL" -c "SELECT count(*) FROM $schema.jobs WHERE status = 'done'")
  PGOPTIONS="-c client_min_messages=warning" psql -q "$DATABASE_URL" -c "DROP SCHEMA $schema CASCADE" > /dev/null
  cp "$work/p$r.txt" "${PGBENCH_LOG_DIR:-$work}/" 2>/dev/null || true
  ratio=$(awk -v h="$h" -v p="$p" 'BEGIN { printf "%.3f", h / p }')
  ratios+=("$ratio")
  printf '%-6s %14.0f %14.0f %8s %18s\n' "$r" "$h" "$p" "$ratio" "$done_jobs"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median ratio harness/pgbench: $median  (scenario $scenario, pgbench ${args[*]})"
