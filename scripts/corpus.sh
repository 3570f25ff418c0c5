#!/usr/bin/env bash
# scripts/corpus.sh [--rounds N] [--out FILE] [DIR...]: runs each corpus entry's pair (corpus/*,
# or the folders named) N times a side (default 2: buggy, then fixed, per round) and writes the
# table of docs/corpus.md (--out, default docs/corpus.md; "-" prints it). A row's verdict is
# "caught" when every buggy run failed (exit 1) on the entry's `check` and every fixed run passed
# (exit 0). Runs go under /tmp/corpus-runs/<entry>/<side>-<round>. The binary: QUEUEBENCH, else
# the release build, else the debug build (found through scripts/queuebench-bin.sh). Debug build, 2 rounds: about 11 minutes here.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=2 out=$root/docs/corpus.md
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) break ;;
  esac
done
# The debug build when no release one is there (scripts/queuebench-bin.sh would build one).
builds=$("$root/scripts/queuebench-bin.sh" --dir)
for build in release debug; do
  [ -n "${QUEUEBENCH:-}" ] || [ ! -x "$builds/$build/queuebench" ] || QUEUEBENCH=$builds/$build/queuebench
done
qb=${QUEUEBENCH:-}
[ -x "$qb" ] || { echo "no queuebench binary: cargo build first (or set QUEUEBENCH)" >&2; exit 2; }
[ $# -gt 0 ] || set -- "$root"/corpus/*/
results=$(mktemp)
for dir in "$@"; do
  dir=${dir%/}
  name=$(basename "$dir")
  [ -f "$dir/scenario.toml" ] || { printf '%s\tnone\t-\t-\t0\n' "$name" >>"$results"; continue; }
  for round in $(seq 1 "$rounds"); do
    for side in buggy fixed; do
      run=/tmp/corpus-runs/$name/$side-$round
      mkdir -p "$(dirname "$run")"
      set=()
      [ "$side" = fixed ] && set=(--set adapter=fixed.toml)
      start=$SECONDS
      "$qb" run "$dir/scenario.toml" "${set[@]}" --out "$run" --force --quiet >"$run.log" 2>&1
      rc=$?
      failed=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["failed_checks"]))' "$run/summary.json" 2>/dev/null)
      printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$side" "$rc" "${failed:--}" "$((SECONDS - start))" >>"$results"
      echo "$name $side round $round: exit $rc, failed [${failed}] ($((SECONDS - start)) s)" >&2
    done
  done
done
python3 - "$root" "$results" "$rounds" >"${out/#-//dev/stdout}" <<'PY'
import sys, tomllib, collections
root, results, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = collections.defaultdict(list)
for line in open(results):
    name, side, rc, failed, secs = line.rstrip("\n").split("\t")
    runs[name].append((side, rc, failed, int(secs)))
print("""← [README](../README.md) · [all pages](../README.md#documentation)

# The corpus: real queue bugs, caught by name

Each row is a real bug of a PostgreSQL job queue, fixed upstream, written as two adapters (the
SQL before and after the fix) with one scenario ([`corpus/`](../corpus/README.md) says how
entries are made and what each field means). **Caught** means: every run of the buggy side
failed on the check that names the bug's mechanism, and every run of the fixed side passed.
A bug queuebench cannot express yet says what is missing: a finding, not a failure.

Written by `scripts/corpus.sh` (%d rounds a side; `cargo test --test suite corpus::` runs every
expressible pair once). Regenerate with `scripts/corpus.sh` after `cargo build --release`.
""" % rounds)
print("| bug | library | mechanism | check | buggy side: failed checks | fixed side | verdict | seconds (buggy + fixed, per round) |")
print("|---|---|---|---|---|---|---|---|")
caught = total = 0
for name in sorted(runs):
    e = tomllib.load(open(f"{root}/corpus/{name}/entry.toml", "rb"))
    check, expressible = e.get("check", ""), e.get("expressible", False)
    buggy = [r for r in runs[name] if r[0] == "buggy"]
    fixed = [r for r in runs[name] if r[0] == "fixed"]
    if not buggy:
        verdict, bside, fside, secs = "not expressible: " + " ".join(e.get("reason", "").split())[:160], "not run", "not run", "-"
    else:
        ok = all(r[1] == "1" and check in r[2].split(",") for r in buggy) and all(r[1] == "0" for r in fixed)
        total += 1
        caught += ok
        verdict = "**caught**" if ok else ("not expressible yet: " + " ".join(e.get("reason", "").split())[:160] if not expressible else "**missed**")
        bside = "; ".join(sorted({f"exit {r[1]}: {r[2]}" for r in buggy}))
        fside = "; ".join(sorted({f"exit {r[1]}: {r[2]}" for r in fixed}))
        secs = str(round(sum(r[3] for r in buggy + fixed) / len(buggy)))
    link = f"[{name}](../corpus/{name}/entry.toml)"
    print(f"| {link} | {e.get('library','')} | {e.get('mechanism','')} | `{check}` | {bside} | {fside} | {verdict} | {secs} |")
print(f"\nCaught: {caught} of {total} pairs that ran, of {len(runs)} entries.")
print("\nSee also: [summary.json](summary-json.md) (every check named above), [Adapters](adapters.md) "
      "(`[result] exclusion_key`, `[drive] expected_errors`, `[result] unique_key`), [findings in today's releases](findings.md), [explore](explore.md).")
PY
rm -f "$results"
