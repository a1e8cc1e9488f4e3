#!/usr/bin/env bash
# axmem data dedup from the command line: --help states the definition; bad flags and files get
# one clear line and exit 2 (usage) or 1 (files); a run on the bundled corpus with planted
# copies removes them as the definition says (tests/support/dedup_ref.py), prints the summary,
# writes the JSON (0600, spans' text with --tokenizer), keeps the tokenizer identity, leaves no
# temporary file, and a failing run leaves an existing output as it was.
# Usage: tests/cli/dedup.sh [path/to/axmem]   (~10 s)
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
source tests/cli/lib.sh dedup

# the bundled corpus, with verses copied into later documents and whole documents repeated
python3 - "$T" <<'PY'
import json, random, sys
rng = random.Random(5)
docs = [json.loads(l)["text"] for l in open("data/corpus/kjv.jsonl")][:150]
for i in range(0, 40, 4):
    docs[100 + i] = docs[100 + i] + " " + docs[i][:300]   # a copied passage
    docs[101 + i] = docs[i + 1]                             # a duplicate document
with open(f"{sys.argv[1]}/c.jsonl", "w") as f:
    for d in docs:
        f.write(json.dumps({"text": d}) + "\n")
PY
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 400 --out "$T/tok" >/dev/null 2>&1 &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/c.axd" >/dev/null 2>&1 ||
  { echo "dedup.sh: could not make the corpus"; exit 1; }
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/other" >/dev/null 2>&1

"$AX" data dedup --help >"$T/help" 2>&1
check "--help states the definition" \
  "grep -q 'earlier' '$T/help' && grep -q 'first occurrence' '$T/help' && grep -q -- '--mem-limit' '$T/help'"
"$AX" data --help >"$T/help" 2>&1
check "data --help lists dedup" "grep -q '^  dedup' '$T/help'"
expect_fail "no --input" 2 "--input" "$AX" data dedup --out "$T/o.axd" --n 8
expect_fail "no --out" 2 "--out" "$AX" data dedup --input "$T/c.axd" --n 8
expect_fail "neither --n nor --documents" 2 "nothing to do" \
  "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd"
expect_fail "--n out of range" 2 "--n" "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd" --n 5000
expect_fail "bad --mem-limit" 2 "--mem-limit '10'" \
  "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd" --n 8 --mem-limit 10
expect_fail "--out is the input" 2 "is the input" \
  "$AX" data dedup --input "$T/c.axd" --out "$T/./c.axd" --n 8
expect_fail "--summary is the input" 2 "--summary .* is the input" \
  "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd" --n 8 --summary "$T/c.axd"
expect_fail "missing input named" 1 "nope.axd" \
  "$AX" data dedup --input "$T/nope.axd" --out "$T/o.axd" --n 8
expect_fail "a text file as input" 1 "c.jsonl" \
  "$AX" data dedup --input "$T/c.jsonl" --out "$T/o.axd" --n 8
echo keep >"$T/o.axd"
expect_fail "another tokenizer refused" 1 "other" \
  "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd" --n 8 --tokenizer "$T/other"
check "a failed run leaves the output as it was" "[ \"\$(cat '$T/o.axd')\" = keep ]"

if "$AX" data dedup --input "$T/c.axd" --out "$T/o.axd" --n 16 --documents \
  --tokenizer "$T/tok" >"$T/out" 2>"$T/err"; then ok "dedup runs"; else bad "dedup runs"; fi
check "summary printed" "grep -q '^removed [0-9]* tokens' '$T/out' && grep -q '^dropped [1-9][0-9]* duplicate documents' '$T/out' && grep -q '^wrote ' '$T/out' && grep -q 'most duplicated spans' '$T/out'"
check "output equals the definition" \
  "python3 tests/support/dedup_ref.py check '$T/c.axd' '$T/o.axd' --n 16 --documents --summary '$T/o.axd.dedup.json' >'$T/err'"
check "summary JSON is private, with the spans' text" \
  "[ \"\$(stat -c %a '$T/o.axd.dedup.json')\" = 600 ] && python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); t=s[\"top_spans\"]; sys.exit(not (t and all(\"text\" in x for x in t) and s[\"documents\"][\"duplicates\"] == 10))' '$T/o.axd.dedup.json'"
a=$("$AX" data info "$T/c.axd" | grep -i tokenizer)
b=$("$AX" data info "$T/o.axd" | grep -i tokenizer)
check "the output keeps the tokenizer identity" "[ -n \"$a\" ] && [ \"$a\" = \"$b\" ]"
"$AX" data dedup --input "$T/c.axd" --out "$T/p.axd" --n 16 --summary "$T/s.json" \
  --mem-limit 1M >"$T/out2" 2>"$T/err"
check "--summary names the file; ids without --tokenizer" \
  "python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(not all(\"ids\" in x for x in s[\"top_spans\"]))' '$T/s.json' && [ ! -e '$T/p.axd.dedup.json' ]"
left=$(ls -a "$T" | grep -E 'partial|dedup-index|tmp' | head -3)
check "no temporary files left" "[ -z '$left' ]"

finish dedup.sh
