#!/usr/bin/env bash
# `axmem train` on MPI grids against the single-rank run, through the CLI a user runs:
# per-step losses agree (relative difference < 1e-4) with overlap forced and off (and the default,
# auto, falls back per axis and says so in the log and metrics.jsonl), and a checkpoint
# written on 2x2x2x1 resumes on 1x1x1x1, 1x2x1x2 and (given only --out and --grid) 1x2x1x1
# with the same losses. A run that diverges, or resumes an edited manifest, fails on every rank
# without hanging; rank 0 holds the --out lock for all of them.
# Usage: tests/mpi/train.sh [path/to/axmem]. Prints "mpi-train: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
source tests/mpi/lib.sh mpitrain
corpus 60 mpi-train
ARGS=(--data "$T/c.axd" --layers 2 --dim 32 --heads 4 --ffn 48 --seq-len 32 --batch 8 --lr 3e-3
      --warmup 2 --steps 8 --log-every 100)

# compare A B [FROM]: losses of runs A and B agree from step FROM on (rel < 1e-4)
compare() {
  python3 - "$T/$1/metrics.jsonl" "$T/$2/metrics.jsonl" "${3:-1}" <<'PY'
import json, sys
a = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
b = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
steps = [s for s in sorted(b) if s >= int(sys.argv[3])]
bad = [(s, a.get(s), b[s]) for s in steps if s not in a or abs(a[s] - b[s]) > 1e-4 * abs(a[s])]
if not steps or bad:
    print("     mismatched steps (step, reference, this):", bad[:3] or "none compared")
    sys.exit(1)
PY
}

train_on ref 1x1x1x1 && ok "reference run 1x1x1x1" || bad "reference run 1x1x1x1"
for grid in 2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2 2x2x2x1 1x2x2x2 2x1x2x2; do
  for ov in --force-overlap --no-overlap; do
    name="g$grid$ov"
    if train_on "$name" "$grid" "$ov" && compare ref "$name"; then ok "losses $grid $ov = 1x1x1x1"
    else bad "losses $grid $ov = 1x1x1x1"; fi
  done
done

# the default overlap (auto) on 1x2x1x2: both axes' ranks share this host, so both fall back to
# blocking collectives; the start summary and every metrics line say so per axis, and forced
# overlap is reported as such. The losses equal the forced run's.
if train_on auto 1x2x1x2 && compare ref auto && grep -q "overlap on axis x (2 ranks): off: its 2 ranks share one host" "$T/err" &&
   grep -q "overlap on axis z (2 ranks): off: its 2 ranks share one host" "$T/err" &&
   python3 -c '
import json, sys
a = [json.loads(l)["overlap"] for l in open(sys.argv[1])]
f = [json.loads(l)["overlap"] for l in open(sys.argv[2])]
ok = a and all(sorted(o) == ["x", "z"] and all("share one host" in v and v.startswith("off: ")
                                                for v in o.values()) for o in a)
ok = ok and f and all(o == {"x": "on: forced"} for o in f)
sys.exit(0 if ok else 1)' "$T/auto/metrics.jsonl" "$T/g1x2x1x1--force-overlap/metrics.jsonl"
then ok "overlap auto falls back per axis on one host, reported in the log and metrics"
else bad "overlap auto falls back per axis on one host, reported in the log and metrics"; fi
# ... and, given enough steps, times both schedules on such an axis (a warm-up step, then twelve
# in the order on off off on off on on off off on on off) and keeps the faster, saying what it measured; the
# losses are those of --no-overlap bit for bit, as either schedule gives the same bits.
if train_on trial_off 1x1x2x1 --steps 14 --no-overlap && train_on trial 1x1x2x1 --steps 14 &&
   grep -q "overlap on axis y (2 ranks): off: its 2 ranks share one host.*; the first steps time both schedules" "$T/err" &&
   grep -qE "overlap on axis y \(2 ranks\): (on|off): measured, overlapped steps [0-9.]+x the blocking ones" "$T/err" &&
   python3 -c '
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
o = [json.loads(l) for l in open(sys.argv[2])]
why = [r["overlap"]["y"] for r in t]
want = ["%s: timing both schedules (step %d of 12)" % (s, i + 1)
        for i, s in enumerate("on off off on off on on off off on on off".split())]
