#!/usr/bin/env bash
# axmem plan's weak-scaling series against the brief's "88% weak-scaling efficiency on 8,192
# GPUs" (AxoNN SC'24). The papers' series was not at hand; this one is ASSUMED: Frontier, the
# AxoNN model table's GPT sizes doubling with the GCD count (axonn-ai/Megatron-AxoNN
# model-table.md: GPT-5B on 64 ... GPT-640B on 8192), a global batch of 1024 sequences of 2048
# tokens, vocab 51200, SwiGLU ffn = 8C/3 rounded up to 128. Prints the best grid per point and
# the efficiency MFU(N) / MFU(64). --engine bf16: AxoNN's engine (everything in bf16), not
# axmem's CUDA engine as it runs today. Extra arguments go to every `axmem plan` (e.g.
# --recompute off --z-gather step for the engine without recomputation and streaming, or
# --engine axmem).
# Usage: bench/plan_axonn_weak.sh [build] [plan flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
AX=${1:-build}/bin/axmem
shift || true
point() { # N L C H
  local f=$(( ($3 * 8 / 3 + 127) / 128 * 128 ))
  "$AX" plan --json --top 1 --machine frontier --devices "$1" --layers "$2" --dim "$3" \
    --heads "$4" --ffn "$f" --vocab 51200 --seq-len 2048 --global-batch 1024 --engine bf16 \
    "${@:5}" |
    python3 -c '
import json, sys
n, base = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
if not d["grids"]:
    print("%5s nothing fits" % n); sys.exit()
g = d["grids"][0]
mfu = 100 * g["mfu"]
eff = " efficiency %.0f%%" % (100 * mfu / float(base)) if base else ""
print("%5s %-12s micro-batch %dx%d z-gather %s recompute %d step %.2f s compute %.2f + %.2f MFU %.1f%%%s"
      % (n, g["grid"], g["micro_batch"], g["n_micro"], g["z_gather"], g["recompute"],
         g["step_s"], g["compute_s"], g["recompute_s"], mfu, eff))
print("MFU", mfu, file=sys.stderr)' "$1" "$base" 2>"$tmpf"
  [ -n "$base" ] || base=$(sed -n 's/^MFU //p' "$tmpf")
}
tmpf=$(mktemp)
base=""
trap 'rm -f "$tmpf"' EXIT
point 64 24 4096 32 "$@"
point 128 32 5120 40 "$@"
point 256 32 7168 56 "$@"
point 512 38 9216 72 "$@"
point 1024 42 12288 96 "$@"
point 2048 84 12288 96 "$@"
point 4096 96 16384 128 "$@"
point 8192 192 16384 128 "$@"
