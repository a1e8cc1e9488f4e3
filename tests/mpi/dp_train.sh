#!/usr/bin/env bash
# DP-SGD training on MPI grids against the single-rank run, through the CLI: the ranks that
# split the batch draw the same Poisson sample and spread it over their rows, every example's
# gradient is clipped on its own and the noise is added once, so per-step losses and gradient
# norms agree (relative difference < 1e-4) and the sampled counts and epsilon are identical on
# 2x1x1x1, 1x1x1x2 and 2x1x1x2 (data and Z; the tensor-parallel grids are lib/model's tests).
# Usage: tests/mpi/dp_train.sh [path/to/axmem]. Prints "mpi-dp-train: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
source tests/mpi/lib.sh mpidp
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT # KEEP=1 keeps the runs
corpus 40 mpi-dp-train
# little noise, so the clipped sum shows in the gradient norm; an expected batch of 8 in
# micro-batches of 4 (2 rows a rank on two ranks, 1 on four): steps take 6 to 14 examples, so
# some micro-batches are partly padding
ARGS=(--data "$T/c.axd" --layers 2 --dim 32 --heads 4 --ffn 48 --seq-len 32 --batch 8
      --micro-batch 4 --lr 1e-2 --warmup 2 --steps 6 --log-every 100 --dp-clip 0.5
      --dp-noise 0.05 --dp-delta 1e-5)

compare() { # compare A B: losses and gradient norms within 1e-4, samples and epsilon equal
  python3 - "$T/$1/metrics.jsonl" "$T/$2/metrics.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
bad = []
for x, y in zip(a, b):
    for k in ("loss", "grad_norm"):
        if abs(x[k] - y[k]) > 1e-4 * abs(x[k]):
            bad.append((x["step"], k, x[k], y[k]))
    for k in ("dp_examples", "dp_epsilon"):
        if x[k] != y[k]:
            bad.append((x["step"], k, x[k], y[k]))
if len(a) != 6 or len(b) != 6 or bad:
    print("     mismatched (step, key, reference, this):", bad[:3], len(a), len(b))
    sys.exit(1)
PY
}

train_on ref 1x1x1x1 && ok "DP reference run 1x1x1x1" || bad "DP reference run 1x1x1x1"
python3 -c '
import json, sys
n = [json.loads(l)["dp_examples"] for l in open(sys.argv[1])]
sys.exit(0 if any(k % 4 for k in n) else 1)' "$T/ref/metrics.jsonl" &&
  ok "the sample sizes vary and leave padded micro-batches" ||
  bad "the sample sizes vary and leave padded micro-batches"
for grid in 2x1x1x1 1x1x1x2 2x1x1x2; do
  if train_on "g$grid" "$grid" && compare ref "g$grid"; then ok "DP-SGD on $grid = 1x1x1x1"
  else bad "DP-SGD on $grid = 1x1x1x1"; fi
done
finish mpi-dp-train
