#!/usr/bin/env bash
# Installs what axmem needs on Debian 12 (run as root, or with sudo available).
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
PKGS="build-essential scons pkg-config libopenmpi-dev openmpi-bin libxxhash-dev libzstd-dev zlib1g-dev
      libdnnl-dev libcriterion-dev python3 clang-format git clang libclang-rt-14-dev chromium"
# clang + libclang-rt-14-dev: the libFuzzer targets (scons fuzz=yes, tests/fuzz/run.sh);
# chromium: tests/cli/report_browser.sh lays the report out in a real browser
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
