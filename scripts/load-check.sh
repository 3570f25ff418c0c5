#!/usr/bin/env bash
# The load check: does every test hold on a machine that is busy with something else?
#
#   scripts/load-check.sh [--rounds N] [--hog N] [--neighbour bursty|steady] [--smoke | --ci]
#                         [-- CARGO_TEST_ARGS...]
#
# Runs `cargo test --no-fail-fast` N times (default 3) beside a neighbour, and reports each test
# that failed in any round, with the rounds it failed in. With --smoke it runs CI's smoke gate
# instead (scripts/smoke.sh: every shipped scenario) and reports each scenario that failed or
# that `check` disagreed with; with --ci it runs all of CI (.ci/run) on a fresh clone of this
# checkout's HEAD, and reports its exit, its time against CI's 20 minutes and its failed tests.
# Exit 0 when every round passed, 1 when one failed, 2 on bad usage or when stress-ng (or, for
# the bursty neighbour, pgbench) is missing.
# Each round's full output is kept in the folder printed at the start.
#
# The neighbour (--neighbour):
#   bursty (default)  comes and goes, as real neighbours do: bursts of 10–40 s, 5–30 s apart,
#                     each of stress-ng --cpu N and a second PostgreSQL (an ephemeral cluster of
#                     its own, `queuebench cluster`) running pgbench's TPC-B-like writes on 4
#                     connections, which fsync their WAL: CPU and I/O at once;
#   steady            stress-ng --cpu N for the whole round.
# N is --hog (default: one per core, 2 on the development machines).
#
# Every timing-dependent test is meant to hold here: its waits are bounded by progress (the
# next event, up to a generous ceiling), never by a fixed sleep that a slow machine overruns.
# The neighbour is bounded too: its loop and stress-ng stop by themselves after the round's
# time budget (90 minutes), and it is stopped when the round ends or this script exits, however
# it exits (`queuebench cluster` then removes its cluster).
set -euo pipefail

rounds=3
hog=$(nproc)
mode=test
neighbour=bursty
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --hog) hog=${2:?--hog takes a number of CPU workers}; shift 2 ;;
    --neighbour) neighbour=${2:?--neighbour takes bursty or steady}; shift 2 ;;
    --smoke) mode=smoke; shift ;;
    --ci) mode=ci; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "load-check.sh: unknown argument $1 (accepted: --rounds N, --hog N, --neighbour bursty|steady, --smoke, --ci, -- CARGO_TEST_ARGS)" >&2; exit 2 ;;
  esac
done
case $rounds$hog in *[!0-9]*) echo "load-check.sh: --rounds and --hog take whole numbers" >&2; exit 2 ;; esac
case $neighbour in bursty | steady) ;; *) echo "load-check.sh: --neighbour is bursty or steady, not $neighbour" >&2; exit 2 ;; esac
if [ "$mode" != test ] && [ $# -gt 0 ]; then
  echo "load-check.sh: --$mode takes no cargo test arguments (given: $*)" >&2
  exit 2
fi
if ! command -v stress-ng >/dev/null 2>&1; then
  echo "load-check.sh: stress-ng is not installed; install it with: apt-get install stress-ng" >&2
  exit 2
fi
if [ "$neighbour" = bursty ] && ! command -v pgbench >/dev/null 2>&1; then
  echo "load-check.sh: the bursty neighbour runs pgbench, which is not installed: install postgresql-contrib (or use --neighbour steady)" >&2
  exit 2
fi

cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/qb-load-check.XXXXXX")
case $mode in
  test) what="cargo test" ;;
  smoke) what="the smoke gate (scripts/smoke.sh)" ;;
  ci) what="CI (.ci/run) on a fresh clone of $(git rev-parse --short HEAD)" ;;
esac
echo "load check: $rounds round(s) of $what beside the $neighbour neighbour (stress-ng --cpu $hog$([ "$neighbour" = bursty ] && echo ' and pgbench on a cluster of its own, in bursts')); output in $out"
# Build first, without the neighbour, so the rounds time the tests and not the compiler (--ci
# builds from scratch in its clone: that is part of CI's time).
case $mode in
  smoke) cargo build --locked --bins >"$out/build.log" 2>&1 && bash clients/install.sh >>"$out/build.log" 2>&1 ;;
  test) cargo test --locked --no-run "$@" >"$out/build.log" 2>&1 ;;
  ci) : >"$out/build.log" ;;
esac || { echo "the build failed: $out/build.log" >&2; exit 1; }
# The bursty neighbour's PostgreSQL comes from this checkout's queuebench.
if [ "$neighbour" = bursty ]; then
  cargo build --locked --quiet --bin queuebench >>"$out/build.log" 2>&1 || { echo "the build failed: $out/build.log" >&2; exit 1; }
  qb=$(scripts/queuebench-bin.sh --dir)/debug/queuebench
fi

