#!/usr/bin/env bash
# CLI tests: what a user sees. Usage: tests/cli/run.sh path/to/axmem
# Each check prints ok/FAIL; the script exits non-zero if any failed.
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
source tests/cli/lib.sh cli

# ---- usage and bad input: one clear line, non-zero exit, never a crash
"$AX" --help >/dev/null 2>&1 && ok "axmem --help" || bad "axmem --help"
"$AX" train --help >"$T/help" 2>&1 && grep -q -- "--seq-len" "$T/help" && ok "train --help lists flags" || bad "train --help lists flags"
expect_fail "unknown command" 2 "unknown command 'bogus'" "$AX" bogus
expect_fail "train needs --data" 2 "--data is required" "$AX" train
expect_fail "unknown flag" 2 "--frobnicate" "$AX" train --frobnicate 3
expect_fail "bad integer" 2 "--steps" "$AX" train --data x.axd --steps abc
expect_fail "out of range" 2 "--lr" "$AX" train --data x.axd --lr -1
expect_fail "missing dataset" 1 "nope.axd" "$AX" train --data "$T/nope.axd" --out "$T/r0"
expect_fail "bad preset" 2 "--model 'huge'" "$AX" train --data x.axd --model huge

# ---- dp: the privacy accountant (train/dp_accountant.h) reproduces published epsilons
"$AX" dp --help >"$T/help" 2>&1 && grep -q -- "--sample-rate" "$T/help" && ok "dp --help lists flags" || bad "dp --help lists flags"
# json_is FILE PYTHON-EXPR: the expression over the JSON object j holds
json_is() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), j' "$1" "$2" 2>"$T/err"; }
# TF Privacy's compute_dp_sgd_privacy --N=60000 --batch_size=256 --noise_multiplier=1.1 --epochs=60: eps = 3.01
"$AX" dp --batch 256 --examples 60000 --noise 1.1 --epochs 60 --delta 1e-5 --conversion classic --json >"$T/dp.json" 2>"$T/err" &&
  json_is "$T/dp.json" 'j["steps"] == 14063 and round(j["epsilon"], 2) == 3.01 and j["solved"] == "epsilon"' &&
  ok "dp: TF Privacy's MNIST epsilon 3.01" || bad "dp: TF Privacy's MNIST epsilon 3.01"
# Abadi et al. 2016: q 0.01, sigma 4, 10000 steps, delta 1e-5 -> epsilon 1.26; the noise for 1.26 is just under 4
"$AX" dp --sample-rate 0.01 --noise 4 --steps 10000 --delta 1e-5 --conversion classic >"$T/out" 2>"$T/err" &&
  grep -q "(epsilon 1.2585[0-9]*, delta 1e-05)-DP at RDP order 20, classic conversion" "$T/out" &&
  ok "dp: Abadi et al.'s epsilon 1.26" || bad "dp: Abadi et al.'s epsilon 1.26"
"$AX" dp --sample-rate 0.01 --epsilon 1.26 --steps 10000 --delta 1e-5 --conversion classic --json >"$T/dp.json" 2>"$T/err" &&
  json_is "$T/dp.json" '3.98 < j["noise"] < 4 and j["epsilon"] <= 1.26 and j["solved"] == "noise"' &&
  ok "dp --epsilon: the noise that meets it, rounded up" || bad "dp --epsilon: the noise that meets it"
"$AX" dp --sample-rate 0.01 --noise 4 --epsilon 1.26 --steps 10000 --conversion classic --json >"$T/dp.json" 2>"$T/err" &&
  json_is "$T/dp.json" '9e-6 < j["delta"] < 1e-5 and j["order"] == 20' && ok "dp: delta for an epsilon" || bad "dp: delta for an epsilon"
expect_fail "dp: one of noise, epsilon, delta" 2 "give two of --noise, --epsilon and --delta" "$AX" dp --sample-rate 0.01 --steps 10 --noise 1
expect_fail "dp: two sampling rates" 2 "--sample-rate Q or as --batch B --examples N" "$AX" dp --sample-rate 0.01 --batch 1 --examples 10 --steps 10 --noise 1 --delta 1e-5
expect_fail "dp: delta out of range" 2 "--delta must lie strictly between 0 and 1" "$AX" dp --sample-rate 0.01 --steps 10 --noise 1 --delta 1

# ---- data: tokenizer + encode a slice of the bundled corpus
head -n 150 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$AX" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 512 --out "$T/tok" 2>"$T/err" \
  && ok "tokenizer-train" || bad "tokenizer-train"
"$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>"$T/err" \
  && ok "encode" || bad "encode"
expect_fail "impossible shape" 2 "not divisible" "$AX" train --data "$T/kjv.axd" --dim 100 --heads 3 --out "$T/r1"
head -c 1000 "$T/kjv.axd" >"$T/trunc.axd"
# a tokenizer with the same vocabulary size but other merges is not the dataset's tokenizer
tail -n 150 data/corpus/kjv.jsonl >"$T/tail.jsonl"
"$AX" data tokenizer-train --input "$T/tail.jsonl" --vocab-size 512 --out "$T/tok2" 2>/dev/null
expect_fail "decode: other tokenizer, same vocab" 1 "different merges" "$AX" data decode --tokenizer "$T/tok2" --data "$T/kjv.axd" --doc 0
expect_fail "train: other tokenizer, same vocab" 1 "tok2.*different merges" "$AX" train --data "$T/kjv.axd" --tokenizer "$T/tok2" --out "$T/r3"
"$AX" data info "$T/kjv.axd" 2>/dev/null | grep -q "tokenizer:  [0-9a-f]\{16\}" && ok "data info shows the tokenizer identity" || bad "data info shows the tokenizer identity"
expect_fail "truncated dataset" 1 "trunc.axd" "$AX" train --data "$T/trunc.axd" --out "$T/r2"
# binary files are not text: a dataset passed as input is refused, not encoded as one document
expect_fail "encode: a .axd dataset as input refused, named" 1 "kjv.axd is not text: it is an axmem dataset" \
  "$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.axd" --out "$T/re.axd"
[ -e "$T/re.axd" ] && bad "encode: a refused input leaves no dataset" || ok "encode: a refused input leaves no dataset"
gzip -c "$T/kjv.axd" >"$T/kjvaxd.txt.gz"
expect_fail "tokenizer-train: a gzipped dataset as input refused (judged after decompression)" 1 "kjvaxd.txt.gz is not text" \
  "$AX" data tokenizer-train --input "$T/kjvaxd.txt.gz" --vocab-size 300 --out "$T/retok"

# ---- training lowers the loss clearly
TRAIN=(--data "$T/kjv.axd" --tokenizer "$T/tok" --model tiny --seq-len 64 --batch 8 --lr 3e-3 --warmup 5 --log-every 20)
"$AX" train "${TRAIN[@]}" --steps 80 --out "$T/run" 2>"$T/err" && ok "train runs" || bad "train runs"
if losses "$T/run/metrics.jsonl" >"$T/l" 2>/dev/null; then
  python3 - "$T/l" <<'PY' && ok "loss drops by > 1.5 nats (first 5 vs last 5 steps)" || bad "loss drops"
import sys
l=[float(x.split()[1]) for x in open(sys.argv[1])]
a=sum(l[:5])/5; b=sum(l[-5:])/5
print(f"     loss {a:.3f} -> {b:.3f}")
sys.exit(0 if len(l)==80 and a-b>1.5 else 1)
PY
else bad "metrics.jsonl readable"; fi
python3 -c '
import json,sys
r=json.loads(open(sys.argv[1]).readline())
sys.exit(0 if all(k in r for k in ("step","loss","lr","tokens_per_s","flops_per_s")) else 1)' \
  "$T/run/metrics.jsonl" && ok "metrics fields" || bad "metrics fields"
expect_fail "refuses to clobber a run" 2 "--resume" "$AX" train "${TRAIN[@]}" --steps 80 --out "$T/run"

# ---- resume is bit-exact: drop the last checkpoint and replay from the one before
"$AX" train "${TRAIN[@]}" --steps 12 --ckpt-every 6 --out "$T/res" 2>"$T/err" && ok "train with checkpoints" || bad "train with checkpoints"
losses "$T/res/metrics.jsonl" >"$T/full"
rm -rf "$T/res/ckpt/step-000012"
"$AX" train --out "$T/res" --data "$T/kjv.axd" --steps 12 --resume 2>"$T/err" && ok "resume runs" || bad "resume runs"
losses "$T/res/metrics.jsonl" >"$T/resumed"
if cmp -s "$T/full" "$T/resumed" && [ "$(wc -l <"$T/full")" -eq 12 ]; then ok "resume bit-exact (loss, grad norm)"; else
  diff "$T/full" "$T/resumed" | head -4; bad "resume bit-exact"; fi
# --recompute (activation checkpointing) computes the same numbers: a fresh run, and a resume
# that switches it on (it may change on resume: how the run computes, not what)
"$AX" train "${TRAIN[@]}" --steps 12 --recompute --out "$T/rc" 2>"$T/err" &&
  grep -q "recomputed in the backward" "$T/err" && losses "$T/rc/metrics.jsonl" >"$T/rcl" &&
  cmp -s "$T/full" "$T/rcl" && ok "--recompute: the same losses and grad norms, bit for bit" ||
  bad "--recompute bit-exact"
"$AX" train "${TRAIN[@]}" --steps 1 --warmup 0 --z-gather layer --out "$T/zg1" 2>"$T/err" &&
  grep -q "z-gather layer does nothing on --grid 1x1x1x1" "$T/err" &&
  ok "--z-gather layer without Z: a warning says it does nothing" || bad "--z-gather layer without Z"
"$AX" train "${TRAIN[@]}" --steps 1 --warmup 0 --grad-comm bf16 --out "$T/gc1" 2>"$T/err" &&
  grep -q "grad-comm bf16 does nothing on --grid 1x1x1x1" "$T/err" &&
  ok "--grad-comm bf16 without data or Z: a warning says it does nothing" || bad "--grad-comm bf16 without data or Z"
