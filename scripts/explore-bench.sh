#!/usr/bin/env bash
# explore's pace: schedules per second and the reduction factor (the schedules the explored ones
# stand for, over those run), for 2 and 3 worker sessions, on one scenario (SKIP LOCKED with a
# token fence by default: nothing to find, so the search runs to its time limit), each with the
# liveness checks (every new state left to itself) and with --safety-only, to show what leaving
# states to themselves costs. Each configuration searches for SECONDS against the ephemeral
# cluster; prints one line each, the tally explore prints (docs/explore.md keeps the figures).
#
#   scripts/explore-bench.sh [--scenario FILE] [--seconds N] [--sessions "2 3"] [--crashes N]
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
scenario=$root/scenarios/gc-pause-fencing-token.toml
seconds=60
sessions="2 3"
crashes=1
while [ $# -gt 0 ]; do
  case $1 in
    --scenario) scenario=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --sessions) sessions=$2; shift ;;
    --crashes) crashes=$2; shift ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "explore-bench.sh: unknown argument $1 (accepted: --scenario, --seconds, --sessions, --crashes)" >&2; exit 2 ;;
  esac
  shift
done

echo "explore pace: $(basename "$scenario"), $seconds s a configuration, $crashes crash(es); $("$qb" --version)"
for n in $sessions; do
  for mode in liveness --safety-only; do
    flag=()
    [ "$mode" = liveness ] || flag=("$mode")
    line=$("$qb" explore "$scenario" --sessions "$n" --crashes "$crashes" --depth 40 --time "$seconds" "${flag[@]}" | tail -1)
    echo "$n sessions, ${mode#--}: $line"
  done
done
