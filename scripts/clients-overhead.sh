#!/usr/bin/env bash
# The harness's cost per execution on each reference client (docs/clients.md, "At full speed"):
# the same client at its throughput scenario's settings, draining N jobs with queuebench's
# recording (an effect row and two event lines per execution) and without it
# (QUEUEBENCH_RECORD=0), on a throw-away cluster (`queuebench cluster`). Prints a Markdown
# table: the rates (median of ROUNDS), their ratio and the cost per execution in µs.
# Needs the reference clients installed (bash clients/install.sh).
#
#   scripts/clients-overhead.sh [--jobs N] [--rounds R] [--only pg-boss,graphile-worker,...]
set -euo pipefail
jobs=3000 rounds=3 only=
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=${2:?--jobs takes a number}; shift 2 ;;
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --only) only=${2:?--only takes client names}; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "clients-overhead.sh: unknown argument $1 (accepted: --jobs N, --rounds R, --only LIST)" >&2; exit 2 ;;
  esac
done
case $jobs$rounds in *[!0-9]*) echo "clients-overhead.sh: --jobs and --rounds take whole numbers" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$root/clients/.venv/bin/python" ] || { echo "clients-overhead.sh: the reference clients are not installed: bash clients/install.sh" >&2; exit 2; }
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
exec "$qb" cluster -- "$root/clients/.venv/bin/python" "$root/scripts/clients/overhead.py" "$jobs" "$rounds" "$only"