rm -rf "$T/res/ckpt/step-000012"
"$AX" train --out "$T/res" --data "$T/kjv.axd" --steps 12 --resume --recompute 2>"$T/err" &&
  losses "$T/res/metrics.jsonl" >"$T/resumed" && cmp -s "$T/full" "$T/resumed" &&
  ok "resume with --recompute bit-exact" || bad "resume with --recompute"
expect_fail "resume with changed lr" 1 "--lr" "$AX" train --out "$T/res" --data "$T/kjv.axd" --steps 20 --resume --lr 0.5
# a damaged shard is caught by its checksum
shard=$(ls "$T/res/ckpt/step-000012/"*.zst | head -1)
cp -r "$T/res" "$T/dmg"
dshard="$T/dmg/ckpt/step-000012/$(basename "$shard")"
printf '\xff' | dd of="$dshard" bs=1 seek=100 conv=notrunc 2>/dev/null
expect_fail "corrupt checkpoint" 1 "step-000012" "$AX" train --out "$T/dmg" --data "$T/kjv.axd" --steps 20 --resume

# ---- Ctrl-C stops after the current step with a checkpoint; --resume finishes the run
"$AX" train "${TRAIN[@]}" --steps 100000 --warmup 5 --out "$T/int" 2>"$T/err" &
pid=$!
for _ in $(seq 50); do [ -s "$T/int/metrics.jsonl" ] && break; sleep 0.1; done
sleep 0.3
kill -INT "$pid"
wait "$pid"
rc=$?
n=$(ls -d "$T"/int/ckpt/step-* 2>/dev/null | wc -l)
if [ "$rc" -eq 130 ] && [ "$n" -eq 1 ] && ! ls -d "$T"/int/ckpt/*.partial >/dev/null 2>&1; then
  ok "Ctrl-C: exit 130 with one complete checkpoint"
else bad "Ctrl-C: exit 130 with one complete checkpoint (exit $rc, $n checkpoints)"; fi
step=$(basename "$(ls -d "$T"/int/ckpt/step-*)" | sed 's/step-0*//')
if "$AX" train --out "$T/int" --data "$T/kjv.axd" --steps $((step + 3)) --resume 2>"$T/err" &&
   [ "$(wc -l <"$T/int/metrics.jsonl")" -eq $((step + 3)) ]; then ok "interrupted run resumes"
else bad "interrupted run resumes"; fi

# ---- scans: probe and generate on the run above
"$AX" memscan index --data "$T/kjv.axd" --n 8 --out "$T/kjv.idx" 2>"$T/err" && ok "memscan index" || bad "memscan index"
for i in 1 2; do
  "$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 6 --length 24 --seed 5 \
    --out "$T/g$i.json" --samples-out "$T/g$i.jsonl" >"$T/g$i.out" 2>"$T/err"
done
if [ -s "$T/g1.jsonl" ] && cmp -s "$T/g1.jsonl" "$T/g2.jsonl"; then ok "generate: same seed, same generations"
else bad "generate: same seed, same generations"; fi
# the rows sample in parallel: one thread and two give the same tokens
"$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 6 --length 24 --seed 5 --threads 1 \
  --out "$T/g1t.json" --samples-out "$T/g1t.jsonl" >/dev/null 2>"$T/err"
"$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 6 --length 24 --seed 5 --threads 2 \
  --out "$T/g2t.json" --samples-out "$T/g2t.jsonl" >/dev/null 2>"$T/err"
if [ -s "$T/g1t.jsonl" ] && cmp -s "$T/g1t.jsonl" "$T/g2t.jsonl"; then ok "generate: 1 and 2 threads, same generations"
else bad "generate: 1 and 2 threads, same generations"; fi
grep -qE "^generate: generated 144 tokens in [0-9.]+ s: [0-9]+ tokens/s \(model load excluded\)$" "$T/g1.out" \
  && ok "generate: generated-tokens line (6 x 24)" || bad "generate: generated-tokens line: $(cat "$T/g1.out")"
python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))
ok = s["schema"]=="axmem-scan" and s["kind"]=="regurgitation-scan" and "frac_with_verbatim_span" in s["metrics"]
sys.exit(0 if ok else 1)' "$T/g1.json" && ok "generate: scan.json schema" || bad "generate: scan.json schema"
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 8 --prefix 16 --suffix 16 \
  --index "$T/kjv.idx" --out "$T/p.json" >/dev/null 2>"$T/err" && ok "probe runs" || bad "probe runs"
python3 -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
s=json.load(open(sys.argv[2]))
ok = len(rows)==8 and all(r["duplicates"]>=1 for r in rows) and sum(b["samples"] for b in s["tables"]["by_duplication"])==8
sys.exit(0 if ok else 1)' "$T/p.samples.jsonl" "$T/p.json" && ok "probe: every probed window found in the index, bucketed" || bad "probe: duplication counts"
expect_fail "probe: checkpoint missing" 1 "--ckpt .*nothing: No such file" "$AX" memscan probe --ckpt "$T/nothing" --data "$T/kjv.axd"
expect_fail "probe: prefix too long for every document" 2 "--prefix" "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --prefix 5000 --suffix 5000
sed -n 151,170p data/corpus/kjv.jsonl >"$T/other.jsonl"
"$AX" data encode --tokenizer "$T/tok" --input "$T/other.jsonl" --out "$T/other.axd" 2>/dev/null
expect_fail "generate: index of another dataset" 1 "other.axd" "$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --data "$T/other.axd"

# ---- scans refuse data that makes their numbers meaningless, and record what they scanned
"$AX" data encode --tokenizer "$T/tok2" --input "$T/kjv.jsonl" --out "$T/kjv_tok2.axd" 2>/dev/null
expect_fail "probe: data of another tokenizer refused, both named" 1 "kjv_tok2.axd was encoded by tokenizer [0-9a-f]+, but .* trained on .*kjv.axd, encoded by tokenizer" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv_tok2.axd" --samples 4 --prefix 8 --suffix 8 --out "$T/tk.json"
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv_tok2.axd" --samples 4 --prefix 8 --suffix 8 \
  --allow-other-tokenizer --not-training-data --out "$T/tk.json" >/dev/null 2>"$T/err" &&
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["data_is_training_data"] is False and s["data_tokenizer"] != s["training_data"]["tokenizer"] else 1)' "$T/tk.json" \
  && ok "probe --allow-other-tokenizer: runs and records both tokenizers" || bad "probe --allow-other-tokenizer: runs and records both tokenizers"
"$AX" memscan probe --ckpt "$T/run" --data "$T/other.axd" --samples 4 --prefix 8 --suffix 8 --out "$T/od.json" \
  >"$T/od.out" 2>"$T/err"
rc=$?
python3 - "$T/od.json" "$T/err" "$rc" <<'PY' && ok "probe: other data warned about on stderr and recorded (both checksums)" \
  || bad "probe: other data warned about on stderr and recorded (both checksums)"
import json, sys
s = json.load(open(sys.argv[1])); err = open(sys.argv[2]).read()
assert sys.argv[3] == "0", sys.argv[3]
assert "other.axd is not the training data" in err and "--not-training-data" in err, err
assert s["data_is_training_data"] is False and s["config"]["not_training_data"] is False, s
assert s["dataset"]["xxh3"] != s["training_data"]["xxh3"] and s["training_data"]["path"].endswith("kjv.axd"), s
PY
"$AX" memscan probe --ckpt "$T/run" --data "$T/other.axd" --samples 4 --prefix 8 --suffix 8 --out "$T/od2.json" \
  --not-training-data >/dev/null 2>"$T/err" && ! grep -q "not the training data" "$T/err" &&
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["data_is_training_data"] is False and s["config"]["not_training_data"] else 1)' "$T/od2.json" \
  && ok "probe --not-training-data: no warning, still recorded" || bad "probe --not-training-data: no warning, still recorded"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["data_is_training_data"] is True and s["training_data"]["xxh3"] == s["dataset"]["xxh3"] else 1)' "$T/p.json" \
  && ok "probe of the training data records data_is_training_data: true" || bad "probe of the training data records data_is_training_data: true"
"$AX" memscan index --data "$T/other.axd" --n 8 --out "$T/other.idx" >/dev/null 2>&1
expect_fail "generate: an index of other data refused, naming --not-training-data" 1 "other.idx .*is not the training data .*--not-training-data" \
  "$AX" memscan generate --ckpt "$T/run" --index "$T/other.idx" --samples 2 --length 16 --out "$T/go.json"
"$AX" memscan generate --ckpt "$T/run" --index "$T/other.idx" --samples 2 --length 16 --out "$T/go.json" \
  --not-training-data >/dev/null 2>"$T/err" &&
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["data_is_training_data"] is False and s["config"]["not_training_data"] and s["training_data"]["xxh3"] != s["dataset"]["xxh3"] else 1)' "$T/go.json" \
  && ok "generate --not-training-data: runs and records the other data" || bad "generate --not-training-data: runs and records the other data"
"$AX" memscan index --data "$T/kjv_tok2.axd" --n 8 --out "$T/kjv_tok2.idx" >/dev/null 2>&1
expect_fail "generate: an index of another tokenizer's data refused" 1 "kjv_tok2.idx .*encoded by tokenizer" \
  "$AX" memscan generate --ckpt "$T/run" --index "$T/kjv_tok2.idx" --samples 2 --length 16 --not-training-data --out "$T/go2.json"
# --length beyond the model's context (its --seq-len 64 here) is refused before any memory is taken
expect_fail "generate: --length beyond the model's context refused, the limit named" 2 "--length 100000 exceeds the model's context: .* 64 positions \(its seq-len\)" \
  timeout 20 "$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 2 --length 100000 --out "$T/gl.json"
"$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 2 --length 64 --out "$T/gl.json" >/dev/null 2>"$T/err" \
  && ok "generate: --length equal to the context runs" || bad "generate: --length equal to the context runs"
