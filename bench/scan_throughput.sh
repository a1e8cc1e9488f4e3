#!/usr/bin/env bash
# End-to-end throughput of the scans on one GPT-2-small-shaped checkpoint (12 layers, width 768,
# vocabulary 32768, saved after one training step on the bundled KJV corpus): memscan probe
# (greedy, 256 probes of 32 + 32 tokens, batch 64), probe with draws (32 probes x 2 draws,
# top-k 40, top-p 0.9, batch 32) and generate (32 generations of 64 tokens, top-k 40, batch 32).
# Each scan prints its own decoding rate (model load excluded) and the script adds the peak RSS
# and the wall time of the command; every row is the median of RUNS runs (default 3).
#
# As the ceiling, bench_decode's steps at the same batch and vocabulary (a full step and a
# prompt step, measured in the same run) give the tokens/s decoding alone would reach: for
# PROBE 32 B generated tokens per 31 prompt steps and 32 full steps, for GEN B per full step.
# "of decode" is the scan's rate over that: the share of pure decoding speed it keeps (the
# rest is sampling, scoring and host work). DRAWS has no such row (greedy and drawn passes).
#
# usage: bench/scan_throughput.sh [--runs N] [--old AXMEM_OLD] [BUILD_DIR]
#   --old: a second axmem binary (an earlier build) measured alternately with the first, and
#   checked to write the same samples files (greedy and seeded draws are deterministic)
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
OLD=""
RUNS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --old) OLD=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) B=$1; shift ;;
  esac
done
AX=$B/bin/axmem
[ -x "$AX" ] || { echo "scan_throughput: $AX not found: build first (scons -Q -j2)"; exit 2; }
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "scan_throughput: --old $OLD is not an executable"; exit 2; }
T=$(mktemp -d /tmp/scan_throughput.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}

head -n 2000 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$AX" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 512 --out "$T/tok" 2>/dev/null
"$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>/dev/null
"$AX" train --data "$T/kjv.axd" --layers 12 --dim 768 --heads 12 --ffn 2048 --vocab 32768 \
  --seq-len 128 --batch 4 --steps 1 --warmup 0 --out "$T/mid" >/dev/null 2>&1
"$AX" memscan index --data "$T/kjv.axd" --out "$T/kjv.idx" >/dev/null 2>&1

PROBE=(memscan probe --ckpt "$T/mid" --data "$T/kjv.axd" --samples 256 --prefix 32 --suffix 32
  --batch 64 --seed 5)
DRAWS=(memscan probe --ckpt "$T/mid" --data "$T/kjv.axd" --samples 32 --prefix 32 --suffix 32
  --batch 32 --seed 5 --samples-per-prefix 2 --temperature 1 --top-k 40 --top-p 0.9)
GEN=(memscan generate --ckpt "$T/mid" --index "$T/kjv.idx" --samples 32 --length 64 --batch 32
  --seed 5)

# one run: "tokens/s rss_MB wall_s"; its samples file kept as $T/<tag>.samples.jsonl
run() { # tag binary args...
  local tag=$1 bin=$2
  shift 2
  /usr/bin/time -f "%M %e" -o "$T/time" "$bin" "$@" --out "$T/$tag.json" >"$T/out" 2>"$T/err" ||
    { tail -3 "$T/err"; echo "scan_throughput: $tag failed"; exit 1; }
  local tps
  tps=$(sed -n 's/^[a-z]*: generated .* tokens in .* s: \([0-9.]*\) tokens\/s.*/\1/p' "$T/out")
  read -r rss wall <"$T/time"
  echo "$tps $((rss / 1024)) $wall"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "scan_throughput: $(date -u +%F), $(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); medians of $RUNS"
# the ceilings: bench_decode's full and prompt (feed) steps at the scans' batches, this vocabulary
declare -A STEP=() FEED=()
for b in 64 32; do
  "$B/bench/bench_decode" "$b" 64 32768 >"$T/dec"
  STEP[$b]=$(sed -n 's/^  \([0-9.]*\) ms per step.*/\1/p' "$T/dec")
  FEED[$b]=$(sed -n 's/^  prompt step (ax_model_decode_feed, no logits): \([0-9.]*\) ms.*/\1/p' "$T/dec")
  echo "  bench_decode batch $b: step ${STEP[$b]} ms, prompt step ${FEED[$b]} ms"
done
# decoding-only tokens/s of a scan: PROBE reads 31 prompt positions by feeding and 32 by full
# steps per 32 generated tokens at batch 64; GEN takes 64 full steps per 64 tokens at batch 32
IDEAL_PROBE=$(awk -v s="${STEP[64]}" -v f="${FEED[64]}" 'BEGIN {printf "%.0f", 32 * 64 / ((31 * f + 32 * s) / 1e3)}')
IDEAL_GEN=$(awk -v s="${STEP[32]}" 'BEGIN {printf "%.0f", 32 / (s / 1e3)}')
echo "  decoding alone would give: PROBE $IDEAL_PROBE tokens/s, GEN $IDEAL_GEN tokens/s"
for scan in PROBE DRAWS GEN; do
  declare -n ARGS=$scan
  for bin in ${OLD:+old} new; do : >"$T/rows-$scan-$bin"; done
  for i in $(seq "$RUNS"); do
    for bin in ${OLD:+old} new; do
      exe=$AX
      [ "$bin" = old ] && exe=$OLD
      run "$scan-$bin" "$exe" "${ARGS[@]}" >>"$T/rows-$scan-$bin"
    done
  done
  for bin in ${OLD:+old} new; do
    f=$T/rows-$scan-$bin
    med=$(cut -d' ' -f1 "$f" | median)
    share=""
    [ "$scan" = PROBE ] && share=$(awk -v m="$med" -v i="$IDEAL_PROBE" 'BEGIN {printf " = %.2f of decode", m / i}')
    [ "$scan" = GEN ] && share=$(awk -v m="$med" -v i="$IDEAL_GEN" 'BEGIN {printf " = %.2f of decode", m / i}')
    printf '  %-6s %-4s %8s tokens/s%s (%s)  peak RSS %s MB  wall %s s\n' "$scan" "$bin" "$med" \
      "$share" "$(cut -d' ' -f1 "$f" | tr '\n' ' ' | xargs)" "$(cut -d' ' -f2 "$f" | median)" \
      "$(cut -d' ' -f3 "$f" | median)"
  done
  if [ -n "$OLD" ]; then
    if cmp -s "$T/$scan-old.samples.jsonl" "$T/$scan-new.samples.jsonl"; then
      echo "  $scan: old and new samples files identical"
    else
      echo "  $scan: old and new samples files DIFFER"
    fi
  fi
done
