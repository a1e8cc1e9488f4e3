#!/usr/bin/env bash
# memscan under MPI: per-token scores on grids against 1 rank (mpi_score); the index driver
# checks every result against a brute-force reference, on 1, 2 and 4 ranks, with full hashes
# and with hashes masked to 3 bits (collisions everywhere).
# usage: tests/mpi/memscan.sh [BUILD_DIR]   (default build)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
DRIVER=$B/tests/mpi/mpi_memscan
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
[ -x "$DRIVER" ] || { echo "memscan.sh: $DRIVER not built (run scons)"; exit 1; }
T=$(mktemp -d /tmp/axmem-mpi-memscan.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
for np in 1 2 4; do
  for bits in 64 3; do
    mpirun --oversubscribe -np "$np" "$DRIVER" --bits "$bits" --dir "$T/np$np-b$bits" || fail=1
  done
done

# per-token scores (memscan mia, exposure) on grids equal the single-rank ones
for grid in 2x1x2x1 1x2x1x2; do
  np=$(( ${grid//x/*} ))
  mpirun --oversubscribe -np "$np" "$B/tests/mpi/mpi_score" --grid "$grid" || fail=1
done

# the CLI under mpirun: the index written by 3 ranks matches the serial one
AX=$B/bin/axmem
if [ -x "$AX" ] && [ -x "$B/tests/mpi/mpi_memscan" ]; then
  mpirun --oversubscribe -np 1 "$DRIVER" --dir "$T/cli" >/dev/null || fail=1
  D=$T/cli/planted.axd
  "$AX" memscan index --data "$D" --out "$T/serial.idx" --n 12 >/dev/null || fail=1
  mpirun --oversubscribe -np 3 "$AX" memscan index --data "$D" --out "$T/mpi.idx" --n 12 \
    --round-windows 1000 >"$T/mpi.out" || fail=1
  # same header, histogram and counts whatever the rank count (build_ranks aside)
  a=$("$AX" memscan info --json --verify "$T/serial.idx" | sed 's/"build_ranks":[0-9]*//')
  b=$("$AX" memscan info --json --verify "$T/mpi.idx" | sed 's/"build_ranks":[0-9]*//')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "memscan CLI: 3-rank index matches serial: ok"
  else echo "memscan CLI: 3-rank index differs from serial: FAILED"; fail=1; fi
  grep -q "built on 3 ranks" "$T/mpi.out" || { echo "memscan CLI: no summary from rank 0"; fail=1; }
fi
exit $fail
