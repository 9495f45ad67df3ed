#!/usr/bin/env bash
# Installs wrk (Debian's package), the load generator of `bun run bench:http`: a C event loop that
# takes less of the two shared cores than a Bun fetch loop would. Does nothing when it is there.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
  echo "wrk already installed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "run as root: it installs a Debian package" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends wrk >/dev/null
echo "installed $(dpkg-query -W -f='${Package} ${Version}' wrk)"
