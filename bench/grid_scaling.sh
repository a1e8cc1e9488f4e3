#!/usr/bin/env bash
# 2 ranks x 1 thread against 1 rank x 2 threads, same model and global batch (issue target:
# >= 0.85 with overlap on). The 1x2 rate is measured first in the same run and is the ceiling.
# Per grid axis, three schedules (bench_grid --overlap): 1 forced on, 0 off (--no-overlap),
# 2 auto (what `axmem train` does by default: per axis, lib/dist/overlap.h; on an axis inside one
# host it times both schedules in-process first, lib/dist/overlap_trial.h, and keeps the faster;
# what it chose goes to stderr). Each is run REPS times (default 3), the three interleaved and
# rotated (forced off auto, off auto forced, auto forced off, ...) so a drift of the machine or
# a cost of running first or last hits all three alike,
# and the median step is printed; "auto >= off" is the issue's "overlap never loses" check.
# Needs a quiet machine for numbers that mean anything.
# Usage: bench/grid_scaling.sh [build]   (env REPS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}/bench/bench_grid
REPS=${REPS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
step() { sed -n 's/.*step_s=\([0-9.]*\).*/\1/p'; }
# the line of the median run (by step_s) of REPS runs of "$@"
median_line() {
  local lines=()
  for _ in $(seq "$REPS"); do lines+=("$("$@")"); done
  printf '%s\n' "${lines[@]}" | sort -t= -k4 -g | awk -v n="${#lines[@]}" 'NR == int((n + 1) / 2)'
}
line=$(median_line env OMP_NUM_THREADS=2 "$B" --grid 1x1x1x1)
echo "$line   (1 rank x 2 threads: the ceiling)"
ceil=$(echo "$line" | step)
declare -A med
for grid in 2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2; do
  declare -A lines=()
  for r in $(seq "$REPS"); do
    order=(1 0 2 1 0)                   # rep r starts at a different schedule: no schedule
    for ov in "${order[@]:$(( (r - 1) % 3 )):3}"; do # always runs first or last
      lines[$ov,$r]=$(env OMP_NUM_THREADS=1 "${MPIRUN[@]}" -np 2 "$B" --grid "$grid" --overlap "$ov")
    done
  done
  for ov in 1 0 2; do
    line=$(for r in $(seq "$REPS"); do echo "${lines[$ov,$r]}"; done |
           sort -t= -k4 -g | awk -v n="$REPS" 'NR == int((n + 1) / 2)')
    s=$(echo "$line" | step)
    med[$grid,$ov]=$s
    echo "$line   ratio to 1x2 threads = $(python3 -c "print(f'{$ceil/$s:.3f}')")"
  done
  python3 - "$grid" "${med[$grid,1]}" "${med[$grid,0]}" "${med[$grid,2]}" <<'PY'
import sys
g, force, off, auto = sys.argv[1], *map(float, sys.argv[2:])
print(f"  {g}: median step forced {force:.4f} s, off {off:.4f} s, auto {auto:.4f} s; "
      f"auto/off {auto / off:.3f} ({'auto not slower' if auto <= off * 1.02 else 'AUTO SLOWER'}"
      f" than off, 2% noise allowed); forced/off {force / off:.3f}")
PY
done
