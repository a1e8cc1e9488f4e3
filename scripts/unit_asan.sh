#!/usr/bin/env bash
# The unit tests under ASan/UBSan (scons mode=asan), judged by scripts/check_leaks.py: leaks in
# test code fail the step (Criterion's workers report them but pass the test), leaks inside
# Criterion's own runner do not.
cd "$(dirname "$0")/.."
log=$(mktemp /tmp/axmem-unit-asan.XXXXXX)
trap 'rm -f "$log"' EXIT
env OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 build-asan/tests/unit_tests -j2 "$@" >"$log" 2>&1
rc=$?
tail -5 "$log"
python3 scripts/check_leaks.py "$log" || { echo "unit_asan: the test binary exited $rc; see above"; exit 1; }
