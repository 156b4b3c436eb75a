#!/usr/bin/env bash
# Installs Debian's Chromium for the web app's browser tests when it is missing (test/run.ts and
# .ci/run call this). Nothing else is downloaded: playwright-core drives this browser.
set -euo pipefail
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "No Chromium at $CHROMIUM and no apt-get to install it: install Chromium and set CHROMIUM_PATH." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "No Chromium at $CHROMIUM: run 'sudo apt-get install chromium' (or set CHROMIUM_PATH)." >&2
    exit 1
  fi
  SUDO="sudo -n"
fi
echo "Installing Debian's chromium for the browser tests (apt-get)..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o Acquire::Retries=3 update -qq
$SUDO apt-get -o Acquire::Retries=3 install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "apt-get installed chromium, but not at $CHROMIUM" >&2; exit 1; }
echo "Chromium installed: $("$CHROMIUM" --version 2>/dev/null)"
