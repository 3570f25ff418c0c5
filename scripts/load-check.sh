#!/usr/bin/env bash
# The load check: does every test hold on a machine that is busy with something else?
#
#   scripts/load-check.sh [--rounds N] [--hog N] [--smoke] [-- CARGO_TEST_ARGS...]
#
# Runs `cargo test --no-fail-fast` N times (default 3) while stress-ng keeps N CPU workers
# busy (default: one per core, 2 on the development machines), and reports each test that
# failed in any round, with the rounds it failed in. With --smoke it runs CI's smoke gate
# instead (scripts/smoke.sh: every shipped scenario, two at a time) and reports each scenario
# that failed or that `check` disagreed with. Exit 0 when every round passed, 1 when a
# test failed, 2 on bad usage or when stress-ng is missing (`apt-get install stress-ng`).
# Each round's full output is kept in the folder printed at the start.
#
# Every timing-dependent test is meant to hold here: its waits are bounded by progress (the
# next event, up to a generous ceiling), never by a fixed sleep that a slow machine overruns.
# The CPU hog is bounded too: stress-ng stops by itself after the rounds' time budget
# (--timeout, 90 minutes per round) and is killed when this script exits, however it exits.
set -euo pipefail

rounds=3
hog=$(nproc)
smoke=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --hog) hog=${2:?--hog takes a number of CPU workers}; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "load-check.sh: unknown argument $1 (accepted: --rounds N, --hog N, --smoke, -- CARGO_TEST_ARGS)" >&2; exit 2 ;;
  esac
done
case $rounds$hog in *[!0-9]*) echo "load-check.sh: --rounds and --hog take whole numbers" >&2; exit 2 ;; esac
if [ "$smoke" = 1 ] && [ $# -gt 0 ]; then
  echo "load-check.sh: --smoke runs every shipped scenario and takes no cargo test arguments (given: $*)" >&2
  exit 2
fi
if ! command -v stress-ng >/dev/null 2>&1; then
  echo "load-check.sh: stress-ng is not installed; install it with: apt-get install stress-ng" >&2
  exit 2
fi

cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/qb-load-check.XXXXXX")
what="cargo test"
[ "$smoke" = 1 ] && what="the smoke gate (scripts/smoke.sh)"
echo "load check: $rounds round(s) of $what beside stress-ng --cpu $hog; output in $out"
# Build first, without the hog, so the rounds time the tests and not the compiler.
if [ "$smoke" = 1 ]; then
  cargo build --locked --bins >"$out/build.log" 2>&1 && bash clients/install.sh >>"$out/build.log" 2>&1
else
  cargo test --locked --no-run "$@" >"$out/build.log" 2>&1
fi || { echo "the build failed: $out/build.log" >&2; exit 1; }

# hog_start N SECONDS: stress-ng keeps N CPU workers busy, stopping by itself after SECONDS;
# hog_stop ends it early (and runs on exit, so it always ends).
hog_pid=
hog_start() {
  stress-ng --cpu "$1" --timeout "${2}s" --quiet &
  hog_pid=$!
}
hog_stop() {
  if [ -n "$hog_pid" ]; then
    kill "$hog_pid" 2>/dev/null || true
    wait "$hog_pid" 2>/dev/null || true
    hog_pid=
  fi
}
trap hog_stop EXIT
trap 'exit 130' INT TERM

failed_any=0
for r in $(seq 1 "$rounds"); do
  hog_start "$hog" 5400
  start=$SECONDS
  rc=0
  if [ "$smoke" = 1 ]; then
    # No ledger: every scenario runs.
    QUEUEBENCH_SMOKE_LEDGER= bash scripts/smoke.sh "$out/smoke-$r" >"$out/round-$r.log" 2>&1 || rc=$?
    hog_stop
    # A scenario's --quiet line is "NAME: passed" or "NAME: FAILED", an error "error: NAME: …";
    # a disagreeing check names the file.
    fails=$( (grep -oE '^[A-Za-z0-9_.-]+: FAILED' "$out/round-$r.log" | sed 's/: FAILED$//'
      grep -oE '^error: [A-Za-z0-9_.-]+:' "$out/round-$r.log" | sed -E 's/^error: (.*):$/\1/'
      grep -oE 'check DISAGREES with the run of [^:]+' "$out/round-$r.log" | sed 's/.* of //') | sort -u || true)
    passed=$(grep -cE '^[A-Za-z0-9_.-]+: passed' "$out/round-$r.log" || true)
  else
    cargo test --locked --no-fail-fast "$@" -- --color never >"$out/round-$r.log" 2>&1 || rc=$?
    hog_stop
    fails=$(grep -E '^test .* \.\.\. FAILED$' "$out/round-$r.log" | sed -E 's/^test (.*) \.\.\. FAILED$/\1/' | sort -u || true)
    passed=$(grep -oE '[0-9]+ passed' "$out/round-$r.log" | awk '{s += $1} END {print s + 0}')
  fi
  n=$(printf '%s' "$fails" | grep -c . || true)
  printf 'round %d: %d passed, %d failed, exit %d, %d s\n' "$r" "$passed" "$n" "$rc" "$((SECONDS - start))"
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
  echo "load check passed: every one held in $rounds round(s) of $what beside stress-ng --cpu $hog"
  exit 0
fi
echo "flaky under load (test or scenario: rounds it failed in):"
cat "$out"/failed-in-round-* 2>/dev/null | sort | uniq -c | sort -rn | while read -r count name; do
  printf '  %s: %d of %d\n' "$name" "$count" "$rounds"
done
exit 1
