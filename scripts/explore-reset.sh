#!/usr/bin/env bash
# How fast a schedule can start again from the same state: a template database (CREATE DATABASE
# … TEMPLATE, both strategies, then DROP) against explore's own reset (the schema's tables put
# back from a copy in temporary tables, whose time explore prints as "reset … ms").
#
#   scripts/explore-reset.sh [URL] [ROUNDS]      URL: a superuser's server (default the machine's,
#                                                postgres://root@127.0.0.1:5432); ROUNDS: 10
# Makes and drops the databases qb_reset_tpl and qb_reset_copy on that server; nothing else.
set -euo pipefail
shopt -s inherit_errexit

url=${1:-postgres://root@127.0.0.1:5432}
rounds=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
cleanup() { psql_ "$url/postgres" -c "DROP DATABASE IF EXISTS qb_reset_copy" -c "DROP DATABASE IF EXISTS qb_reset_tpl" >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
psql_ "$url/postgres" -c "CREATE DATABASE qb_reset_tpl"
psql_ "$url/qb_reset_tpl" -c "CREATE TABLE jobs (id bigserial PRIMARY KEY, status text, payload jsonb, locked_until timestamptz)" \
  -c "INSERT INTO jobs (status) VALUES ('queued')"
ms() { echo $(( ($2 - $1) / 1000000 )); }
# One psql session sends every round, so its start is paid once.
for strategy in wal_log file_copy; do
  sql=$(for _ in $(seq "$rounds"); do printf 'CREATE DATABASE qb_reset_copy TEMPLATE qb_reset_tpl STRATEGY %s;\nDROP DATABASE qb_reset_copy;\n' "$strategy"; done)
  s=$(date +%s%N)
  printf '%s\n' "$sql" | psql_ "$url/postgres" >/dev/null
  e=$(date +%s%N)
  echo "template database ($strategy): $(( $(ms "$s" "$e") / rounds )) ms per schedule (create and drop; the sessions would also reconnect)"
done
line=$("$qb" explore "$root/scenarios/skip-locked.toml" --database-url "$url/postgres" --depth 6 --time 30 | tail -1)
echo "explore's reset: ${line##*reset }"
