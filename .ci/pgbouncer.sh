#!/usr/bin/env bash
# Starts Debian's pgbouncer in transaction pooling mode in front of the test server (as CI's
# contract tests run through it, with DATABASE_TRANSACTION_POOLER's settings). Any database name
# is passed through to the server (`* =`), so each test can have a database of its own.
# Prints the pgbouncer URL (of database postgres) on its last line. Usage: .ci/pgbouncer.sh PG_PORT [PORT]
set -euo pipefail
PG_PORT="${1:?usage: .ci/pgbouncer.sh PG_PORT [PORT]}"
PORT="${2:-56432}"
WORK="${PGBOUNCER_WORK_DIR:-/tmp/sku-search-pgbouncer}"
[ "$(id -u)" = 0 ] || { echo "run as root: it installs pgbouncer and runs it as the postgres user" >&2; exit 1; }
if ! command -v pgbouncer >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
fi
if [ -f "$WORK/pgbouncer.pid" ]; then kill "$(cat "$WORK/pgbouncer.pid")" 2>/dev/null || true; sleep 0.5; fi
rm -rf "$WORK"; mkdir -p "$WORK"
cat > "$WORK/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $WORK/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
logfile = $WORK/pgbouncer.log
pidfile = $WORK/pgbouncer.pid
INI
echo '"postgres" ""' > "$WORK/userlist.txt"
chown -R postgres:postgres "$WORK"
su postgres -c "pgbouncer -d $WORK/pgbouncer.ini"
for _ in $(seq 1 50); do
  psql -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -Atqc "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
echo "postgres://postgres@127.0.0.1:$PORT/postgres"
