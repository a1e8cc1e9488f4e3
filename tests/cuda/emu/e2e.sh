#!/usr/bin/env bash
# End to end on the emulated device (tests/cuda/emu/run.sh builds build/cuda-emu/axmem first):
# train 2 steps with --device cuda --precision fp32 and --device cpu and compare the losses
# (< 1e-4 relative), then probe and generate from the CPU checkpoint on both and compare the
# samples. --precision bf16 (the default on cuda): 6 steps whose losses track the CPU's fp32
# run (< 2e-2 relative per step), a checkpoint that the CPU loads (fp32 master weights, the
# CPU checkpoint's layout), and probe and generate that run. Device memory is guarded
# (AX_EMU_GUARD=1): host code that touches it directly faults, and the backtrace names the line
# (gdb, if installed). The bf16 run stopped after 3 steps and resumed (its checkpoint loaded:
# the weights' bf16 copy made again from the masters) must give the uninterrupted run's bits,
# and its activation memory must be smaller than an fp32 run's by what axmem plan predicts.
# Slow (fibers): a tiny model, ~4 minutes.
#
#   bash tests/cuda/emu/e2e.sh [BUILD=build]     exit 0 when every comparison passed
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${1:-build}
A=$B/bin/axmem
E=$B/cuda-emu/axmem
[ -x "$E" ] || { echo "e2e: $E missing: run tests/cuda/emu/run.sh $B first"; exit 2; }
T=$(mktemp -d /tmp/axmem-emu-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1
fails=0
emu() { # runs the emulated CLI with guarded device memory; a crash reruns it under gdb (if
  # installed) for the backtrace that names the line (gdb's own exit code is not the child's
  # when a batch command such as `bt` finds no stack, so it is never the verdict)
  AX_EMU_GUARD=1 "$E" "$@"
  local rc=$?
  if [ "$rc" -ge 128 ] && command -v gdb >/dev/null; then
    AX_EMU_GUARD=1 gdb -q -batch -ex run -ex bt --args "$E" "$@" >"$T/gdb.log" 2>&1
    grep -E "signal|^#" "$T/gdb.log" | head -12
  fi
  return $rc
}
emu_log() { # LOG ARGS...: emu with the debug log (to LOG, and its last lines on failure)
  local log=$1
  shift
  AXMEM_LOG=debug emu "$@" 2>"$log" || { tail -5 "$log"; return 1; }
}
check() { if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi; }

head -n 200 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$A" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 300 --out "$T/tok" 2>/dev/null
"$A" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>/dev/null
"$A" memscan index --data "$T/kjv.axd" --n 8 --out "$T/kjv.idx" >/dev/null 2>&1
S=(--data "$T/kjv.axd" --layers 2 --dim 32 --heads 2 --ffn 64 --seq-len 16 --batch 2 --steps 2
   --lr 3e-3 --warmup 1 --seed 7 --threads 1 --goldfish hash:k=4,h=3)
"$A" train "${S[@]}" --device cpu --out "$T/cpu" 2>/dev/null
same_losses() { # CPU_RUN GPU_RUN TOLERANCE: every step's loss, relative
  python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
try:
    b = [json.loads(l) for l in open(sys.argv[2])]
except OSError:
    sys.exit(1)
worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b)) if b else 1
print(f"     {len(b)} of {len(a)} steps, max relative loss difference {worst:.2e}")
sys.exit(0 if len(a) == len(b) and worst < float(sys.argv[3]) else 1)
PY
}
name="train --device cuda --precision fp32 (emulated) runs, checkpoint included"
check emu train "${S[@]}" --device cuda --precision fp32 --out "$T/gpu"
name="train: losses cuda fp32 vs cpu < 1e-4 relative"
check same_losses "$T/cpu" "$T/gpu" 1e-4
name="train --device cuda --recompute (emulated): the same losses and norms, bit for bit"
same_recompute() {
  emu train "${S[@]}" --device cuda --precision fp32 --recompute --out "$T/gpurc" >/dev/null 2>&1 &&
    python3 - "$T/gpu/metrics.jsonl" "$T/gpurc/metrics.jsonl" <<'PY'
import json, sys
a, b = ([(m["loss"], m["grad_norm"]) for m in map(json.loads, open(f))] for f in sys.argv[1:])
print(f"     {len(b)} steps, equal: {a == b}")
sys.exit(0 if a and a == b else 1)
PY
}
check same_recompute
# bf16 (the default on cuda): 6 steps (~8 s each on the emulator), losses track the CPU's fp32 run
S6=(--data "$T/kjv.axd" --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 8 --batch 2 --steps 6
    --lr 3e-3 --warmup 1 --seed 7 --threads 1 --goldfish hash:k=4,h=3 --log-every 1)
