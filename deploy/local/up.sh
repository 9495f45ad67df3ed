#!/usr/bin/env bash
# A replicated sku-search on one machine, as it runs on several: a PostgreSQL 15 primary with
# pgvector, a hot standby streaming from it (pg_basebackup -R, synchronous), two service
# instances, and Debian's HAProxy in front of them. Run as root from the repository (it installs
# haproxy and runs the servers as the postgres user):
#   bash deploy/local/up.sh        # start; prints the URL (http://127.0.0.1:8080) and the log folder
#   bash deploy/local/down.sh      # stop everything, delete the data
# Ports: primary 5501, standby 5502, instances 8001 and 8002, HAProxy 8080 (stats on 8404).
# Settings: EMBEDDING_PROVIDER etc. pass through from the environment (default: the offline model).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="${SKU_CLUSTER_DIR:-/tmp/sku-search-cluster}"
PGBIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
[ -x "$PGBIN/pg_basebackup" ] || { echo "PostgreSQL 15 with pgvector first: bash .ci/postgres.sh" >&2; exit 1; }
command -v haproxy >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

bash deploy/local/down.sh >/dev/null 2>&1 || true
mkdir -p "$ROOT/logs"; chown postgres:postgres "$ROOT"
as_pg() { su postgres -c "$*"; }
start_pg() { # DATA PORT [extra -c options]
  as_pg "$PGBIN/pg_ctl -D $ROOT/$1 -l $ROOT/$1.log -w -o '-p $2 -k $ROOT -c listen_addresses=127.0.0.1 $3' start" >/dev/null
}

echo "== primary on 5501"
as_pg "$PGBIN/initdb -D $ROOT/primary --auth=trust -U postgres -E UTF8 --locale=C.UTF-8" >/dev/null
start_pg primary 5501 ""
psql -h 127.0.0.1 -p 5501 -U postgres -qc "CREATE DATABASE sku" >/dev/null

echo "== standby on 5502 (pg_basebackup -R)"
as_pg "$PGBIN/pg_basebackup -h 127.0.0.1 -p 5501 -U postgres -D $ROOT/standby -R -X stream -c fast -d application_name=standby1"
start_pg standby 5502 "-c hot_standby_feedback=on"
# synchronous_commit on (the default) with the standby named synchronous: a commit is acknowledged
# only once the standby has flushed it, so a failover loses no acknowledged write (README). Named
# only now: before the standby exists, every commit would wait for it.
psql -h 127.0.0.1 -p 5501 -U postgres -qc "ALTER SYSTEM SET synchronous_standby_names = 'standby1'" -c "SELECT pg_reload_conf()" >/dev/null

# Writes to the primary wherever it is (target_session_attrs=primary: postgres.js's read-write takes a
# standby for a primary); reads from the standby first. Both name both hosts, so either survives.
export DATABASE_URL="postgres://postgres@127.0.0.1:5501,127.0.0.1:5502/sku?target_session_attrs=primary"
export DATABASE_READ_URL="postgres://postgres@127.0.0.1:5502,127.0.0.1:5501/sku?target_session_attrs=prefer-standby"
# Every instance must sign and check the same tokens.
export JWT_SECRET="${JWT_SECRET:-$(head -c 32 /dev/urandom | base64)}"
export ADMIN_PASSWORD="${ADMIN_PASSWORD:-cambie-esta-contraseña}"
export LOG_LEVEL="${LOG_LEVEL:-warn}"

for port in 8001 8002; do
  echo "== instance on $port"
  mkdir -p "$ROOT/instance-$port"
  PORT=$port HOST=127.0.0.1 DATA_DIR="$ROOT/instance-$port" nohup bun src/app/main.ts serve \
    >"$ROOT/logs/instance-$port.log" 2>&1 &
  echo $! >"$ROOT/instance-$port.pid"
  # The first one migrates the database (the second waits for its advisory lock).
  for _ in $(seq 1 240); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health/ready")" = 200 ] && break
    sleep 0.5
  done
done

echo "== HAProxy on 8080"
haproxy -f deploy/local/haproxy.cfg -D -p "$ROOT/haproxy.pid"
for _ in $(seq 1 40); do curl -sf http://127.0.0.1:8080/health/ready >/dev/null && break; sleep 0.25; done
curl -s http://127.0.0.1:8080/health/ready; echo
echo "ready: http://127.0.0.1:8080 (user admin, the password in ADMIN_PASSWORD: 'cambie-esta-contraseña' unless you set it); logs in $ROOT/logs"