# no --length on a model whose context (64) is under the default 128: the context is the length
"$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 2 --out "$T/gd.json" >/dev/null 2>"$T/err" \
  && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["config"]["length"] != 64)' "$T/gd.json" \
  && ok "generate: the default --length is the context when that is under 128" \
  || bad "generate: the default --length is the context when that is under 128"
# --out in a folder that does not exist yet: created, as the other scans do
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 4 --prefix 8 --suffix 8 --out "$T/newdir/sub/probe.json" \
  >/dev/null 2>"$T/err" && [ -s "$T/newdir/sub/probe.json" ] && [ -s "$T/newdir/sub/probe.samples.jsonl" ] \
  && ok "probe --out DIR/probe.json creates DIR" || bad "probe --out DIR/probe.json creates DIR"
"$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --samples 2 --length 16 --out "$T/newdir2/g.json" \
  >/dev/null 2>"$T/err" && [ -s "$T/newdir2/g.json" ] && ok "generate --out DIR/g.json creates DIR" || bad "generate --out DIR/g.json creates DIR"
# --samples beyond the documents that fit: each document once by default (a notice says so);
# repeats only with --repeat-docs, and then intervals clustered by document
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 200 --prefix 8 --suffix 8 --out "$T/s1.json" \
  >/dev/null 2>"$T/err"
rc=$?
python3 - "$T/s1.json" "$T/s1.samples.jsonl" "$T/err" "$rc" <<'PY' && ok "probe --samples 200 over 150 documents: each once, with a notice" \
  || bad "probe --samples 200 over 150 documents: each once, with a notice"
import json, sys
s = json.load(open(sys.argv[1])); rows = [json.loads(l) for l in open(sys.argv[2])]; err = open(sys.argv[3]).read()
assert sys.argv[4] == "0" and "probing each once (150 samples)" in err, err
c = s["config"]
assert c["samples"] == 150 and c["samples_requested"] == 200 and c["documents"] == 150, c
assert c["intervals"] == "independent probes" and len(rows) == 150 and len({r["doc"] for r in rows}) == 150
PY
expect_fail "probe --repeat-docs at document starts refused" 2 "--repeat-docs with --offset start" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 200 --prefix 8 --suffix 8 --repeat-docs --out "$T/s2.json"
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 200 --prefix 8 --suffix 8 --repeat-docs \
  --offset random --out "$T/s2.json" >"$T/s2.out" 2>"$T/err"
python3 - "$T/s2.json" "$T/s2.samples.jsonl" <<'PY' && grep -q "intervals clustered by document" "$T/s2.out" \
  && ok "probe --repeat-docs: 200 probes of 150 documents, intervals clustered" || bad "probe --repeat-docs: 200 probes of 150 documents, intervals clustered"
import json, sys
s = json.load(open(sys.argv[1])); rows = [json.loads(l) for l in open(sys.argv[2])]
c = s["config"]
assert c["samples"] == 200 and c["documents"] == 150 and c["repeat_docs"] and c["intervals"] == "clustered by document", c
assert len(rows) == 200 and len({r["doc"] for r in rows}) == 150
PY

# ---- scan outputs (issue 8): distinct names, published together, private, checked, redactable
mkdir -p "$T/both"
( cd "$T/both" &&
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --tokenizer "$T/tok" --samples 8 \
    --prefix 8 --suffix 12 >/dev/null 2>"$T/err" &&
  "$AX" memscan generate --ckpt "$T/run" --index "$T/kjv.idx" --tokenizer "$T/tok" --samples 4 \
    --length 16 >/dev/null 2>>"$T/err" )
if [ -s "$T/both/probe.json" ] && [ -s "$T/both/probe.samples.jsonl" ] &&
   [ -s "$T/both/regurgitation.json" ] && [ -s "$T/both/regurgitation.samples.jsonl" ] &&
   [ "$(ls -A "$T/both" | wc -l)" -eq 4 ]; then ok "probe and generate in one folder: four files, no clash"
else ls -A "$T/both" | sed 's/^/     | /'; bad "probe and generate in one folder: four files, no clash"; fi
if [ "$(stat -c %a "$T/both/probe.samples.jsonl")" = 600 ] &&
   [ "$(stat -c %a "$T/both/regurgitation.samples.jsonl")" = 600 ]; then ok "samples files are mode 0600"
else bad "samples files are mode 0600"; fi
"$AX" report --run "r=$T/both" --out "$T/rep" >/dev/null 2>"$T/err" && ok "report reads both scans of a folder" \
  || bad "report reads both scans of a folder"
if [ "$(stat -c %a "$T/rep/report.html" "$T/rep/report.md" "$T/rep/report.json" | sort -u)" = 600 ]; then
  ok "report files are mode 0600"; else bad "report files are mode 0600"; fi
# no training text anywhere after --redact (nor after --text-chars 0); without it, report.json quotes it
notext() { python3 - "$T/both/probe.samples.jsonl" "$1" <<'PY'
import json, os, sys
texts = set()
for l in open(sys.argv[1]):
    r = json.loads(l)
    for k in ("truth_text", "generated_text"):
        t = r.get(k, "").strip()
        if len(t) >= 8: texts.add(t[:24])
blob = b"".join(open(os.path.join(sys.argv[2], f), "rb").read() for f in os.listdir(sys.argv[2]))
found = [t for t in texts if t.encode() in blob or json.dumps(t)[1:-1].encode() in blob]
print(f"     {len(texts)} sample texts, {len(found)} found in {sys.argv[2]}")
sys.exit(0 if texts and not found else 1)
PY
}
notext "$T/rep" >/dev/null && bad "the unredacted report quotes sample text (test can fail)" || ok "the unredacted report quotes sample text (test can fail)"
"$AX" report --run "r=$T/both" --out "$T/rep" --redact >/dev/null 2>"$T/err" && notext "$T/rep" \
  && ok "report --redact: no training text in any output" || bad "report --redact: no training text in any output"
"$AX" report --run "r=$T/both" --out "$T/rep0" --text-chars 0 >/dev/null 2>"$T/err" && notext "$T/rep0" \
  && ok "report --text-chars 0: no training text in report.json either" || bad "report --text-chars 0: no text"
# samples that do not belong to the scan, and edited values, are refused naming the files
cp -r "$T/both" "$T/swap"
cp "$T/swap/regurgitation.samples.jsonl" "$T/swap/probe.samples.jsonl"
expect_fail "report: foreign samples file named with its scan" 1 "probe.samples.jsonl does not belong to .*probe.json" \
  "$AX" report --run "r=$T/swap" --out "$T/rep1"
cp -r "$T/both" "$T/edit"
python3 - "$T/edit/probe.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["metrics"]["exact_match_rate"]["mean"] = -5
json.dump(s, open(sys.argv[1], "w"))
PY
expect_fail "report: an edited -500% rate is refused" 1 "probe.json: metrics.exact_match_rate.mean = -5 is outside" \
  "$AX" report --run "r=$T/edit" --out "$T/rep2"
# the older layout (scan.json + samples.jsonl, no record) still reads
mkdir -p "$T/old"
python3 - "$T/both/probe.json" "$T/old/scan.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); del s["samples"]; json.dump(s, open(sys.argv[2], "w"))
PY
cp "$T/both/probe.samples.jsonl" "$T/old/samples.jsonl"
"$AX" report --run "old=$T/old" --out "$T/rep3" >/dev/null 2>"$T/err" && grep -q '"id":"top-samples-old"' "$T/rep3/report.json" \
  && ok "report reads the older scan.json + samples.jsonl" || bad "report reads the older scan.json + samples.jsonl"
# a full disk leaves the previous complete scan, or none: never a scan JSON beside cut samples
M="$T/disk"
mkdir -p "$M"
trap 'umount "$M" 2>/dev/null; rm -rf "$T"' EXIT # never leave the small disk mounted
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=16k tmpfs "$M" 2>/dev/null; then
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --tokenizer "$T/tok" --samples 64 \
    --prefix 8 --suffix 32 --out "$M/probe.json" >/dev/null 2>"$T/err"
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q "probe.samples.jsonl" "$T/err" && [ -z "$(ls -A "$M")" ]; then
    ok "full disk: probe fails and leaves nothing behind"
  else ls -A "$M" | sed 's/^/     | /'; bad "full disk: probe fails and leaves nothing behind (exit $rc)"; fi
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 2 --prefix 8 --suffix 8 \
    --out "$M/probe.json" >/dev/null 2>"$T/err"
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --tokenizer "$T/tok" --samples 64 \
    --prefix 8 --suffix 32 --out "$M/probe.json" >/dev/null 2>"$T/err"
  rc=$?
  if [ "$rc" -eq 1 ] && [ "$(ls -A "$M" | wc -l)" -eq 2 ] &&
     "$AX" report --run "r=$M" --out "$T/rep4" >/dev/null 2>"$T/err"; then
    ok "full disk: the previous complete scan survives"
  else bad "full disk: the previous complete scan survives (exit $rc)"; fi
  umount "$M"
else
  echo "skip full-disk checks (needs root and tmpfs)"
fi

# ---- inputs that are not regular files fail at once naming them (a FIFO blocked open()
# forever); numbers a person did not mean are refused naming their flag (issue 8)
mkfifo "$T/fifo.idx"
expect_fail "lookup: a FIFO --index fails at once, named" 1 "fifo.idx is a FIFO" \
  timeout 20 "$AX" memscan lookup --index "$T/fifo.idx" --tokenizer "$T/tok" --data "$T/kjv.axd" "In the beginning"
expect_fail "memscan info: a FIFO index fails at once" 1 "fifo.idx is a FIFO" timeout 20 "$AX" memscan info "$T/fifo.idx"
mkdir -p "$T/fifock" && mkfifo "$T/fifock/manifest.json"
expect_fail "probe: a FIFO manifest.json fails at once, named" 1 "fifock/manifest.json is a FIFO" \
  timeout 20 "$AX" memscan probe --ckpt "$T/fifock" --data "$T/kjv.axd"
cp -r "$T/both" "$T/fiforep" && mkfifo "$T/fiforep/metrics.jsonl"
expect_fail "report: a FIFO metrics.jsonl fails at once, named" 1 "fiforep/metrics.jsonl is a FIFO" \
  timeout 20 "$AX" report --run "r=$T/fiforep" --out "$T/rep5"