"$A" train "${S6[@]}" --device cpu --out "$T/cpu6" 2>/dev/null
name="train --device cuda (bf16 by default, emulated) runs 6 steps"
check emu_log "$T/bf16.log" train "${S6[@]}" --device cuda --out "$T/bf16"
same_bits() { # RUN: the bf16 run again, stopped after 3 steps (a checkpoint) and resumed:
  # losses, gradient norms and the final checkpoint's tensors bit for bit
  AX_EMU_GUARD=1 "$E" train "${S6[@]}" --device cuda --exit-after-steps 3 --out "$T/$1" \
    >/dev/null 2>"$T/$1.log"
  [ $? -eq 75 ] || return 1
  AX_EMU_GUARD=1 "$E" train --out "$T/$1" --resume --device cuda >/dev/null 2>>"$T/$1.log" ||
    return 1
  python3 - "$T/bf16" "$T/$1" <<'PY'
import glob, json, os, sys
runs = sys.argv[1:]
def steps(r):
    return [(m["loss"], m["grad_norm"]) for m in map(json.loads, open(r + "/metrics.jsonl"))]
a, b = steps(runs[0]), steps(runs[1])
shards = [sorted(glob.glob(r + "/ckpt/step-000006/*.zst")) for r in runs]
same = [open(x, "rb").read() == open(y, "rb").read() for x, y in zip(*shards)]
print(f"     {len(a)} steps, losses and norms equal: {a == b}; {sum(same)} of {len(same)} shards equal")
sys.exit(0 if a and a == b and same and all(same) and len(shards[0]) == len(shards[1]) else 1)
PY
}
name="bf16 train stopped after 3 steps and resumed: the same losses and weights, bit for bit"
check same_bits bf16resumed
name="train --device cuda --precision fp32 (emulated) runs a step of the same model"
check emu_log "$T/fp32acts.log" train "${S6[@]}" --steps 1 --device cuda --precision fp32 \
  --out "$T/fp32acts"
less_acts() { # the start log's activation memory: bf16 storage of the norms' and MLP outputs
  # saves 2 of their 4 bytes (rows padded to 8 columns), exactly what axmem plan's CUDA engine
  # model (--engine axmem on a GPU profile) takes off the fp32 engine's (a host profile)
  local shape=(--devices 1 --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 8 --global-batch 2
               --vocab 300 --json --top 1 --recompute off)
  "$A" plan "${shape[@]}" --machine h100 >"$T/plan16.json" &&
    "$A" plan "${shape[@]}" --machine plan/machines/this-cpu.json >"$T/plan32.json" || return 1
  python3 - "$T/bf16.log" "$T/fp32acts.log" "$T/plan16.json" "$T/plan32.json" <<'PY'
import json, re, sys
logs = [open(f).read() for f in sys.argv[1:3]]
b = [int(re.search(r"activations: [0-9.]+ MiB \(([0-9]+) bytes\)", l).group(1)) for l in logs]
said = "norm and MLP outputs stored in bf16" in logs[0] and "in bf16" not in logs[1]
p = [json.load(open(f))["grids"][0]["mem_gib"]["activations"] * 2**30 for f in sys.argv[3:]]
print(f"     activations {b[0]} bytes with bf16 storage, {b[1]} without (the log says which: "
      f"{said}); saved {b[1] - b[0]}, axmem plan's engine model {p[1] - p[0]:.0f}")
sys.exit(0 if b[0] < b[1] and said and b[1] - b[0] == round(p[1] - p[0]) else 1)
PY
}
name="bf16 activations: the run's activation memory is smaller, by what axmem plan predicts"
check less_acts
name="train: losses cuda bf16 vs cpu fp32 < 2e-2 relative per step"
check same_losses "$T/cpu6" "$T/bf16" 2e-2
name="bf16 run: the manifest records --precision (auto)"
check bash -c 'grep -q "\"precision\": *\"auto\"" "$0"/ckpt/step-*/manifest.json' "$T/bf16"
name="bf16 checkpoint: fp32 master weights (the CPU run's tensors and raw shard bytes)"
check python3 - "$T/cpu6" "$T/bf16" <<'PY'
import glob, json, sys
def layout(run):
    m = json.load(open(sorted(glob.glob(run + "/ckpt/step-*/manifest.json"))[-1]))
    return m["tensors"], [s["bytes"] for s in m["shards"]]
