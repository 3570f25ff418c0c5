# shellcheck shell=bash
# Helpers shared by the action's scripts (sourced, never run). Each script reads its inputs
# from QB_* environment variables, so it runs the same inside GitHub Actions, in GitLab CI
# and in ci/action/test.sh.

QB_SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

qb_log() {
  printf 'queuebench-action: %s\n' "$*" >&2
}

# True when GitHub's workflow commands (::error, ::group) are understood.
qb_in_github() {
  [ "${GITHUB_ACTIONS:-}" = "true" ]
}

# qb_fail CODE MESSAGE: print an error (an annotation inside GitHub) and exit with CODE.
qb_fail() {
  local code=$1
  shift
  if qb_in_github; then
    printf '::error title=queuebench::%s\n' "$*"
  fi
  qb_log "error: $*"
  exit "$code"
}

# qb_output NAME VALUE: a step output in GitHub ($GITHUB_OUTPUT), a log line elsewhere.
qb_output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  fi
  qb_log "output $1=$2"
}

qb_group() {
  if qb_in_github; then printf '::group::%s\n' "$*"; else qb_log "== $*"; fi
}

qb_endgroup() {
  if qb_in_github; then echo '::endgroup::'; fi
}

# What queuebench's exit code means (README, "Exit codes").
qb_exit_meaning() {
  case "$1" in
    0) echo "every expectation met and every check held" ;;
    1) echo "an expectation or a check failed, a run was aborted or timed out, or a regression against the baseline" ;;
    2) echo "usage or scenario error" ;;
    3) echo "infrastructure error (database, cluster, PostgreSQL binaries)" ;;
    130) echo "interrupted" ;;
    *) echo "unexpected exit code" ;;
  esac
}

# The source tree the action installs from: GitHub checks the action out at the ref the
# workflow pinned and sets GITHUB_ACTION_PATH to it. QB_ACTION_PATH overrides (tests, GitLab).
qb_action_path() {
  local path=${QB_ACTION_PATH:-${GITHUB_ACTION_PATH:-}}
  if [ -z "$path" ]; then
    path=$(cd "$QB_SCRIPTS_DIR/../.." && pwd)
  fi
  printf '%s\n' "$path"
}

# The package version in Cargo.toml's [package] table.
qb_crate_version() {
  local toml="$1/Cargo.toml"
  [ -f "$toml" ] || qb_fail 3 "no Cargo.toml in $1: is this queuebench's source tree?"
  awk '
    /^\[/ { in_package = ($0 == "[package]") }
    in_package && /^version[ \t]*=/ { gsub(/^version[ \t]*=[ \t]*"|".*$/, ""); print; exit }
  ' "$toml"
}

# The directory holding initdb and postgres, searched as queuebench does
# (src/db/ephemeral/, find_bindir): QUEUEBENCH_PG_BINDIR, pg_config --bindir, PATH, then
# the newest /usr/lib/postgresql/*/bin. Prints nothing when there is none.
qb_pg_bindir() {
  local dir candidates=()
  if [ -n "${QUEUEBENCH_PG_BINDIR:-}" ]; then
    candidates=("$QUEUEBENCH_PG_BINDIR")
  else
    if command -v pg_config >/dev/null 2>&1; then
      dir=$(pg_config --bindir 2>/dev/null || true)
      [ -n "$dir" ] && candidates+=("$dir")
    fi
    local IFS=:
    # shellcheck disable=SC2206 # splitting PATH on ':' is the point
    candidates+=(${PATH:-})
    unset IFS
    while IFS= read -r dir; do
      candidates+=("$dir")
    done < <(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -t/ -k5,5nr)
  fi
  for dir in "${candidates[@]}"; do
    if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
      printf '%s\n' "$dir"
      return 0
    fi
  done
  return 0
}
