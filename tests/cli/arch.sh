#!/usr/bin/env bash
# GPT-NeoX- and GPT-2-shaped models from the command line (docs/training.md "Architectures"):
# `axmem train --arch neox|gpt2` trains (goldfish on) and lowers the loss, the checkpoint stores
# the architecture and its tensors, resume is bit-exact, --init fine-tunes with the checkpoint's
# architecture (a contradicting flag is an error), a probe decodes the checkpoint, impossible
# flags are refused, and a 2-rank grid matches one rank. Grouped-query attention (--kv-heads)
# trains, decodes, matches one rank on a grid, and a grid whose Y does not divide the K/V heads
# is refused. A few seconds on 2 cores.
# Usage: tests/cli/arch.sh [path/to/axmem]
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
source tests/cli/lib.sh arch

head -n 120 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$AX" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 512 --out "$T/tok" 2>"$T/err" &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>"$T/err" ||
  { bad "data"; exit 1; }
SMALL=(--data "$T/kjv.axd" --layers 2 --dim 64 --heads 4 --ffn 128 --seq-len 32 --batch 8 --lr 3e-3
       --warmup 3 --log-every 100)

for arch in neox gpt2; do
  run="$T/$arch"
  if "$AX" train "${SMALL[@]}" --arch "$arch" --goldfish hash:k=4,h=13 --steps 40 --out "$run" 2>"$T/err"; then
    ok "train --arch $arch (goldfish)"
  else bad "train --arch $arch (goldfish)"; continue; fi
  # the loss falls, goldfish drops targets, the manifest holds the architecture and its tensors
  if python3 - "$run" "$arch" <<'PY'
import json, sys, glob
run, arch = sys.argv[1], sys.argv[2]
r = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert r[-1]["loss"] < r[0]["loss"] - 0.8, (r[0]["loss"], r[-1]["loss"])
assert all(0.1 < x["dropped_frac"] < 0.4 for x in r), [x["dropped_frac"] for x in r]
m = json.load(open(sorted(glob.glob(f"{run}/ckpt/step-*/manifest.json"))[-1]))
c, names = m["config"], [t["name"] for t in m["tensors"]]
want = {"neox": dict(norm="layer", mlp="gelu", bias=True, pos="rope", **{"parallel-residual": True,
                     "rotary-dim": 4, "tie-embeddings": False}),
        "gpt2": dict(norm="layer", mlp="gelu-tanh", bias=True, pos="learned", **{
                     "parallel-residual": False, "max-pos": 32, "tie-embeddings": True})}[arch]
for k, v in want.items():
    assert c[k] == v, (k, c[k], v)
for n in ["layers.0.attn_norm_bias", "layers.0.bqkv", "layers.1.b_down", "final_norm_bias"]:
    assert n in names, n
assert ("wpe" in names) == (arch == "gpt2") and ("lm_head" in names) == (arch == "neox")
PY
  then ok "$arch: loss falls, targets dropped, architecture and tensors in the manifest"
  else bad "$arch: loss falls, targets dropped, architecture and tensors in the manifest"; fi
  # a probe decodes the checkpoint greedily (KV cache with the architecture's layers)
  "$AX" memscan probe --ckpt "$run" --data "$T/kjv.axd" --samples 4 --prefix 8 --suffix 8 \
    --out "$T/probe-$arch" 2>"$T/err" >/dev/null && ok "$arch: memscan probe decodes" ||
    bad "$arch: memscan probe decodes"
done

# resume is bit-exact: drop the last checkpoint and replay from the one before
"$AX" train "${SMALL[@]}" --arch neox --steps 6 --ckpt-every 3 --out "$T/res" 2>"$T/err" >/dev/null
losses "$T/res/metrics.jsonl" >"$T/full"
rm -rf "$T/res/ckpt/step-000006"
"$AX" train --out "$T/res" --data "$T/kjv.axd" --resume 2>"$T/err" >/dev/null
losses "$T/res/metrics.jsonl" >"$T/resumed"
if cmp -s "$T/full" "$T/resumed" && [ "$(wc -l <"$T/full")" -eq 6 ]; then ok "neox: resume bit-exact"
else diff "$T/full" "$T/resumed" | head -4; bad "neox: resume bit-exact"; fi
expect_fail "resume with another --mlp" 1 "--mlp" "$AX" train --out "$T/res" --data "$T/kjv.axd" --steps 8 --resume --mlp swiglu

# --init: the architecture comes from the checkpoint; the fine-tune starts from its weights
if "$AX" train --data "$T/kjv.axd" --init "$T/neox" --seq-len 32 --batch 8 --steps 3 --lr 1e-3 \
     --warmup 0 --out "$T/ft" 2>"$T/err" >/dev/null &&
   python3 - "$T" <<'PY'