cp -r "$T/res" "$T/fifores" && rm "$T/fifores/metrics.jsonl" && mkfifo "$T/fifores/metrics.jsonl"
expect_fail "resume: a FIFO metrics.jsonl fails at once, named" 1 "fifores/metrics.jsonl is a FIFO" \
  timeout 20 "$AX" train --out "$T/fifores" --steps 14 --resume
for v in " 5" "+5" "-5" "05" "5x" "0x10"; do
  expect_fail "index: --round-windows '$v' refused" 2 "--round-windows '${v//+/\\+}'" \
    "$AX" memscan index --data "$T/kjv.axd" --out "$T/rw.idx" --round-windows "$v"
done
"$AX" memscan index --data "$T/kjv.axd" --n 8 --out "$T/rw.idx" --round-windows 64K >/dev/null 2>"$T/err" \
  && ok "index: --round-windows 64K accepted" || bad "index: --round-windows 64K accepted"
for v in "12x" " 12" "0x10" "99"; do
  expect_fail "index: --hash-bits '$v' refused" 2 "--hash-bits" \
    "$AX" memscan index --data "$T/kjv.axd" --out "$T/hb.idx" --hash-bits "$v"
done
[ ! -e "$T/rw.idx.partial" ] && [ ! -e "$T/hb.idx" ] && ok "refused flags leave no index behind" \
  || bad "refused flags leave no index behind"
umask 022
"$AX" data encode --tokenizer "$T/tok" --input "$T/other.jsonl" --out "$T/private.axd" 2>"$T/err"
[ "$(stat -c %a "$T/private.axd")" = 600 ] && ok "encode: the dataset is mode 0600 under umask 022" \
  || bad "encode: the dataset is mode 0600 under umask 022"
# ---- choice flags list their words; the manifest stores the RMSNorm epsilon
expect_fail "choice flag lists its words" 2 "--packing 'docs' is not allowed: use packed or doc" \
  "$AX" train --data x.axd --packing docs
expect_fail "probe --offset lists its words" 2 "use start, random or deep" \
  "$AX" memscan probe --ckpt x --data x.axd --offset middle
"$AX" train --help 2>&1 | grep -- "--packing packed|doc .*(packed or doc; default: packed)" >/dev/null \
  && ok "train --help shows the choice words" || bad "train --help shows the choice words"
python3 -c 'import json,sys,glob
m=json.load(open(sorted(glob.glob(sys.argv[1]+"/ckpt/step-*/manifest.json"))[-1]))
sys.exit(0 if m["config"]["norm-eps"]==1e-5 else 1)' "$T/run" 2>"$T/err" \
  && ok "manifest stores norm-eps" || bad "manifest stores norm-eps"
# (a CUDA build on a machine without a GPU says that instead)
expect_fail "probe --device cuda says how to get it" 1 "built without CUDA; rebuild with scons cuda=yes|no CUDA device found" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --device cuda
# The CUDA stack (cudart, cuBLAS, NCCL) is loaded only by a run that asks for the GPU: in a CUDA
# build it lives in the plugin lib/libaxmem_cuda.so, which the executable dlopens then
# (lib/core/plugin.h). The dynamic loader's log (LD_DEBUG=libs) of --help and of a CPU lookup
# names none of it; --device cuda does load it (so the check can see a load when there is one),
# and a missing plugin is named with what to do. A build without CUDA never loads it.
cuda_libs='libcudart|libcublas|libnccl'
LD_DEBUG=libs "$AX" --help >/dev/null 2>"$T/ld1"
LD_DEBUG=libs "$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" "In the beginning" \
  >/dev/null 2>"$T/ld2"
grep -q "calling init" "$T/ld1" && grep -q "calling init" "$T/ld2" && ! grep -qE "$cuda_libs" "$T/ld1" "$T/ld2" \
  && ok "--help and a CPU lookup load no CUDA library" || bad "--help and a CPU lookup load no CUDA library"
LD_DEBUG=libs "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --device cuda >/dev/null 2>"$T/ld3"
if grep -q "built without CUDA" "$T/ld3"; then
  ! grep -qE "$cuda_libs|libaxmem_cuda" "$T/ld3" && ok "no CUDA build: --device cuda loads no CUDA library" \
    || bad "no CUDA build: --device cuda loads no CUDA library"
else
  grep -q "libaxmem_cuda.so" "$T/ld3" && grep -qE "$cuda_libs" "$T/ld3" \
    && ! grep -q "cannot load the CUDA plugin" "$T/ld3" \
    && ok "--device cuda loads the CUDA plugin" || bad "--device cuda loads the CUDA plugin"
  expect_fail "--device cuda: a missing plugin is named, with what to do" 1 \
    "cannot load the CUDA plugin $T/none.so: .*No such file.*rebuild with scons cuda=yes.*--device cpu" \
    env AXMEM_CUDA_PLUGIN="$T/none.so" "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --device cuda
fi
# axmem version: the build, without loading any CUDA library; --devices loads the plugin and
# lists the GPUs, or fails saying why (no device here, no plugin, or no CUDA in the build)
LD_DEBUG=libs "$AX" version >"$T/ver" 2>"$T/ld4"
grep -qE "^axmem [0-9a-f]+(-dirty)? \((release|debug|asan) build" "$T/ver" && grep -q "^CPU backend: oneDNN" "$T/ver" \
  && grep -qE "^CUDA backend: (plugin .*libaxmem_cuda.so \(present\)|not built)" "$T/ver" \
  && grep -qE "^NCCL transport: (built|not built)" "$T/ver" && ! grep -qE "$cuda_libs" "$T/ld4" \
  && ok "version: commit, flavour, oneDNN, CUDA plugin, NCCL; no CUDA library loaded" \
  || bad "version: commit, flavour, oneDNN, CUDA plugin, NCCL; no CUDA library loaded"
"$AX" --version | cmp -s - "$T/ver" && ok "--version = version" || bad "--version = version"
if grep -q "^CUDA backend: plugin" "$T/ver"; then
  env AXMEM_CUDA_PLUGIN="$T/none.so" "$AX" version >"$T/ver2"
  grep -q "^CUDA backend: plugin $T/none.so (MISSING" "$T/ver2" && ok "version: a missing plugin is flagged" \
    || bad "version: a missing plugin is flagged"
  expect_fail "version --devices: a missing plugin is named" 1 "cannot load the CUDA plugin $T/none.so" \
    env AXMEM_CUDA_PLUGIN="$T/none.so" "$AX" version --devices
fi
if "$AX" version --devices >"$T/dev" 2>"$T/dev.err"; then
  grep -qE "^[0-9]+: .*GiB, sm_[0-9]+" "$T/dev" && ok "version --devices lists the GPUs" \
    || bad "version --devices lists the GPUs"
else
  grep -qE "^axmem version --devices: (no CUDA device found|built without CUDA|.*cannot load)" "$T/dev.err" \
    && ok "version --devices without a GPU says why" || bad "version --devices without a GPU says why"
fi
expect_fail "version: unknown flag" 2 "unknown flag '--bogus'" "$AX" version --bogus
expect_fail "generate --device lists its words" 2 "use cpu or cuda" \
  "$AX" memscan generate --ckpt "$T/run" --index x.idx --device tpu
# --precision (issue 10): a bad word names the flag; bf16 is refused on the CPU backend (it
# computes in fp32) naming the flag and --device cuda; fp32 on the CPU is the default (auto)
expect_fail "train --precision lists its words" 2 "--precision 'fp16' is not allowed: use auto, fp32 or bf16" \
  "$AX" train --data x.axd --precision fp16
expect_fail "train --precision bf16 on cpu is refused" 1 "--precision bf16 needs --device cuda; the CPU backend computes in fp32" \
  "$AX" train --data "$T/kjv.axd" --model tiny --seq-len 16 --batch 2 --steps 1 --warmup 0 --precision bf16 --out "$T/bf"
expect_fail "probe --precision bf16 on cpu is refused" 1 "--precision bf16 needs --device cuda" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --device cpu --precision bf16
PP=(--ckpt "$T/run" --data "$T/kjv.axd" --samples 4 --prefix 8 --suffix 8)
"$AX" memscan probe "${PP[@]}" --out "$T/pa.json" >/dev/null 2>"$T/err" \
  && "$AX" memscan probe "${PP[@]}" --precision fp32 --out "$T/pf.json" >/dev/null 2>"$T/err" \
  && cmp -s "$T/pa.samples.jsonl" "$T/pf.samples.jsonl" \
  && ok "probe --precision fp32 on cpu: the same samples as auto" \
  || bad "probe --precision fp32 on cpu: the same samples as auto"

# ---- privacy-attack data (issue 11): member/held-out split and canaries
expect_fail "split: --out-holdout is required" 2 "--out-holdout B.axd is required" \
  "$AX" data split --input "$T/kjv.axd" --out-train "$T/sp.tr.axd"
expect_fail "split: --holdout must be a fraction" 2 "--holdout" \
  "$AX" data split --input "$T/kjv.axd" --holdout 1.5 --out-train "$T/sp.tr.axd" --out-holdout "$T/sp.ho.axd"
expect_fail "split: never over its input" 2 "must not be the input" \
  "$AX" data split --input "$T/kjv.axd" --out-train "$T/kjv.axd" --out-holdout "$T/sp.ho.axd"
"$AX" data split --input "$T/kjv.axd" --holdout 0.2 --seed 3 --ngram 32 --out-train "$T/sp.tr.axd" \
  --out-holdout "$T/sp.ho.axd" --summary "$T/sp.json" >"$T/sp.out" 2>"$T/err" && ok "split runs" || bad "split runs"
