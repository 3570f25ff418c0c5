#!/usr/bin/env bash
# Where `cargo test` spends its time: runs the integration suite (tests/suite.rs) with the test
# harness's own per-test timing and prints the slowest tests, and the total per module (file),
# longest first, so CI's slow part has a name (docs/development.md, "CI's time").
#
#   scripts/test-times.sh [--top N] [--out FILE] [-- FILTER]
#
# The timing uses libtest's `--report-time`, an unstable flag of the stable toolchain's own test
# harness: RUSTC_BOOTSTRAP=1 is set for the test binary only, nothing is built differently. The
# raw output goes to FILE (default: a temporary file, named at the end). Tests run as in CI, two
# at a time, so a test's figure includes its wait for the other thread's load.
set -euo pipefail
shopt -s inherit_errexit

top=25
out=
filter=()
while [ $# -gt 0 ]; do
  case $1 in
    --top) top=${2:?--top takes a number}; shift 2 ;;
    --out) out=${2:?--out takes a file}; shift 2 ;;
    --) shift; filter=("$@"); break ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-times.sh: unknown argument $1 (accepted: --top N, --out FILE, -- FILTER)" >&2; exit 2 ;;
  esac
done
case $top in *[!0-9]* | '') echo "test-times.sh: --top takes a whole number" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
[ -n "$out" ] || out=$(mktemp "${TMPDIR:-/tmp}/qb-test-times.XXXXXX")

started=$SECONDS
rc=0
RUSTC_BOOTSTRAP=1 cargo test --locked --test suite -- -Z unstable-options --report-time "${filter[@]}" >"$out" 2>&1 || rc=$?
echo "suite: exit $rc in $((SECONDS - started)) s (build included); raw output: $out"
# Lines look like: test explore::a_queue_that_… ... ok <12.345s>
python3 - "$out" "$top" <<'EOF'
import re, sys
from collections import defaultdict
path, top = sys.argv[1], int(sys.argv[2])
times = []
for line in open(path, errors="replace"):
    m = re.match(r"test (\S+) \.\.\. (\w+) <([0-9.]+)s>", line)
    if m:
        times.append((float(m.group(3)), m.group(1), m.group(2)))
if not times:
    sys.exit("no timed test lines found (did the build fail? see the raw output)")
times.sort(reverse=True)
print(f"\n{len(times)} tests, {sum(t for t, _, _ in times):.0f} s of test time in all (two run at once)")
print(f"\nslowest {min(top, len(times))}:")
for t, name, result in times[:top]:
    print(f"  {t:8.1f} s  {name}{'' if result == 'ok' else '  (' + result + ')'}")
per = defaultdict(float)
for t, name, _ in times:
    per[name.split("::")[0]] += t
print("\nper module:")
for mod, t in sorted(per.items(), key=lambda kv: -kv[1]):
    print(f"  {t:8.1f} s  {mod}")
EOF
exit "$rc"
