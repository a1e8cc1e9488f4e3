# What the MPI CLI scripts share, on top of tests/cli/lib.sh's checks (`source tests/mpi/lib.sh
# TAG` from the repository root): the shared-memory mpirun line, the small dataset they train on,
# and training one run on a grid.
source tests/cli/lib.sh "$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# shared memory only: ob1 + vader, no single-copy CMA, no binding (8 ranks share 2 cores)
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)

# corpus LINES LABEL: $T/c.axd, the first LINES documents of the bundled corpus with a 301-token
# vocabulary (odd: the vocabulary shards over Y are padded); on failure, ends the script
corpus() {
  head -n "$1" data/corpus/kjv.jsonl >"$T/c.jsonl"
  "$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 301 --out "$T/tok" 2>"$T/err" &&
    "$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/c.axd" 2>"$T/err" ||
    { bad "prepare data"; finish "$2"; exit 1; }
}

# train_on NAME GRID [FLAG...]: axmem train "${ARGS[@]}" on GRID (under mpirun past one rank)
# into $T/NAME, its stderr in $T/err
train_on() {
  local name=$1 grid=$2; shift 2
  local np=$(( ${grid//x/*} ))
  if [ "$np" = 1 ]; then "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/$name" "$@" 2>"$T/err"
  else timeout 300 "${MPIRUN[@]}" -np "$np" "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/$name" "$@" >/dev/null 2>"$T/err"; fi
}
