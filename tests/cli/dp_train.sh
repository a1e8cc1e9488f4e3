#!/usr/bin/env bash
# DP-SGD in `axmem train` as a user meets it: a tiny model trained with --dp-epsilon writes
# epsilon after every step to metrics.jsonl (growing, ending within the target, equal to what
# `axmem dp` computes for the run's q, sigma and steps), the privacy state to the checkpoint
# manifest (unit, sampling, clip, noise, rate, delta, epsilon, the accountant), says which unit
# the guarantee covers, takes the flags from a --config file, continues epsilon exactly when
# stopped and resumed, and refuses inconsistent flags with one line naming them (exit 2).
# Usage: tests/cli/dp_train.sh [path/to/axmem]. Prints ok/FAIL lines, then "N passed, N failed".
set -uo pipefail
AX=$(realpath "${1:-build/bin/axmem}")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1
T=$(mktemp -d /tmp/axmem-dp-train.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && tail -3 "$T/err" | sed 's/^/     | /'; }

# expect_fail NAME PATTERN ARGS...: `axmem train ARGS` exits 2 with a stderr line matching
expect_fail() {
  local name=$1 pat=$2; shift 2
  "$AX" train "${ARGS[@]}" --out "$T/bad" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -qE -- "$pat" "$T/err" && [ ! -d "$T/bad/ckpt" ]; then ok "$name"
  else echo "     (exit $rc; wanted 2 and stderr ~ /$pat/)"; bad "$name"; fi
}

head -n 30 data/corpus/kjv.jsonl >"$T/c.jsonl"
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/tok" 2>"$T/err" &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/c.axd" 2>"$T/err" ||
  { bad "prepare data"; echo "$pass passed, $fail failed"; exit 1; }
ARGS=(--data "$T/c.axd" --layers 2 --dim 32 --heads 4 --ffn 48 --seq-len 32 --batch 8
      --micro-batch 4 --steps 10 --warmup 2 --log-every 5)

# ---- a run with a target epsilon
if "$AX" train "${ARGS[@]}" --dp-clip 1 --dp-epsilon 3 --dp-delta 1e-5 --out "$T/run" \
     >"$T/out" 2>"$T/err"; then ok "train --dp-clip 1 --dp-epsilon 3 --dp-delta 1e-5"
else bad "train --dp-clip 1 --dp-epsilon 3 --dp-delta 1e-5"; fi
grep -q "guarantee covers one training sequence of 32 tokens" "$T/err" &&
  grep -qE "^train 10/10 .*eps [0-9.]+ " "$T/err" &&
  grep -qE "DP-SGD: \(epsilon [0-9.]+, delta 1e-05\)-DP after 10 steps; the unit of privacy is one training sequence of 32 tokens" "$T/err" &&
  ok "the log names the unit of privacy; progress and summary show epsilon" ||
  bad "the log names the unit of privacy; progress and summary show epsilon"

# metrics and manifest, and `axmem dp` on the run's settings as the independent path
python3 - "$T/run" >"$T/dpargs" 2>"$T/err" <<'PY'
import json, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(run + "/metrics.jsonl")]
assert [r["step"] for r in rows] == list(range(1, 11)), "one line per step"
eps = [r["dp_epsilon"] for r in rows]
assert all(b > a for a, b in zip(eps, eps[1:])), f"epsilon does not grow: {eps}"
assert eps[-1] <= 3 and eps[-1] > 3 * (1 - 1e-6), f"final epsilon {eps[-1]} is not the target 3"
assert all(r["dp_examples"] >= 0 and 0 <= r["dp_clipped_frac"] <= 1 for r in rows)
man = json.load(open(run + "/ckpt/step-000010/manifest.json"))
dp, cfg = man["state"]["dp"], man["config"]
for k in ("unit", "sampling", "clip", "noise", "sample_rate", "delta", "epsilon", "steps",
          "examples", "expected_batch", "accountant"):
    assert k in dp, f"manifest state dp lacks {k}"
assert dp["unit"] == "one training sequence of 32 tokens" and dp["sampling"] == "poisson"
assert dp["steps"] == 10 and dp["epsilon"] == eps[-1] and dp["delta"] == 1e-5
assert abs(dp["sample_rate"] * dp["examples"] - 8) < 1e-9, "expected batch = --batch"
assert cfg["dp-clip"] == 1 and cfg["dp-epsilon"] == 3 and cfg["dp-delta"] == 1e-5
assert cfg["grad-clip"] == 0, "the global clip is off under DP-SGD"
print(repr(dp["sample_rate"]), repr(dp["noise"]), repr(eps[-1]), repr(eps[4]))
PY
if [ $? -eq 0 ]; then ok "epsilon grows each step to the target; the manifest holds the privacy state"
else bad "epsilon grows each step to the target; the manifest holds the privacy state"; fi
read -r Q SIGMA EPS10 EPS5 <"$T/dpargs"
for s in 5 10; do
  want=$([ $s = 5 ] && echo "$EPS5" || echo "$EPS10")
  got=$("$AX" dp --sample-rate "$Q" --steps $s --noise "$SIGMA" --delta 1e-5 --json 2>/dev/null |
        python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["epsilon"]))')
  if python3 -c "import sys; a,b=float('$got'),float('$want'); sys.exit(abs(a-b) > 1e-12*b)"; then
    ok "epsilon at step $s equals axmem dp's ($want)"
  else bad "epsilon at step $s equals axmem dp's ($got vs $want)"; fi
