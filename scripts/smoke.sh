#!/usr/bin/env bash
# The smoke gate: every shipped scenario must meet its expectations, and `queuebench check` over
# its run folder must agree with the run. .ci/run runs it after the tests; scripts/load-check.sh
# --smoke runs it beside a CPU hog.
#
#   scripts/smoke.sh OUT_DIR
#
# Runs every scenarios/*.toml, scenarios/adapters/*.toml and scenarios/clients/*.toml with
# `queuebench run … --quiet` (each starts its own cluster; the clients need clients/install.sh),
# and scenarios/agents/kill-agent.toml with --spawn-agents 3, each into a folder under OUT_DIR.
# The binary is the debug build (`cargo build` first), or the one QUEUEBENCH names.
# A file the test suite already ran with the same flags, passing (exit 0) with `check`
# agreeing, is not run again when $QUEUEBENCH_SMOKE_LEDGER says so (tests/common/mod.rs,
# note_smoke_run). Exit 0 when every scenario passed and agreed, 1 otherwise, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/smoke.sh OUT_DIR}
mkdir -p "$out"

# One scenario (with the flags after the folder, if any), then `check` over its saved history:
# the checkers run again offline must agree with the run (the same checks, counts, examples and
# verdict).
smoke_one() {
  local start=$SECONDS rc=0 text dir
  if [ -f "${QUEUEBENCH_SMOKE_LEDGER:-}" ] && grep -qxF "$(printf '%s\t%s\t0\ttrue' "$1" "${*:3}")" "$QUEUEBENCH_SMOKE_LEDGER"; then
    printf '%s: passed in cargo test (the same file and flags; check agrees)\n' "$(basename "$1" .toml)"
    return 0
  fi
  dir="$2/$(basename "$(dirname "$1")")-$(basename "$1" .toml)"
  text=$("$QB" run "$1" --out "$dir" --quiet "${@:3}" 2>&1) || rc=$?
  printf '%s   [%d s, exit %d]\n' "$text" "$((SECONDS - start))" "$rc"
  if [ "$rc" -le 1 ] && [ -f "$dir/history.csv.gz" ]; then
    local agrees
    agrees=$("$QB" check "$dir" --json 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["agrees_with_run"])' 2>&1) || true
    if [ "$agrees" != True ]; then
      echo "  check DISAGREES with the run of $1: $agrees"
      return 1
    fi
  fi
  return "$rc"
}
# Wherever cargo puts its binaries (CARGO_TARGET_DIR is honoured).
QB=${QUEUEBENCH:-"$(scripts/queuebench-bin.sh --dir)/debug/queuebench"}
[ -x "$QB" ] || { echo "smoke.sh: no binary at $QB: run cargo build first" >&2; exit 2; }
export QB
export -f smoke_one
# Two at a time, except the starvation scenarios: they measure how far strict priority lets a
# class fall behind under a given load, and a busy run beside them changes that load (a lagging
# producer leaves gaps the starved class slips through). Their own load is light (10 workers
# sleeping 200 ms a job, about a tenth of the machine each), so the four run together, with
# nothing else.
failed=0
ls scenarios/*.toml scenarios/adapters/*.toml scenarios/clients/*.toml | grep -v '/starvation-' | xargs -P2 -I{} bash -c 'smoke_one "$1" "$2"' _ {} "$out" || failed=1
ls scenarios/starvation-*.toml | xargs -P4 -I{} bash -c 'smoke_one "$1" "$2"' _ {} "$out" || failed=1
# Runs across agents, each with the flags it needs. kill-agent spawns its 3 agents as processes
# here (no root needed); the partition-fencing pair needs root and network namespaces
# (`--netns`), and tests/netns.rs runs them where it can.
smoke_one scenarios/agents/kill-agent.toml "$out" --spawn-agents 3 || failed=1
if [ "$failed" != 0 ]; then
  echo "smoke gate FAILED: see the scenarios marked FAILED above (run folders in $out)"
  exit 1
fi
echo "smoke gate passed (run folders in $out)"