ok = len(t) == 14 and why[0].startswith("off: its 2 ranks share one host") and why[1:13] == want
ok = ok and why[13].split(":")[0] in ("on", "off") and "measured" in why[13]
ok = ok and [r["loss"] for r in t] == [r["loss"] for r in o]
if not ok: print("     ", why, [r["loss"] for r in t], [r["loss"] for r in o])
sys.exit(0 if ok else 1)' "$T/trial/metrics.jsonl" "$T/trial_off/metrics.jsonl"
then ok "overlap auto times both schedules on a one-host axis, same losses as --no-overlap"
else bad "overlap auto times both schedules on a one-host axis, same losses as --no-overlap"; fi
if train_on both 1x2x1x1 --force-overlap --no-overlap; then bad "--force-overlap with --no-overlap refused"
elif grep -q "contradicts --no-overlap" "$T/err"; then ok "--force-overlap with --no-overlap refused"
else bad "--force-overlap with --no-overlap refused"; fi

# gradient accumulation: micro-batches of 4 (1 per batch rank on 2x1x1x2) = the whole batch
if train_on mb-ref 1x1x1x1 --micro-batch 4 && compare ref mb-ref; then ok "micro-batches 2x4 = batch 8"
else bad "micro-batches 2x4 = batch 8"; fi
if train_on mb-grid 2x1x1x2 --micro-batch 4 && compare ref mb-grid; then ok "micro-batches on 2x1x1x2 = batch 8 on 1 rank"
else bad "micro-batches on 2x1x1x2 = batch 8 on 1 rank"; fi

# goldfish on a grid: the same masks and the same normalisation as on one rank
train_on gf-ref 1x1x1x1 --goldfish hash:k=3,h=4 && ok "goldfish reference run" || bad "goldfish reference run"
if train_on gf-grid 2x2x2x1 --goldfish hash:k=3,h=4 && compare gf-ref gf-grid; then ok "goldfish losses 2x2x2x1 = 1x1x1x1"
else bad "goldfish losses 2x2x2x1 = 1x1x1x1"; fi
python3 -c '
import json,sys
d=[json.loads(l)["dropped_frac"] for l in open(sys.argv[1])]
sys.exit(0 if all(0.2 < x < 0.45 for x in d) else 1)' "$T/gf-grid/metrics.jsonl" \
  && ok "goldfish dropped_frac near 1/3 in metrics" || bad "goldfish dropped_frac near 1/3 in metrics"

# checkpoints cross grids: written on 2x2x2x1, resumed elsewhere
train_on src 2x2x2x1 --ckpt-every 4 && ok "train 2x2x2x1 with checkpoints" || bad "train 2x2x2x1 with checkpoints"
for grid in 1x1x1x1 1x2x1x2; do
  name="resume$grid"
  mkdir -p "$T/$name/ckpt" && cp -r "$T/src/ckpt/step-000004" "$T/$name/ckpt/"
  if train_on "$name" "$grid" --resume && compare src "$name" 5; then ok "2x2x2x1 checkpoint resumes on $grid"
  else bad "2x2x2x1 checkpoint resumes on $grid"; fi
done
# --resume needs nothing but --out (and the new grid): the rest comes from the manifest
mkdir -p "$T/bare/ckpt" && cp -r "$T/src/ckpt/step-000004" "$T/bare/ckpt/"
if timeout 300 "${MPIRUN[@]}" -np 2 "$AX" train --out "$T/bare" --resume --grid 1x2x1x1 >/dev/null 2>"$T/err" &&
   compare src bare 5; then ok "--out DIR --resume --grid 1x2x1x1 alone continues the 2x2x2x1 run"
else bad "--out DIR --resume --grid 1x2x1x1 alone continues the 2x2x2x1 run"; fi
# scans on a grid: the probe's greedy continuations equal the single-rank ones
"$AX" memscan probe --ckpt "$T/ref" --data "$T/c.axd" --samples 8 --prefix 8 --suffix 8 --batch 4 \
  --out "$T/p1.json" --samples-out "$T/p1.jsonl" >/dev/null 2>"$T/err"
