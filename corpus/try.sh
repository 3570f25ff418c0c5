#!/usr/bin/env bash
# corpus/try.sh DIR... : run one corpus entry's pair once each (buggy, then fixed) with the
# debug binary and print one line per side: the verdict, the failing checks, the errors.
# A stop-gap until the lead's corpus runner (issue 36); it writes runs under /tmp/corpus-runs.
# QUEUEBENCH names another binary; EXTRA adds arguments to every run (e.g. EXTRA="--seed 7").
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
qb=${QUEUEBENCH:-${CARGO_TARGET_DIR:-$root/target}/debug/queuebench}
for dir in "$@"; do
  dir=${dir%/}
  name=$(basename "$dir")
  for side in buggy fixed; do
    out=/tmp/corpus-runs/$name/$side; mkdir -p "/tmp/corpus-runs/$name"
    set=()
    [ "$side" = fixed ] && set=(--set adapter=fixed.toml)
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$qb" run "$dir/scenario.toml" "${set[@]}" --out "$out" --force --quiet ${EXTRA:-} > "$out.log" 2>&1
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    if [ -f "$out/summary.json" ]; then
      line=$(python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
bad = [e["name"] for e in s.get("expectations", []) if not e["passed"]]
err = s["errors"]["total"]
codes = ",".join(f"{k}:{v}" for k, v in s["errors"]["by_code"].items())
print(("passed" if s["passed"] else "FAILED"),
      "checks=[" + ",".join(s["failed_checks"]) + "]",
      "expect=[" + ",".join(bad) + "]",
      f"errors={err}" + (f"({codes})" if codes else ""),
      "done=%s dead=%s lost=%s dup=%s" % (s["jobs"].get("completed"), s["jobs"].get("dead"),
                                          s["jobs"].get("lost"), s["executions"].get("duplicate")))
PY
)
    else
      line="no summary: $(tail -2 "$out.log" | tr '\n' ' ')"
    fi
    printf '%-34s %-5s exit %s %6ss  %s\n' "$name" "$side" "$rc" "$secs" "$line"
  done
done
