#!/usr/bin/env bash
# Installs Debian's Chromium (package chromium), which the page tests (tests/ui/) drive headless
# through playwright-core; a browser download (`npx playwright install`) cannot work here. Does
# nothing when /usr/bin/chromium is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "$(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "run as root: it installs Debian packages" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "installed $(dpkg-query -W -f='${Package} ${Version}' chromium)"