a, b = layout(sys.argv[1]), layout(sys.argv[2])
print(f"     shard bytes {a[1]} vs {b[1]}")
sys.exit(0 if a[1] and a == b else 1)
PY
name="bf16 checkpoint loads on cpu (probe --device cpu)"
probe_cpu() {
  "$A" memscan probe --ckpt "$1" --data "$T/kjv.axd" --samples 4 --prefix 4 --suffix 4 \
    --threads 1 --device cpu --out "$T/pbc.json" >/dev/null 2>&1 && [ -s "$T/pbc.samples.jsonl" ]
}
check probe_cpu "$T/bf16"
P=(--ckpt "$T/cpu" --data "$T/kjv.axd" --samples 4 --prefix 4 --suffix 4 --threads 1)
"$A" memscan probe "${P[@]}" --device cpu --out "$T/pc.json" >/dev/null 2>&1
name="probe --device cuda (emulated): same samples as cpu"
check bash -c 'AX_EMU_GUARD=1 "$0" memscan probe "${@:2}" --device cuda --precision fp32 --out "$1/pg.json" \
  >/dev/null 2>&1 && cmp -s "$1/pc.samples.jsonl" "$1/pg.samples.jsonl"' \
  "$E" "$T" "${P[@]}"
G=(--ckpt "$T/cpu" --index "$T/kjv.idx" --samples 2 --length 4 --seed 5 --threads 1)
"$A" memscan generate "${G[@]}" --device cpu --out "$T/gc.json" --samples-out "$T/gc.jsonl" >/dev/null 2>&1
name="generate --device cuda (emulated): same samples as cpu"
check bash -c 'AX_EMU_GUARD=1 "$0" memscan generate "${@:2}" --device cuda --precision fp32 --out "$1/gg.json" \
  --samples-out "$1/gg.jsonl" >/dev/null 2>&1 && cmp -s "$1/gc.jsonl" "$1/gg.jsonl"' \
  "$E" "$T" "${G[@]}"
name="probe --device cuda --precision bf16 (emulated) runs, every sample scored"
check bash -c 'AX_EMU_GUARD=1 AXMEM_LOG=debug "$0" memscan probe "${@:2}" --device cuda --precision bf16 \
  --out "$1/pb.json" >/dev/null 2>"$1/pb.log" && [ "$(wc -l <"$1/pb.samples.jsonl")" = "$(wc -l <"$1/pc.samples.jsonl")" ]' \
  "$E" "$T" "${P[@]}"
name="generate --device cuda --precision bf16 (emulated) runs"
check bash -c 'AX_EMU_GUARD=1 AXMEM_LOG=debug "$0" memscan generate "${@:2}" --device cuda --precision bf16 \
  --out "$1/gb.json" --samples-out "$1/gb.jsonl" >/dev/null 2>"$1/gb.log" && [ -s "$1/gb.jsonl" ]' \
  "$E" "$T" "${G[@]}"
echo "emu e2e: $fails failed"
[ "$fails" -eq 0 ]
