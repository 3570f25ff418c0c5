#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, postgres) are on this machine, because
# queuebench starts its own throw-away cluster from them: it runs initdb itself, so nothing is
# started or configured here. Installs the distribution's packages (apt) only when they are
# missing. GitHub's Ubuntu runners already carry them, so there this only looks.
#
# Environment:
#   QB_DATABASE_URL       when set, the run uses that server and no local binaries are needed
#   QUEUEBENCH_PG_BINDIR  where queuebench should look (it then looks only there)
#   QB_NO_INSTALL=true    report what is missing instead of installing (tests)
# Output: pg-bindir (empty with QB_DATABASE_URL).
set -euo pipefail
# shellcheck source=ci/action/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ -n "${QB_DATABASE_URL:-}" ]; then
  qb_log "database-url is set: the scenarios run on that server, no local PostgreSQL needed"
  qb_output pg-bindir ""
  exit 0
fi

bindir=$(qb_pg_bindir)
if [ -n "$bindir" ]; then
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    qb_log "warning: running as root with no 'postgres' system user: initdb refuses root, and queuebench runs the cluster as that user"
  fi
  qb_log "PostgreSQL server binaries in $bindir ($("$bindir/postgres" --version 2>/dev/null || echo 'version unknown'))"
  qb_output pg-bindir "$bindir"
  exit 0
fi

if [ -n "${QUEUEBENCH_PG_BINDIR:-}" ]; then
  qb_fail 3 "QUEUEBENCH_PG_BINDIR=$QUEUEBENCH_PG_BINDIR holds no initdb and postgres"
fi
if [ "${QB_NO_INSTALL:-}" = "true" ]; then
  qb_fail 3 "no PostgreSQL server binaries (initdb) found, and QB_NO_INSTALL=true"
fi
if ! command -v apt-get >/dev/null 2>&1; then
  qb_fail 3 "no PostgreSQL server binaries (initdb) found and no apt-get to install them: install the \
server package of your distribution first, set QUEUEBENCH_PG_BINDIR, or give database-url"
fi

sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || qb_fail 3 "installing PostgreSQL needs root, and there is no sudo"
  sudo=(sudo -n)
fi

qb_group "Installing PostgreSQL server binaries (apt)"
started=$SECONDS
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  postgresql postgresql-contrib
# The package may start a cluster of its own (systemd hosts). queuebench does not use it, and
# on a 2-core runner it would only compete with the measured run.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  "${sudo[@]}" systemctl stop postgresql >/dev/null 2>&1 || true
fi
qb_endgroup
qb_log "installed PostgreSQL in $((SECONDS - started)) s"

bindir=$(qb_pg_bindir)
[ -n "$bindir" ] || qb_fail 3 "installed postgresql, but still no initdb under /usr/lib/postgresql/*/bin or on PATH"
qb_log "PostgreSQL server binaries in $bindir ($("$bindir/postgres" --version 2>/dev/null || echo 'version unknown'))"
qb_output pg-bindir "$bindir"
