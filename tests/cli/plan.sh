#!/usr/bin/env bash
# `axmem plan` as a user sees it: the table, --json, bad flags, a shape that no grid fits, the
# shape read from a checkpoint (--ckpt), a machine profile file. Usage: tests/cli/plan.sh AXMEM
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
source tests/cli/lib.sh plan

"$AX" plan --devices 8 --machine h100 --top 3 >"$T/out" 2>"$T/err" &&
  grep -q "^1 " "$T/out" && grep -q "^3 " "$T/out" && ! grep -q "^4 " "$T/out" &&
  grep -q "20 grids" "$T/out" && ok "table: top 3 of 20 grids" || bad "table: top 3 of 20 grids"
"$AX" plan --devices 16 --machine frontier --json --top 4 >"$T/j" 2>"$T/err" && python3 - "$T/j" <<'PY' && ok "--json: sorted, breakdown adds up" || bad "--json"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["grids"]
assert len(g) == 4 and d["n_grids"] == 35, (len(g), d["n_grids"])
assert all(g[i]["step_s"] <= g[i + 1]["step_s"] for i in range(3))
for x in g:
    s = x["compute_s"] + x["recompute_s"] + x["memory_s"] + sum(x["exposed_s"].values())
    assert abs(s - x["step_s"]) <= 1e-9 * x["step_s"], (s, x["step_s"])
    assert 0 < x["mfu"] <= 1 and x["mem_gib"]["total"] <= 64
PY
expect_fail "unknown machine" 2 "--machine nope.*frontier" "$AX" plan --machine nope
expect_fail "bad shape" 2 "head size|divisible|even" "$AX" plan --dim 100 --heads 3
# one 80 GB A100 cannot hold a 26 B-parameter model (16 bytes a parameter): rejected
"$AX" plan --devices 1 --layers 32 --dim 8192 --heads 64 --ffn 22016 --machine a100 >"$T/out" 2>"$T/err"
grep -q "0 fit, 1 rejected" "$T/out" && ok "nothing fits: rejected" || bad "nothing fits: rejected"
# 16K tokens of a 48-layer model on one A100: the activations fit only recomputed (--recompute)
long=(--devices 1 --layers 48 --dim 2048 --heads 16 --ffn 5504 --vocab 32000 --seq-len 16384
      --global-batch 1 --machine a100)
"$AX" plan "${long[@]}" --recompute off >"$T/out" 2>"$T/err" && grep -q "0 fit, 1 rejected" "$T/out" &&
  "$AX" plan "${long[@]}" >"$T/out" 2>"$T/err" && grep -q "recompute auto, z-gather auto$" "$T/out" &&
  grep -qE "^1 +1x1x1x1 +1x1r " "$T/out" &&
  "$AX" plan "${long[@]}" --json >"$T/out" 2>"$T/err" &&
  python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["grids"][0]; sys.exit(0 if g["recompute"] and g["recompute_s"] > 0 else 1)' "$T/out" &&
  ok "--recompute auto: recomputes where only that fits (off: rejected)" || bad "--recompute auto"
expect_fail "bad --recompute" 2 "--recompute 'maybe'" "$AX" plan --recompute maybe
cat >"$T/m.json" <<'J'
{"name": "small-gpu", "source": "test", "gemm_tflops": 10, "gemm_half_dim": 0, "peak_tflops": 10,
 "mem_gib": 0.01, "devices_per_node": 2, "node_bw_gbs": 10, "node_lat_us": 1, "net_bw_gbs": 1,
 "net_lat_us": 5, "elem_bytes": 4, "overlap": 1}
J
"$AX" plan --devices 2 --machine "$T/m.json" >"$T/out" 2>"$T/err" &&
  grep -q "rejected: memory:" "$T/out" && ok "profile file; memory rejection reason" ||
  bad "profile file; memory rejection reason"
printf '{"name": "x"}' >"$T/bad.json"
expect_fail "incomplete profile" 1 "bad.json.*gemm_tflops" "$AX" plan --machine "$T/bad.json"

# per-axis overlap (as `axmem train` decides it): this CPU's profile (MPI on one host) blocks
# every axis; a host profile of one rank a node overlaps the axes that span nodes; NCCL: every axis
shape=(--layers 4 --dim 512 --heads 8 --ffn 1376 --vocab 8192 --seq-len 128 --global-batch 8)
"$AX" plan "${shape[@]}" --devices 2 --machine plan/machines/this-cpu.json --top 4 >"$T/out" 2>"$T/err" &&
  grep -q "overlap auto, recompute auto, z-gather auto$" "$T/out" &&
  grep -q "^     overlap x (2 ranks, 1 host): off: its 2 ranks share one host" "$T/out" &&
  grep -q "^     overlap z (2 ranks, 1 host): off: its 2 ranks share one host" "$T/out" &&
  ok "auto on one host: every axis off, said per axis" || bad "auto on one host: every axis off"
python3 - plan/machines/this-cpu.json "$T/nodes.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.update(name="one-a-node", devices_per_node=1, cores_per_node=4, overlap=1)
json.dump(m, open(sys.argv[2], "w"))
PY
"$AX" plan "${shape[@]}" --devices 4 --machine "$T/nodes.json" --top 20 --json >"$T/j" 2>"$T/err" &&
  "$AX" plan "${shape[@]}" --devices 4 --machine "$T/nodes.json" --top 20 >"$T/out" 2>>"$T/err" &&
  grep -q "^     overlap x (2 ranks, 2 hosts): on: its 2 ranks span 2 hosts" "$T/out" &&
  python3 - "$T/j" <<'PY' && ok "auto across nodes: on, hidden" || bad "auto across nodes: on, hidden"
