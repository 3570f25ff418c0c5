#!/usr/bin/env bash
# The benchmark suite: is the harness ever the bottleneck?
#
#   scripts/bench.sh [--quick] [--out DIR] [--only SECTIONS]
#
# Prints a Markdown report (also written to DIR/bench.md; default
# results/bench-<time>/) with one table per figure, each with its goal and
# PASS or MISS, and the machine it ran on. Sections, in order (--only takes a
# comma-separated subset, e.g. --only preload,verify):
#   pgbench  harness ÷ pgbench jobs/s and CPU s per 10k jobs (scripts/vs-pgbench.sh --grid):
#            skip-locked, zero work, burn-down of 100,000 jobs, 2/8/32 connections,
#            lease and hold-transaction mode, effects ledger off and on     goal ≥ 0.95
#   preload  1,000,000 jobs: the harness's preload ÷ a plain INSERT … SELECT
#            generate_series of the same rows (3 alternating rounds)        goal ≤ 1.5
#   verify   a burn-down of 1,000,000 jobs: checker time and peak RSS       goal < 5 s, < 1 GiB
#   workers  1, 2, 4 … 512 workers for 10 s each: jobs/s and claim p50/p99,
#            charted (DIR/worker-curve-*.png/.svg)                          goal: 512 run clean
#   sampler  time-series sampler + claim-plan probe on vs off (5 alternating
#            rounds) and their own query time ÷ run time                    goal < 1 %
#   history  the history kept (run.history) on vs off at 2/8/32 connections (3
#            alternating rounds): jobs/s, the time to write it ÷ the run's
#            duration, bytes per million events                             goal ≤ 3 %
# --quick runs every section small (~2 minutes) to check the script itself;
# its figures mean nothing. The full suite takes about 20 minutes.
#
# Everything runs against one ephemeral cluster started by `queuebench cluster
# --scenario scripts/bench/server.toml` (max_connections 600, fsync and
# synchronous_commit off so the database is as fast as it can be and harness
# overhead shows), or DATABASE_URL if set. The harness always runs in URL
# mode, so the postgres server is never its child: /usr/bin/time -v counts the
# harness's own CPU and memory only.
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/scripts/bench/lib.sh"
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh" --dir)/release/queuebench}
curve=$(dirname "$qb")/queuebench-curve

quick=false
out=
only=pgbench,preload,verify,workers,sampler,history
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=true ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (accepted: --quick, --out DIR, --only pgbench,preload,verify,workers,sampler,history)" >&2; exit 2 ;;
  esac
  shift
done

for tool in pgbench psql python3 /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "$tool not found (apt-get install postgresql-client python3 time)" >&2; exit 3; }
done
if [ -z "${QUEUEBENCH:-}" ]; then
  (cd "$root" && cargo build --release --quiet --bins)
fi

if [ -z "${DATABASE_URL:-}" ]; then
  exec "$qb" cluster --scenario "$root/scripts/bench/server.toml" -- "$0" "${args[@]}"
fi