python3 - "$T/sp.out" "$T/sp.json" <<'PY' 2>"$T/err" && ok "split: summary adds up, printed and written" || bad "split: summary adds up, printed and written"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a == b, "printed and written summaries differ"
assert a["train"]["docs"] + a["holdout"]["drawn_docs"] == a["input"]["docs"]
assert a["holdout"]["docs"] + a["dropped"]["docs"] == a["holdout"]["drawn_docs"]
assert a["holdout"]["drawn_docs"] == round(0.2 * a["input"]["docs"])
assert a["train"]["tokens"] + a["holdout"]["tokens"] + a["dropped"]["tokens"] == a["input"]["tokens"]
PY
[ "$(stat -c %a "$T/sp.tr.axd")" = 600 ] && [ "$(stat -c %a "$T/sp.ho.axd")" = 600 ] \
  && ok "split: both datasets mode 0600" || bad "split: both datasets mode 0600"
expect_fail "canaries: --secrets is required" 2 "--secrets FILE.json is required" \
  "$AX" data canaries --input "$T/kjv.axd" --tokenizer "$T/tok" --out "$T/can.axd"
expect_fail "canaries: bad --format named" 2 "--format \"\{x3\}\"" \
  "$AX" data canaries --input "$T/kjv.axd" --tokenizer "$T/tok" --out "$T/can.axd" --secrets "$T/can.json" --format "{x3}"
expect_fail "canaries: bad --repeats named" 2 "--repeats '1,0'" \
  "$AX" data canaries --input "$T/kjv.axd" --tokenizer "$T/tok" --out "$T/can.axd" --secrets "$T/can.json" --repeats 1,0
expect_fail "canaries: never over its input" 2 "must not be the input" \
  "$AX" data canaries --input "$T/kjv.axd" --tokenizer "$T/tok" --out "$T/kjv.axd" --secrets "$T/can.json"
[ ! -e "$T/can.axd" ] && [ ! -e "$T/can.json" ] && ok "canaries: refused runs write nothing" \
  || bad "canaries: refused runs write nothing"
"$AX" data canaries --input "$T/kjv.axd" --tokenizer "$T/tok" --format "my PIN is {d4}" --repeats 1,4 \
  --per-repeat 2 --references 20 --seed 5 --out "$T/can.axd" --secrets "$T/can.json" 2>"$T/err" \
  && ok "canaries runs" || bad "canaries runs"
[ "$(stat -c %a "$T/can.axd")" = 600 ] && [ "$(stat -c %a "$T/can.json")" = 600 ] \
  && ok "canaries: dataset and secrets mode 0600" || bad "canaries: dataset and secrets mode 0600"
# every canary's text, decoded from the planted dataset, occurs exactly `repeats` times
"$AX" data decode --tokenizer "$T/tok" --data "$T/can.axd" >"$T/can.txt" 2>"$T/err"
python3 - "$T/can.json" "$T/can.txt" <<'PY' 2>"$T/err" && ok "canaries: each secret planted repeats times, references never" || bad "canaries: each secret planted repeats times, references never"
import json, sys
s = json.load(open(sys.argv[1])); text = open(sys.argv[2], encoding="utf-8", errors="replace").read()
assert s["version"] == 2 and s["space"] == 10000 and len(s["canaries"]) == 4 and len(s["references"]) == 20
assert s["lead"] == " " and s["placement"] == "sentence-boundary"
for c in s["canaries"]:
    t = s["lead"] + c["prefix"] + c["secret"]
    assert text.count(t) == c["repeats"] == len(c["inserted"]), c
    # a segment of its own: after a sentence's end, before whitespace (or the document's end)
    for at in (i for i in range(len(text)) if text.startswith(t, i)):
        assert text[at - 1] in ".!?\"')]" and (at + len(t) == len(text) or text[at + len(t)].isspace()), text[at - 20:at + 30]
for r in s["references"]:
    assert text.count("my PIN is " + r) == 0, r
PY

# ---- memscan probe: sampled continuations, prefix lengths, deep offsets, goldfish audit
"$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples 6 --prefix-lengths 8,16 --suffix 8 \
  --samples-per-prefix 4 --temperature 0.8 --top-k 20 --top-p 0.9 --offset deep \
  --out "$T/pd.json" >"$T/pd.out" 2>"$T/err" && grep -q "sampled 4 continuations per prefix" "$T/pd.out" \
  && ok "probe: draws, two prefix lengths, deep offsets" || bad "probe: draws, two prefix lengths, deep offsets"
# the decoding-speed line counts every generated token: per sample line, 8 greedy + 4 x 8 drawn
n=$(sed -n 's/^probe: generated \([0-9]*\) tokens in [0-9.]* s: [0-9]* tokens\/s (model load excluded)$/\1/p' "$T/pd.out")
[ -n "$n" ] && [ "$n" -eq $(($(wc -l <"$T/pd.samples.jsonl") * 8 * 5)) ] \
  && ok "probe: generated-tokens line ($n tokens)" || bad "probe: generated-tokens line: '$n' vs $(wc -l <"$T/pd.samples.jsonl") samples"
python3 - "$T/pd.json" "$T/pd.samples.jsonl" <<'PY' 2>"$T/err" && ok "probe: p_hat, any-match and discoverable rates add up" || bad "probe: p_hat, any-match and discoverable rates add up"
import json, sys
j = json.load(open(sys.argv[1])); rows = [json.loads(l) for l in open(sys.argv[2])]
c, m, t = j["config"], j["metrics"], j["tables"]
assert c["prefix_lengths"] == [8, 16] and c["samples_per_prefix"] == 4 and c["offset"] == "deep"
assert len(rows) == 12 and [r["prefix"] for r in rows] == [8] * 6 + [16] * 6
for r in rows:
    assert r["p_hat"] == r["sampled_exact"] / 4 and r["offset"] >= r["prefix"] + 8, r
first = rows[:6]
assert abs(m["sampled_p_hat"]["mean"] - sum(r["p_hat"] for r in first) / 6) < 1e-12
assert m["sampled_any_match_rate"]["mean"] == sum(r["sampled_exact"] > 0 for r in first) / 6
for d in t["discoverable"]:
    want = sum(1 - (1 - r["p_hat"]) ** d["n"] >= d["p"] for r in first) / 6
    assert d["rate"] == want, d
assert [b["prefix"] for b in t["by_prefix_length"]] == [8, 16]
PY
python3 - "$T/p.json" "$T/p.samples.jsonl" <<'PY' 2>"$T/err" && ok "probe: no sampling or audit fields without their flags" || bad "probe: no sampling or audit fields without their flags"
import json, sys
j = json.load(open(sys.argv[1])); rows = [json.loads(l) for l in open(sys.argv[2])]
assert sorted(j["config"]) == sorted(["prefix", "suffix", "samples", "offset", "prompt_eot", "seed", "eligible_docs",
    "samples_requested", "documents", "repeat_docs", "intervals", "not_training_data", "allow_other_tokenizer"]), j["config"]
assert sorted(j["metrics"]) == sorted(["exact_match_rate", "token_accuracy", "rouge_l", "matched_prefix_mean"]), j["metrics"]
assert all(set(r) <= {"i", "doc", "offset", "exact", "matched_prefix", "token_accuracy", "rouge_l", "duplicates", "truth", "generated", "truth_text", "generated_text"} for r in rows)
PY
expect_fail "probe: bad --prefix-lengths named" 2 "--prefix-lengths '8,,16'" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --prefix-lengths 8,,16
expect_fail "probe: --top-p out of range" 2 "--top-p" \
  "$AX" memscan probe --ckpt "$T/run" --data "$T/kjv.axd" --samples-per-prefix 2 --top-p 1.5
"$AX" train "${TRAIN[@]}" --steps 10 --goldfish hash:k=4,h=13 --out "$T/gfrun" >/dev/null 2>&1
"$AX" memscan probe --ckpt "$T/gfrun" --data "$T/kjv.axd" --samples 6 --prefix 8 --suffix 16 \
  --out "$T/gf.json" >"$T/gf.out" 2>"$T/err" && grep -q "goldfish audit" "$T/gf.out" &&
python3 - "$T/gf.json" "$T/gf.samples.jsonl" <<'PY' 2>"$T/err" && ok "probe: goldfish audit of a hash-goldfish run" || bad "probe: goldfish audit of a hash-goldfish run"
import json, sys
j = json.load(open(sys.argv[1])); rows = [json.loads(l) for l in open(sys.argv[2])]
g = j["metrics"]["goldfish_divergence"]
assert j["config"]["goldfish"] == "hash:k=4,h=13,seed=0"
div = [r for r in rows if not r["exact"]]
assert g["diverged"] == len(div) and all(r["first_divergence"] == r["matched_prefix"] for r in div)
assert g["on_dropped"] == sum(r["first_divergence"] in r["goldfish_dropped"] for r in div)
assert all(0 <= k < 16 for r in rows for k in r["goldfish_dropped"])
PY

# ---- data: compressed corpora and Megatron/GPT-NeoX indexed datasets (issue 13)
if command -v zstd >/dev/null && command -v gzip >/dev/null; then
  zstd -q -c "$T/kjv.jsonl" >"$T/kjv.jsonl.zst" && gzip -c "$T/kjv.jsonl" >"$T/kjv.jsonl.gz"
  for z in zst gz; do
    "$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl.$z" --out "$T/kjv_$z.axd" 2>"$T/err" &&
      cmp -s "$T/kjv.axd" "$T/kjv_$z.axd" && ok "encode .jsonl.$z: the same dataset as .jsonl" ||
      bad "encode .jsonl.$z: the same dataset as .jsonl"
  done
  head -c 3000 "$T/kjv.jsonl.zst" >"$T/cut.jsonl.zst"
  expect_fail "encode: truncated .jsonl.zst named" 1 "cut.jsonl.zst: truncated zstd stream" \
    "$AX" data encode --tokenizer "$T/tok" --input "$T/cut.jsonl.zst" --out "$T/cut.axd"
  [ ! -e "$T/cut.axd" ] && ok "encode: nothing written for a truncated stream" || bad "encode: nothing written for a truncated stream"
else
  echo "skip compressed-input checks (the zstd and gzip tools are not installed)"
