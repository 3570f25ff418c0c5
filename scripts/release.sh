#!/usr/bin/env bash
# Cuts release X.Y.Z of queuebench (docs/development.md, "Releases"):
#   1. refuses a dirty working tree, a version that is not plain X.Y.Z, one that is not newer
#      than Cargo.toml's, and a tag vX.Y.Z that already exists;
#   2. sets [package] version in Cargo.toml and lets cargo update Cargo.lock;
#   3. points every pinned reference at the new version: `uses: OWNER/queuebench@vX.Y.Z`, the
#      GitLab include's URL and QUEUEBENCH_REF, `cargo install … --tag vX.Y.Z`, image tags
#      `queuebench:X.Y.Z`, the release archives' `/releases/download/vX.Y.Z/queuebench-X.Y.Z-…`
#      (README.md, docs/, ci/, action.yml, deploy/);
#   4. moves CHANGELOG.md's Unreleased entries under `## X.Y.Z — YYYY-MM-DD` (a new, empty
#      Unreleased section stays on top);
#   5. commits that as "Release X.Y.Z" and makes the annotated tag vX.Y.Z.
# Nothing is pushed: push the commit and the tag yourself (git push --follow-tags).
# tests/release.rs checks that the pinned references and CHANGELOG agree with Cargo.toml, and
# runs this script in a scratch clone.
set -euo pipefail

die() {
  echo "release: $*" >&2
  exit 2
}

[ $# -eq 1 ] || die "usage: scripts/release.sh X.Y.Z (the new version, e.g. 0.2.0)"
new=$1
[[ $new =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] \
  || die "$new is not a version of the form X.Y.Z (three whole numbers, no leading v)"

root=$(git rev-parse --show-toplevel 2>/dev/null) || die "not inside a git checkout"
cd "$root"

if [ -n "$(git status --porcelain)" ]; then
  git status --short >&2
  die "the working tree has uncommitted changes (above); commit or stash them first"
fi

old=$(awk '/^\[package\]/ { p = 1; next } /^\[/ { p = 0 } p && /^version *=/ { gsub(/[" ]/, "", $0); sub(/version=/, "", $0); print; exit }' Cargo.toml)
[ -n "$old" ] || die "no [package] version in Cargo.toml"

# Is $1 newer than $2? Both X.Y.Z.
newer() {
  local IFS=.
  local -a a=($1) b=($2)
  for i in 0 1 2; do
    if ((a[i] > b[i])); then return 0; fi
    if ((a[i] < b[i])); then return 1; fi
  done
  return 1
}
newer "$new" "$old" || die "$new is not newer than the current version $old"
if git rev-parse -q --verify "refs/tags/v$new" >/dev/null; then
  die "the tag v$new already exists"
fi

# 2. Cargo.toml's [package] version, then Cargo.lock through cargo itself.
awk -v new="$new" '
  /^\[package\]/ { p = 1 } /^\[/ && !/^\[package\]/ { p = 0 }
  p && !done && /^version *=/ { print "version = \"" new "\""; done = 1; next }
  { print }
' Cargo.toml >Cargo.toml.release-tmp
mv Cargo.toml.release-tmp Cargo.toml
cargo update --workspace --offline --quiet 2>/dev/null || cargo update --workspace --quiet

# 3. Every pinned reference, whatever version it named before.
v='[0-9]+\.[0-9]+\.[0-9]+'
mapfile -t files < <(git ls-files README.md action.yml 'docs/*' 'ci/*' 'deploy/*' | grep -E '\.(md|yml|yaml|sh)$|Dockerfile$' || true)
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  sed -E -i \
    -e "s#(queuebench@v)$v#\\1$new#g" \
    -e "s#(/queuebench/v)$v(/)#\\1$new\\2#g" \
    -e "s#(QUEUEBENCH_REF: v)$v#\\1$new#g" \
    -e "s#(queuebench\\.git --tag v)$v#\\1$new#g" \
    -e "s#(queuebench:)$v#\\1$new#g" \
    -e "s#(/releases/download/v)$v(/)#\\1$new\\2#g" \
    -e "s#(queuebench-)$v(-)#\\1$new\\2#g" \
    "$f"
done

# 4. CHANGELOG.md: the Unreleased entries become the release's.
grep -q '^## Unreleased' CHANGELOG.md || die "CHANGELOG.md has no '## Unreleased' section"
today=$(date -u +%Y-%m-%d)
awk -v head="## $new — $today" '
  !done && /^## Unreleased/ { print; print ""; print head; done = 1; next }
  { print }
' CHANGELOG.md >CHANGELOG.md.release-tmp
mv CHANGELOG.md.release-tmp CHANGELOG.md

# 5. One commit, one tag.
git add -A Cargo.toml Cargo.lock CHANGELOG.md "${files[@]}"
git commit --quiet -m "Release $new"
git tag -a "v$new" -m "queuebench $new"
echo "release: $old → $new committed and tagged v$new; push with: git push --follow-tags"
