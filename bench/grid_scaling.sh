#!/usr/bin/env bash
# 2 ranks x 1 thread against 1 rank x 2 threads, same model and global batch (issue target:
# >= 0.85 with overlap on). The 1x2 rate is measured first in the same run and is the ceiling.
# Usage: bench/grid_scaling.sh [build]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}/bench/bench_grid
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
rate() { sed -n 's/.*tokens\/s=\([0-9.]*\).*/\1/p'; }
line=$(OMP_NUM_THREADS=2 "$B" --grid 1x1x1x1)
echo "$line   (1 rank x 2 threads: the ceiling)"
ceil=$(echo "$line" | rate)
for grid in 2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2; do
  for ov in 1 0; do
    line=$(OMP_NUM_THREADS=1 "${MPIRUN[@]}" -np 2 "$B" --grid "$grid" --overlap "$ov")
    r=$(echo "$line" | rate)
    echo "$line   ratio to 1x2 threads = $(python3 -c "print(f'{$r/$ceil:.3f}')")"
  done
done
