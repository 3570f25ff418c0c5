#!/usr/bin/env bash
# The benchmark suite: is the harness ever the bottleneck? (docs/performance.md)
#
#   scripts/bench.sh [--quick] [--out DIR] [--only SECTIONS]
#
# Prints a Markdown report (also written to DIR/bench.md; default results/bench-<time>/) with
# one table per figure, each with its goal and PASS or MISS, and the machine it ran on.
# Sections (--only takes a comma-separated subset): pgbench (harness ÷ pgbench, goal ≥ 0.95),
# preload (goal ≤ 1.5), verify (goal < 5 s, < 1 GiB), workers (1 … 512 workers, charted),
# sampler (goal < 1 %), history (goal ≤ 3 %). --quick runs every section small (~2 minutes)
# to check the suite itself; its figures mean nothing. The full suite takes about 20 minutes.
# Everything runs against one ephemeral cluster with bench/server.toml's settings, or
# DATABASE_URL if set. The suite is `cargo xtask bench` (xtask/src/tasks/bench.rs); its medians
# are compare's.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo xtask bench "$@"