fi
MF=tests/fixtures/megatron
"$AX" data import-megatron --prefix "$MF/pythia_u16" --out "$T/py.axd" 2>"$T/err" &&
"$AX" data import-megatron --prefix "$MF/gpt2_i32" --eot 50256 --vocab-size 50257 --out "$T/g2.axd" 2>>"$T/err" &&
python3 - "$MF/expected.json" "$T/py.axd" "$T/g2.axd" <<'PY' 2>>"$T/err" && ok "import-megatron: fixture ids and boundaries (read back independently)" || bad "import-megatron: fixture ids and boundaries (read back independently)"
import json, struct, sys
exp = json.load(open(sys.argv[1]))
for name, path in (("pythia_u16", sys.argv[2]), ("gpt2_i32", sys.argv[3])):
    b = open(path, "rb").read()
    assert b[:8] == b"AXMEMAXD", path
    ver, vocab, width, eot, nd, nt = struct.unpack_from("<IIIIQQ", b, 8)
    e = exp[name]
    assert ver == 3 and eot == e["eot"] and vocab == e["vocab"] and width == 2, (ver, eot, vocab)
    off = struct.unpack_from("<%dQ" % (nd + 1), b, 64)
    toks = struct.unpack_from("<%dH" % nt, b, 64 + 8 * (nd + 1))
    docs = [list(toks[off[i]:off[i + 1]]) for i in range(nd)]
    assert docs == e["axd_docs"], name
PY
"$AX" data info "$T/py.axd" 2>/dev/null | grep -q "^end-of-text: 0" && ok "data info shows an imported end-of-text" || bad "data info shows an imported end-of-text"
"$AX" memscan index --data "$T/py.axd" --n 4 --out "$T/py.idx" >/dev/null 2>"$T/err" && ok "memscan index of an imported dataset" || bad "memscan index of an imported dataset"
expect_fail "import-megatron: end-of-text not inferable" 2 "pass --eot ID" \
  "$AX" data import-megatron --prefix "$MF/gpt2_i32" --out "$T/g3.axd"
cp "$MF/pythia_u16.idx" "$T/cut.idx" && head -c 100 "$MF/pythia_u16.bin" >"$T/cut.bin"
expect_fail "import-megatron: .idx not matching its .bin" 1 "cut.idx: .*does not match its .bin" \
  "$AX" data import-megatron --prefix "$T/cut" --out "$T/cut.axd"
expect_fail "import-megatron: missing pair named" 1 "nope.bin" \
  "$AX" data import-megatron --prefix "$T/nope" --out "$T/n.axd"

# ---- memscan lookup: batch mode (--file QUERIES.jsonl) and damaged v3 indexes ----
# one answer line per query, identical to the single-query --json answer plus its line and id;
# bad lines get an error object naming the file and line, and the exit status says so
printf '%s\n' '{"id": "gen", "text": "In the beginning God created the heaven and the earth."}' \
  '' '{"text": "zq xv not scripture at all, surely"}' >"$T/q_good.jsonl"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --file "$T/q_good.jsonl" \
  >"$T/batch.out" 2>"$T/err" && ok "lookup batch runs" || bad "lookup batch runs"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --json \
  "In the beginning God created the heaven and the earth." >"$T/single1.json" 2>>"$T/err"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --json \
  "zq xv not scripture at all, surely" >"$T/single2.json" 2>>"$T/err"
python3 - "$T/batch.out" "$T/single1.json" "$T/single2.json" <<'PY' 2>"$T/err" \
  && ok "lookup batch: answers equal single lookups" || bad "lookup batch: answers equal single lookups"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
a, b = json.loads(lines[0]), json.loads(lines[1])
assert a.pop("line") == 1 and a.pop("id") == "gen" and b.pop("line") == 3 and "id" not in b
assert a == json.load(open(sys.argv[2])) and b == json.load(open(sys.argv[3]))
assert a["longest"] and a["longest"]["len"] >= 8, a
PY
printf '%s\n' '{"tokens": [1, 2, 3]}' 'not json' '{"tokens": [1, 99999999]}' '{"text": "needs a tokenizer"}' \
  '{"tokens": "1 2"}' >"$T/q_bad.jsonl"
"$AX" memscan lookup --index "$T/kjv.idx" --file "$T/q_bad.jsonl" >"$T/batch_bad.out" 2>"$T/err"
rc=$?
python3 - "$T/batch_bad.out" "$T/q_bad.jsonl" "$rc" <<'PY' 2>"$T/err" \
  && ok "lookup batch: bad lines answered with errors naming file and line" \
  || bad "lookup batch: bad lines answered with errors naming file and line"
import json, sys
out = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert sys.argv[3] == "1", sys.argv[3]
assert [o["line"] for o in out] == [1, 2, 3, 4, 5], out
assert "error" not in out[0] and out[0]["tokens"] == 3 and out[0]["longest"] is None
for o, want in zip(out[1:], ["line 2", "not a token id", "needs --tokenizer", "array of token ids"]):
    assert sys.argv[2] in o["error"] and want in o["error"], (o, want)
PY
expect_fail "lookup batch: a missing queries file is named" 1 "nope.jsonl" \
  "$AX" memscan lookup --index "$T/kjv.idx" --file "$T/nope.jsonl"
# a v3 index with a damaged table page: info --verify names the file and the section
cp "$T/kjv.idx" "$T/dmg.idx"
python3 - "$T/dmg.idx" <<'PY'
import struct, sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
L = struct.unpack_from("<I", d, 120)[0]; ext = 136 + L + 8
distinct = struct.unpack_from("<Q", d, 56)[0]
off_dir, off_vals = (struct.unpack_from("<Q", d, ext + 8 + 8 * i)[0] for i in (2, 5))
at = off_vals + 8 * (distinct - 1) + 2  # the last entry's value: a page past the directory's
assert at >= off_dir + 65536, (at, off_dir)
d[at] ^= 0x40
open(p, "wb").write(d)
PY
expect_fail "memscan info --verify: damaged v3 table refused, named" 1 "dmg.idx: page [0-9]+ .*table.* checksum" \
  "$AX" memscan info --verify "$T/dmg.idx"
"$AX" memscan info "$T/dmg.idx" >/dev/null 2>"$T/err" && ok "memscan info (header only) opens a damaged-table index" \
  || bad "memscan info (header only) opens a damaged-table index"
# a lookup that meets a damaged page prints no answer: nothing on stdout as text, only an
# {"error"} object with --json, and a batch gives that query an error line (no windows_found)
python3 - "$T/kjv.idx" "$T/dmgall.idx" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
L = struct.unpack_from("<I", d, 120)[0]; ext = 136 + L + 8
off_dir, off_firsts = (struct.unpack_from("<Q", d, ext + 8 + 8 * i)[0] for i in (2, 6))
for pg in range(1, (off_firsts - off_dir) // 65536):  # every table page but the directory's
    d[off_dir + pg * 65536 + 100] ^= 0x40
open(sys.argv[2], "wb").write(d)
PY
DQ="And God said, Let there be light: and there was light. And God saw the light, that it was good"
"$AX" memscan lookup --index "$T/dmgall.idx" --tokenizer "$T/tok" "$DQ" >"$T/dq.out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/dq.out" ] && grep -q "dmgall.idx is damaged where this query's windows lie" "$T/err" \
  && ok "lookup: a damaged index page gives exit 1 and no answer on stdout" \
  || bad "lookup: a damaged index page gives exit 1 and no answer on stdout (exit $rc: $(head -c 200 "$T/dq.out"))"
"$AX" memscan lookup --index "$T/dmgall.idx" --tokenizer "$T/tok" --json "$DQ" >"$T/dq.json" 2>"$T/err"
rc=$?
python3 - "$T/dq.json" "$rc" <<'PY' 2>"$T/err" && ok "lookup --json: a damaged index page gives only an error object" \
  || bad "lookup --json: a damaged index page gives only an error object"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert sys.argv[2] == "1" and len(lines) == 1, (sys.argv[2], lines)
o = json.loads(lines[0])
assert list(o) == ["error"] and "dmgall.idx is damaged" in o["error"], o
PY
printf '%s\n' "{\"text\": \"$DQ\"}" '{"tokens": [1, 2, 3]}' >"$T/q_dmg.jsonl"
"$AX" memscan lookup --index "$T/dmgall.idx" --tokenizer "$T/tok" --file "$T/q_dmg.jsonl" >"$T/dq.jsonl" 2>"$T/err"
rc=$?
python3 - "$T/dq.jsonl" "$rc" <<'PY' 2>"$T/err" && ok "lookup batch: the query meeting damage gets an error line, exit 1" \
  || bad "lookup batch: the query meeting damage gets an error line, exit 1"
import json, sys
out = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert sys.argv[2] == "1" and len(out) == 2, (sys.argv[2], out)
assert out[0]["line"] == 1 and "dmgall.idx is damaged" in out[0]["error"] and "windows_found" not in out[0], out[0]
assert out[1]["line"] == 2 and "error" not in out[1] and out[1]["windows"] == 0, out[1]
PY

# ---- memscan index --mem-limit: spilled to disk, the same file as the in-memory build ----
"$AX" memscan index --data "$T/kjv.axd" --n 8 --out "$T/kjv_lim.idx" --mem-limit 1M >"$T/out" 2>"$T/err" \
  && grep -q "spilling to disk" "$T/out" && cmp -s "$T/kjv.idx" "$T/kjv_lim.idx" \
  && ok "memscan index --mem-limit 1M: spilled, same bytes as in memory" \
  || bad "memscan index --mem-limit 1M: spilled, same bytes as in memory"
ls "$T"/kjv_lim.idx.* 2>/dev/null | grep -qv '\.json$' && bad "memscan index --mem-limit leaves no spill files" \
  || ok "memscan index --mem-limit leaves no spill files"
expect_fail "memscan index: bad --mem-limit named" 2 "--mem-limit '12Q'" \
  "$AX" memscan index --data "$T/kjv.axd" --out "$T/x.idx" --mem-limit 12Q

