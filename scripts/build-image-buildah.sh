#!/usr/bin/env bash
# Builds the Dockerfile without a Docker engine and measures the image's first start, as README's
# container section describes. Needs root and Debian's buildah and debootstrap (apt-get install buildah
# debootstrap); no container registry is needed:
#   base   makes debian:bookworm-slim locally (debootstrap --variant=minbase, trimmed like the official
#          slim image), with this machine's apt sources and its extra CA certificates (a proxy's);
#   build  builds the Dockerfile into sku-search:local and prints the build time and the image size;
#   check  starts the image's entrypoint twice in a new container (buildah run, as the image's user,
#          its /data volume empty at first): prints the time from `buildah run` to the first 200 on
#          GET / (and the CPU time the service used by then), the process's peak RSS (and its children's: Apertium), what it wrote outside the
#          /data volume, and what is in it.
# With no argument it does all three. buildah uses the vfs storage driver and chroot isolation
# (which work inside an unprivileged container); both can be overridden with BUILDAH_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=docker.io/library/debian:bookworm-slim
IMAGE=localhost/sku-search:local
BUILDAH=(buildah --storage-driver vfs ${BUILDAH_ARGS:-})
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

base() {
  local root
  root=$(mktemp -d /tmp/sku-search-rootfs.XXXXXX)
  trap 'rm -rf "$root"' RETURN
  echo "== base: debootstrap --variant=minbase $SUITE ($MIRROR)"
  debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >/dev/null
  # As the official slim image: apt sources in deb822 form, no docs but copyright files, no caches.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
DPKG
  echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
  # This machine's extra CA certificates (an intercepting proxy's): installing ca-certificates in
  # the build adds them to the bundle that curl and Bun read.
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  rm -rf "$root"/usr/share/doc/*/[!c]* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
  local container
  container=$("${BUILDAH[@]}" from scratch)
  tar -C "$root" -cf "$root.tar" .
  "${BUILDAH[@]}" add "$container" "$root.tar" / >/dev/null # a tar archive is unpacked
  rm -f "$root.tar"
  "${BUILDAH[@]}" config --cmd bash "$container"
  "${BUILDAH[@]}" commit --rm -q "$container" "$BASE" >/dev/null
  echo "   $BASE: $("${BUILDAH[@]}" images --format '{{.Size}}' "$BASE")"
}

build() {
  echo "== build: buildah bud (Dockerfile) -> $IMAGE"
  local began=$SECONDS
  "${BUILDAH[@]}" bud --isolation chroot --pull-never --layers --format docker -t "$IMAGE" .
  echo "   built in $((SECONDS - began)) s"
  echo "   image size $("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE")"
}

# descends_from PID ANCESTOR: whether ANCESTOR is PID's parent, grandparent, ...
descends_from() {
  local pid=$1
  while [ "$pid" -gt 1 ]; do
    pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "$pid" != "$2" ] || return 0
  done
  return 1
}

# children_memory PID: the memory in MB of PID's descendants (Apertium's pipeline, when it runs),
# as their proportional set sizes (shared libraries counted once overall, not once per process).
children_memory() {
  local total=0 child
  for child in $(pgrep -P "$1"); do
    total=$((total + $(awk '/^Pss:/ {print int($2 / 1024)}' "/proc/$child/smaps_rollup" 2>/dev/null || echo 0)))
    total=$((total + $(children_memory "$child")))
  done
  echo "$total"
}

check() {
  local work container root port
  work=$(mktemp -d /tmp/sku-search-check.XXXXXX)
  container=$("${BUILDAH[@]}" from --pull-never "$IMAGE")
  root=$("${BUILDAH[@]}" mount "$container")
  port=$((20000 + RANDOM % 12768)) # below the ephemeral range (32768 and up)
  local pid=""
  cleanup() {
    [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
    "${BUILDAH[@]}" umount "$container" >/dev/null 2>&1 || true
    "${BUILDAH[@]}" rm "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
  }
  trap cleanup RETURN
  # Everything but the volume (buildah keeps it in the container's own folder), to compare after.
  (cd "$root" && find . -xdev -path ./proc -prune -o -path ./sys -prune -o -path ./dev -prune -o -print | sort) >"$work/before"

  for run in "first start (empty /data)" "second start"; do
    local began runner
    began=$(date +%s%N)
    "${BUILDAH[@]}" run --isolation chroot \
      --env PORT="$port" --env ADMIN_PASSWORD=check-password-123 "$container" -- /app/sku-search \
      >"$work/out.log" 2>&1 &
    runner=$!
    pid=""
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" || true)" = 200 ]; do
      kill -0 "$runner" 2>/dev/null || { cat "$work/out.log"; echo "check: the service exited" >&2; return 1; }
      [ $(($(date +%s%N) - began)) -lt 120000000000 ] || { echo "check: no 200 within 120 s" >&2; return 1; }
      sleep 0.05
    done
    local ms=$((($(date +%s%N) - began) / 1000000))
    # The service's own process: the sku-search started under this buildah run.
    for candidate in $(pgrep -x sku-search); do
      descends_from "$candidate" "$runner" && pid=$candidate
    done
    [ -n "$pid" ] || { echo "check: cannot find the service's process" >&2; return 1; }
    # CPU time it took (user + system), which unlike the wall time barely depends on other load.
    local cpu
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$pid/stat")
    sleep 3
    echo "== $run: GET / answered 200 after $ms ms ($cpu s of CPU); peak RSS $(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status") MB" \
      "(3 s later), its child processes $(children_memory "$pid") MB"
    kill -TERM "$pid"
    wait "$runner" || true
    pid=""
  done
  (cd "$root" && find . -xdev -path ./proc -prune -o -path ./sys -prune -o -path ./dev -prune -o -print | sort) |
    comm -13 "$work/before" - >"$work/after"
  echo "   written outside the /data volume: $(wc -l <"$work/after") files $(head -5 "$work/after" | tr '\n' ' ')"
  local id volume
  id=$("${BUILDAH[@]}" inspect --format '{{.ContainerID}}' "$container")
  volume=$(echo "$("${BUILDAH[@]}" info --format '{{.store.GraphRoot}}')/vfs-containers/$id/userdata/buildah-volumes"/*)
  echo "   in the /data volume ($(du -sh "$volume" | cut -f1)): $(cd "$volume" && find . -mindepth 1 -maxdepth 1 | sort | tr '\n' ' ')"
}

case "${1:-all}" in
  base) base ;;
  build) build ;;
  check) check ;;
  all) base && build && check ;;
  *) echo "usage: $0 [base|build|check|all]" >&2; exit 2 ;;
esac
