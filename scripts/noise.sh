#!/usr/bin/env bash
# Run-to-run noise: each scenario RUNS times on this machine (release build, a fresh ephemeral
# cluster each run, nothing changed between runs), then a Markdown table of the compared
# metrics: median, min–max, and how much worse one run was than another — the change a
# baseline comparison would have flagged although nothing changed. docs/gating.md's table of
# default tolerances comes from this script.
#
#   scripts/noise.sh [--runs N] [--raw FILE] [SCENARIO ...]
#       default: 10 runs of scenarios/skip-locked.toml (burn-down, no work) and
#       scenarios/skip-locked-hold.toml (5 ms of work in the claim's transaction);
#       --raw FILE also writes every run's values (scenario, run, metric, value) as CSV
#
# Columns: `spread` = (max − min) / median; `worst 1 vs 1` = the largest change in the bad
# direction between two single runs (throughput: (max − min) / max, a drop; latency:
# (max − min) / min, a rise), what `--repeat 1` against a `--repeat 1` baseline must forgive;
# `worst 3 vs 3` = the same between the medians of disjoint groups of three runs (runs 1–3,
# 4–6, 7–9), what `--repeat 3` against a `--repeat 3` baseline must forgive. Latency rises under
# 1 ms never fail a comparison (LATENCY_SLACK_MS), so `< 1 ms` marks a rise that would pass.
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-$("$root/scripts/queuebench-bin.sh")}
if [ ! -x "$qb" ]; then
  (cd "$root" && cargo build --release --quiet)
fi
command -v jq > /dev/null || { echo "jq not found: apt-get install jq" >&2; exit 3; }

runs=10
raw=/dev/null
scenarios=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift ;;
    --raw) raw=$2; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) scenarios+=("$1") ;;
  esac
  shift
done
[ ${#scenarios[@]} -gt 0 ] || scenarios=("$root/scenarios/skip-locked.toml" "$root/scenarios/skip-locked-hold.toml")

metrics=(throughput.jobs_per_sec throughput.claims_per_sec latency_ms.claim.p99 latency_ms.complete.p99
  latency_ms.end_to_end.p99)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One value per line, in run order → the table row for one metric.
row() {
  local name=$1 metric=$2 file=$3
  sort -g "$file" > "$file.sorted"
  awk -v name="$name" -v metric="$metric" -v sorted="$file.sorted" '
    function median(a, n,   i, j, t, b) {
      for (i = 1; i <= n; i++) b[i] = a[i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
      return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
    }
    function worse(lo, hi) {
      if (higher) return hi > 0 ? (hi - lo) / hi : 0
      return lo > 0 ? (hi - lo) / lo : 0
    }
    function slack(lo, hi) { return (!higher && hi - lo < 1) ? " (< 1 ms)" : "" }
    { v[NR] = $1 }
    END {
      n = NR; higher = metric ~ /throughput/
      for (i = 1; i <= n; i++) { if (i == 1 || v[i] < lo) lo = v[i]; if (i == 1 || v[i] > hi) hi = v[i] }
      m = median(v, n)
      groups = int(n / 3); glo = ""; ghi = ""
      for (g = 0; g < groups; g++) {
        for (k = 1; k <= 3; k++) w[k] = v[g * 3 + k]
        gm = median(w, 3)
        if (glo == "" || gm < glo) glo = gm; if (ghi == "" || gm > ghi) ghi = gm
      }
      three = groups >= 2 ? sprintf("%.1f %%%s", 100 * worse(glo, ghi), slack(glo, ghi)) : "–"
      printf "| %s | `%s` | %d | %.3f | %.3f–%.3f | %.1f %% | %.1f %%%s | %s |\n",
        name, metric, n, m, lo, hi, (m > 0 ? 100 * (hi - lo) / m : 0), 100 * worse(lo, hi), slack(lo, hi), three
    }' "$file"
}

echo "queuebench noise: $("$qb" --version), $(nproc) cores, $runs runs per scenario, $(date -u +%Y-%m-%dT%H:%MZ)" >&2
rows=()
[ "$raw" = /dev/null ] || echo "scenario,run,metric,value" > "$raw"
for scenario in "${scenarios[@]}"; do
  name=$(basename "$scenario" .toml)
  for r in $(seq 1 "$runs"); do
    out="$work/$name/run-$r"
    code=0
    "$qb" run "$scenario" --quiet --out "$out" > /dev/null || code=$?
    [ "$code" -eq 0 ] || { echo "$name run $r exited $code" >&2; exit "$code"; }
    for metric in "${metrics[@]}"; do
      value=$(jq -r ".$metric // empty" "$out/summary.json")
      [ -n "$value" ] || continue
      echo "$value" >> "$work/$name.$metric"
      echo "$name,$r,$metric,$value" >> "$raw"
    done
    echo "$name run $r/$runs: $(jq -r '.throughput.jobs_per_sec | floor' "$out/summary.json") jobs/s" >&2
    rm -rf "$out"
  done
  for metric in "${metrics[@]}"; do
    [ -s "$work/$name.$metric" ] && rows+=("$(row "$name" "$metric" "$work/$name.$metric")")
  done
done

echo "| scenario | metric | runs | median | min–max | spread | worst 1 vs 1 | worst 3 vs 3 |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
