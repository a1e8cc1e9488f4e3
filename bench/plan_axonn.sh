#!/usr/bin/env bash
# axmem plan against the AxoNN papers' published large-scale results (fraction of the bf16
# peak), on the built-in perlmutter / frontier / alps profiles. GPT shapes from the AxoNN
# model table (axonn-ai/Megatron-AxoNN model-table.md); the SwiGLU hidden size is 8C/3 so the
# MLP has GPT's 8 C^2 parameters per layer; vocab 51200, sequence 2048 and the global batch are
# assumptions (the papers' values were not at hand). --engine bf16: AxoNN's engine (bf16
# activations, gathered blocks and collectives), not axmem's CUDA engine as it runs today (the
# plan's default, --engine axmem). Extra arguments go to every `axmem plan` (e.g. --engine axmem).
# Prints one line per point.
# Usage: bench/plan_axonn.sh [build [plan flags...]]
set -euo pipefail
cd "$(dirname "$0")/.."
AX=${1:-build}/bin/axmem
shift || true
EXTRA=("$@")
point() { # label published% machine devices layers dim heads ffn global_batch
  local label=$1 pub=$2
  "$AX" plan --json --top 1 --machine "$3" --devices "$4" --layers "$5" --dim "$6" \
    --heads "$7" --ffn "$8" --vocab 51200 --seq-len 2048 --global-batch "$9" --engine bf16 \
    ${EXTRA[@]+"${EXTRA[@]}"} |
  python3 -c '
import json, sys
label, pub = sys.argv[1], float(sys.argv[2])
d = json.load(sys.stdin)
g = d["grids"][0]
mfu = 100 * g["mfu"]
print("%s: published %.1f%% of peak, predicted %.1f%% (grid %s, micro-batch %d x %d, "
      "step %.2f s, compute %.2f s) -> %+.1f pp" % (label, pub, mfu, g["grid"], g["micro_batch"],
      g["n_micro"], g["step_s"], g["compute_s"], mfu - pub))
' "$label" "$pub"
}
# SC'24 (Singh et al., arXiv 2305.13525 abstract): GPT-80B on 1024 Perlmutter GPUs, 57% of peak
point "perlmutter GPT-80B 1024 GPUs" 57.0 perlmutter 1024 42 12288 96 32768 2048
# Gordon Bell 2024 (arXiv 2502.08145 abstract): 1.381 EF/s on 32,768 MI250X GCDs = 1.381e18 /
# (32768 x 191.5e12) = 22.0%; 1.423 EF/s on 6,144 H100 = 1.423e18 / (6144 x 989e12) = 23.4%.
# The model sizes of these two points are assumed (GPT-320B, the table's largest that fits).
point "frontier GPT-320B(assumed) 32768 GCDs" 22.0 frontier 32768 96 16384 128 43776 16384
point "alps GPT-320B(assumed) 6144 GPUs" 23.4 alps 6144 96 16384 128 43776 6144
