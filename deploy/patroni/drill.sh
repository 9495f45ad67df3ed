#!/usr/bin/env bash
# The failover drill with Patroni: etcd and three Patroni-managed PostgreSQL 15 nodes on loopback
# (ttl 10, loop_wait 2, synchronous mode), the service on them (multi-host URLs), writes and
# searches sent all along; the primary's Patroni and PostgreSQL are killed (SIGKILL). Prints the
# timeline (seconds to the promotion, without writes, without searches) and the acknowledged writes
# missing afterwards; exits non-zero when a search failed, a write answered anything but 201 or 503,
# or an acknowledged write was lost. About a minute. Leaves nothing running (all of it is stopped on
# exit) and its files in /tmp/sku-search-patroni (the logs, for a look afterwards).
# Run as root from the repository: bash deploy/patroni/drill.sh  (it installs patroni and etcd-server).
# Ports: etcd 2389/2390, PostgreSQL 5601-5603, Patroni's REST API 8011-8013.
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=/tmp/sku-search-patroni
PGBIN=/usr/lib/postgresql/15/bin
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
[ -x "$PGBIN/initdb" ] || { echo "PostgreSQL 15 first: bash .ci/postgres.sh" >&2; exit 1; }
if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null; then
  echo "== installing Debian's patroni and etcd-server"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patroni etcd-server >/dev/null
  # The package starts its own etcd where it can (2379): this drill runs one of its own on 2389.
fi

# Everything this drill started, stopped: Patroni first (so it restarts nothing), then each node's
# PostgreSQL (a killed Patroni leaves its server running), then etcd.
stop_all() {
  for pidfile in "$WORK"/patroni*.pid; do [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true; done
  for data in "$WORK"/node?; do
    [ -f "$data/postmaster.pid" ] && su postgres -c "$PGBIN/pg_ctl -D $data stop -m immediate" >/dev/null 2>&1 || true
  done
  [ -f "$WORK/etcd.pid" ] && kill "$(cat "$WORK/etcd.pid")" 2>/dev/null || true
}
# Waits (bounded) until the command succeeds: an event, not a fixed sleep.
wait_for() { # SECONDS WHAT COMMAND...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq 1 $((seconds * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  echo "gave up after ${seconds} s waiting for $what" >&2; return 1
}
api() { curl -sf -o /dev/null "http://127.0.0.1:801$1/$2"; }

[ -d "$WORK" ] && stop_all
rm -rf "$WORK"; mkdir -p "$WORK"; chown postgres:postgres "$WORK"
trap stop_all EXIT

echo "== etcd on 2389"
su postgres -c "etcd --name drill --data-dir $WORK/etcd --listen-client-urls http://127.0.0.1:2389 --advertise-client-urls http://127.0.0.1:2389 --listen-peer-urls http://127.0.0.1:2390 --initial-advertise-peer-urls http://127.0.0.1:2390 --initial-cluster drill=http://127.0.0.1:2390 >$WORK/etcd.log 2>&1 & echo \$! > $WORK/etcd.pid"
wait_for 30 "etcd" curl -sf http://127.0.0.1:2389/health

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
      # mmap: dynamic shared memory in the data folder; the drill's SIGKILL would leave POSIX segments in /dev/shm
      parameters: {hot_standby_feedback: "on", wal_log_hints: "on", dynamic_shared_memory_type: mmap}
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
postgresql:
  listen: 127.0.0.1:560$n
  connect_address: 127.0.0.1:560$n
  data_dir: $WORK/node$n
  bin_dir: $PGBIN
  pgpass: $WORK/pgpass$n
  authentication:
    superuser: {username: postgres, password: drill}
    replication: {username: postgres, password: drill}
  pg_hba: ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"]
YML
  chown postgres:postgres "$WORK/node$n.yml"
  echo "== Patroni node$n (PostgreSQL on 560$n, REST API on 801$n)"
  su postgres -c "patroni $WORK/node$n.yml >$WORK/node$n.log 2>&1 & echo \$! > $WORK/patroni$n.pid"
  # The first one bootstraps the cluster and leads; the others copy it and follow.
  if [ "$n" = 1 ]; then wait_for 120 "node1 to lead" api 1 primary; else wait_for 120 "node$n to stream" api "$n" replica; fi
done
# Synchronous mode: Patroni names one standby synchronous (its REST API answers /sync with 200).
wait_for 60 "a synchronous standby" sh -c 'curl -sf -o /dev/null http://127.0.0.1:8012/sync || curl -sf -o /dev/null http://127.0.0.1:8013/sync'
psql -h 127.0.0.1 -p 5601 -U postgres -qc "CREATE DATABASE sku" >/dev/null

echo "== the service on the three nodes, writing and searching; then SIGKILL to the primary"
bun deploy/patroni/drill.ts "$WORK"
