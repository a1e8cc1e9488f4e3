#!/usr/bin/env bash
# axmem plan against measured step times on this machine: measures the machine's profile
# (`axmem plan --measure` under mpirun -np 2, one thread a rank, as the grids run), predicts
# the step time of bench/grid_scaling.sh's grids (bench_grid's model, global batch 8 x 128
# tokens, 2 ranks, overlap on and off), measures them, and prints both side by side with the
# ratio and whether the predicted ordering matches the measured one (issue 14: same order,
# step times within 25%). Needs a quiet machine for numbers that mean anything.
# Usage: bench/plan_validate.sh [build] [--quick]
#   --quick: 2 timed steps per grid with bench_grid directly instead of grid_scaling.sh
#            (checks the script works; not a measurement)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    *) build=$a ;;
  esac
done
AX=$build/bin/axmem
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
OMP_NUM_THREADS=1 "${MPIRUN[@]}" -np 2 "$AX" plan --measure --out "$tmp/cpu.json" >/dev/null
echo "profile: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['source'])" "$tmp/cpu.json")"
shape=(--layers 4 --dim 512 --heads 8 --ffn 1376 --vocab 8192 --seq-len 128 --global-batch 8
       --devices 2 --machine "$tmp/cpu.json" --json --top 100)
"$AX" plan "${shape[@]}" >"$tmp/plan1.json"
"$AX" plan "${shape[@]}" --no-overlap >"$tmp/plan0.json"
grids="2x1x1x1 1x2x1x1 1x1x2x1 1x1x1x2"
: >"$tmp/measured.txt"
if [ $quick = 1 ]; then
  for grid in $grids; do
    for ov in 1 0; do
      OMP_NUM_THREADS=1 "${MPIRUN[@]}" -np 2 "$build/bench/bench_grid" --grid "$grid" \
        --overlap "$ov" --steps 2 >>"$tmp/measured.txt"
    done
  done
else
  bash bench/grid_scaling.sh "$build" | tee "$tmp/scaling.txt" | grep -v "1 rank x 2" \
    >>"$tmp/measured.txt"
fi
python3 - "$tmp" <<'PY'
import json, re, sys
tmp = sys.argv[1]
pred = {}
for ov in (0, 1):
    for g in json.load(open(f"{tmp}/plan{ov}.json"))["grids"]:
        pred[(g["grid"], ov)] = g
meas = {}
for line in open(f"{tmp}/measured.txt"):
    m = re.search(r"bench_grid (\S+) overlap=(\d) .*step_s=([0-9.]+)", line)
    if m:
        meas[(m.group(1), int(m.group(2)))] = float(m.group(3))
rows = [k for k in meas if k in pred]
print(f"{'grid':10} {'overlap':7} {'predicted_s':>11} {'measured_s':>10} {'pred/meas':>9}  "
      f"breakdown (compute; exposed comm data/x/y/z)")
worst = 0
for k in sorted(rows):
    p = pred[k]
    r = p["step_s"] / meas[k]
    worst = max(worst, abs(r - 1))
    e = p["exposed_s"]
    print(f"{k[0]:10} {k[1]:7} {p['step_s']:11.4f} {meas[k]:10.4f} {r:9.3f}  "
          f"{p['compute_s']:.4f}; {e['data']:.4f}/{e['x']:.4f}/{e['y']:.4f}/{e['z']:.4f}")
for ov in (1, 0):
    ks = [k for k in rows if k[1] == ov]
    po = [k[0] for k in sorted(ks, key=lambda k: pred[k]["step_s"])]
    mo = [k[0] for k in sorted(ks, key=lambda k: meas[k])]
    print(f"overlap={ov}: predicted order {' < '.join(po)}")
    print(f"overlap={ov}: measured  order {' < '.join(mo)}  -> "
          f"{'same' if po == mo else 'DIFFERENT'}")
print(f"largest step-time error: {100 * worst:.1f}% (target: within 25%)")
PY
