#!/usr/bin/env bash
# Installs Apertium with its Spanish-English data (Debian packages apertium and apertium-eng-spa,
# GPL-2), which the service runs as separate programs to translate Spanish before the offline
# model embeds it. Does nothing when they are already there.
set -euo pipefail
if [ -f /usr/share/apertium/modes/spa-eng.mode ] && command -v lt-proc >/dev/null 2>&1; then
  echo "apertium-eng-spa already installed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "run as root: it installs Debian packages" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends apertium apertium-eng-spa >/dev/null
echo "installed $(dpkg-query -W -f='${Package} ${Version}' apertium-eng-spa)"
