#!/usr/bin/env bash
# Debian's chromium for the browser tests (tests/browser/): Playwright's own browser
# download cannot be reached here, so its Python package drives this one instead.
# Does nothing when chromium is already there; otherwise, as root, one `apt-get update`
# and one `apt-get install -y chromium`.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "chromium is missing and this is not root: install Debian's chromium package" \
         "(apt-get install chromium) for the browser tests" >&2
    exit 1
fi
echo "== installing Debian's chromium for the browser tests (first run only)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q chromium
command -v chromium >/dev/null
