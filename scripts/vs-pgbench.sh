#!/usr/bin/env bash
# Harness against pgbench: the same statements, the same number of connections, the same
# server, alternating (who goes first changes every round and, in the grid, every cell).
#
#   scripts/vs-pgbench.sh SCENARIO [ROUNDS] [--set key=value ...]
#       one setting: a line per round and the median ratio
#   scripts/vs-pgbench.sh --grid [--jobs N] [--rounds R] [--conns 2,8,32]
#                         [--modes lease,hold-transaction] [--effects off,on]
#       the overhead grid of bench/burn-down.toml (skip-locked, zero work, burn-down of N
#       jobs, default 100,000): a Markdown table, a row per mode × effects ledger × connections
#
# Without DATABASE_URL it starts an ephemeral cluster with the scenario's [postgres.settings]
# (with --grid: bench/server.toml's). It is `cargo xtask vs-pgbench` (xtask/src/tasks/
# vs_pgbench.rs says how each side is run and timed); its medians are compare's.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo xtask vs-pgbench "$@"
