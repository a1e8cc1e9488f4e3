#!/usr/bin/env bash
# Multi-rank end to end on the emulated device (tests/cuda/emu/run.sh builds build/cuda-emu/axmem
# first): 2 ranks train 2 steps with --device cuda --precision fp32 --comm mpi on --grid 1x2x1x1 (Y: the
# tensor-parallel all-reduces), 1x1x1x2 (Z: weight all-gathers and gradient reduce-scatters,
# non-blocking with overlap) and 2x1x1x1 (data: the gradient all-reduce), and each run's losses
# must equal 1 rank on --device cpu (< 1e-4 relative). Device memory is guarded (AX_EMU_GUARD=1),
# so a collective that hands device memory to MPI (instead of staging it through the host,
# lib/dist/comm.c) faults. Then generate on 1x2x1x1 (vocabulary-sharded decoding: argmax over Y
# and the full-logit gather) must give the CPU's samples. --precision bf16 on 1x1x1x2: the GEMMs
# read the bf16 copies of the Z-gathered weight blocks (made as each gather lands); the losses
# track the CPU's (< 2e-2 relative).
# Every collective on every axis of 5 grids through the NCCL transport (mpi_stage-nccl), then the
# same training grids and generate again with --comm nccl on build/cuda-emu/axmem-nccl: the
# NCCL transport (lib/dist/comm_nccl.c) on the NCCL stand-in of this folder (nccl.h: NCCL's
# calls over MPI, on the guarded device memory), which must be used by both ranks and give the
# same losses and samples: its logic checked without a GPU (NCCL itself is not).
# A tiny model: ~4-6 minutes on 2 cores.
#
#   bash tests/cuda/emu/e2e_mpi.sh [BUILD=build]     exit 0 when every comparison passed
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=${1:-build}
A=$B/bin/axmem
E=$B/cuda-emu/axmem
N=$B/cuda-emu/axmem-nccl # the same with the NCCL transport on tests/cuda/emu/nccl.h
[ -x "$E" ] && [ -x "$N" ] || { echo "e2e_mpi: $E missing: run tests/cuda/emu/run.sh $B first"; exit 2; }
command -v mpirun >/dev/null || { echo "e2e_mpi: SKIP (no mpirun): not a pass"; exit 2; }
T=$(mktemp -d /tmp/axmem-emu-mpi.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI=(mpirun --oversubscribe -np 2 -x AX_EMU_GUARD=1 -x OMP_NUM_THREADS)
fails=0
check() { if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi; }

head -n 200 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$A" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 300 --out "$T/tok" 2>/dev/null
"$A" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>/dev/null
"$A" memscan index --data "$T/kjv.axd" --n 8 --out "$T/kjv.idx" >/dev/null 2>&1
S=(--data "$T/kjv.axd" --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 8 --batch 2 --steps 2
   --lr 3e-3 --warmup 1 --seed 7 --threads 1 --goldfish hash:k=4,h=3)
"$A" train "${S[@]}" --device cpu --out "$T/cpu" 2>/dev/null
same_losses() { # RUN [TOLERANCE=1e-4]
  python3 - "$T/cpu/metrics.jsonl" "$1/metrics.jsonl" "${2:-1e-4}" <<'PY'
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
train_grid() { # GRID [PRECISION TOLERANCE [COMM [GRAD_COMM]]]: 2 ranks on the emulated device, then the
  # losses against 1 rank on the cpu
  local p=${2:-fp32} c=${4:-mpi} gc=${5:-fp32} exe=$E
  [ "$c" = nccl ] && exe=$N
  local o="$T/g$1$p$c$gc"
  "${MPI[@]}" -x AX_EMU_NCCL_REPORT=1 "$exe" train "${S[@]}" --device cuda --precision "$p" \
    --comm "$c" --grid "$1" --grad-comm "$gc" --out "$o" >"$o.log" 2>&1 || { tail -5 "$o.log"; return 1; }
  if [ "$c" = nccl ]; then # the collectives went through the NCCL transport, on both ranks
    local used
    used=$(grep -c "emulated NCCL: [1-9][0-9]* communicators, [1-9][0-9]* operations" "$o.log")
    echo "     ranks that used the NCCL transport: $used of 2"
    [ "$used" -eq 2 ] || return 1
  fi
  same_losses "$o" "${3:-1e-4}"
}
for grid in 1x2x1x1 1x1x1x2 2x1x1x1; do
  name="train --device cuda --comm mpi --grid $grid, 2 ranks (emulated): losses = 1 rank cpu"
  check train_grid "$grid"
done
name="train --device cuda --precision bf16 --grid 1x1x1x2, 2 ranks (emulated): losses ~ cpu (2e-2)"
check train_grid 1x1x1x2 bf16 2e-2
# every collective of the NCCL transport on every axis (tests/mpi/mpi_stage.c built on the
# emulator): byte-identical to the host path, and on NCCL, none staged
stage_nccl() { # GRID
  local n=1 d
  for d in ${1//x/ }; do n=$((n * d)); done
  mpirun --oversubscribe -np "$n" -x AX_EMU_GUARD=1 -x OMP_NUM_THREADS \
    "$B/cuda-emu/mpi_stage-nccl" --grid "$1" >"$T/stage$1.log" 2>&1 || { tail -5 "$T/stage$1.log"; return 1; }
  grep -q "mpi_stage $1: ok" "$T/stage$1.log"
}
for grid in 1x1x1x1 2x1x1x1 1x2x1x2 2x1x2x2 3x1x1x1; do
  name="mpi_stage --grid $grid on the NCCL transport (emulated): every collective, every axis"
  check stage_nccl "$grid"
done
# the NCCL transport (lib/dist/comm_nccl.c) on the NCCL stand-in: Y all-reduces, Z's non-blocking
# all-gathers and reduce-scatters (overlap on), the data all-reduce; bf16 gathers on Z
for grid in 1x2x1x1 1x1x1x2 2x1x1x1; do
  name="train --device cuda --comm nccl --grid $grid, 2 ranks (emulated NCCL): losses = 1 rank cpu"
  check train_grid "$grid" fp32 1e-4 nccl
done
name="train --device cuda --precision bf16 --comm nccl --grid 1x1x1x2 (emulated NCCL): losses ~ cpu"
check train_grid 1x1x1x2 bf16 2e-2 nccl
# layer weights streamed over Z (--z-gather layer) on 3 layers: slots change hands and the
# backward re-gathers; the gathers write device slots (host-staged MPI and emulated NCCL, whose
# stream ordering matters), fp32 against the CPU, bf16 close to it
S3=(--data "$T/kjv.axd" --layers 3 --dim 32 --heads 2 --ffn 64 --seq-len 8 --batch 2 --steps 2
    --lr 3e-3 --warmup 1 --seed 7 --threads 1)
"$A" train "${S3[@]}" --device cpu --out "$T/cpu3" 2>/dev/null
train_stream() { # COMM PRECISION TOLERANCE
  local exe=$E o="$T/zs$1$2"
  [ "$1" = nccl ] && exe=$N
  "${MPI[@]}" "$exe" train "${S3[@]}" --device cuda --precision "$2" --comm "$1" --grid 1x1x1x2 \
    --z-gather layer --out "$o" >"$o.log" 2>&1 || { tail -5 "$o.log"; return 1; }
  python3 - "$T/cpu3/metrics.jsonl" "$o/metrics.jsonl" "$3" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f)] for f in sys.argv[1:3])
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b)) if b else 1
print(f"     {len(b)} of {len(a)} steps, max relative loss difference {worst:.2e}")
sys.exit(0 if len(a) == len(b) and worst < float(sys.argv[3]) else 1)
PY
}
for comm in mpi nccl; do
  name="train --device cuda --comm $comm --grid 1x1x1x2 --z-gather layer, 3 layers (emulated): losses = cpu"
  check train_stream "$comm" fp32 1e-4