done

# ---- the flags from a --config file, a fixed noise; stopped after 4 steps and resumed: the
# same metrics (but timings) as the uninterrupted run
printf 'dp-clip = 0.5\ndp-noise = 1.1\ndp-delta = 1e-5\ndp-sample-rate = 0.005\n' >"$T/dp.cfg"
"$AX" train "${ARGS[@]}" --config "$T/dp.cfg" --out "$T/full" >/dev/null 2>"$T/err" &&
  "$AX" train "${ARGS[@]}" --config "$T/dp.cfg" --out "$T/part" --exit-after-steps 4 \
    >/dev/null 2>"$T/err"
rc=$?
"$AX" train --out "$T/part" --resume >/dev/null 2>"$T/err"
rc2=$?
strip() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["step"], repr(r["loss"]), repr(r["grad_norm"]), repr(r["dp_epsilon"]), r["dp_examples"])' "$1"; }
if [ "$rc" = 75 ] && [ "$rc2" = 0 ] && strip "$T/full/metrics.jsonl" >"$T/a" &&
   strip "$T/part/metrics.jsonl" >"$T/b" && cmp -s "$T/a" "$T/b" && [ "$(wc -l <"$T/a")" = 10 ]; then
  ok "a resumed DP run continues losses and epsilon exactly"
else echo "     (exits $rc, $rc2)"; diff "$T/a" "$T/b" | head -4; bad "a resumed DP run continues losses and epsilon exactly"; fi
python3 -c '
import json, sys
d = json.load(open(sys.argv[1] + "/ckpt/step-000010/manifest.json"))["state"]["dp"]
assert d["noise"] == 1.1 and d["sample_rate"] == 0.005 and d["clip"] == 0.5 and d["steps"] == 10
assert "target_epsilon" not in d' "$T/part" 2>"$T/err" &&
  ok "--config dp-* settings reach the manifest" || bad "--config dp-* settings reach the manifest"

# ---- inconsistent flags: one line naming them, exit 2, nothing written
expect_fail "noise and epsilon both" "--dp-noise and --dp-epsilon both given" \
  --dp-clip 1 --dp-noise 1 --dp-epsilon 3 --dp-delta 1e-5
expect_fail "epsilon without delta" "--dp-delta is missing" --dp-clip 1 --dp-epsilon 3
expect_fail "clip without noise" "--dp-clip needs the noise" --dp-clip 1 --dp-delta 1e-5
expect_fail "clip 0" "--dp-clip must be above 0" --dp-clip 0 --dp-noise 1 --dp-delta 1e-5
expect_fail "noise without clip" "--dp-noise is a DP-SGD setting: give --dp-clip" --dp-noise 1
expect_fail "grad-clip beside DP" "--grad-clip with --dp-clip" \
  --dp-clip 1 --dp-noise 1 --dp-delta 1e-5 --grad-clip 0.5
expect_fail "delta of 1/N or more" "--dp-delta 0.01 is not below 1 / [0-9]+ \(the training sequences" \
  --dp-clip 1 --dp-noise 1 --dp-delta 0.01
expect_fail "batch above the examples" "--batch 100000 is more than the [0-9]+ training sequences" \
  --dp-clip 1 --dp-noise 1 --dp-delta 1e-9 --batch 100000 --micro-batch 4
expect_fail "unreachable epsilon" "--dp-epsilon 1e-06 .* raise --dp-epsilon" \
  --dp-clip 1 --dp-epsilon 0.000001 --dp-delta 1e-9 --dp-sample-rate 1

# ---- one document per example
if "$AX" train "${ARGS[@]}" --packing doc --dp-clip 1 --dp-noise 1 --dp-delta 1e-3 --steps 3 \
     --out "$T/doc" >/dev/null 2>"$T/err" && grep -q "guarantee covers one document" "$T/err" &&
   python3 -c '
import json, sys
d = json.load(open(sys.argv[1] + "/ckpt/step-000003/manifest.json"))["state"]["dp"]
assert d["unit"] == "one document" and d["examples"] == 30, d' "$T/doc" 2>>"$T/err"; then
  ok "--packing doc: the unit of privacy is one document (30 of them)"
else bad "--packing doc: the unit of privacy is one document (30 of them)"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
