#!/usr/bin/env bash
# Installs Debian's `chromium` for the status-page test, once. Idempotent and
# instant when /usr/bin/chromium exists. The package lists are refreshed only
# when the install fails: on a machine whose lists are current that saves
# the slow `apt-get update`, and on a fresh one the retry covers it.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi

# CI and the sessions run as root; elsewhere borrow sudo if there is one.
as_root=()
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then
  as_root=(sudo)
fi
install() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends chromium
}

echo "chromium: installing Debian's chromium for the status-page test (once)"
if ! install; then
  echo "chromium: install failed; refreshing the package lists and trying again"
  "${as_root[@]}" apt-get update
  install
fi
test -x /usr/bin/chromium
