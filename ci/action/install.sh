#!/usr/bin/env bash
# Installs queuebench from the action's own source tree (the ref the workflow pinned), into an
# install root that the action caches between runs.
#
#   install.sh key        print the cache key (and write it as the step output `key`)
#   install.sh [install]  reuse the binary in QB_INSTALL_ROOT when it was built for the same key,
#                         else `cargo install --locked --path <source> --root QB_INSTALL_ROOT`
#
# The cache key is queuebench's version, the source it is built from (the git commit when the
# source is a git checkout, as with `uses: ./`; otherwise the ref the workflow pinned plus a hash
# of the files the build reads, since GitHub hands remote actions over without .git), the
# runner's OS and architecture, and its C library version (a binary linked on a newer glibc does
# not start on an older one).
#
# Environment:
#   QB_ACTION_PATH       the source tree (default: $GITHUB_ACTION_PATH, else this checkout)
#   QB_INSTALL_ROOT      where bin/queuebench goes (required for install)
#   QB_CACHE_KEY         the key computed by `install.sh key` in an earlier step (else computed)
#   CARGO_TARGET_DIR     honoured by cargo as usual (the tests point it at a warm target dir)
#   QB_TEST_DEBUG_BUILD  TEST ONLY: `true` installs an unoptimised debug build (`--debug`), which
#                        links in seconds from a warm target dir. Never use it for measurements:
#                        debug builds are several times slower. The key gets a `-debug` suffix.
# Outputs: key; after install also bin, version, cache-hit (true/false), seconds.
set -euo pipefail
# shellcheck source=ci/action/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Edition 2024 with let-chains: rustc 1.88 or newer.
QB_MIN_RUST=1.88.0
# What the build reads (include_str! pulls in migrations/, src/**/sql and two scenarios).
QB_BUILD_INPUTS=(Cargo.toml Cargo.lock src migrations scenarios schema)

src=$(qb_action_path)
[ -d "$src" ] || qb_fail 3 "the action's source tree $src does not exist"
src=$(cd "$src" && pwd -P)

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1
}

# A hash of the files the build reads (names and contents), independent of git and timestamps.
content_hash() {
  local inputs=() f
  for f in "${QB_BUILD_INPUTS[@]}"; do
    if [ -e "$src/$f" ]; then inputs+=("$f"); fi
  done
  (cd "$src" && find "${inputs[@]}" -type f -print0 | LC_ALL=C sort -z |
    while IFS= read -r -d '' f; do printf '%s\0' "$f"; cat -- "$f"; done | sha256 | cut -c1-16)
}

source_id() {
  if command -v git >/dev/null 2>&1 \
    && [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)" = "$src" ]; then
    local commit
    commit=$(git -C "$src" rev-parse HEAD)
    if [ -n "$(git -C "$src" status --porcelain -- "${QB_BUILD_INPUTS[@]}" 2>/dev/null)" ]; then
      # Uncommitted changes to the build's inputs: the commit alone would not name this binary.
      printf '%s-dirty-%s\n' "$commit" "$(content_hash)"
    else
      printf '%s\n' "$commit"
    fi
  elif [[ ${GITHUB_ACTION_REF:-} =~ ^[0-9a-f]{40}$ ]]; then
    printf '%s\n' "$GITHUB_ACTION_REF"
  else
    local ref=${GITHUB_ACTION_REF:-src}
    printf '%s-%s\n' "${ref//[^A-Za-z0-9._-]/_}" "$(content_hash)"
  fi
}

compute_key() {
  local version os arch libc
  version=$(qb_crate_version "$src")
  [ -n "$version" ] || qb_fail 3 "no [package] version in $src/Cargo.toml"
  os=${RUNNER_OS:-$(uname -s)}
  arch=${RUNNER_ARCH:-$(uname -m)}
  libc=$(getconf GNU_LIBC_VERSION 2>/dev/null | tr -d ' ' || true)
  local id key
  id=$(source_id)
  key="queuebench-$version-$id-$os-$arch"
  [ -n "${ImageOS:-}" ] && key+="-$ImageOS"
  [ -n "$libc" ] && key+="-$libc"
  [ "${QB_TEST_DEBUG_BUILD:-}" = "true" ] && key+="-debug"
  printf '%s\n' "$key"
}

