#!/usr/bin/env bash
# Stops what deploy/local/up.sh started and deletes its data.
ROOT="${SKU_CLUSTER_DIR:-/tmp/sku-search-cluster}"
PGBIN=/usr/lib/postgresql/15/bin
for pidfile in "$ROOT"/instance-*.pid "$ROOT/haproxy.pid"; do
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
done
for data in primary standby; do
  [ -f "$ROOT/$data/postmaster.pid" ] && su postgres -c "$PGBIN/pg_ctl -D $ROOT/$data stop -m immediate" >/dev/null 2>&1
done
sleep 0.5
rm -rf "$ROOT"
echo "stopped"
