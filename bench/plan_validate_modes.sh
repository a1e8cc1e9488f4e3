#!/usr/bin/env bash
# axmem plan's ways of running against measured step times on this machine: activation
# recomputation (--recompute) and layer weights streamed over Z (--z-gather layer), each on and
# off, on bench_grid's model (global batch 8 x 128 tokens, 2 ranks x 1 thread) on 1x1x1x2 (where
# streaming applies) and 1x2x1x1; then gradients reduced in bf16 (--grad-comm bf16) on 2x1x1x1
# and 1x1x1x2 beside fp32. Measures the profile first (`axmem plan --measure` under
# mpirun -np 2), then per case the median of RUNS bench_grid invocations (each a median of its
# steps) beside the plan's prediction (--overlap auto, as bench_grid --overlap 2 runs), the
# ratio and whether it is within 25%. Needs a quiet machine.
# Usage: bench/plan_validate_modes.sh [build] [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
AX=$build/bin/axmem
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none -np 2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${MPIRUN[@]}" "$AX" plan --measure --out "$tmp/cpu.json" >/dev/null
echo "profile: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['source'])" "$tmp/cpu.json")"
shape=(--layers 4 --dim 512 --heads 8 --ffn 1376 --vocab 8192 --seq-len 128 --global-batch 8
       --devices 2 --machine "$tmp/cpu.json" --json --top 100 --overlap auto)
compare() { # GRID RECOMPUTE ZGATHER GRADCOMM: prints predicted vs the median measured
  python3 - "$tmp/p.json" "$tmp/m.txt" "$@" <<'PY'
import json, re, statistics, sys
p, m, grid, rc, zg, gc = sys.argv[1:]
g = [x for x in json.load(open(p))["grids"] if x["grid"] == grid]
pred = g[0]["step_s"] if g else float("nan")
meas = [float(re.search(r"step_s=([0-9.]+)", l).group(1)) for l in open(m) if "step_s=" in l]
med = statistics.median(meas)
r = pred / med
print("%-9s %-9s %-6s %-5s %10.3fs %10.3fs %7.2f %s  (runs: %s)" % (grid, rc, zg, gc, pred, med,
      r, "within 25%" if 0.75 <= r <= 1.25 else "OUTSIDE 25%", " ".join("%.3f" % x for x in meas)))
PY
}
printf "%-9s %-9s %-6s %-5s %11s %11s %7s %s\n" grid recompute zgather grads predicted measured ratio \
  verdict
for grid in 1x1x1x2 1x2x1x1; do
  for rc in 0 1; do
    for zg in step layer; do
      [ "$grid" = 1x2x1x1 ] && [ "$zg" = layer ] && continue # no Z: nothing to stream
      on=$([ $rc = 1 ] && echo on || echo off)
      "$AX" plan "${shape[@]}" --recompute "$on" --z-gather "$zg" >"$tmp/p.json"
      : >"$tmp/m.txt"
      for _ in $(seq "$runs"); do
        "${MPIRUN[@]}" "$build/bench/bench_grid" --grid "$grid" --overlap 2 --steps 6 \
          --recompute "$rc" --z-gather "$zg" >>"$tmp/m.txt"
      done
      compare "$grid" "$rc" "$zg" fp32
    done
  done
done
for grid in 2x1x1x1 1x1x1x2; do
  for gc in fp32 bf16; do
    "$AX" plan "${shape[@]}" --recompute off --z-gather step --grad-comm "$gc" >"$tmp/p.json"
    : >"$tmp/m.txt"
    for _ in $(seq "$runs"); do
      "${MPIRUN[@]}" "$build/bench/bench_grid" --grid "$grid" --overlap 2 --steps 6 \
        --recompute 0 --z-gather step --grad-comm "$gc" >>"$tmp/m.txt"
    done
    compare "$grid" 0 step "$gc"
  done
done