# ---- memscan lookup --occurrences N: every place of each span and window, bounded ----
# (exact lists are checked against brute force in tests/unit/test_index_spans.c; here the
# flag, its bound, the JSON/batch/text output and the total counts)
Q="And the evening and the morning were the third day. And God said, Let the earth bring forth"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --json "$Q" >"$T/occ0.json" 2>"$T/err"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --json --occurrences 2 "$Q" \
  >"$T/occ2.json" 2>>"$T/err"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --json --occurrences 1000 "$Q" \
  >"$T/occall.json" 2>>"$T/err"
printf '{"id": 7, "text": "%s"}\n' "$Q" >"$T/q_occ.jsonl"
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --occurrences 2 --file "$T/q_occ.jsonl" \
  >"$T/occ_batch.out" 2>>"$T/err"
python3 - "$T/occ0.json" "$T/occ2.json" "$T/occall.json" "$T/occ_batch.out" <<'PY' 2>"$T/err" \
  && ok "lookup --occurrences: places of spans and windows, bounded, totals exact" \
  || bad "lookup --occurrences: places of spans and windows, bounded, totals exact"
import json, sys
z, two, full = (json.load(open(p)) for p in sys.argv[1:4])
batch = json.loads(open(sys.argv[4]).read())
assert batch.pop("line") == 1 and batch.pop("id") == 7 and batch == two, "batch differs"
assert "places" not in json.dumps(z), "places listed without --occurrences"
def strip(o):
    if isinstance(o, dict): return {k: strip(v) for k, v in o.items() if k != "places"}
    if isinstance(o, list): return [strip(v) for v in o]
    return o
assert strip(two) == z and strip(full) == z, "--occurrences changed other fields"
assert any(w["count"] > 2 for w in z["matching_windows"]), "query has no window seen 3+ times"
for cut, a in ((2, two), (1000, full)):
    for w in a["matching_windows"]:
        p = w["places"]
        assert len(p) == min(cut, w["count"]), (cut, w)
        assert (p[0]["doc"], p[0]["offset"]) == (w["doc"], w["offset"]), w
        assert all(x["pos"] < y["pos"] for x, y in zip(p, p[1:])), w
    for s in a["spans"]:
        p = s["places"]
        assert len(p) == min(cut, s["occurrences"]), (cut, s)
        assert p[0]["pos"] == s["pos"] and (p[0]["doc"], p[0]["offset"]) == (s["doc"], s["offset"])
        if cut == 1000:
            assert len({x["doc"] for x in p}) == s["sources"], s
PY
"$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --occurrences 2 "$Q" >"$T/occ.txt" 2>"$T/err" \
  && grep -q "^    at: doc [0-9]* +[0-9]* doc [0-9]* +[0-9]* \.\.\. [0-9]* more (--occurrences N)" "$T/occ.txt" \
  && ok "lookup --occurrences: text lists places" || bad "lookup --occurrences: text lists places"
expect_fail "lookup: bad --occurrences named" 2 "occurrences" \
  "$AX" memscan lookup --index "$T/kjv.idx" --tokenizer "$T/tok" --occurrences -1 "$Q"
# ---- Hugging Face models (issue 13): import, export read back by an independent reader, the
# README walk-through on a fixture (tests/fixtures/hf, from scripts/make_hf_fixtures.py)
HF=tests/fixtures/hf
"$AX" model import --hf $HF/llama_tied_gqa --out "$T/hfck" >"$T/out" 2>"$T/err" \
  && [ "$(cat "$T/out")" = "$T/hfck/step-000000" ] && [ -f "$T/hfck/step-000000/manifest.json" ] \
  && ok "model import: writes a checkpoint, prints its step directory" || bad "model import"
"$AX" model export --ckpt "$T/hfck/step-000000" --out "$T/hfexp" 2>"$T/err" \
  && ok "model export" || bad "model export"