import json, sys, glob
T = sys.argv[1]
first = [json.loads(l) for l in open(f"{T}/neox/metrics.jsonl")][0]["loss"]
ft = [json.loads(l) for l in open(f"{T}/ft/metrics.jsonl")][0]["loss"]
assert ft < first - 0.5, (ft, first)
c = json.load(open(sorted(glob.glob(f"{T}/ft/ckpt/step-*/manifest.json"))[-1]))["config"]
assert c["norm"] == "layer" and c["parallel-residual"] and c["rotary-dim"] == 4, c
PY
then ok "--init fine-tunes a neox checkpoint with its architecture"
else bad "--init fine-tunes a neox checkpoint with its architecture"; fi
expect_fail "--init with a contradicting --norm" 1 "--norm differs" "$AX" train --data "$T/kjv.axd" --init "$T/neox" --norm rms --steps 2 --out "$T/ft2"

# grouped-query attention: --kv-heads keeps K/V at 2 heads (wqkv [64 + 2*2*16, 64]), trains, decodes
if "$AX" train "${SMALL[@]}" --kv-heads 2 --steps 20 --out "$T/gqa" 2>"$T/err" >/dev/null &&
   python3 - "$T/gqa" <<'PY'
import json, sys, glob
run = sys.argv[1]
r = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert r[-1]["loss"] < r[0]["loss"] - 0.5, (r[0]["loss"], r[-1]["loss"])
m = json.load(open(sorted(glob.glob(f"{run}/ckpt/step-*/manifest.json"))[-1]))
assert m["config"]["kv-heads"] == 2, m["config"]
shapes = {t["name"]: t["shape"] for t in m["tensors"]}
assert shapes["layers.0.wqkv"] == [128, 64], shapes["layers.0.wqkv"]
PY
then ok "train --kv-heads 2: loss falls, K/V projections of 2 heads in the checkpoint"
else bad "train --kv-heads 2: loss falls, K/V projections of 2 heads in the checkpoint"; fi
"$AX" memscan probe --ckpt "$T/gqa" --data "$T/kjv.axd" --samples 4 --prefix 8 --suffix 8 \
  --out "$T/probe-gqa" 2>"$T/err" >/dev/null && ok "gqa: memscan probe decodes" ||
  bad "gqa: memscan probe decodes"
expect_fail "--kv-heads that do not divide --heads" 2 "--kv-heads 3 must divide --heads 4" "$AX" train "${SMALL[@]}" --kv-heads 3 --steps 4 --out "$T/b0"

# impossible flags are refused with the flag named
expect_fail "odd --rotary-dim" 2 "--rotary-dim 3" "$AX" train "${SMALL[@]}" --arch neox --rotary-dim 3 --steps 4 --out "$T/b1"
expect_fail "--seq-len over --max-pos" 2 "exceeds the 16 learned positions" "$AX" train "${SMALL[@]}" --arch gpt2 --max-pos 16 --steps 4 --out "$T/b2"
expect_fail "rotary with learned positions" 2 "no rotary" "$AX" train "${SMALL[@]}" --pos learned --max-pos 64 --rotary-dim 4 --steps 4 --out "$T/b3"

# a grid: Y splits heads, biases and the vocabulary, X the hidden dimension (LayerNorm's
# statistics reduced over it): the same losses as one rank
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
          --mca btl_vader_single_copy_mechanism none)
  for arch in neox gpt2 gqa; do
    flags=(--arch $arch); [ $arch = gqa ] && flags=(--arch neox --kv-heads 2)
    "$AX" train "${SMALL[@]}" "${flags[@]}" --steps 4 --out "$T/g1-$arch" 2>"$T/err" >/dev/null
    OMP_NUM_THREADS=1 timeout 120 "${MPIRUN[@]}" -np 4 "$AX" train "${SMALL[@]}" "${flags[@]}" --steps 4 \
      --grid 1x2x2x1 --out "$T/g4-$arch" 2>"$T/err" >/dev/null
    if python3 - "$T/g1-$arch" "$T/g4-$arch" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(f"{sys.argv[1]}/metrics.jsonl")]
b = [json.loads(l)["loss"] for l in open(f"{sys.argv[2]}/metrics.jsonl")]
assert len(a) == len(b) == 4 and all(abs(x - y) <= 1e-4 * abs(x) for x, y in zip(a, b)), (a, b)
PY
    then ok "$arch on grid 1x2x2x1 matches one rank"; else bad "$arch on grid 1x2x2x1 matches one rank"; fi
  done
  # one K/V head cannot split over Y = 2: refused naming the grid and kv-heads
  OMP_NUM_THREADS=1 timeout 120 "${MPIRUN[@]}" -np 2 "$AX" train "${SMALL[@]}" --kv-heads 1 --steps 4 \
    --grid 1x1x2x1 --out "$T/g2-mq" >"$T/out" 2>"$T/err"
  if [ $? -ne 0 ] && grep -q -- "--grid 1x1x2x1" "$T/err" && grep -q "kv-heads 1" "$T/err"; then
    ok "kv-heads not divisible by the grid's Y refused"; else bad "kv-heads not divisible by the grid's Y refused"; fi
else
  echo "skip grid checks: no mpirun (not counted as passed)"
fi

finish arch
