#!/usr/bin/env bash
# scripts/corpus.sh [--rounds N] [--out FILE] [DIR...]: runs each corpus entry's pair (corpus/*,
# or the folders named) N times a side (default 2: buggy, then fixed, per round) and writes the
# table of docs/corpus.md (--out, default docs/corpus.md; "-" prints it). A row's verdict is
# "caught" when every buggy run failed (exit 1) on the entry's `check` and every fixed run passed
# (exit 0). Runs go under /tmp/corpus-runs/<entry>/<side>-<round>. The binary: QUEUEBENCH, else
# the release build, else the debug build (found through scripts/queuebench-bin.sh). Debug build, 2 rounds: about 11 minutes here.
# Then explore on each side once (the column "explore"), with the flags of the entry's
# [explore_today] command and --explore-time seconds a side in place of its --time (default 120;
# 0: no explore).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=2 out=$root/docs/corpus.md explore_time=120
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --explore-time) explore_time=$2; shift 2 ;;
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
  [ "$explore_time" -gt 0 ] || continue
  # The entry's own explore flags (its [explore_today] command), with the script's time.
  read -r -a flags < <(python3 - "$dir/entry.toml" "$explore_time" <<'PY'
import sys, tomllib, re
cmd = tomllib.load(open(sys.argv[1], "rb")).get("explore_today", {}).get("command", "")
args = cmd.split(",")[0].replace("[--set adapter=fixed.toml]", "").split("scenario.toml", 1)[-1].split()
if "--time" in args:
    i = args.index("--time"); args[i + 1] = sys.argv[2]
else:
    args += ["--time", sys.argv[2]]
print(" ".join(args))
PY
)
  for side in buggy fixed; do
    found=/tmp/corpus-runs/$name/explore-$side
    rm -rf "$found"
    set=()
    [ "$side" = fixed ] && set=(--set adapter=fixed.toml)
    start=$SECONDS
    "$qb" explore "$dir/scenario.toml" "${set[@]}" "${flags[@]}" --progress off --out "$found" >"$found.log" 2>&1
    rc=$?
    said=$(python3 - "$found/explore.json" "$rc" <<'PY'
import sys, json
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    print(f"exit {sys.argv[2]}"); sys.exit()
v = [x for x in j.get("violations", []) if not x.get("beside")]
if v:
    print(", ".join(sorted({f"`{x['check']}`" for x in v})) + f" in {v[0]['steps']} steps")
else:
    why = " (the whole space)" if j.get("exhausted") else " (the time limit)" if j.get("timed_out") else ""
    print(f"nothing up to depth {j['depth']}{why}")
PY
)
    printf '%s\texplore-%s\t%s\t%s\t%s\n' "$name" "$side" "$rc" "$said" "$((SECONDS - start))" >>"$results"
    echo "$name explore $side (${flags[*]}): exit $rc, $said ($((SECONDS - start)) s)" >&2
  done
done
python3 - "$root" "$results" "$rounds" "$explore_time" >"${out/#-//dev/stdout}" <<'PY'
import sys, tomllib, collections
root, results, rounds, explore_time = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = collections.defaultdict(list)
explored = collections.defaultdict(dict)
for line in open(results):
    name, side, rc, failed, secs = line.rstrip("\n").split("\t")
    if side.startswith("explore-"):
        explored[name][side[8:]] = failed
        continue
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
The explore column: `queuebench explore` once a side, with the flags of the entry's
`[explore_today]` command and %d s a side in place of its `--time`; what it found on the buggy side · on
the fixed side (a check and the counterexample's length, or the depth searched without one).
""" % (rounds, explore_time))
print("| bug | library | mechanism | check | buggy side: failed checks | fixed side | verdict | explore (buggy · fixed) | seconds (buggy + fixed, per round) |")
print("|---|---|---|---|---|---|---|---|---|")
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
    x = explored.get(name, {})
    ex = f"{x.get('buggy', 'not run')} · {x.get('fixed', 'not run')}" if x else "not run"
    print(f"| {link} | {e.get('library','')} | {e.get('mechanism','')} | `{check}` | {bside} | {fside} | {verdict} | {ex} | {secs} |")
print(f"\nCaught: {caught} of {total} pairs that ran, of {len(runs)} entries.")
print("\nSee also: [summary.json](summary-json.md) (every check named above), [Adapters](adapters.md) "
      "(`[result] exclusion_key`, `[drive] expected_errors`, `[result] unique_key`), [findings in today's releases](findings.md), [explore](explore.md).")
PY
rm -f "$results"
