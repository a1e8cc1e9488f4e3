#!/usr/bin/env bash
# Regenerates the committed seed corpus tests/fuzz/corpus/<target>/: small valid inputs.
# Usage: tests/fuzz/make_seeds.sh [build/bin/axmem]   (needs `scons fuzz=yes` built first)
# Most targets write their own seeds (AXMEM_FUZZ_SEED_DIR); the scan-file seeds come from a
# real pipeline run by the CLI on a slice of the bundled corpus (a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
C=tests/fuzz/corpus
F=build-fuzz/fuzz
T=$(mktemp -d /tmp/axmem-seeds.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1 AXMEM_LOG=warn AXMEM_VERIFY_CACHE=0
for t in axd tokenizer ckpt index json config; do
  rm -rf "$C/$t" && mkdir -p "$C/$t"
  AXMEM_FUZZ_SEED_DIR="$C/$t" "$F/fuzz_$t" >/dev/null 2>&1 || { echo "fuzz_$t: seeds failed"; exit 1; }
done

# scan files: scan.json @@ samples.jsonl @@ metrics.jsonl @@ regurgitation.json @@ INDEX.json
head -c 60000 data/corpus/kjv.jsonl | head -n 12 >"$T/c.jsonl"
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/tok" 2>/dev/null
"$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/d.axd" 2>/dev/null
"$AX" train --data "$T/d.axd" --tokenizer "$T/tok" --out "$T/run" --layers 1 --dim 32 \
  --heads 2 --ffn 64 --seq-len 32 --batch 4 --steps 4 --warmup 1 --log-every 1 >/dev/null 2>&1
"$AX" memscan index --data "$T/d.axd" --n 8 --out "$T/d.idx" >/dev/null 2>&1
"$AX" memscan probe --ckpt "$T/run" --data "$T/d.axd" --tokenizer "$T/tok" --samples 3 \
  --prefix 8 --suffix 8 --out "$T/run/scan.json" >/dev/null 2>&1
head -n 3 "$T/run/samples.jsonl" >"$T/probe_samples"
"$AX" memscan generate --ckpt "$T/run" --index "$T/d.idx" --tokenizer "$T/tok" --samples 2 \
  --length 16 --out "$T/run/regurgitation.json" --samples-out "$T/gen_samples" >/dev/null 2>&1
rm -rf "$C/scan" && mkdir -p "$C/scan"
sep=$'\n@@@@\n'
{ cat "$T/run/scan.json"; printf '%s' "$sep"; cat "$T/probe_samples"; printf '%s' "$sep"
  head -n 4 "$T/run/metrics.jsonl"; printf '%s' "$sep"; cat "$T/run/regurgitation.json"
  printf '%s' "$sep"; cat "$T/d.idx.json"; } >"$C/scan/full"
{ cat "$T/run/scan.json"; printf '%s' "$sep"; cat "$T/probe_samples"; } >"$C/scan/probe_only"
{ printf '%s%s' "$sep" "$sep"; head -n 2 "$T/run/metrics.jsonl"; printf '%s' "$sep"
  cat "$T/run/regurgitation.json"; } >"$C/scan/regurg_only"
du -sh "$C"/* | sed 's/^/seeds: /'