out=${out:-$root/results/bench-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out"
report=$out/bench.md
work=$out/work
mkdir -p "$work"
scenario=$root/scripts/bench/burn-down.toml
started=$(date +%s)
export QUEUEBENCH=$qb

if $quick; then
  grid=(--jobs 4000 --conns "2 8" --rounds 1)
  preload_jobs=100000 preload_rounds=1
  verify_jobs=50000
  curve_points="1 8 64 512" curve_secs=2 curve_jobs=20000
  sampler_jobs=5000 sampler_rounds=1
  history_jobs=5000 history_rounds=1 history_conns="2 8"
else
  grid=(--jobs 100000 --conns "2 8 32" --rounds 1)
  preload_jobs=1000000 preload_rounds=3
  verify_jobs=1000000
  curve_points="1 2 4 8 16 32 64 128 256 512" curve_secs=10 curve_jobs=150000
  sampler_jobs=100000 sampler_rounds=5
  history_jobs=100000 history_rounds=3 history_conns="2 8 32"
fi

# json FILE EXPR: a value from a summary.json (EXPR indexes `s`, e.g. s['timings']['verify_s']).
json() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$1"; }
say() { echo "$@" | tee -a "$report"; }
want() { [[ ",$only," == *",$1,"* ]]; }

: > "$report"
cores=$(nproc)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
pgv=$(psql -At "$DATABASE_URL" -c "SHOW server_version")
settings=$(psql -At "$DATABASE_URL" -c "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings
  WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'max_connections', 'shared_buffers')")
say "# queuebench benchmark$($quick && echo ' (--quick: a smoke test of the script, the figures mean nothing)')"
say
say "Machine: $cores cores ($cpu), $mem memory, PostgreSQL $pgv ($settings), $(uname -sr)."
say "Release build $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), run $(date -u '+%Y-%m-%d %H:%M UTC'), command \`scripts/bench.sh${args[*]:+ ${args[*]}}\`."
say

if want pgbench; then
  echo "== pgbench comparison (${grid[*]})" >&2
  say "## Harness ÷ pgbench (same SQL, same server)"
  say
  say "skip-locked, zero work, burn-down, lease mode (claim + complete, two transactions) and hold-transaction"
  say "mode (one). pgbench runs \`queuebench sql --pgbench\` without the effects INSERT; with the effects ledger"
  say "\"on\" the harness also writes the effects table (one INSERT per 64 jobs). CPU: user + system of each"
  say "process (/usr/bin/time -v), per 10,000 jobs; the harness's includes setup, checks and reports."
  say
  "$root/scripts/vs-pgbench.sh" --grid "${grid[@]}" | tee -a "$report"
  say
fi

if want preload; then
  echo "== preload ($preload_jobs jobs, $preload_rounds rounds)" >&2
  hs=() ps=()
  for r in $(seq 1 "$preload_rounds"); do
    s1=qb_bench_pre_h_$$_$r s2=qb_bench_pre_p_$$_$r
    if [ $((r % 2)) -eq 0 ]; then first=plain; else first=harness; fi
    harness_preload() {
      h=$("$qb" prepare "$scenario" --set "jobs.preload=$preload_jobs" --database-url "$DATABASE_URL" --schema "$s1" |
        sed -n 's/.*(preload \([0-9.]*\) s).*/\1/p')
      drop_schema "$DATABASE_URL" "$s1"
    }
    plain_preload() {
      # (jobs.preload = 1: a scenario must have work; one row more in the table changes nothing measurable.)
      "$qb" prepare "$scenario" --set jobs.preload=1 --database-url "$DATABASE_URL" --schema "$s2" > /dev/null
      # The same rows as the harness's preload (src/db/schema.rs PRELOAD), as one plain statement.
      p=$(psql -X -q "$DATABASE_URL" -c "SET search_path = $s2" -c '\timing on' -c "INSERT INTO jobs (payload, run_at, max_attempts)
        SELECT jsonb_build_object('n', g), now() - make_interval(secs => ($preload_jobs - g) / 1e6), 5
        FROM generate_series(1, $preload_jobs) AS g" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
      p=$(awk -v p="$p" 'BEGIN {printf "%.3f", p / 1000}')
      drop_schema "$DATABASE_URL" "$s2"
    }
    if [ "$first" = harness ]; then harness_preload; plain_preload; else plain_preload; harness_preload; fi
    echo "    round $r: harness preload $h s, plain INSERT … SELECT generate_series $p s" >&2
    hs+=("$h") ps+=("$p")
  done
  h=$(median "${hs[@]}") p=$(median "${ps[@]}") r=$(ratio "$h" "$p")
  say "## Preload"
  say
  say "| jobs | harness preload | plain INSERT … SELECT generate_series | ratio (goal ≤ 1.5) | |"
  say "|---:|---:|---:|---:|---|"
  say "| $preload_jobs | $h s | $p s | $r | $(verdict "$r" '<=' 1.5) |"
  say
  say "Medians of $preload_rounds alternating rounds into the same empty table (indexes included); the harness's"
  say "time is \`timings.preload_s\` of summary.json (the INSERT alone, without VACUUM ANALYZE)."
  say
fi

if want verify; then
  echo "== verification over $verify_jobs jobs" >&2
  d=$work/verify
  timed "$d.time" "$qb" run "$scenario" --set "jobs.preload=$verify_jobs" --set workers.count=8 --set workers.batch=100 \
    --set workers.mode=hold-transaction --database-url "$DATABASE_URL" --out "$d" --quiet > "$d.out" 2>&1 ||
    { echo "the verification run failed:" >&2; cat "$d.out" >&2; exit 3; }
  v=$(json "$d/summary.json" "'%.3f' % s['timings']['verify_s']")
  done_jobs=$(json "$d/summary.json" "s['jobs']['completed']")
  events=$(json "$d/summary.json" "s['executions']['total']")
  rss=$(rss_mib "$d.time")
  say "## Verification at scale"
  say
  say "| jobs completed | executions | checker time (goal < 5 s) | | peak harness RSS (goal < 1024 MiB) | |"
  say "|---:|---:|---:|---|---:|---|"
  say "| $done_jobs | $events | $v s | $(verdict "$v" '<=' 5) | $rss MiB | $(verdict "$rss" '<=' 1024) |"
  say
  say "One burn-down (8 workers, batch 100, hold-transaction), then every checker over its journal and final"
  say "table: \`timings.verify_s\`; peak RSS of the whole harness process from /usr/bin/time -v."
  say
fi

if want workers; then
  echo "== worker-count curve ($curve_points; $curve_secs s each)" >&2
  csv=$out/worker-curve.csv
  echo "workers,jobs_per_sec,claim_p50_ms,claim_p99_ms" > "$csv"
  say "## Throughput and claim latency by worker count"
  say
  say "| workers | jobs/s | claim p50 ms | claim p99 ms | errors | checks | |"
  say "|---:|---:|---:|---:|---:|---|---|"
  for w in $curve_points; do
    d=$work/workers-$w
    "$qb" run "$scenario" --set "jobs.preload=$curve_jobs" --set "workers.count=$w" --set "run.stop=${curve_secs}s" \
      --set run.effects_table=false --database-url "$DATABASE_URL" --out "$d" --quiet > "$d.out" 2>&1 || true
    [ -f "$d/summary.json" ] || { echo "the $w-worker run failed:" >&2; cat "$d.out" >&2; exit 3; }
    read -r jps p50 p99 errs passed <<< "$(json "$d/summary.json" "'%.0f %.3f %.3f %d %s' % (s['throughput']['jobs_per_sec'],
      s['latency_ms']['claim']['p50'], s['latency_ms']['claim']['p99'], s['errors']['total'], s['passed'])")"
    echo "$w,$jps,$p50,$p99" >> "$csv"
    echo "    $w workers: $jps jobs/s, claim p50 $p50 ms, p99 $p99 ms" >&2
    say "| $w | $jps | $p50 | $p99 | $errs | $([ "$passed" = True ] && echo passed || echo FAILED) | $([ "$passed" = True ] && [ "$errs" = 0 ] && echo PASS || echo MISS) |"
  done
  "$curve" "$csv" "$out" > /dev/null
  say
  say "Each point: skip-locked, lease mode, zero work, ${curve_secs} s against a queue that does not run dry; checks"
  say "= every checker (exactly once, no lost jobs …) over that run. Charts: \`worker-curve-throughput.png\`,"
  say "\`worker-curve-claim.png\` (and .svg) beside this report; data: \`worker-curve.csv\`."
  say
fi

if want sampler; then
  echo "== sampler and plan probe on/off ($sampler_rounds rounds of $sampler_jobs jobs)" >&2
  ons=() offs=() shares=()
  for r in $(seq 1 "$sampler_rounds"); do
    for side in $([ $((r % 2)) -eq 1 ] && echo "on off" || echo "off on"); do
      d=$work/sampler-$side-$r
      if [ "$side" = on ]; then sets=(--set run.sample_interval=1s --set run.plan_probe=1s); else
        sets=(--set run.sample_interval=off --set run.plan_probe=off); fi
      "$qb" run "$scenario" --set "jobs.preload=$sampler_jobs" --set workers.count=8 "${sets[@]}" \
        --database-url "$DATABASE_URL" --out "$d" --quiet > "$d.out" 2>&1 ||
        { echo "the sampler run failed:" >&2; cat "$d.out" >&2; exit 3; }
      jps=$(json "$d/summary.json" "s['throughput']['jobs_per_sec']")
      if [ "$side" = on ]; then
        ons+=("$jps")
        shares+=("$(json "$d/summary.json" "'%.4f' % ((s['timings']['sampler_s'] + s['timings']['probe_s']) / s['throughput']['duration_s'] * 100)")")
      else offs+=("$jps"); fi
    done
    echo "    round $r: on ${ons[-1]} jobs/s, off ${offs[-1]} jobs/s, sampler+probe query time ${shares[-1]} % of the run" >&2
  done
  on=$(median "${ons[@]}") off=$(median "${offs[@]}") share=$(median "${shares[@]}")
  cost=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.2f", (1 - a / b) * 100}')
  say "## Sampler and claim-plan probe"
  say
  say "| sampler + probe | jobs/s (median of $sampler_rounds) | throughput cost (goal < 1 %) | | their query time ÷ run time (goal < 1 %) | |"
  say "|---|---:|---:|---|---:|---|"
  say "| on (1 s, 1 s) | $(printf '%.0f' "$on") | $cost % | $(verdict "$cost" '<=' 1) | $share % | $(verdict "$share" '<=' 1) |"
  say "| off | $(printf '%.0f' "$off") | | | | |"
  say
  say "Cost = 1 − on ÷ off (negative: on was faster, i.e. noise). The second figure does not depend on noise: the"
  say "sampler's and the probe's own round trips (\`timings.sampler_s + timings.probe_s\`) as a share of the run's"
  say "wall time — the most time they can take from one connection's worth of the server."
  say
fi

if want history; then
  echo "== history on/off ($history_rounds rounds of $history_jobs jobs at $history_conns connections)" >&2
  say "## The history kept"
  say
  say "| connections | jobs/s on | jobs/s off | jobs/s on ÷ off | writing it (timings.history_s) | ÷ the run's duration (goal ≤ 3 %) | | history.csv.gz | per million events |"
  say "|---:|---:|---:|---:|---:|---:|---|---:|---:|"
  for c in $history_conns; do
    ons=() offs=() writes=() shares=() size=0 rows=0
    for r in $(seq 1 "$history_rounds"); do
      for side in $([ $((r % 2)) -eq 1 ] && echo "on off" || echo "off on"); do
        d=$work/history-$c-$side-$r
        "$qb" run "$scenario" --set "jobs.preload=$history_jobs" --set "workers.count=$c" \
          --set "run.history=$([ "$side" = on ] && echo true || echo false)" \
          --database-url "$DATABASE_URL" --out "$d" --quiet > "$d.out" 2>&1 ||
          { echo "the history run failed:" >&2; cat "$d.out" >&2; exit 3; }
        jps=$(json "$d/summary.json" "s['throughput']['jobs_per_sec']")
        if [ "$side" = on ]; then
          ons+=("$jps")
          writes+=("$(json "$d/summary.json" "'%.3f' % s['timings']['history_s']")")
          shares+=("$(json "$d/summary.json" "'%.2f' % (s['timings']['history_s'] / s['throughput']['duration_s'] * 100)")")
          size=$(stat -c %s "$d/history.csv.gz")
          rows=$(python3 -c "import gzip,sys; print(sum(1 for _ in gzip.open(sys.argv[1])) - 1)" "$d/history.csv.gz")
        else offs+=("$jps"); fi
      done
      echo "    $c connections, round $r: on ${ons[-1]} jobs/s (history written in ${writes[-1]} s), off ${offs[-1]} jobs/s" >&2
    done
    on=$(median "${ons[@]}") off=$(median "${offs[@]}") write=$(median "${writes[@]}") share=$(median "${shares[@]}")
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.2f", a / b}')
    say "| $c | $(printf '%.0f' "$on") | $(printf '%.0f' "$off") | $ratio | $write s | $share % | $(verdict "$share" '<=' 3) | $(awk -v s="$size" 'BEGIN {printf "%.1f MB", s / 1e6}') ($rows events) | $(awk -v s="$size" -v n="$rows" 'BEGIN {printf "%.1f MB", s / n}') |"
  done
  say
  say "Medians of $history_rounds alternating rounds. The journal the checkers read is recorded during the run"
  say "either way; the history is that journal compressed once, after the run, so jobs/s (measured over the"
  say "run) can only move by noise, and what keeping it costs is the time to write it (\`timings.history_s\`),"
  say "shown as a share of the run's own duration."
  say
fi

say "Total suite time: $(( $(date +%s) - started )) s. Raw runs: \`$work\`."
echo >&2
echo "report: $report" >&2
