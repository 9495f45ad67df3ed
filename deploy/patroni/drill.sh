#!/usr/bin/env bash
# The failover drill with Patroni: etcd and three Patroni-managed PostgreSQL 15 nodes on loopback
# (ttl 10, loop_wait 2, synchronous mode), the service on them (multi-host URLs), writes and
# searches sent all along; the primary's Patroni and PostgreSQL are killed (SIGKILL). Prints the
# seconds without searches, without writes, and the acknowledged writes missing afterwards.
# Run as root from the repository: bash deploy/patroni/drill.sh  (it installs patroni and etcd-server).
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=/tmp/sku-search-patroni
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
command -v patroni >/dev/null && command -v etcd >/dev/null || {
  apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patroni etcd-server >/dev/null; }
pkill_pidfiles() { for f in "$WORK"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done; }
pkill_pidfiles; sleep 1; rm -rf "$WORK"; mkdir -p "$WORK"; chown postgres:postgres "$WORK"

su postgres -c "etcd --data-dir $WORK/etcd --listen-client-urls http://127.0.0.1:2389 --advertise-client-urls http://127.0.0.1:2389 --listen-peer-urls http://127.0.0.1:2390 --initial-advertise-peer-urls http://127.0.0.1:2390 --initial-cluster default=http://127.0.0.1:2390 >$WORK/etcd.log 2>&1 & echo \$! > $WORK/etcd.pid"
sleep 2
for n in 1 2 3; do
  cat > "$WORK/node$n.yml" <<YML
scope: sku-drill
namespace: /drill/
name: node$n
restapi: {listen: 127.0.0.1:801$n, connect_address: 127.0.0.1:801$n}
etcd3: {hosts: 127.0.0.1:2389}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 3
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters: {hot_standby_feedback: "on", wal_log_hints: "on"}
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
postgresql:
  listen: 127.0.0.1:560$n
  connect_address: 127.0.0.1:560$n
  data_dir: $WORK/node$n
  bin_dir: /usr/lib/postgresql/15/bin
  pgpass: $WORK/pgpass$n
  authentication:
    superuser: {username: postgres, password: drill}
    replication: {username: postgres, password: drill}
  pg_hba: ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"]
YML
  chown postgres:postgres "$WORK/node$n.yml"
  su postgres -c "patroni $WORK/node$n.yml >$WORK/node$n.log 2>&1 & echo \$! > $WORK/patroni$n.pid"
  sleep 4
done
for _ in $(seq 1 120); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8011/primary)" = 200 ] && break; sleep 0.5
done
psql -h 127.0.0.1 -p 5601 -U postgres -qc "CREATE DATABASE sku" >/dev/null
sleep 3
bun deploy/patroni/drill.ts "$WORK"
pkill_pidfiles
