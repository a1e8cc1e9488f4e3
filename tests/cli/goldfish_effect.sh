#!/usr/bin/env bash
# The goldfish paper's "extreme" setting, measured: a small model trained for many epochs on 32
# short documents memorizes them (high exact-match suffix extraction) without goldfish, and
# extracts almost none with hash:k=4,h=13, while the held-out loss stays close.
# Usage: tests/cli/goldfish_effect.sh [path/to/axmem]   (~1 minute on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
T=$(mktemp -d /tmp/axmem-gf.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
python3 - "$T" <<'PY'
import json, sys
lines = open("data/corpus/kjv.jsonl").readlines()
for name, rows in (("train", lines[100:132]), ("val", lines[1000:1032])):
    with open(f"{sys.argv[1]}/{name}.jsonl", "w") as f:
        for l in rows:
            f.write(json.dumps({"text": json.loads(l)["text"][:500]}) + "\n")
PY
set -e
"$AX" data tokenizer-train --input data/corpus/kjv.jsonl --vocab-size 2048 --out "$T/tok" 2>/dev/null
"$AX" data encode --tokenizer "$T/tok" --input "$T/train.jsonl" --out "$T/train.axd" 2>/dev/null
"$AX" data encode --tokenizer "$T/tok" --input "$T/val.jsonl" --out "$T/val.axd" 2>/dev/null
"$AX" memscan index --data "$T/train.axd" --n 16 --out "$T/train.idx" 2>/dev/null
for spec in none hash:k=4,h=13; do
  out="$T/run-${spec%%:*}"
  "$AX" train --data "$T/train.axd" --val-data "$T/val.axd" --val-batches 2 --model tiny \
    --packing doc --seq-len 160 --batch 16 --steps 300 --lr 3e-3 --warmup 20 --weight-decay 0 \
    --goldfish "$spec" --out "$out" --log-every 1000 2>/dev/null
  "$AX" memscan probe --ckpt "$out" --data "$T/train.axd" --samples 32 --prefix 32 --suffix 32 \
    --out "$out/scan.json"
  "$AX" memscan generate --ckpt "$out" --index "$T/train.idx" --samples 16 --length 96 \
    --temperature 0.7 --out "$out/gen.json" --samples-out "$out/gen.jsonl"
done
"$AX" report --scan "baseline=$T/run-none/scan.json" --scan "baseline=$T/run-none/gen.json" \
  --scan "goldfish=$T/run-hash/scan.json" --scan "goldfish=$T/run-hash/gen.json" \
  --index "$T/train.idx.json" --out "$T/report" >/dev/null
set +e
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
rep = json.load(open(f"{t}/report/report.json"))
html = open(f"{t}/report/report.html").read()
report_ok = rep["schema"] == "axmem-report" and html.count("<svg") >= 3 and "<script" not in html
def get(run):
    scan = json.load(open(f"{t}/run-{run}/scan.json"))
    val = [json.loads(l) for l in open(f"{t}/run-{run}/metrics.jsonl")][-1]["val_loss"]
    return scan["metrics"]["exact_match_rate"]["mean"], val
(eb, vb), (eg, vg) = get("none"), get("hash")
span = lambda run: json.load(open(f"{t}/run-{run}/gen.json"))["metrics"]["mean_longest_span"]
sb, sg = span("none"), span("hash")
print(f"regurgitation scan: mean longest verbatim span {sb:.1f} (baseline) vs {sg:.1f} (goldfish) tokens")
print(f"baseline: exact match {eb:.2f}, val loss {vb:.3f}; goldfish: exact match {eg:.2f}, val loss {vg:.3f}")
checks = [("baseline memorizes (exact match >= 0.5)", eb >= 0.5),
          ("goldfish extracts almost nothing (<= 0.1)", eg <= 0.1),
          ("held-out loss within 10%", abs(vg - vb) <= 0.1 * vb),
          ("free generations: goldfish spans < half the baseline's", sg < 0.5 * sb),
          ("report: html with charts, json with the runs", report_ok)]
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
bad = sum(not ok for _, ok in checks)
print(f"goldfish-effect: {len(checks) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
