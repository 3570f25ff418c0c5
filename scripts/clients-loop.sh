#!/usr/bin/env bash
# The client smoke scenarios on a busy machine: do they pass every time, not just once?
#
#   scripts/clients-loop.sh [--rounds N] [--hog N] [--only PATTERN] [--out DIR]
#
# Runs every scenarios/clients/*.toml (or those whose file name contains PATTERN) once per
# round, N rounds (default 20), one run at a time, while stress-ng keeps N CPU workers busy
# (default: one per core, 2 on the development machines), and prints a table of the rounds
# each scenario passed. Exit 0 when every run passed (exit 0), 1 when any run failed, 2 on bad
# usage, a missing stress-ng (`apt-get install stress-ng`) or uninstalled clients
# (`bash clients/install.sh`).
#
# The binary is $QUEUEBENCH, else the release build (scripts/queuebench-bin.sh); it is copied
# into the results folder first, so a rebuild during the loop does not change what runs. Each
# run's terminal output is kept (DIR/round-R/NAME.log) and a failed run's folder too; a passed
# run's folder is removed to bound the disk use. results.csv has one line per run (round,
# scenario, exit code, seconds). Bounded: each run is stopped after 3 minutes (exit 124, a
# failure), and the CPU hog stops by itself after 4 minutes per run planned and is killed when
# the script exits, however it exits.
set -euo pipefail

rounds=20
hog=$(nproc)
only=
out=
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds takes a number}; shift 2 ;;
    --hog) hog=${2:?--hog takes a number of CPU workers}; shift 2 ;;
    --only) only=${2:?--only takes a part of a scenario file name}; shift 2 ;;
    --out) out=${2:?--out takes a folder}; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "clients-loop.sh: unknown argument $1 (accepted: --rounds N, --hog N, --only PATTERN, --out DIR)" >&2; exit 2 ;;
  esac
done
case $rounds$hog in *[!0-9]* | '') echo "clients-loop.sh: --rounds and --hog take whole numbers" >&2; exit 2 ;; esac
if [ "$rounds" -lt 1 ]; then
  echo "clients-loop.sh: --rounds must be at least 1" >&2
  exit 2
fi
if ! command -v stress-ng >/dev/null 2>&1; then
  echo "clients-loop.sh: stress-ng is not installed; install it with: apt-get install stress-ng" >&2
  exit 2
fi

cd "$(dirname "$0")/.."
if [ ! -x clients/.venv/bin/python ] || [ ! -d clients/pg-boss/node_modules ] || [ ! -d clients/graphile-worker/node_modules ]; then
  echo "clients-loop.sh: the reference clients are not installed; run: bash clients/install.sh" >&2
  exit 2
fi
scenarios=()
for f in scenarios/clients/*.toml; do
  case $(basename "$f") in *"$only"*) scenarios+=("$f") ;; esac
done
if [ "${#scenarios[@]}" = 0 ]; then
  echo "clients-loop.sh: no scenarios/clients/*.toml matches --only $only" >&2
  exit 2
fi

if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/qb-clients-loop.XXXXXX")
fi
mkdir -p "$out"
bin=${QUEUEBENCH:-$(scripts/queuebench-bin.sh)}
cp "$bin" "$out/queuebench"
qb=$out/queuebench
runs=$((rounds * ${#scenarios[@]}))
echo "clients loop: $rounds round(s) of ${#scenarios[@]} client scenario(s) beside stress-ng --cpu $hog; $($qb --version)"
echo "output in $out"
echo "round,scenario,exit,seconds" >"$out/results.csv"

. scripts/bench/lib.sh
hog_start "$hog" "$((runs * 240))"
trap 'exit 130' INT TERM

started=$SECONDS
for r in $(seq 1 "$rounds"); do
  mkdir -p "$out/round-$r"
  round_start=$SECONDS
  failed_here=()
  for f in "${scenarios[@]}"; do
    name=$(basename "$f" .toml)
    dir="$out/round-$r/$name"
    start=$SECONDS
    rc=0
    timeout -k 10 180 "$qb" run "$f" --out "$dir" --quiet >"$dir.log" 2>&1 || rc=$?
    echo "$r,$name,$rc,$((SECONDS - start))" >>"$out/results.csv"
    if [ "$rc" = 0 ]; then
      rm -rf "$dir"
    else
      failed_here+=("$name (exit $rc)")
    fi
  done
  printf 'round %d: %d of %d passed, %d s (%d s in all)%s\n' "$r" \
    "$((${#scenarios[@]} - ${#failed_here[@]}))" "${#scenarios[@]}" "$((SECONDS - round_start))" \
    "$((SECONDS - started))" "${failed_here[*]:+; FAILED: ${failed_here[*]}}"
done
hog_stop

echo "passes per scenario (of $rounds round(s), beside stress-ng --cpu $hog):"
awk -F, 'NR > 1 { n[$2]++; if ($3 == 0) ok[$2]++ } END { for (s in n) printf "  %-32s %d/%d\n", s, ok[s], n[s] }' \
  "$out/results.csv" | sort
failed=$(awk -F, 'NR > 1 && $3 != 0' "$out/results.csv" | wc -l)
if [ "$failed" = 0 ]; then
  echo "clients loop passed: $runs of $runs runs, in $((SECONDS - started)) s"
  exit 0
fi
echo "clients loop FAILED: $failed of $runs runs; their folders and logs are under $out/round-*/"
exit 1
