#!/usr/bin/env bash
# Self-test of one process client against the local PostgreSQL server.
#   clients/selftest.sh <client>        e.g. clients/selftest.sh pg-boss
# Needs: the client's deps installed (clients/install.sh), psql, python3, and a
# server at $QB_SELFTEST_ADMIN_URL (default postgres://root@127.0.0.1:5432/postgres,
# trust auth) where this user may create databases.
#
# Phases, each in its own scratch database qb_client_<random> (dropped after):
#   main      setup, enqueue 200, 2 work processes x concurrency 4 until 200
#             effects rows (30 s at most), SIGTERM both; checks 200 distinct n,
#             no duplicate, every process exited 0 within 5 s, the event lines
#             on stdout, and that nothing was created outside schema qb_test
#             (pg_class, pg_proc, pg_type, schemas, extensions compared before/after).
#   twice     QUEUEBENCH_CLIENT_BUG=twice must produce duplicate effects.
#   ack-first QUEUEBENCH_CLIENT_BUG=ack-first (clients that support it) must
#             lose exactly the jobs with n divisible by 50; others must refuse
#             it at start with exit 2.
#   terminate pg_terminate_backend on the worker's library connections: a worker
#             that survives must run 10 new jobs; one that gives up must exit
#             non-zero (reported as info: which libraries do is in their READMEs).
#   sql-enqueue 20 jobs through the client's enqueue.sql run once each.
#   sigkill   a SIGKILLed work process leaves no process behind (the run
#             script execs the worker; the worker starts no children) and its
#             server connections go away.
# Prints one line per check and "N passed, M failed" at the end; exit 0 only
# when every check passed.
set -uo pipefail

client=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$client" ] || [ ! -x "$here/$client/run" ]; then
  echo "usage: $0 <client>   (one of: $(cd "$here" && ls -d */ | tr -d / | while read -r d; do [ -x "$d/run" ] && printf '%s ' "$d"; done))" >&2
  exit 2
