#!/usr/bin/env bash
# `axmem demo` end to end, small (20 steps, 4 documents, vocabulary 300; a few seconds): it
# runs, writes its summary, scans and report, prints what the commands print, and its library
# calls give what the commands give: `axmem memscan probe` / `generate` with the flags the demo
# documents write the same samples, byte for byte, on the demo's checkpoints.
# Usage: tests/cli/demo.sh path/to/axmem
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/axmem-demo.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && sed 's/^/     | /' "$T/err" | tail -5; }

D="$T/demo"
if "$AX" demo --steps 20 --docs 4 --vocab-size 300 --out "$D" >"$T/out" 2>"$T/err"; then
  ok "demo runs"
else
  bad "demo runs (exit $?)"
fi
files_ok=1
for run in baseline goldfish; do
  for f in probe.json probe.samples.jsonl regurgitation.json regurgitation.samples.jsonl; do
    [ -s "$D/$run/$f" ] || { echo "     missing $D/$run/$f"; files_ok=0; }
  done
  [ "$(stat -c %a "$D/$run/probe.samples.jsonl")" = 600 ] || files_ok=0
done
for f in summary.md report/report.html report/report.md report/report.json; do
  [ -s "$D/$f" ] || { echo "     missing $D/$f"; files_ok=0; }
done
[ "$files_ok" = 1 ] && ok "demo: scans (samples 0600), summary and report written" ||
  bad "demo: scans, summary and report written"
[ "$(grep -c '^probe: 4 samples, prefix 32, suffix 32' "$T/out")" = 2 ] &&
  [ "$(grep -c '^generate: 32 generations of 96 tokens' "$T/out")" = 2 ] &&
  ok "demo: prints the probe and generate lines the commands print" ||
  bad "demo: prints the probe and generate lines the commands print"
# the summary's numbers are the scans' numbers
python3 - "$D" <<'PY' && ok "demo: summary rows match probe.json and regurgitation.json" ||
import json, re, sys
d = sys.argv[1]
rows = [l for l in open(f"{d}/summary.md") if l.startswith("| baseline") or l.startswith("| goldfish")]
assert len(rows) == 2, rows
for run, row in zip(["baseline", "goldfish"], rows):
    m = json.load(open(f"{d}/{run}/probe.json"))["metrics"]
    g = json.load(open(f"{d}/{run}/regurgitation.json"))["metrics"]
    em = m["exact_match_rate"]
    want = "%.0f%% (%.0f-%.0f%%) | %.3f | %.1f tokens" % (
        100 * em["mean"], 100 * em["ci95"][0], 100 * em["ci95"][1],
        m["token_accuracy"]["mean"], g["mean_longest_span"])
    assert want in row, (run, want, row)
PY
  bad "demo: summary rows match probe.json and regurgitation.json"
# the commands with the demo's documented settings give the same samples
for run in baseline goldfish; do
  "$AX" memscan probe --ckpt "$D/$run" --data "$D/memo.axd" --tokenizer "$D/tokenizer.axt" \
    --samples 4 --prefix 32 --suffix 32 --out "$T/$run.p.json" >/dev/null 2>"$T/err" &&
    "$AX" memscan generate --ckpt "$D/$run" --index "$D/memo.index" \
      --tokenizer "$D/tokenizer.axt" --samples 32 --length 96 --temperature 0.7 \
      --out "$T/$run.g.json" >/dev/null 2>>"$T/err" &&
    cmp -s "$T/$run.p.samples.jsonl" "$D/$run/probe.samples.jsonl" &&
    cmp -s "$T/$run.g.samples.jsonl" "$D/$run/regurgitation.samples.jsonl" &&
    ok "demo ($run): the library calls write what the commands write" ||
    bad "demo ($run): the library calls write what the commands write"
done
echo "demo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
