#!/usr/bin/env bash
# The load check: does every test hold on a machine that is busy with something else?
#
#   scripts/load-check.sh [--rounds N] [--hog N] [-- CARGO_TEST_ARGS...]
#
# Runs `cargo test --no-fail-fast` N times (default 3) while stress-ng keeps N CPU workers
# busy (default: one per core, 2 on the development machines), and reports each test that
# failed in any round, with the rounds it failed in. Exit 0 when every round passed, 1 when a
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
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --hog) hog=${2:?--hog takes a number of CPU workers}; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "load-check.sh: unknown argument $1 (accepted: --rounds N, --hog N, -- CARGO_TEST_ARGS)" >&2; exit 2 ;;
  esac
done
case $rounds$hog in *[!0-9]*) echo "load-check.sh: --rounds and --hog take whole numbers" >&2; exit 2 ;; esac
if ! command -v stress-ng >/dev/null 2>&1; then
  echo "load-check.sh: stress-ng is not installed; install it with: apt-get install stress-ng" >&2
  exit 2
fi

cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/qb-load-check.XXXXXX")
echo "load check: $rounds round(s) of cargo test beside stress-ng --cpu $hog; output in $out"
# Build first, without the hog, so the rounds time the tests and not the compiler.
cargo test --locked --no-run "$@" >"$out/build.log" 2>&1 || { echo "the build failed: $out/build.log" >&2; exit 1; }

. scripts/bench/lib.sh
trap hog_stop EXIT
trap 'exit 130' INT TERM

failed_any=0
for r in $(seq 1 "$rounds"); do
  hog_start "$hog" 5400
  start=$SECONDS
  rc=0
  cargo test --locked --no-fail-fast "$@" -- --color never >"$out/round-$r.log" 2>&1 || rc=$?
  hog_stop
  fails=$(grep -E '^test .* \.\.\. FAILED$' "$out/round-$r.log" | sed -E 's/^test (.*) \.\.\. FAILED$/\1/' | sort -u || true)
  passed=$(grep -oE '[0-9]+ passed' "$out/round-$r.log" | awk '{s += $1} END {print s + 0}')
  n=$(printf '%s' "$fails" | grep -c . || true)
  printf 'round %d: %d passed, %d failed, exit %d, %d s\n' "$r" "$passed" "$n" "$rc" "$((SECONDS - start))"
  if [ "$rc" != 0 ] && [ "$n" = 0 ]; then
    echo "  cargo test exited $rc with no failed test named: see $out/round-$r.log"
    failed_any=1
  fi
  for t in $fails; do
    echo "$t" >>"$out/failed-in-round-$r"
    echo "  FAILED: $t"
    failed_any=1
  done
done

if [ "$failed_any" = 0 ]; then
  echo "load check passed: every test held in $rounds round(s) beside stress-ng --cpu $hog"
  exit 0
fi
echo "flaky under load (test: rounds it failed in):"
cat "$out"/failed-in-round-* 2>/dev/null | sort | uniq -c | sort -rn | while read -r count name; do
  printf '  %s: %d of %d\n' "$name" "$count" "$rounds"
done
exit 1
