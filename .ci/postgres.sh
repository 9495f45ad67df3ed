#!/usr/bin/env bash
# Installs PostgreSQL 15 with pgvector (built from Debian's source package, since bookworm
# ships no binary pgvector) and starts a throwaway cluster on loopback.
# Prints the connection URL on its last line. Usage: .ci/postgres.sh [PORT]
set -euo pipefail
PORT="${1:-55432}"
PGBIN=/usr/lib/postgresql/15/bin
WORK="${PG_WORK_DIR:-/tmp/sku-search-pg}"
[ "$(id -u)" = 0 ] || { echo "run as root: it installs packages and runs the server as the postgres user" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
if [ ! -f "$(pg_config --sharedir 2>/dev/null)/extension/vector.control" ] \
   || ! [ -x "$PGBIN/initdb" ]; then
  apt-get update -qq
  apt-get install -y -qq postgresql-15 postgresql-server-dev-15 dpkg-dev build-essential >/dev/null
  # A private source list for trixie's pgvector source, leaving the system's lists untouched.
  SRC=/tmp/sku-search-apt-src
  mkdir -p "$SRC/lists/partial" "$SRC/cache/archives/partial" "$SRC/parts"
  # The system's own Debian mirror (deb822 "URIs:" or one-line "deb" entries), whatever it is.
  mirror=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } \
    | sed -nE 's#^URIs:[[:space:]]*(https?://[^ ]+/debian)/?$#\1#p' | head -n1)
  if [ -z "$mirror" ]; then
    mirror=$( { cat /etc/apt/sources.list 2>/dev/null || true; } \
      | sed -nE 's#^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?://[^ ]+/debian)/?[[:space:]].*#\2#p' | head -n1)
  fi
  [ -n "$mirror" ] || { echo "no Debian mirror found in the apt sources" >&2; exit 1; }
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" > "$SRC/sources.list"
  APT_OPTS=(-o "Dir::Etc::SourceList=$SRC/sources.list" -o "Dir::Etc::SourceParts=$SRC/parts"
            -o "Dir::State::Lists=$SRC/lists" -o "Dir::Cache=$SRC/cache")
  apt-get "${APT_OPTS[@]}" update -qq
  BUILD=/tmp/sku-search-pgvector-build
  rm -rf "$BUILD"; mkdir -p "$BUILD"; cd "$BUILD"
  apt-get "${APT_OPTS[@]}" source -qq pgvector >/dev/null 2>&1 || apt-get "${APT_OPTS[@]}" source pgvector
  cd "$(find . -maxdepth 1 -type d -name 'pgvector-*' | head -1)"
  make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config OPTFLAGS="" >/dev/null
  make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install >/dev/null
  cd /
fi

# A fresh cluster on loopback, trust auth, owned by postgres.
if [ -f "$WORK/data/postmaster.pid" ]; then
  su postgres -c "$PGBIN/pg_ctl -D $WORK/data stop -m fast" >/dev/null 2>&1 || true
fi
rm -rf "$WORK"; mkdir -p "$WORK"; chown postgres:postgres "$WORK"
su postgres -c "$PGBIN/initdb -D $WORK/data --auth=trust -U postgres -E UTF8 --locale=C.UTF-8" >/dev/null
# A test server, never crashed by the tests (those that kill PostgreSQL make clusters of their own,
# tests/support/postgres-cluster.ts): nothing it holds has to survive the machine, so it does not
# wait for the disk (each test's CREATE DATABASE or schema costs a fraction of the time).
su postgres -c "$PGBIN/pg_ctl -D $WORK/data -l $WORK/server.log -o '-p $PORT -k $WORK -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off' -w start" >/dev/null
psql -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE sku_test" >/dev/null
psql -h 127.0.0.1 -p "$PORT" -U postgres -d sku_test -qc "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
psql -h 127.0.0.1 -p "$PORT" -U postgres -d sku_test -qc "CREATE EXTENSION IF NOT EXISTS pg_trgm" >/dev/null
echo "postgres://postgres@127.0.0.1:$PORT/sku_test"
