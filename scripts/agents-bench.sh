#!/usr/bin/env bash
# Agents measured (docs/agents.md#measured). Two parts:
#   1. scenarios/skip-locked.toml with 16 workers and JOBS jobs, run locally and with 1, 2 and 4
#      spawned agents (each in its own network namespace with --netns, when run as root with
#      iproute2): total jobs/s (median of ROUNDS), exactly-once over the merged history, and
#      whether the agents' figures add up to the totals;
#   2. one run of BIG jobs (default 1,000,000) over 4 agents: the merge's cost
#      (timings.merge_s), the evidence uploaded, and the coordinator's peak memory right after the
#      merge (timings.merge_peak_rss_mib, its VmHWM: everything it held up to then).
#
#   scripts/agents-bench.sh [--rounds N] [--jobs N] [--big N] [--no-netns] [--no-big]
set -euo pipefail
rounds=3 jobs=20000 big=1000000 netns=--netns do_big=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --big) big=$2; shift 2 ;;
    --no-netns) netns=; shift ;;
    --no-big) do_big=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -n "$netns" ] && { [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null; }; then
  echo "note: not root or no iproute2: agents run without network namespaces" >&2
  netns=
fi
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# field FILE EXPR: EXPR over the summary `s`; one that starts with `[` indexes it (`['jobs']`).
field() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); e=sys.argv[2]; print(eval('s' + e if e.startswith('[') else e))" "$@"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
scenario="$root/scenarios/skip-locked.toml"
sets=(--set workers.count=16 --set "jobs.preload=$jobs" --set 'expect={}')

echo "## jobs/s with agents ($jobs jobs, 16 workers, median of $rounds; ${netns:-no network namespaces})"
printf '| agents | jobs/s | exactly once | agents add up |\n|---|---:|---|---|\n'
for n in local 1 2 4; do
  : > "$work/jps"
  once=yes adds=yes
  for r in $(seq 1 "$rounds"); do
    out="$work/$n-$r"
    args=()
    [ "$n" = local ] || args=(--spawn-agents "$n" $netns)
    "$qb" run "$scenario" "${sets[@]}" "${args[@]}" --out "$out" --quiet > /dev/null || true
    field "$out/summary.json" "['throughput']['jobs_per_sec']" >> "$work/jps"
    [ "$(field "$out/summary.json" "['executions']['duplicate']")" = 0 ] &&
      [ "$(field "$out/summary.json" "['executions']['distinct_jobs']")" = "$jobs" ] || once=NO
    if [ "$n" != local ]; then
      sum=$(field "$out/summary.json" "sum(a['jobs'] for a in s['agents'])")
      [ "$sum" = "$(field "$out/summary.json" "['executions']['total']")" ] || adds=NO
    else
      adds=—
    fi
  done
  printf '| %s | %.0f | %s | %s |\n' "$n" "$(median < "$work/jps")" "$once" "$adds"
done

if [ "$do_big" = 1 ]; then
  echo
  echo "## the merge for $big jobs over 4 agents"
  out="$work/big"
  "$qb" run "$scenario" --set workers.count=16 --set "jobs.preload=$big" \
    --set 'expect={}' --set run.timeout=30m --spawn-agents 4 $netns --out "$out" --quiet > /dev/null || true
  printf '| jobs | run s | merge s | evidence uploaded MB | coordinator peak MiB | exactly once |\n|---:|---:|---:|---:|---:|---|\n'
  printf '| %s | %.1f | %.2f | %.1f | %.0f | %s |\n' "$big" \
    "$(field "$out/summary.json" "['throughput']['duration_s']")" \
    "$(field "$out/summary.json" "['timings']['merge_s']")" \
    "$(field "$out/summary.json" "sum(a['evidence_bytes'] for a in s['agents']) / 1e6")" \
    "$(field "$out/summary.json" "['timings']['merge_peak_rss_mib']")" \
    "$( [ "$(field "$out/summary.json" "['executions']['duplicate']")" = 0 ] && echo yes || echo NO)"
fi