import json, sys
g = {x["grid"]: x for x in json.load(open(sys.argv[1]))["grids"]}
x = g["1x4x1x1"]
assert x["overlap"] == {"x": "on: its 4 ranks span 4 hosts"}, x["overlap"]
assert x["hidden_s"] > 0, x
PY
"$AX" plan --devices 8 --machine h100 --top 20 >"$T/out" 2>"$T/err" &&
  grep -q "^     overlap x (8 ranks, 1 host): on: device memory over NCCL" "$T/out" &&
  ok "auto with NCCL: on inside a node" || bad "auto with NCCL: on inside a node"
# train's spellings are the same modes; off hides nothing
"$AX" plan --devices 16 --machine frontier --json --top 50 --overlap force >"$T/f1" &&
  "$AX" plan --devices 16 --machine frontier --json --top 50 --force-overlap >"$T/f2" &&
  "$AX" plan --devices 16 --machine frontier --json --top 50 --overlap off >"$T/o1" &&
  "$AX" plan --devices 16 --machine frontier --json --top 50 --no-overlap >"$T/o2" &&
  cmp -s "$T/f1" "$T/f2" && cmp -s "$T/o1" "$T/o2" && python3 - "$T/o1" "$T/f1" <<'PY' &&
import json, sys
off, force = (json.load(open(f)) for f in sys.argv[1:3])
assert off["overlap"] == "off" and force["overlap"] == "force"
assert all(g["hidden_s"] == 0 for g in off["grids"])
assert any(g["hidden_s"] > 0 for g in force["grids"])
PY
  ok "--overlap force|off = --force-overlap / --no-overlap" || bad "--overlap force|off"
expect_fail "bad --overlap" 2 "--overlap sometimes: use auto, force or off" "$AX" plan --overlap sometimes
expect_fail "--no-overlap --overlap force" 2 "contradicts" "$AX" plan --overlap force --no-overlap

# --ckpt: the shape of a trained model's checkpoint (tiny: 2 layers, dim 128, 4 heads, ffn 352)
head -n 40 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$AX" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 300 --out "$T/tok" 2>"$T/err" &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/d.axd" 2>"$T/err" &&
  "$AX" train --data "$T/d.axd" --model tiny --seq-len 32 --batch 4 --steps 2 --warmup 1 --out "$T/run" \
    >/dev/null 2>"$T/err" || bad "a checkpoint to plan from"
"$AX" plan --ckpt "$T/run" --devices 2 --seq-len 32 --global-batch 4 >"$T/out" 2>"$T/err" &&
  grep -q "2 layers, dim 128, 4 heads, ffn 352, vocab 300 (tied)" "$T/out" && ok "--ckpt shape" ||
  bad "--ckpt shape"
# an imported grouped-query model: its K/V heads from the checkpoint's config, and a grid whose
# Y does not split them rejected with the reason
"$AX" model import --hf tests/fixtures/hf/llama_tied_gqa --out "$T/gqa" >/dev/null 2>"$T/err" &&
  "$AX" plan --ckpt "$T/gqa" --devices 4 --seq-len 32 --global-batch 4 --top 20 >"$T/out" 2>"$T/err" &&
  grep -q "4 heads (2 K/V)" "$T/out" && grep -q "1x1x4x1 rejected: shape: kv-heads 2" "$T/out" &&
  ok "--ckpt of a GQA model" || bad "--ckpt of a GQA model"

# --engine: axmem (the default) prices the CUDA engine's bf16 run on a GPU profile (fp32
# activations but the norm and MLP outputs, fp32 collectives, its device buffers); bf16 the
# all-bf16 engine (AxoNN's); a host profile is the CPU engine under both
eng=(--devices 8 --layers 8 --dim 1024 --heads 16 --ffn 2752 --seq-len 1024 --global-batch 16
     --machine h100 --json --top 1 --overlap off)
"$AX" plan "${eng[@]}" >"$T/ea" 2>"$T/err" && "$AX" plan "${eng[@]}" --engine bf16 >"$T/eb" 2>>"$T/err" &&
  python3 - "$T/ea" "$T/eb" <<'PY' && ok "--engine axmem vs bf16 on a GPU profile" || bad "--engine axmem vs bf16"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["engine"] == "axmem-cuda" and b["engine"] == "bf16", (a["engine"], b["engine"])
ga, gb = a["grids"][0], b["grids"][0]
assert ga["mem_gib"]["device"] > 0 and gb["mem_gib"]["device"] == 0
assert ga["mem_gib"]["activations"] > gb["mem_gib"]["activations"]
assert ga["step_s"] >= gb["step_s"], (ga["step_s"], gb["step_s"])
PY
"$AX" plan --devices 8 --machine h100 --top 1 >"$T/out" 2>"$T/err" &&
  grep -q "^engine: axmem on CUDA, bf16 run" "$T/out" &&
  "$AX" plan --devices 2 --machine plan/machines/this-cpu.json --top 1 >"$T/out" 2>"$T/err" &&
  grep -q "^engine: axmem (activations, gathered blocks and collectives at 4 bytes" "$T/out" &&
  ok "the table names the engine priced" || bad "the table names the engine priced"
expect_fail "bad --engine" 2 "--engine" "$AX" plan --engine fp8

finish plan
