#!/usr/bin/env bash
# Writes docs/cli.md, the command reference, from the commands' config tables
# (`axmem help --markdown`). With --check it writes nothing and fails when docs/cli.md differs
# (a step of scripts/test.sh).
# usage: bash scripts/cli_doc.sh [--check] [AXMEM]   (AXMEM: default build/bin/axmem)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
AX=${1:-build/bin/axmem}
new=$(mktemp)
trap 'rm -f "$new"' EXIT
"$AX" help --markdown >"$new"
if [ $check = 0 ]; then
  cp "$new" docs/cli.md
  echo "wrote docs/cli.md"
elif ! diff -u docs/cli.md "$new"; then
  echo "docs/cli.md is stale: run bash scripts/cli_doc.sh" >&2
  exit 1
fi
