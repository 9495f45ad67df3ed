#!/usr/bin/env bash
# Installs Debian's Chromium headless shell (package chromium-headless-shell: the Blink of the
# chromium package without the desktop browser around it), which the page tests (tests/ui/) drive
# through playwright-core; a browser download (`npx playwright install`) cannot work here. Does
# nothing when it is already there.
set -euo pipefail
if [ -x /usr/bin/chromium-headless-shell ]; then
  echo "$(dpkg-query -W -f='${Package} ${Version}' chromium-headless-shell 2>/dev/null || echo chromium-headless-shell) already installed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "run as root: it installs Debian packages" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium-headless-shell fonts-dejavu-core >/dev/null
echo "installed $(dpkg-query -W -f='${Package} ${Version}' chromium-headless-shell)"