"${MPIRUN[@]}" -np 8 "$AX" memscan probe --ckpt "$T/ref" --data "$T/c.axd" --samples 8 --prefix 8 \
  --suffix 8 --batch 4 --grid 2x1x2x2 --out "$T/p8.json" --samples-out "$T/p8.jsonl" >/dev/null 2>"$T/err"
if [ -s "$T/p1.jsonl" ] && cmp -s "$T/p1.jsonl" "$T/p8.jsonl"; then ok "probe on 2x1x2x2 = 1x1x1x1"
else bad "probe on 2x1x2x2 = 1x1x1x1"; fi

# an impossible grid is refused with the numbers named
if train_on badgrid 1x1x3x1 2>/dev/null; then bad "heads not divisible by Gy refused"
elif grep -q "heads" "$T/err"; then ok "heads not divisible by Gy refused"; else bad "heads not divisible by Gy refused"; fi
if "$AX" train "${ARGS[@]}" --grid 2x1x1x1 --out "$T/x" 2>"$T/err"; then bad "grid without mpirun refused"
elif grep -q "mpirun" "$T/err"; then ok "grid without mpirun refused"; else bad "grid without mpirun refused"; fi

# a run that diverges stops on every rank at the same step, with the error and no checkpoint
# (the loss and gradient norm are all-reduced; the ranks agree before anything is written)
for grid in 2x1x1x1 1x2x1x1; do
  rm -rf "$T/div$grid"
  timeout 120 "${MPIRUN[@]}" -np 2 "$AX" train "${ARGS[@]}" --lr 10 --grad-clip 0 --warmup 0 \
    --beta2 0 --eps 0 --weight-decay 0 --steps 40 --grid "$grid" --out "$T/div$grid" >/dev/null 2>"$T/err"
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qE "step [0-9]+: training diverged" "$T/err" &&
     [ ! -d "$T/div$grid/ckpt" ]; then ok "a diverging run on $grid stops on every rank, no checkpoint"
  else echo "     (exit $rc)"; bad "a diverging run on $grid stops on every rank, no checkpoint"; fi
done
# an edited manifest is refused on every rank
rm -rf "$T/edited" && cp -r "$T/src" "$T/edited"
python3 -c '
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["state"]["optim_t"] = -5; json.dump(m, open(p, "w"))' \
  "$T/edited/ckpt/step-000008/manifest.json"
timeout 120 "${MPIRUN[@]}" -np 2 "$AX" train --out "$T/edited" --resume --grid 1x2x1x1 --steps 10 \
  >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'state "optim_t" is -5' "$T/err" &&
   [ ! -d "$T/edited/ckpt/step-000010" ]; then ok "an edited manifest is refused on 1x2x1x1"
else echo "     (exit $rc)"; bad "an edited manifest is refused on 1x2x1x1"; fi
# rank 0 locks --out: a 2-rank run into a folder a run holds is refused on every rank
"$AX" train "${ARGS[@]}" --steps 3000 --out "$T/busy" >/dev/null 2>"$T/busy.err" &
A=$!
for i in $(seq 200); do [ -e "$T/busy/.lock" ] && break; sleep 0.05; done
timeout 120 "${MPIRUN[@]}" -np 2 "$AX" train "${ARGS[@]}" --steps 3000 --grid 2x1x1x1 --out "$T/busy" \
  >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "is in use: axmem train PID $A" "$T/err"; then
  ok "a 2-rank run into a busy --out is refused"
else echo "     (exit $rc)"; bad "a 2-rank run into a busy --out is refused"; fi
kill -TERM "$A" 2>/dev/null
wait "$A"
timeout 120 "${MPIRUN[@]}" -np 2 "$AX" train --out "$T/busy" --resume --grid 2x1x1x1 --exit-after-steps 2 \
  >/dev/null 2>"$T/err"
rc=$?
if [ "$rc" = 75 ] && [ ! -e "$T/busy/.lock" ]; then ok "... and once it stopped, a 2-rank resume takes and releases the lock"
else echo "     (exit $rc)"; bad "... and once it stopped, a 2-rank resume takes and releases the lock"; fi

finish mpi-train
