#!/usr/bin/env bash
# axmem against tuned PyTorch on the same shapes, in one run (issue 14 item 6): training
# (bench_train vs torch_train.py: Llama-style GPT-2-124M, B=4, T=64 and 256) and KV-cached
# greedy decoding (bench_decode vs torch_decode.py: batch 32 and 1, 64 positions). Each pair
# runs REPS times (default 3), alternating axmem and PyTorch so both see the same load; prints
# the medians of tokens/s and the ratio axmem / PyTorch. Same threads for both (THREADS,
# default 2). PyTorch is tuned as torch_model.py says (OMP_WAIT_POLICY=PASSIVE, one pool of
# THREADS, OPENBLAS_CORETYPE=SkylakeX or Haswell by the CPU for an OpenBLAS build); the BLAS it was built with is
# printed. Needs a quiet machine for numbers that mean anything.
# Usage: bench/peers/compare_torch.sh [build] [--quick]
#   --quick: one short repetition of small cases (checks that everything runs; not a measurement)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    *) build=$a ;;
  esac
done
THREADS=${THREADS:-2}
REPS=${REPS:-3}
PY=${PYTHON:-python3}
steps=6 positions=64 Ts="64 256" Bs="32 1"
if [ $quick = 1 ]; then REPS=1 steps=1 positions=4 Ts="64" Bs="1"; fi
"$PY" -c "import torch" 2>/dev/null || { echo "compare_torch: PyTorch is not importable by $PY (pip install torch, or apt install python3-torch)"; exit 1; }
# Debian's python3-torch takes whatever libblas.so.3 the alternatives name: the reference BLAS
# (libblas3) unless an OpenBLAS is installed, and that is no peer at its best
"$PY" -c "import sys; sys.path.insert(0, 'bench/peers'); import torch_model
sys.exit(1 if torch_model.reference_blas(torch_model.setup(1)) else 0)" || {
  echo "compare_torch: PyTorch runs on the reference BLAS (libblas3); install OpenBLAS first (apt-get install libopenblas0-openmp) so it is measured at its best"
  exit 1
}
for b in bench_train bench_decode; do
  [ -x "$build/bench/$b" ] || { echo "compare_torch: $build/bench/$b is missing; build with scons first"; exit 1; }
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(f'{a / b:.2f}' if b > 0 else 'n/a')" "$1" "$2"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "threads $THREADS, $REPS repetitions each, medians of tokens/s; $("$PY" -c "
import sys; sys.path.insert(0, 'bench/peers'); import torch_model
t = torch_model.setup($THREADS); print('PyTorch', t.__version__, torch_model.blas(t))")"
for T in $Ts; do
  : >"$tmp/ax" && : >"$tmp/pt"
  for _ in $(seq "$REPS"); do
    OMP_NUM_THREADS=$THREADS "$build/bench/bench_train" "$steps" 4 "$T" | sed -n 's/^  tokens\/s \([0-9.]*\).*/\1/p' >>"$tmp/ax"
    "$PY" bench/peers/torch_train.py --threads "$THREADS" --steps "$steps" --batch 4 --seq-len "$T" |
      sed -n 's/.* tokens\/s \([0-9.]*\) .*/\1/p' >>"$tmp/pt"
  done
  ax=$(median <"$tmp/ax") pt=$(median <"$tmp/pt")
  echo "train  B=4 T=$T:  axmem $ax tokens/s, PyTorch $pt tokens/s, axmem/PyTorch $(ratio "$ax" "$pt")"
done
for B in $Bs; do
  : >"$tmp/ax" && : >"$tmp/pt"
  for _ in $(seq "$REPS"); do
    OMP_NUM_THREADS=$THREADS "$build/bench/bench_decode" "$B" "$positions" |
      sed -n 's/.* ms per step, \([0-9.]*\) tokens\/s.*/\1/p' >>"$tmp/ax"
    "$PY" bench/peers/torch_decode.py --threads "$THREADS" --batch "$B" --positions "$positions" |
      sed -n 's/.* tokens\/s \([0-9.]*\) .*/\1/p' >>"$tmp/pt"
  done
  ax=$(median <"$tmp/ax") pt=$(median <"$tmp/pt")
  echo "decode B=$B ($positions positions): axmem $ax tokens/s, PyTorch $pt tokens/s, axmem/PyTorch $(ratio "$ax" "$pt")"
done
