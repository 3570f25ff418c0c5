#!/bin/sh
# The entrypoint of deploy/Containerfile.postgres: a cluster on first start, then postgres
# in the foreground with this script's arguments (e.g. `-c fsync=on -c max_connections=200`).
# Takes the official postgres image's variables: POSTGRES_USER (default postgres),
# POSTGRES_PASSWORD, POSTGRES_DB (made if not `postgres`), POSTGRES_HOST_AUTH_METHOD (default
# scram-sha-256 with a password, else refused: set one of the two, as the official image asks).
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  auth=${POSTGRES_HOST_AUTH_METHOD:-}
  if [ -z "$auth" ]; then
    [ -n "${POSTGRES_PASSWORD:-}" ] || {
      echo "postgres-entrypoint: set POSTGRES_PASSWORD or POSTGRES_HOST_AUTH_METHOD" >&2
      exit 1
    }
    auth=scram-sha-256
  fi
  pwfile=
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  fi
  initdb -D "$PGDATA" -U "$user" --auth-local=trust --auth-host="$auth" \
    ${pwfile:+--pwfile="$pwfile"} >/dev/null
  [ -z "$pwfile" ] || rm -f "$pwfile"
  echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.auto.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    postgres --single -D "$PGDATA" postgres >/dev/null <<SQL
CREATE DATABASE "$db";
SQL
  fi
fi
exec postgres -D "$PGDATA" "$@"
