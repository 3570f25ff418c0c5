#!/usr/bin/env bash
# The smoke gate: every shipped scenario must meet its expectations, and `queuebench check` over
# its run folder must agree with the run. .ci/run runs it after the tests; scripts/load-check.sh
# --smoke runs it beside a CPU hog.
#
#   scripts/smoke.sh OUT_DIR
#
# The gate is `cargo xtask smoke` (xtask/src/tasks/smoke.rs says what it runs, and how): the
# debug build (`cargo build` first) or the binary QUEUEBENCH names; a file the test suite
# already ran the same way is skipped when QUEUEBENCH_SMOKE_LEDGER's ledger says it passed.
# Exit 0 when every scenario passed and agreed, 1 otherwise, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/smoke.sh OUT_DIR" >&2; exit 2; }
exec cargo xtask smoke "$1"