# an independent safetensors reader (json + struct, not the C one): every exported tensor is
# F32, contiguous, and holds the source's values (grouped-query K/V heads kept as they are)
python3 - "$T/hfexp" "$HF/llama_tied_gqa" >"$T/err" 2>&1 <<'PY' && ok "model export: an independent reader gets the source's tensors" || bad "model export: independent reader"
import json, struct, sys
def read(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", b, 0)
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    data, out, end = b[8 + n:], {}, 0
    for k, v in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        s, e = v["data_offsets"]
        assert v["dtype"] == "F32" and s == end and e - s == 4 * eval("*".join(map(str, v["shape"])) or "1"), k
        out[k] = (v["shape"], struct.unpack_from("<%df" % ((e - s) // 4), data, s)); end = e
    assert end == len(data)
    return out
exp, src = read(sys.argv[1] + "/model.safetensors"), read(sys.argv[2] + "/model.safetensors")
cfg = json.load(open(sys.argv[1] + "/config.json"))
assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["num_key_value_heads"] == 2, cfg
assert set(exp) == set(src), set(exp) ^ set(src)
for k, (shape, vals) in exp.items():
    sshape, svals = src[k]
    assert shape == sshape and vals == svals, k
    if k.endswith(("k_proj.weight", "v_proj.weight")):  # 2 K/V heads of 16 dims, not 4
        assert shape == [32, 64], (k, shape)
PY
expect_fail "model export: an existing --out refused" 1 "already exists" \
  "$AX" model export --ckpt "$T/hfck/step-000000" --out "$T/hfexp"
expect_fail "model import: usage" 2 "--hf and --out are required" "$AX" model import --hf x
expect_fail "model import: no config.json" 1 "nothing/config.json" "$AX" model import --hf "$T/nothing" --out "$T/x"
mkdir -p "$T/hfbad" && cp $HF/llama_tied_gqa/config.json "$T/hfbad/"
head -c 100000 $HF/llama_tied_gqa/model.safetensors >"$T/hfbad/model.safetensors"
expect_fail "model import: truncated safetensors refused, named" 1 "hfbad/model.safetensors: tensor .* run past" \
  "$AX" model import --hf "$T/hfbad" --out "$T/hfbadck"
[ -e "$T/hfbadck" ] && bad "model import: nothing written on failure" || ok "model import: nothing written on failure"
# the walk-through: import, encode with the model's tokenizer.json, index, probe
W=$HF/llama_walkthrough
python3 -c '
import json
for i in range(6):
    print(json.dumps({"text": "Document %d: the quick brown fox jumps over the lazy dog, again and again, %d times." % (i, i * 7)}))' >"$T/walk.jsonl"
if "$AX" model import --hf $W --out "$T/walk/ckpt" >/dev/null 2>"$T/err" &&
   "$AX" data encode --tokenizer $W/tokenizer.json --input "$T/walk.jsonl" --out "$T/walk/corpus.axd" >/dev/null 2>"$T/err" &&
   "$AX" memscan index --data "$T/walk/corpus.axd" --n 8 --out "$T/walk/corpus.idx" >/dev/null 2>"$T/err" &&
   "$AX" memscan probe --ckpt "$T/walk/ckpt" --data "$T/walk/corpus.axd" --index "$T/walk/corpus.idx" \
     --tokenizer $W/tokenizer.json --prefix 8 --suffix 8 --samples 4 --out "$T/walk/probe.json" >/dev/null 2>"$T/err" &&
   python3 -c '
import json,sys
s=json.load(open(sys.argv[1])); rows=[json.loads(l) for l in open(sys.argv[2])]
sys.exit(0 if s["schema"]=="axmem-scan" and len(rows)==4 and all(r["duplicates"]>=1 for r in rows) else 1)' \
     "$T/walk/probe.json" "$T/walk/probe.samples.jsonl" 2>>"$T/err" &&
   "$AX" report --run my-llama="$T/walk" --out "$T/walk/report" >/dev/null 2>"$T/err" && [ -s "$T/walk/report/report.html" ]
then ok "README walk-through: HF model directory scanned for a corpus"
else bad "README walk-through: HF model directory scanned for a corpus"; fi

# ---- train --init: fine-tune an imported model (issue 13 item 1); it memorizes the few
# documents it sees, a goldfish fine-tune from the same weights does not
python3 -c '
import json
for i in range(4):
    print(json.dumps({"text": "Record %d: zebra %d quartz melody %d violet harbor %d lantern copper %d" % (i, i * 13, i * 7 + 3, i * 29 + 1, i * 5 + 11)}))' >"$T/ft.jsonl"
"$AX" data encode --tokenizer $W/tokenizer.json --input "$T/ft.jsonl" --out "$T/ft.axd" >/dev/null 2>"$T/err" || bad "train --init: encode"
# doc packing, batch 4 = the 4 documents: every step sees the same batch
FT=(--data "$T/ft.axd" --packing doc --seq-len 32 --batch 4 --steps 60 --warmup 0 --lr 1e-2 --threads 1)
"$AX" train --init "$T/walk/ckpt" "${FT[@]}" --out "$T/ft" >/dev/null 2>"$T/err" \
  && "$AX" train --init "$T/walk/ckpt" "${FT[@]}" --goldfish hash:k=2,h=4 --out "$T/ftgf" >/dev/null 2>>"$T/err" \
  && ok "train --init: fine-tunes an imported checkpoint, with and without goldfish" \
  || bad "train --init: fine-tune"
probe_em() { "$AX" memscan probe --ckpt "$1" --data "$T/ft.axd" --samples 8 --prefix 16 --suffix 16 \
  --out "$T/pem.json" >/dev/null 2>"$T/err" && python3 -c '
import json,sys; print(json.load(open(sys.argv[1]))["metrics"]["exact_match_rate"]["mean"])' "$T/pem.json"; }
em0=$(probe_em "$T/walk/ckpt"); em1=$(probe_em "$T/ft"); em2=$(probe_em "$T/ftgf")
python3 -c 'import sys; b,f,g=map(float,sys.argv[1:]); sys.exit(0 if b<=0.25 and f>=0.75 and g<=f-0.5 else 1)' \
  "$em0" "$em1" "$em2" 2>"$T/err" \
  && ok "train --init: probe finds the fine-tuned documents memorized ($em0 -> $em1), goldfish less ($em2)" \
  || bad "train --init: memorization after fine-tuning ($em0 -> $em1, goldfish $em2)"
python3 - "$T/ft/ckpt/step-000060/manifest.json" "$T/walk/ckpt/step-000000/manifest.json" >"$T/err" 2>&1 <<'PY' && ok "train --init: manifest records the init step and its checksum, the shape is the checkpoint's" || bad "train --init: manifest"
import json, sys
m = json.load(open(sys.argv[1])); src = json.load(open(sys.argv[2]))
st, c = m["state"], m["config"]
assert st["init_ckpt"].endswith("walk/ckpt/step-000000"), st
assert st["init_xxh3"].startswith("0x") and st["optim_t"] == 60, st
for k in ("layers", "dim", "heads", "ffn", "vocab", "tie-embeddings", "rope-theta", "norm-eps"):
    assert c[k] == src["config"][k], (k, c[k], src["config"][k])
PY
# the weights really load: a fine-tune from step 2 of a trained run starts at that run's loss
# at step 3 (the same 4 documents, the same weights); AdamW starts fresh, so step 4 differs
"$AX" train "${FT[@]}" --layers 1 --dim 32 --heads 4 --ffn 96 --steps 4 --ckpt-every 2 --out "$T/ftbase" >/dev/null 2>"$T/err" \
  && "$AX" train --init "$T/ftbase/ckpt/step-000002" "${FT[@]}" --steps 2 --out "$T/ftstep" >/dev/null 2>>"$T/err" \
  && python3 - "$T/ftbase/metrics.jsonl" "$T/ftstep/metrics.jsonl" >>"$T/err" 2>&1 <<'PY' \
  && ok "train --init: step 1 loss equals the init model's loss on the same batch" || bad "train --init: step-0 loss"
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
assert abs(a[2] - b[0]) <= 1e-5 * max(1, abs(a[2])), (a, b)
assert abs(a[0] - b[0]) > 1e-3, (a, b)  # not the fresh model's loss
PY
# resume of a fine-tuning run: interrupted, then resumed, equals the uninterrupted one bit for bit
"$AX" train --init "$T/walk/ckpt" "${FT[@]}" --exit-after-steps 25 --out "$T/ftres" >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" -eq 75 ] && "$AX" train --out "$T/ftres" --resume >/dev/null 2>"$T/err" \
   && [ "$(losses "$T/ftres/metrics.jsonl")" = "$(losses "$T/ft/metrics.jsonl")" ] \
   && cmp -s "$T/ftres/ckpt/step-000060/params.000.zst" "$T/ft/ckpt/step-000060/params.000.zst"
then ok "train --init: --exit-after-steps + --resume equals the uninterrupted fine-tune"
else bad "train --init: resume (exit $rc)"; fi
# ---- model export --ckpt takes what probe takes: a step directory, a training run or a
# checkpoint directory (import's --out), the last two meaning their newest complete step; a
# fine-tune keeps the position limit of the model it started from (the walk-through's 64, not
# its --seq-len 32), through a resume too
"$AX" model export --ckpt "$T/ftbase/ckpt/step-000004" --out "$T/xstep" >/dev/null 2>"$T/err" || bad "model export: a step directory"
for form in ftbase ftbase/ckpt; do
  x="$T/x-${form//\//-}"
  if "$AX" model export --ckpt "$T/$form" --out "$x" >/dev/null 2>"$T/err" && ! grep -q damaged "$T/err" &&
    cmp -s "$x/model.safetensors" "$T/xstep/model.safetensors" && cmp -s "$x/config.json" "$T/xstep/config.json"
  then ok "model export --ckpt $form: the run's newest step (step-000004 of 2 and 4)"
  else bad "model export --ckpt $form"; fi
done
"$AX" model export --ckpt "$T/hfck" --out "$T/hfexp2" >/dev/null 2>"$T/err" &&
  cmp -s "$T/hfexp2/model.safetensors" "$T/hfexp/model.safetensors" &&
  cmp -s "$T/hfexp2/config.json" "$T/hfexp/config.json" && ok "model export --ckpt: model import's --out directory" \
  || bad "model export --ckpt: model import's --out directory"
maxpos() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["max_position_embeddings"])' "$1/config.json"; }
"$AX" model export --ckpt "$T/ft/ckpt/step-000060" --out "$T/xft" >/dev/null 2>"$T/err" &&
  "$AX" model export --ckpt "$T/ftres/ckpt/step-000060" --out "$T/xftres" >/dev/null 2>>"$T/err" &&
  [ "$(maxpos "$T/xft")" = 64 ] && [ "$(maxpos "$T/xftres")" = 64 ] && [ "$(maxpos "$T/xstep")" = 32 ] \
  && ok "model export: a fine-tune keeps its source's max_position_embeddings (64, not --seq-len 32), resumed too" \
  || bad "model export: position limit of a fine-tune ($(maxpos "$T/xft" 2>&1), resumed $(maxpos "$T/xftres" 2>&1))"
mkdir -p "$T/notackpt/ckpt/step-000002.partial" && : >"$T/notackpt/notes.txt"
expect_fail "model export: a folder with no finished step says what it holds and what to pass" 1 \
  "--ckpt .*notackpt holds no finished checkpoint.*it holds ckpt/, notes.txt; its ckpt/ holds step-000002.partial/.*never finished.*pass a training run's directory" \
  "$AX" model export --ckpt "$T/notackpt" --out "$T/xnone"
expect_fail "model export: a Hugging Face directory is sent to model import" 1 \
  "is a Hugging Face model directory .* axmem model import --hf" "$AX" model export --ckpt $W --out "$T/xnone"
[ -e "$T/xnone" ] && bad "model export: nothing written on refusal" || ok "model export: nothing written on refusal"
expect_fail "train --init: a shape flag that disagrees names both values" 1 "--dim 64 differs from 32 in --init .*step-000000" \
  "$AX" train --init "$T/walk/ckpt" "${FT[@]}" --dim 64 --out "$T/ftx"
expect_fail "train --init: --model refused" 2 "--model tiny and --init" \
  "$AX" train --init "$T/walk/ckpt" "${FT[@]}" --model tiny --out "$T/ftx"
expect_fail "train --init: no checkpoint there" 1 "--init .*nothing: No such file" \
  "$AX" train --init "$T/nothing" "${FT[@]}" --out "$T/ftx"
expect_fail "train --init: dataset vocabulary larger than the checkpoint's" 1 "vocabulary .* more than the 420 of --init" \
  "$AX" train --init "$T/walk/ckpt" --data "$T/kjv.axd" --steps 2 --warmup 0 --out "$T/ftx"
[ -e "$T/ftx" ] && bad "train --init: nothing written on refusal" || ok "train --init: nothing written on refusal"
if command -v mpirun >/dev/null; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
    mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
    --mca btl_vader_single_copy_mechanism none -np 2 \
    "$AX" train --init "$T/walk/ckpt" "${FT[@]}" --exit-after-steps 10 --grid 1x2x1x1 --out "$T/ftgrid" >/dev/null 2>"$T/err"
  [ $? -eq 75 ] && python3 - "$T/ftgrid/metrics.jsonl" "$T/ft/metrics.jsonl" >>"$T/err" 2>&1 <<'PY' \
    && ok "train --init: on a 1x2x1x1 grid the fine-tune's losses equal 1 rank's to 1e-4" || bad "train --init: grid"
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])][:10]
assert len(a) == 10 and all(abs(x - y) <= 1e-4 * max(1, abs(y)) for x, y in zip(a, b)), (a, b)
PY
else echo "skip train --init on a grid (no mpirun; tests/mpi covers grids)"; fi
# --z-gather layer on 1x1x1x2 (4 layers: the backward re-gathers): the losses and grad norms of
# --z-gather step, bit for bit (one micro-batch a step); with 2 micro-batches to rounding
if command -v mpirun >/dev/null; then
  zg() { # OUT ARGS...
    local out=$1
    shift
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
      mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
      --mca btl_vader_single_copy_mechanism none -np 2 \
      "$AX" train --data "$T/kjv.axd" --layers 4 --dim 32 --heads 2 --ffn 64 --seq-len 32 \
      --batch 4 --steps 6 --warmup 1 --grid 1x1x1x2 --out "$out" "$@" >/dev/null 2>>"$T/err"
  }
  : >"$T/err"
  zg "$T/zs" --z-gather step && zg "$T/zl" --z-gather layer && losses "$T/zs/metrics.jsonl" >"$T/zsl" &&
    losses "$T/zl/metrics.jsonl" >"$T/zll" && cmp -s "$T/zsl" "$T/zll" && [ "$(wc -l <"$T/zsl")" -eq 6 ] &&
    ok "--z-gather layer: the losses of --z-gather step, bit for bit (1x1x1x2)" || bad "--z-gather layer bit-exact"
  zg "$T/zs2" --micro-batch 2 && zg "$T/zl2" --micro-batch 2 --z-gather layer --recompute &&
    python3 - "$T/zs2/metrics.jsonl" "$T/zl2/metrics.jsonl" >>"$T/err" 2>&1 <<'PY' &&
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f)] for f in sys.argv[1:])
assert len(a) == 6 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
PY
    ok "--z-gather layer --recompute, 2 micro-batches: the losses to 1e-5" || bad "--z-gather layer micro-batches"
  # --grad-comm bf16 on 1x1x1x2: the start log says what it reduces and stages; the losses stay
  # near fp32 reduction's (bf16-rounded gradients, fp32 update)
  : >"$T/err"
  zg "$T/gc" --grad-comm bf16 && grep -q "gradients reduced in bf16 over Z: .* MiB of bf16 staging per rank" "$T/err" &&
    python3 - "$T/zs/metrics.jsonl" "$T/gc/metrics.jsonl" >>"$T/err" 2>&1 <<'PY' &&
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f)] for f in sys.argv[1:])
assert len(a) == 6 and a != b and all(abs(x - y) <= 1e-2 * abs(x) for x, y in zip(a, b)), (a, b)
PY
    ok "--grad-comm bf16 on 1x1x1x2: logged, the losses within 1e-2 of fp32 reduction" || bad "--grad-comm bf16"
fi

finish cli