now_ms() {
  local t
  t=$(date +%s%3N)
  # BSD date has no %N: whole seconds then.
  [[ $t =~ ^[0-9]+$ ]] || t="$(date +%s)000"
  printf '%s\n' "$t"
}

rust_at_least() {
  local have
  have=$("$@" --version 2>/dev/null | awk '{print $2}')
  [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$QB_MIN_RUST" "${have%%-*}" | sort -V | head -n1)" = "$QB_MIN_RUST" ]
}

# Sets the array `cargo` to a cargo of at least QB_MIN_RUST, installing rustup when there is no
# cargo at all (GitHub's runners and the rust images have one).
find_cargo() {
  local cargo_home=${CARGO_HOME:-$HOME/.cargo}
  if ! command -v cargo >/dev/null 2>&1 && [ -x "$cargo_home/bin/cargo" ]; then
    PATH="$cargo_home/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    command -v curl >/dev/null 2>&1 || qb_fail 3 "no cargo, and no curl to install the Rust toolchain with rustup"
    qb_group "Installing the Rust toolchain (rustup, minimal profile)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --no-modify-path
    qb_endgroup
    PATH="$cargo_home/bin:$PATH"
  fi
  cargo=(cargo)
  if ! rust_at_least rustc; then
    if command -v rustup >/dev/null 2>&1; then
      qb_log "rustc $(rustc --version | awk '{print $2}') is older than $QB_MIN_RUST: installing stable with rustup"
      rustup toolchain install stable --profile minimal
      cargo=(rustup run stable cargo)
    else
      qb_fail 3 "queuebench needs rustc $QB_MIN_RUST or newer; this one is $(rustc --version 2>/dev/null || echo missing)"
    fi
  fi
}

# Is the binary in the install root the one this key names?
cached_binary_fits() {
  local bin=$1 stamp=$2 key=$3 version=$4 line
  [ -x "$bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] || return 1
  line=$("$bin" --version 2>/dev/null) || return 1
  [ "$line" = "queuebench $version" ] || [[ $line == "queuebench $version "* ]]
}

install() {
  local root=${QB_INSTALL_ROOT:-}
  [ -n "$root" ] || qb_fail 2 "QB_INSTALL_ROOT is not set"
  mkdir -p "$root"
  root=$(cd "$root" && pwd -P)
  local key=${QB_CACHE_KEY:-}
  [ -n "$key" ] || key=$(compute_key)
  local version bin="$root/bin/queuebench" stamp="$root/queuebench-cache-key" hit=false started
  version=$(qb_crate_version "$src")
  started=$(now_ms)
  if cached_binary_fits "$bin" "$stamp" "$key" "$version"; then
    hit=true
    qb_log "cache hit: $bin was built for $key"
  else
    qb_log "cache miss: building queuebench $version from $src (key $key)"
    local cargo
    find_cargo
    local args=(install --locked --force --path "$src" --root "$root" --bin queuebench)
    if [ "${QB_TEST_DEBUG_BUILD:-}" = "true" ]; then
      qb_log "QB_TEST_DEBUG_BUILD=true: debug build, for tests only"
      args+=(--debug)
    fi
    rm -f "$stamp"
    qb_group "cargo ${args[*]}"
    "${cargo[@]}" "${args[@]}"
    qb_endgroup
    printf '%s\n' "$key" >"$stamp"
  fi
  local line
  line=$("$bin" --version) || qb_fail 3 "the installed $bin does not run"
  local ms=$(($(now_ms) - started))
  qb_log "$line ready in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s ($([ "$hit" = true ] && echo 'cache hit' || echo 'built'))"
  if [ -n "${GITHUB_PATH:-}" ]; then
    printf '%s\n' "$root/bin" >>"$GITHUB_PATH"
  fi
  qb_output bin "$bin"
  qb_output version "$line"
  qb_output cache-hit "$hit"
  qb_output seconds "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
}

case "${1:-install}" in
  key)
    key=$(compute_key)
    printf '%s\n' "$key"
    qb_output key "$key"
    ;;
  install) install ;;
  *) qb_fail 2 "usage: install.sh [key|install]" ;;
esac
