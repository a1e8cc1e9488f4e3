#!/usr/bin/env bash
# Runs every MPI test driver (build/tests/mpi/*, built by scons from tests/mpi/*.c) under
# mpirun at several grids. A driver takes `--grid DxXxYxZ`, reduces its verdict over all ranks
# and exits nonzero on every rank when it fails. Prints "mpi: N passed, N failed".
# Usage: tests/mpi/run.sh [BUILD_DIR [DRIVER...]]   (default: build, every tests/mpi/*.c)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# Shared memory only, the same transport every time: ob1 + vader (UCX/ofi probe for
# networks a container lacks), no single-copy CMA (needs ptrace rights containers often
# deny), no binding (8 ranks share 2 cores).
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
grids="1x1x1x1 2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2 2x2x2x1 1x2x2x2 2x1x2x2"
# the collectives' driver also runs on 3 ranks (odd rings) and 4 (every typed call on 4-wide axes)
comm_grids="3x1x1x1 4x1x1x1 1x2x1x2"
# imported Hugging Face fixtures: tensor-parallel X and Y, ZeRO Z, and 4 batch parts
hf_grids="1x2x1x1 1x1x2x1 2x1x2x2"
# DP-SGD: each axis alone, two 4-rank mixtures (tensor-parallel X and Y; data and Z) and one of 8
dp_grids="1x1x1x1 2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2 1x2x2x1 2x1x1x2 2x1x2x2"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  # the grid drivers; memscan's driver takes ranks, not grids (tests/mpi/memscan.sh runs it)
  names=(mpi_comm mpi_stage mpi_model mpi_plan mpi_hf mpi_dp)
fi
drivers=()
for name in "${names[@]}"; do
  exe="$build/tests/mpi/$name"
  if [ ! -x "$exe" ]; then
    echo "mpi: $exe is missing; build it with scons first"
    exit 1
  fi
  drivers+=("$exe")
done

passed=0
failed=0
for exe in "${drivers[@]}"; do
  g=$grids
  [ "$(basename "$exe")" = mpi_comm ] && g="$grids $comm_grids"
  # device-memory staging (a guarded fake device): the axis shapes that differ
  [ "$(basename "$exe")" = mpi_stage ] && g="1x1x1x1 2x1x1x1 1x2x1x2 2x1x2x2 3x1x1x1"
  [ "$(basename "$exe")" = mpi_hf ] && g=$hf_grids
  [ "$(basename "$exe")" = mpi_dp ] && g=$dp_grids
  for grid in $g; do
    np=$(( ${grid//x/*} ))
    log=$(mktemp)
    t0=$SECONDS
    if timeout 120 "${MPIRUN[@]}" -np "$np" "$exe" --grid "$grid" >"$log" 2>&1; then
      passed=$((passed + 1))
      echo "ok   $(basename "$exe") $grid (np $np, $((SECONDS - t0))s)"
    else
      failed=$((failed + 1))
      echo "FAIL $(basename "$exe") $grid (np $np, $((SECONDS - t0))s):"
      tail -n 30 "$log" | sed 's/^/    /'
    fi
    rm -f "$log"
  done
done
echo "mpi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
