#!/usr/bin/env bash
# Prints the path of the release queuebench binary wherever cargo puts it
# (CARGO_TARGET_DIR, build.target-dir in a .cargo/config.toml, or target/),
# building it first when it is missing. With --dir: prints the target folder
# only. The other scripts call this unless QUEUEBENCH names a binary.
#
#   scripts/queuebench-bin.sh [--dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
if [ "${1:-}" = --dir ]; then
  echo "$target"
  exit 0
fi
if [ ! -x "$target/release/queuebench" ]; then
  cargo build --release --quiet --bins >&2
fi
echo "$target/release/queuebench"
