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
export OMP_NUM_THREADS=1 AXMEM_LOG=warn AXMEM_CACHE_DIR=off
for t in axd tokenizer ckpt index json config megatron input safetensors lock; do
  rm -rf "$C/$t" && mkdir -p "$C/$t"
  AXMEM_FUZZ_SEED_DIR="$C/$t" "$F/fuzz_$t" >/dev/null 2>&1 || { echo "fuzz_$t: seeds failed"; exit 1; }
done

# scan files (fuzz_scan.c): probe.json @@ its samples @@ metrics.jsonl @@ regurgitation.json
# @@ its samples @@ INDEX.json; a probe JSON without its "samples" record is the older layout
head -n 12 data/corpus/kjv.jsonl >"$T/c.jsonl" # no pipe: SIGPIPE under pipefail
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/tok" 2>/dev/null
"$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/d.axd" 2>/dev/null
"$AX" train --data "$T/d.axd" --tokenizer "$T/tok" --out "$T/run" --layers 1 --dim 32 \
  --heads 2 --ffn 64 --seq-len 32 --batch 4 --steps 4 --warmup 1 --log-every 1 >/dev/null 2>&1
"$AX" memscan index --data "$T/d.axd" --n 8 --out "$T/d.idx" >/dev/null 2>&1
"$AX" memscan probe --ckpt "$T/run" --data "$T/d.axd" --tokenizer "$T/tok" --samples 3 \
  --prefix 8 --suffix 8 --out "$T/run/probe.json" >/dev/null 2>&1
"$AX" memscan generate --ckpt "$T/run" --index "$T/d.idx" --tokenizer "$T/tok" --samples 2 \
  --length 16 --out "$T/run/regurgitation.json" >/dev/null 2>&1
R=$T/run
for f in probe.json probe.samples.jsonl regurgitation.json regurgitation.samples.jsonl; do
  [ -s "$R/$f" ] || { echo "make_seeds: $R/$f was not written"; exit 1; }
done
# the older layout: the probe JSON without its samples record (then samples.jsonl is read)
python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); v.pop("samples"); print(json.dumps(v, indent=1))' \
  "$R/probe.json" >"$T/legacy.json"
rm -rf "$C/scan" && mkdir -p "$C/scan"
sep=$'\n@@@@\n'
{ cat "$R/probe.json"; printf '%s' "$sep"; cat "$R/probe.samples.jsonl"; printf '%s' "$sep"
  head -n 4 "$R/metrics.jsonl"; printf '%s' "$sep"; cat "$R/regurgitation.json"
  printf '%s' "$sep"; cat "$R/regurgitation.samples.jsonl"; printf '%s' "$sep"
  cat "$T/d.idx.json"; } >"$C/scan/full"
{ cat "$R/probe.json"; printf '%s' "$sep"; cat "$R/probe.samples.jsonl"; } >"$C/scan/probe_only"
{ printf '%s%s' "$sep" "$sep"; head -n 2 "$R/metrics.jsonl"; printf '%s' "$sep"
  cat "$R/regurgitation.json"; printf '%s' "$sep"; cat "$R/regurgitation.samples.jsonl"; } \
  >"$C/scan/regurg_only"
{ cat "$T/legacy.json"; printf '%s' "$sep"; cat "$R/probe.samples.jsonl"; } >"$C/scan/legacy"
# every seed must get through its reader (a seed the reader refuses explores nothing)
for t in axd tokenizer ckpt index config scan safetensors; do
  for f in "$C/$t"/*; do
    out=$(AXMEM_FUZZ_VERBOSE=1 "$F/fuzz_$t" "$f" 2>&1 | grep -E '^[a-z][a-z ()_,]*: ')
    if [ -z "$out" ] || echo "$out" | grep -qv ': ok$'; then
      echo "make_seeds: $f is rejected: $out"; exit 1
    fi
  done
done
du -sh "$C"/* | sed 's/^/seeds: /'