done
name="train --device cuda --precision bf16 --comm nccl --z-gather layer (emulated NCCL): losses ~ cpu"
check train_stream nccl bf16 2e-2
G=(--ckpt "$T/cpu" --index "$T/kjv.idx" --samples 2 --length 4 --seed 5 --threads 1)
"$A" memscan generate "${G[@]}" --device cpu --out "$T/gc.json" --samples-out "$T/gc.jsonl" \
  >/dev/null 2>&1
gen_y2() { # COMM EXECUTABLE
  rm -f "$T/gg.jsonl"
  "${MPI[@]}" -x AX_EMU_NCCL_REPORT=1 "$2" memscan generate "${G[@]}" --device cuda --precision fp32 --comm "$1" --grid 1x2x1x1 \
    --out "$T/gg.json" --samples-out "$T/gg.jsonl" >"$T/gg.log" 2>&1 ||
    { tail -5 "$T/gg.log"; return 1; }
  if [ "$1" = nccl ]; then
    local used
    used=$(grep -c "emulated NCCL: [1-9][0-9]* communicators, [1-9][0-9]* operations" "$T/gg.log")
    echo "     ranks that used the NCCL transport: $used of 2"
    [ "$used" -eq 2 ] || return 1
  fi
  cmp "$T/gc.jsonl" "$T/gg.jsonl"
}
name="generate --device cuda --comm mpi --grid 1x2x1x1, 2 ranks (emulated): same samples as cpu"
check gen_y2 mpi "$E"
name="generate --device cuda --comm nccl --grid 1x2x1x1, 2 ranks (emulated NCCL): same samples"
check gen_y2 nccl "$N"
# gradients reduced in bf16 (--grad-comm bf16): the device buffers' wire conversions, staged
# through MPI and on the NCCL transport, over the data axis and Z
for cg in mpi:2x1x1x1 nccl:1x1x1x2; do
  c=${cg%%:*} grid=${cg#*:}
  name="train --device cuda --comm $c --grad-comm bf16 --grid $grid (emulated): losses ~ cpu (2e-2)"
  check train_grid "$grid" fp32 2e-2 "$c" bf16
done
echo "emu e2e mpi: $fails failed"
[ "$fails" -eq 0 ]