fi
run=$here/$client/run
admin=${QB_SELFTEST_ADMIN_URL:-postgres://root@127.0.0.1:5432/postgres}
base=${admin%/*}
jobs_n=200
drain_timeout_s=${QB_SELFTEST_TIMEOUT_S:-30}
# pg-boss v10 workers fetch at most once per polling interval even when busy;
# with its 2 s default, 8 handlers need ~50 s for 200 jobs. The self-test polls
# at 500 ms (the pg-boss minimum) for every client; override with QUEUEBENCH_POLL_MS.
export QUEUEBENCH_POLL_MS=${QUEUEBENCH_POLL_MS:-500}
export QUEUEBENCH_SCHEMA=qb_test
export QUEUEBENCH_QUEUE=queuebench
unset QUEUEBENCH_CLIENT_BUG QUEUEBENCH_WORK_MS QUEUEBENCH_EVENTS QUEUEBENCH_APPLICATION_NAME

tmp=$(mktemp -d)
passed=0
failed=0
db=""
pids=()

ok() { passed=$((passed + 1)); echo "ok    [$client] $*"; }
bad() { failed=$((failed + 1)); echo "FAIL  [$client] $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
now_ms() { date +%s%3N; }
# The self-test's own connections are named qb-selftest (only psql's, not
# inherited by the workers, so a worker connection without a name shows up).
q() { PGAPPNAME=qb-selftest psql -X -Atq "$base/$db" -c "$1"; }

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  drop_db
  rm -rf "$tmp"
}
trap cleanup EXIT

new_db() {
  db=qb_client_$(od -An -N4 -tx4 /dev/urandom | tr -d ' \n')
  psql -X -Atq "$admin" -c "CREATE DATABASE $db" || { echo "cannot create database $db" >&2; exit 1; }
  q "CREATE SCHEMA qb_test;
     CREATE TABLE qb_test.queuebench_effects (job_id text, n bigint, worker text, attempt int, at timestamptz DEFAULT clock_timestamp());"
  export QUEUEBENCH_DATABASE_URL=$base/$db
}

drop_db() {
  [ -n "$db" ] && psql -X -Atq "$admin" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  db=""
}

# Everything outside schema qb_test that a client could have created.
outside_objects() {
  q "WITH ns AS (SELECT oid, nspname FROM pg_namespace
                 WHERE nspname NOT IN ('qb_test', 'pg_catalog', 'information_schema')
                   AND nspname NOT LIKE 'pg_toast%' AND nspname NOT LIKE 'pg_temp%')
     SELECT 'schema ' || nspname FROM ns
     UNION ALL SELECT 'class ' || ns.nspname || '.' || c.relname FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
     UNION ALL SELECT 'proc ' || ns.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
     UNION ALL SELECT 'type ' || ns.nspname || '.' || t.typname FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
     UNION ALL SELECT 'extension ' || extname FROM pg_extension
     ORDER BY 1"
}

timed() { # timed <label> <cmd...>: run, log stderr, record ms in $last_ms
  local label=$1 t0 rc
  shift
  t0=$(now_ms)
  "$@" >"$tmp/$label.out" 2>"$tmp/$label.err"
  rc=$?
  last_ms=$(( $(now_ms) - t0 ))
  return $rc
}

start_worker() { # start_worker <name> [env assignments...]; pid in $last_pid
  local name=$1; shift
  env QUEUEBENCH_WORKER="$name" "$@" "$run" work >"$tmp/$name.out" 2>"$tmp/$name.err" &
  last_pid=$!
  pids+=("$last_pid")
}

effects_count() { q "SELECT count(*) FROM qb_test.queuebench_effects"; }

wait_effects() { # wait_effects <min rows> <timeout s>: elapsed ms in $last_ms; 0 if reached
  local want=$1 limit_ms=$(( $2 * 1000 )) t0 c
  t0=$(now_ms)
  while :; do
    c=$(effects_count)
    last_ms=$(( $(now_ms) - t0 ))
    [ "${c:-0}" -ge "$want" ] && return 0
    [ "$last_ms" -ge "$limit_ms" ] && return 1
    sleep 0.2
  done
}

stop_workers() { # SIGTERM the given pids; sets stop_ms[i], rc[i]; 0 if all exited within 6 s
  local p i t0 all=0
  t0=$(now_ms)
  for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
  i=0
  for p in "$@"; do
    while kill -0 "$p" 2>/dev/null && [ $(( $(now_ms) - t0 )) -lt 6000 ]; do sleep 0.05; done
    stop_ms[$i]=$(( $(now_ms) - t0 ))
    if kill -0 "$p" 2>/dev/null; then
      rc[$i]=still-running; all=1; kill -KILL "$p" 2>/dev/null
    else
      wait "$p"; rc[$i]=$?
    fi
    i=$((i + 1))
  done
  return $all
}

show_err() { # the last lines of a process's stderr, indented, for a failed check
  [ -s "$tmp/$1.err" ] && tail -n "${2:-5}" "$tmp/$1.err" | sed 's/^/        /'
}

echo "== [$client] main: setup, enqueue $jobs_n, 2 workers x concurrency 4"
new_db
outside_objects >"$tmp/before.txt"

if timed setup "$run" setup; then ok "setup exit 0 (${last_ms} ms)"; else bad "setup exit non-zero"; show_err setup 20; fi
if timed setup2 "$run" setup; then ok "setup again exit 0 (${last_ms} ms)"; else bad "setup again exit non-zero"; show_err setup2; fi
if timed enqueue "$run" enqueue $jobs_n; then ok "enqueue $jobs_n exit 0 (${last_ms} ms)"; else bad "enqueue exit non-zero"; show_err enqueue 20; fi
[ -s "$tmp/enqueue.out" ] && bad "enqueue printed on stdout"

start_worker p1 QUEUEBENCH_CONCURRENCY=4 QUEUEBENCH_EVENTS=1; w1=$last_pid
start_worker p2 QUEUEBENCH_CONCURRENCY=4 QUEUEBENCH_EVENTS=1; w2=$last_pid
if wait_effects $jobs_n "$drain_timeout_s"; then
  ok "$jobs_n effects rows after ${last_ms} ms (from the workers' start)"
else
  bad "only $(effects_count) effects rows after ${drain_timeout_s} s"; show_err p1; show_err p2
fi
# Every connection in the scratch database but the self-test's own psql ones
# must carry a worker's application_name (library: queuebench-pN, effects:
# queuebench-pN-effects).
apps=$(q "SELECT coalesce(string_agg(DISTINCT coalesce(nullif(application_name, ''), '<empty>'), ',' ORDER BY coalesce(nullif(application_name, ''), '<empty>')), '')
          FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
           AND application_name <> 'qb-selftest'")
stray=$(tr ',' '\n' <<<"$apps" | grep -Ev '^queuebench-p[12](-effects)?$' | tr '\n' ' ')
check "application_name on every worker connection (seen: $apps)" test -z "$stray" -a -n "$apps"
sleep 1 # let a late duplicate, if any, land
declare -a stop_ms rc
stop_workers "$w1" "$w2"
if [ "${rc[0]}" = 0 ] && [ "${rc[1]}" = 0 ]; then
  ok "SIGTERM: both workers exited 0 (p1 ${stop_ms[0]} ms, p2 ${stop_ms[1]} ms)"
else
  bad "SIGTERM: exit codes p1=${rc[0]} p2=${rc[1]} after ${stop_ms[0]}/${stop_ms[1]} ms"; show_err p1; show_err p2
fi
slowest=$(( stop_ms[0] > stop_ms[1] ? stop_ms[0] : stop_ms[1] ))
check "SIGTERM: stopped within 5 s (slowest ${slowest} ms)" test "$slowest" -le 5000

read -r total distinct dup minn maxn workers < <(q "SELECT count(*), count(DISTINCT n), count(*) - count(DISTINCT (n)), min(n), max(n), count(DISTINCT worker) FROM qb_test.queuebench_effects" | tr '|' ' ')
check "$distinct distinct n (want $jobs_n, n in ${minn}..${maxn})" test "$distinct" = "$jobs_n" -a "$minn" = 1 -a "$maxn" = "$jobs_n"
check "no duplicate effects (rows $total, duplicates $dup)" test "$dup" = 0
check "both workers ran jobs ($workers distinct worker values)" test "$workers" = 2
nulls=$(q "SELECT count(*) FROM qb_test.queuebench_effects WHERE job_id IS NULL OR job_id = ''")
check "every effect has a job id" test "$nulls" = 0
attempts=$(q "SELECT coalesce(string_agg(DISTINCT coalesce(attempt::text, 'NULL'), ','), '') FROM qb_test.queuebench_effects")
ok "attempt values recorded on first executions: {$attempts}"

# The event stream: only JSON lines of the contract's shape; one start and one
# end per effect row's job, the job ids matching the effects table.
q "SELECT job_id || ' ' || n FROM qb_test.queuebench_effects ORDER BY 1" >"$tmp/effects.txt"
if python3 - "$tmp/p1.out" "$tmp/p2.out" "$tmp/effects.txt" <<'PY'
import json, sys
p1, p2, effects = sys.argv[1:4]
starts, ends, problems = {}, {}, []
for path, worker in ((p1, "p1"), (p2, "p2")):
    for i, line in enumerate(open(path), 1):
        try:
            e = json.loads(line)
        except ValueError:
            problems.append(f"{path}:{i}: not JSON: {line[:80]!r}")
            continue
        if set(e) != {"ev", "job", "n", "worker", "t"} or e["ev"] not in ("start", "end", "error") \
                or not isinstance(e["job"], str) or not isinstance(e["t"], (int, float)) or e["worker"] != worker:
            problems.append(f"{path}:{i}: bad event {line[:120]!r}")
            continue
        d = starts if e["ev"] == "start" else ends if e["ev"] == "end" else None
        if d is not None:
            d[(e["job"], e["n"])] = d.get((e["job"], e["n"]), 0) + 1
want = {}
for line in open(effects):
    job, n = line.split()
    want[(job, int(n))] = 1
if starts != want:
    problems.append(f"start events {sum(starts.values())} do not match the {len(want)} effects rows")
if ends != want:
    problems.append(f"end events {sum(ends.values())} do not match the {len(want)} effects rows")
for p in problems[:5]:
    print("        " + p)
sys.exit(1 if problems else 0)
PY
then ok "QUEUEBENCH_EVENTS=1: stdout holds only contract events, one start and one end per job"
else bad "QUEUEBENCH_EVENTS=1 stream"; fi

outside_objects >"$tmp/after.txt"
if diff -q "$tmp/before.txt" "$tmp/after.txt" >/dev/null; then
  ok "nothing created outside schema qb_test ($(wc -l <"$tmp/before.txt") objects there before and after)"
else
  bad "objects created outside schema qb_test:"; diff "$tmp/before.txt" "$tmp/after.txt" | grep '^>' | head -20 | sed 's/^/        /'
fi
lib_apps=$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'queuebench-%'")
check "no connection of the stopped workers left on the server ($lib_apps)" test "$lib_apps" = 0
drop_db

echo "== [$client] twice: QUEUEBENCH_CLIENT_BUG=twice"
new_db
"$run" setup >/dev/null 2>"$tmp/setup-twice.err" && "$run" enqueue 20 >/dev/null 2>&1
start_worker t1 QUEUEBENCH_CONCURRENCY=4 QUEUEBENCH_CLIENT_BUG=twice; t1=$last_pid
wait_effects 40 "$drain_timeout_s"
stop_workers "$t1"
read -r total distinct < <(q "SELECT count(*), count(DISTINCT n) FROM qb_test.queuebench_effects" | tr '|' ' ')
check "bug twice: duplicates visible ($total rows for $distinct distinct n)" test "$total" -gt "$distinct" -a "$distinct" = 20
drop_db

echo "== [$client] ack-first: QUEUEBENCH_CLIENT_BUG=ack-first"
new_db
"$run" setup >/dev/null 2>&1 && "$run" enqueue 200 >/dev/null 2>&1
start_worker a1 QUEUEBENCH_CONCURRENCY=4 QUEUEBENCH_CLIENT_BUG=ack-first; a1=$last_pid
sleep 1
if ! kill -0 "$a1" 2>/dev/null; then
  wait "$a1"; arc=$?
  check "bug ack-first: not supported, refused at start with exit 2 ($(tail -n1 "$tmp/a1.err"))" test "$arc" = 2
else
  wait_effects 196 "$drain_timeout_s"
  sleep 1
  stop_workers "$a1"
  missing=$(q "SELECT coalesce(string_agg(i::text, ',' ORDER BY i), '') FROM generate_series(1, 200) i WHERE i NOT IN (SELECT n FROM qb_test.queuebench_effects)")
  check "bug ack-first: supported; the jobs lost are exactly n=50,100,150,200 (missing: {$missing})" test "$missing" = "50,100,150,200"
fi
drop_db

echo "== [$client] sigkill: a SIGKILLed worker leaves nothing behind"
new_db
"$run" setup >/dev/null 2>&1 && QUEUEBENCH_WORK_MS=2000 "$run" enqueue 20 >/dev/null 2>&1
start_worker k1 QUEUEBENCH_CONCURRENCY=4; k1=$last_pid
sleep 3
descendants() { local p=$1 c; for c in $(pgrep -P "$p"); do echo "$c"; descendants "$c"; done; }
kids=$(descendants "$k1" | tr '\n' ' ')
comm=$(ps -o comm= -p "$k1")
ok "worker pid $k1 is the worker itself ($comm), its child processes: {${kids% }}"
conns_before=$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'queuebench-k1%'")
kill -KILL "$k1"; wait "$k1" 2>/dev/null
sleep 0.5
left=""
for p in $kids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
check "after SIGKILL: no process left behind (left:{$left})" test -z "$left"
t0=$(now_ms)
while :; do
  conns=$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'queuebench-k1%'")
  [ "$conns" = 0 ] && break
  [ $(( $(now_ms) - t0 )) -ge 5000 ] && break
  sleep 0.1
done
check "after SIGKILL: its $conns_before server connections gone ($conns left after $(( $(now_ms) - t0 )) ms)" test "$conns" = 0 -a "$conns_before" -gt 0
drop_db

echo "== [$client] terminate: pg_terminate_backend on the worker's library connections"
new_db
"$run" setup >/dev/null 2>&1
start_worker x1 QUEUEBENCH_CONCURRENCY=2; x1=$last_pid
sleep 3
killed=$(q "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'queuebench-x1'")
sleep 3
if kill -0 "$x1" 2>/dev/null; then
  "$run" enqueue 10 >/dev/null 2>&1
  if wait_effects 10 "$drain_timeout_s"; then
    ok "terminate: survived losing $killed connection(s) and ran 10 new jobs (${last_ms} ms)"
  else
    bad "terminate: survived losing $killed connection(s) but ran only $(effects_count) of 10 new jobs"; show_err x1
  fi
  stop_workers "$x1"
else
  wait "$x1"; xrc=$?
  echo "info  [$client] terminate: the worker exited $xrc after losing $killed connection(s) (the library gives up; see its README): $(tail -n1 "$tmp/x1.err" | cut -c1-160)"
  check "terminate: a worker that gives up exits non-zero ($xrc)" test "$xrc" != 0
fi
drop_db

sqlfile=$here/$client/enqueue.sql
if [ -f "$sqlfile" ]; then
  echo "== [$client] sql-enqueue: 20 jobs through clients/$client/enqueue.sql"
  new_db
  "$run" setup >/dev/null 2>&1
  {
    grep -E '^-- session: ' "$sqlfile" | sed -e 's/^-- session: //' -e 's/$/;/'
    printf 'PREPARE qb_enqueue(text, text) AS %s;\n' "$(grep -v -E '^--' "$sqlfile" | tr '\n' ' ')"
    for i in $(seq 1 20); do printf "EXECUTE qb_enqueue('queuebench', '{\"n\": %d, \"work_ms\": 0}');\n" "$i"; done
  } | sed "s/{schema}/qb_test/g" >"$tmp/enqueue-sql.sql"
  if PGAPPNAME=qb-selftest psql -X -Atq -v ON_ERROR_STOP=1 "$base/$db" -f "$tmp/enqueue-sql.sql" >"$tmp/enqueue-sql.out" 2>"$tmp/enqueue-sql.err"; then
    ok "enqueue.sql ran 20 times ($(grep -c . "$tmp/enqueue-sql.out") ids returned)"
  else
    bad "enqueue.sql failed"; show_err enqueue-sql
  fi
  start_worker s1 QUEUEBENCH_CONCURRENCY=2; s1=$last_pid
  if wait_effects 20 "$drain_timeout_s"; then ok "20 effects rows after ${last_ms} ms"; else bad "only $(effects_count) effects rows"; show_err s1; fi
  stop_workers "$s1"
  sort "$tmp/enqueue-sql.out" >"$tmp/ids-sql.txt"
  q "SELECT job_id FROM qb_test.queuebench_effects ORDER BY 1" | sort >"$tmp/ids-effects.txt"
  read -r distinct dup < <(q "SELECT count(DISTINCT n), count(*) - count(DISTINCT n) FROM qb_test.queuebench_effects" | tr '|' ' ')
  check "SQL-enqueued jobs ran once each ($distinct distinct n, $dup duplicates), job_id = the id enqueue.sql returned" \
    test "$distinct" = 20 -a "$dup" = 0 -a "$(cat "$tmp/ids-sql.txt")" = "$(cat "$tmp/ids-effects.txt")"
  drop_db
fi

echo "selftest $client: $passed passed, $failed failed"
[ "$failed" = 0 ]
