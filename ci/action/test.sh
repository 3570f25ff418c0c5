#!/usr/bin/env bash
# Tests the action's scripts (ci/action/*.sh) outside GitHub: GITHUB_ACTION_PATH points at this
# checkout, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY / GITHUB_PATH are temp files, the install root
# stands in for the actions/cache folder, and the scenarios are tiny ones written to a temp dir.
#
#   ci/action/test.sh
#
# Environment:
#   QB_TEST_TARGET_DIR   a cargo target dir to build in (e.g. this checkout's target/ after a
#                        `cargo build`), so the install only links. Without it the build happens
#                        from scratch in the test's temp dir (minutes), and is deleted afterwards.
#   QB_TEST_DEBUG_BUILD  default true here: install a debug build (test only; see install.sh).
#                        false installs the release build the action installs.
#
# Everything the test creates lives in one temp dir, removed at exit; the ephemeral PostgreSQL
# clusters go there too (TMPDIR). Needs PostgreSQL's server binaries, as queuebench does; cargo
# reads and updates its own registry cache as on any build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/qb-action-test.XXXXXX")
cleanup() {
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# As root, queuebench runs the cluster as the `postgres` user, who must reach its directory.
chmod 0711 "$tmp"
mkdir -m 0755 "$tmp/pg"

# Nothing of the caller's CI may receive what this test writes, or steer it.
unset GITHUB_ACTIONS GITHUB_OUTPUT GITHUB_STEP_SUMMARY GITHUB_PATH GITHUB_ACTION_REF DATABASE_URL
unset QB_ACTION_PATH QB_INSTALL_ROOT QB_CACHE_KEY QB_SCENARIOS QB_REPEAT QB_BASELINE QB_BASELINE_DIR \
  QB_SAVE_BASELINE QB_TOLERANCES QB_DATABASE_URL QB_ARGS QB_WORKING_DIRECTORY QB_RESULTS_DIR QB_BIN \
  QB_GITHUB QB_DEFER_EXIT QB_JUNIT_DIR QB_EXIT_CODE
export GITHUB_ACTION_PATH=$repo
export QB_TEST_DEBUG_BUILD=${QB_TEST_DEBUG_BUILD:-true}
if [ -n "${QB_TEST_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=$QB_TEST_TARGET_DIR
else
  export CARGO_TARGET_DIR=$tmp/target
fi

passed=0
failed=0
ok() {
  passed=$((passed + 1))
  echo "ok - $*"
}
not_ok() {
  failed=$((failed + 1))
  echo "not ok - $*"
}
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# output FILE NAME: the last value a step wrote for NAME into its GITHUB_OUTPUT file.
output() {
  sed -n "s/^$2=//p" "$1" 2>/dev/null | tail -n1
}
now_ms() {
  date +%s%3N
}
seconds_since() {
  local ms=$(($(now_ms) - $1))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
# step NAME SCRIPT [ARG]: runs a script like the action's step would, with fresh GITHUB_* files
# ($tmp/NAME.out, .summary, .path, .log); its exit code goes to $rc.
step() {
  local name=$1
  shift
  : >"$tmp/$name.out"
  : >"$tmp/$name.summary"
  : >"$tmp/$name.path"
  rc=0
  GITHUB_OUTPUT=$tmp/$name.out GITHUB_STEP_SUMMARY=$tmp/$name.summary GITHUB_PATH=$tmp/$name.path \
    TMPDIR=$tmp/pg bash "$@" >"$tmp/$name.log" 2>&1 || rc=$?
}
show_log() {
  sed 's/^/    | /' "$tmp/$1.log" | tail -n "${2:-25}"
}

started_all=$(now_ms)
export QB_INSTALL_ROOT=$tmp/cache/queuebench-install

echo "# PostgreSQL server binaries"
step postgres "$here/postgres.sh"
if [ "$rc" = 0 ] && [ -n "$(output "$tmp/postgres.out" pg-bindir)" ]; then
  ok "postgres.sh finds initdb ($(output "$tmp/postgres.out" pg-bindir))"
else
  not_ok "postgres.sh finds initdb (exit $rc)"
  show_log postgres
fi
QB_DATABASE_URL=postgres://nobody@127.0.0.1:1/none step postgres-url "$here/postgres.sh"
check "postgres.sh looks for nothing when database-url is set" \
  test "$rc" = 0 -a -z "$(output "$tmp/postgres-url.out" pg-bindir)"

echo "# (a) fresh install (CARGO_TARGET_DIR=$CARGO_TARGET_DIR, QB_TEST_DEBUG_BUILD=$QB_TEST_DEBUG_BUILD)"
step key "$here/install.sh" key
key=$(output "$tmp/key.out" key)
check "install.sh key gives a key ($key)" test "$rc" = 0 -a -n "$key"
t0=$(now_ms)
QB_CACHE_KEY=$key step install1 "$here/install.sh" install
cold=$(seconds_since "$t0")
bin=$(output "$tmp/install1.out" bin)
echo "# fresh install took $cold s"
if [ "$rc" = 0 ] && [ "$(output "$tmp/install1.out" cache-hit)" = false ]; then
  ok "fresh install builds (cache-hit=false)"
else
  not_ok "fresh install builds (exit $rc, cache-hit=$(output "$tmp/install1.out" cache-hit))"
  show_log install1
fi
version=$("$bin" --version 2>/dev/null || true)
check "installed binary runs --version ($version)" test -n "$version" -a "$bin" = "$QB_INSTALL_ROOT/bin/queuebench"
check "install adds its bin folder to GITHUB_PATH" grep -qx "$QB_INSTALL_ROOT/bin" "$tmp/install1.path"
check "the install root records the key" grep -qx "$key" "$QB_INSTALL_ROOT/queuebench-cache-key"

echo "# (b) second install with the same key"
t0=$(now_ms)
QB_CACHE_KEY=$key step install2 "$here/install.sh" install
hit_time=$(seconds_since "$t0")
hit_ms=$(($(now_ms) - t0))
echo "# cache hit took $hit_time s"
check "second install is a cache hit" test "$rc" = 0 -a "$(output "$tmp/install2.out" cache-hit)" = true
check "cache hit under 5 s ($hit_time s)" test "$hit_ms" -lt 5000
# What actions/cache does on a new runner: the folder comes back elsewhere-from, same key.
cp -a "$QB_INSTALL_ROOT" "$tmp/cache/restored"
QB_INSTALL_ROOT=$tmp/cache/restored QB_CACHE_KEY=$key step install3 "$here/install.sh" install
check "a restored copy of the install root is a cache hit" \
  test "$rc" = 0 -a "$(output "$tmp/install3.out" cache-hit)" = true
t0=$(now_ms)
QB_INSTALL_ROOT=$tmp/cache/restored QB_CACHE_KEY="$key-other" step install4 "$here/install.sh" install
rebuild=$(seconds_since "$t0")
check "another key is a miss and reinstalls ($rebuild s)" \
  test "$rc" = 0 -a "$(output "$tmp/install4.out" cache-hit)" = false
check "after the reinstall the root records the new key" grep -qx "$key-other" "$tmp/cache/restored/queuebench-cache-key"

# Tiny scenarios in a work dir of their own.
work=$tmp/work
mkdir -p "$work/scenarios"
cat >"$work/scenarios/action-pass.toml" <<'EOF'
name = "action-pass"
description = "ci/action/test.sh: 300 jobs claimed with SKIP LOCKED; each must run once."
seed = 7

[jobs]
preload = 300

[workers]
count = 4
strategy = "skip-locked"
batch = 1
mode = "lease"
work = "0ms"

[lease]
duration = "30s"
fencing = "token"

[run]
stop = "drained"

[expect]
"executions.duplicate" = "== 0"
"jobs.completed" = "== 300"
"jobs.lost" = "== 0"
EOF
export QB_WORKING_DIRECTORY=$work QB_BIN=$bin QB_GITHUB=true

echo "# (c) a passing scenario"
t0=$(now_ms)
QB_SCENARIOS='scenarios/action-*.toml' QB_RESULTS_DIR=results-c step run-c "$here/run.sh"
echo "# took $(seconds_since "$t0") s"
check "run.sh exits 0" test "$rc" = 0
check "exit-code output is 0" test "$(output "$tmp/run-c.out" exit-code)" = 0
check "results-dir output is the absolute results folder" test "$(output "$tmp/run-c.out" results-dir)" = "$work/results-c"
check "the step summary is not empty" test -s "$tmp/run-c.summary"
check "the step summary says passed" grep -q 'passed' "$tmp/run-c.summary"
check "the results folder has summary.json" test -f "$work/results-c/summary.json"
check "the results folder has junit.xml and report.html" test -f "$work/results-c/junit.xml" -a -f "$work/results-c/report.html"
[ "$rc" = 0 ] || show_log run-c

echo "# (d) a failing expectation (added through args)"
t0=$(now_ms)
QB_SCENARIOS=scenarios/action-pass.toml QB_RESULTS_DIR=results-d \
  QB_ARGS="--set 'expect.\"throughput.jobs_per_sec\"=\"> 1e9\"' --quiet" step run-d "$here/run.sh"
echo "# took $(seconds_since "$t0") s"
check "run.sh exits 1" test "$rc" = 1
check "exit-code output is 1" test "$(output "$tmp/run-d.out" exit-code)" = 1
check "the step summary marks the expectation FAILED" grep -q 'FAILED' "$tmp/run-d.summary"
check "queuebench printed an ::error annotation" grep -q '^::error' "$tmp/run-d.log"
check "the failing run still wrote summary.json" test -f "$work/results-d/summary.json"
[ "$rc" = 1 ] || show_log run-d
# The action's way: record, upload, then fail in the last step.
QB_SCENARIOS=scenarios/action-pass.toml QB_RESULTS_DIR=results-d2 QB_DEFER_EXIT=true \
  QB_ARGS="--set 'expect.\"throughput.jobs_per_sec\"=\"> 1e9\"' --quiet" step run-d2 "$here/run.sh"
check "with QB_DEFER_EXIT the run step succeeds and records exit-code 1" \
  test "$rc" = 0 -a "$(output "$tmp/run-d2.out" exit-code)" = 1
QB_EXIT_CODE=$(output "$tmp/run-d2.out" exit-code) step finish-d "$here/finish.sh"
check "finish.sh then fails with 1" test "$rc" = 1
QB_EXIT_CODE='' step finish-none "$here/finish.sh"
check "finish.sh without a recorded code fails with 3" test "$rc" = 3

echo "# (e) save a baseline, then compare with it (2 repeats each)"
t0=$(now_ms)
QB_SCENARIOS=scenarios/action-pass.toml QB_RESULTS_DIR=results-save QB_REPEAT=2 QB_SAVE_BASELINE=main \
  step run-save "$here/run.sh"
echo "# took $(seconds_since "$t0") s"
check "save-baseline run exits 0" test "$rc" = 0
check "the baseline is in baselines/main/" test -f "$work/baselines/main/action-pass.json"
check "a copy of it is in the results (saved-baseline/main/)" test -f "$work/results-save/saved-baseline/main/action-pass.json"
[ "$rc" = 0 ] || show_log run-save
t0=$(now_ms)
# Tiny runs on a shared machine: throughput and latency move a lot from one to the next, so the
# comparison is loosened for them (through the tolerances input); correctness stays strict.
QB_SCENARIOS=scenarios/action-pass.toml QB_RESULTS_DIR=results-compare QB_REPEAT=2 QB_BASELINE=main \
  QB_JUNIT_DIR=$work/results-compare/junit \
  QB_TOLERANCES=$'throughput.jobs_per_sec=off\nthroughput.claims_per_sec=off\n  latency_ms.claim.p99=off latency_ms.complete.p99=off\nlatency_ms.end_to_end.p99=off # comment\nlatency_ms.queue_wait.default.p99=off' \
  step run-compare "$here/run.sh"
echo "# took $(seconds_since "$t0") s"
check "baseline comparison exits 0" test "$rc" = 0
check "exit-code output is 0" test "$(output "$tmp/run-compare.out" exit-code)" = 0
check "compare.md is written" test -f "$work/results-compare/compare.md"
check "the step summary has the baseline table" grep -q 'executions.duplicate' "$tmp/run-compare.summary"
junits=$(find "$work/results-compare/junit" -name '*.xml' 2>/dev/null | wc -l)
check "QB_JUNIT_DIR gets one junit file, not the repeats' copies ($junits)" test "$junits" = 1
check "that junit file has the baseline suite" grep -q 'baseline' "$work/results-compare/junit/queuebench.xml"
[ "$rc" = 0 ] || show_log run-compare 40

echo "# (f) inputs refused before queuebench runs"
QB_SCENARIOS='nothing/*.toml' step run-f "$here/run.sh"
check "a glob matching nothing exits 2 with exit-code 2" test "$rc" = 2 -a "$(output "$tmp/run-f.out" exit-code)" = 2
check "and says so in the step summary" grep -q 'matches no file' "$tmp/run-f.summary"
QB_SCENARIOS=scenarios/action-pass.toml QB_ARGS="--set 'unbalanced" step run-f2 "$here/run.sh"
check "unbalanced quotes in args exit 2" test "$rc" = 2
QB_SCENARIOS=scenarios/action-pass.toml QB_ARGS="--no-such-flag" QB_RESULTS_DIR=results-f3 step run-f3 "$here/run.sh"
check "queuebench's own usage error comes through as 2" test "$rc" = 2 -a "$(output "$tmp/run-f3.out" exit-code)" = 2

echo "# action.yml's wiring"
unread=""
for var in $(grep -o 'QB_[A-Z_]*:' "$repo/action.yml" | tr -d : | sort -u); do
  grep -q "\b$var\b" "$here"/postgres.sh "$here"/install.sh "$here"/run.sh "$here"/finish.sh || unread+=" $var"
done
check "every QB_* variable action.yml sets is read by a script${unread:+ (not read:$unread)}" test -z "$unread"
unused=""
while IFS= read -r input; do
  grep -q "inputs\.$input\([^a-z-]\|$\)" "$repo/action.yml" || unused+=" $input"
done < <(sed -n '/^inputs:/,/^outputs:/p' "$repo/action.yml" | sed -n 's/^  \([a-z-]*\):$/\1/p')
check "every input is used by a step${unused:+ (unused:$unused)}" test -z "$unused"

leftover=$(find "$tmp/pg" -mindepth 1 -maxdepth 1 | wc -l)
check "no cluster directory left behind ($leftover)" test "$leftover" = 0

echo "# timings: fresh install $cold s, cache hit $hit_time s, reinstall on a new key $rebuild s, whole test $(seconds_since "$started_all") s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