# neighbour_start SECONDS: the neighbour, for at most SECONDS; neighbour_stop ends it early (and
# runs on exit, so it always ends).
neighbour_pid=
neighbour_start() {
  if [ "$neighbour" = steady ]; then
    stress-ng --cpu "$hog" --timeout "${1}s" --quiet &
    neighbour_pid=$!
    return
  fi
  # The bursts run inside `queuebench cluster`, which gives them DATABASE_URL and removes the
  # cluster when they end or are signalled; every wait in the loop is bounded, and so is the loop.
  # shellcheck disable=SC2016 # expanded by the inner bash
  "$qb" cluster -- bash -c '
    budget=$1 hog=$2 log=$3
    end=$((SECONDS + budget))
    pgbench -i -s 10 -q "$DATABASE_URL" >>"$log" 2>&1 || exit 1
    while [ "$SECONDS" -lt "$end" ]; do
      sleep $((5 + RANDOM % 26))
      on=$((10 + RANDOM % 31))
      echo "burst of $on s at $(date +%T)" >>"$log"
      stress-ng --cpu "$hog" --timeout "${on}s" --quiet &
      pgbench -n -c 4 -j 2 -T "$on" "$DATABASE_URL" >>"$log" 2>&1 || true
      wait
    done' neighbour "$1" "$hog" "$out/neighbour.log" >>"$out/neighbour.log" 2>&1 &
  neighbour_pid=$!
}
neighbour_stop() {
  if [ -n "$neighbour_pid" ]; then
    # `queuebench cluster` passes the signal on to the loop's process group (stress-ng and
    # pgbench with it), waits for it, then removes its cluster.
    kill -TERM "$neighbour_pid" 2>/dev/null || true
    wait "$neighbour_pid" 2>/dev/null || true
    neighbour_pid=
  fi
}
trap neighbour_stop EXIT
trap 'exit 130' INT TERM

# The tests a round's output names as failed.
failed_tests() {
  grep -E '^test .* \.\.\. FAILED$' "$1" | sed -E 's/^test (.*) \.\.\. FAILED$/\1/' | sort -u || true
}

failed_any=0
for r in $(seq 1 "$rounds"); do
  neighbour_start 5400
  start=$SECONDS
  rc=0
  case $mode in
    ci)
      rm -rf "$out/clone"
      git clone --quiet --no-local "$PWD" "$out/clone"
      (cd "$out/clone" && bash .ci/run) >"$out/round-$r.log" 2>&1 || rc=$?
      neighbour_stop
      fails=$(failed_tests "$out/round-$r.log")
      passed=$(grep -oE '[0-9]+ passed' "$out/round-$r.log" | awk '{s += $1} END {print s + 0}')
      took=$((SECONDS - start))
      if [ "$took" -gt 1200 ]; then
        fails="$fails ci-over-20-minutes"
      fi
      ;;
    smoke)
      # No ledger: every scenario runs.
      QUEUEBENCH_SMOKE_LEDGER= bash scripts/smoke.sh "$out/smoke-$r" >"$out/round-$r.log" 2>&1 || rc=$?
      neighbour_stop
      # A scenario's --quiet line is "NAME: passed" or "NAME: FAILED", an error "error: NAME: …";
      # a disagreeing check names the file.
      fails=$( (grep -oE '^[A-Za-z0-9_.-]+: FAILED' "$out/round-$r.log" | sed 's/: FAILED$//'
        grep -oE '^error: [A-Za-z0-9_.-]+:' "$out/round-$r.log" | sed -E 's/^error: (.*):$/\1/'
        grep -oE 'check DISAGREES with the run of [^:]+' "$out/round-$r.log" | sed 's/.* of //') | sort -u || true)
      passed=$(grep -cE '^[A-Za-z0-9_.-]+: passed' "$out/round-$r.log" || true)
      ;;
    test)
      cargo test --locked --no-fail-fast "$@" -- --color never >"$out/round-$r.log" 2>&1 || rc=$?
      neighbour_stop
      fails=$(failed_tests "$out/round-$r.log")
      passed=$(grep -oE '[0-9]+ passed' "$out/round-$r.log" | awk '{s += $1} END {print s + 0}')
      ;;
  esac
  bursts=$(grep -c '^burst of' "$out/neighbour.log" 2>/dev/null || true)
  : >"$out/neighbour.log.round-$r" && cat "$out/neighbour.log" >>"$out/neighbour.log.round-$r" 2>/dev/null && : >"$out/neighbour.log"
  n=$(printf '%s' "$fails" | grep -c . || true)
  printf 'round %d: %d passed, %d failed, exit %d, %d s, %s neighbour bursts\n' "$r" "$passed" "$n" "$rc" "$((SECONDS - start))" "${bursts:-0}"
  if [ "$rc" != 0 ] && [ "$n" = 0 ]; then
    echo "  $what exited $rc with nothing named as failed: see $out/round-$r.log"
    failed_any=1
  fi
  for t in $fails; do
    echo "$t" >>"$out/failed-in-round-$r"
    echo "  FAILED: $t"
    failed_any=1
  done
done

if [ "$failed_any" = 0 ]; then
  echo "load check passed: every one held in $rounds round(s) of $what beside the $neighbour neighbour"
  exit 0
fi
echo "flaky under load (test, scenario or CI's budget: rounds it failed in):"
cat "$out"/failed-in-round-* 2>/dev/null | sort | uniq -c | sort -rn | while read -r count name; do
  printf '  %s: %d of %d\n' "$name" "$count" "$rounds"
done
exit 1
