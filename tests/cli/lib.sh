# The checks the CLI test scripts share. `source tests/cli/lib.sh TAG` (from the repository root)
# makes the scratch folder $T (/tmp/axmem-TAG.XXXXXX, removed at exit) and the counters; each
# check prints "ok   NAME" or "FAIL NAME" with the tail of its stderr; `finish LABEL` prints
# the counts and returns non-zero when a check failed.
T=$(mktemp -d "/tmp/axmem-$1.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -s "$T/err" ] && sed 's/^/     | /' "$T/err" | tail -5; }
# run NAME CMD...: must succeed
run() {
  local name=$1; shift
  if "$@" >"$T/out" 2>"$T/err"; then ok "$name"; else bad "$name"; fi
}
# expect_fail NAME EXIT_CODE PATTERN CMD...: must exit with EXIT_CODE, a stderr line matching
expect_fail() {
  local name=$1 code=$2 pat=$3; shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" "$T/err"; then ok "$name"; else
    echo "     (exit $rc, wanted $code; wanted stderr ~ /$pat/)"; bad "$name"; fi
}
# check NAME EXPR: EXPR (a shell condition, evaluated) must hold
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
# losses FILE: "step loss grad_norm" per training line of metrics.jsonl (scan records skipped)
losses() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "scan" not in r: print(r["step"], repr(r["loss"]), repr(r["grad_norm"]))' "$1"; }
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
