#!/usr/bin/env bash
# What a training run continues from and what it leaves, as a user meets it: a resume refuses a
# manifest edited into an impossible state (naming the manifest and the field; nothing written),
# a run that diverges stops with an error naming the step and writes no checkpoint from the
# non-finite state, and one run at a time holds an --out folder (a second is refused naming the
# first, which keeps its model; a lock left by a SIGKILLed run is taken over; one from another
# host is kept, with instructions).
# Usage: tests/cli/train_state.sh [path/to/axmem]. Prints ok/FAIL lines, then "N passed, N failed".
set -uo pipefail
AX=$(realpath "${1:-build/bin/axmem}")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1
T=$(mktemp -d /tmp/axmem-train-state.XXXXXX)
LEFT=() # background runs to end whatever happens
cleanup() {
  for p in "${LEFT[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && tail -3 "$T/err" | sed 's/^/     | /'; }

# expect_fail NAME PATTERN CMD...: a non-zero exit (not a crash) and a stderr line matching
expect_fail() {
  local name=$1 pat=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qE -- "$pat" "$T/err"; then ok "$name"
  else echo "     (exit $rc; wanted stderr ~ /$pat/)"; bad "$name"; fi
}

wait_for() { # wait_for PATH SECONDS: until PATH exists
  local i
  for ((i = 0; i < $2 * 20; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done
  return 1
}

head -n 40 data/corpus/kjv.jsonl >"$T/c.jsonl"
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/tok" 2>"$T/err" &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/c.axd" 2>"$T/err" ||
  { bad "prepare data"; echo "train-state: $pass passed, $fail failed"; exit 1; }
ARGS=(--data "$T/c.axd" --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 32 --batch 4 --lr 3e-3
      --warmup 2 --log-every 100000)

# ---- a manifest edited by hand: refused, naming the field; nothing is written
"$AX" train "${ARGS[@]}" --steps 60 --ckpt-every 30 --out "$T/run" 2>"$T/err" &&
  ok "a run with checkpoints at 30 and 60" || bad "a run with checkpoints at 30 and 60"

# edit NAME PYTHON PATTERN: a copy of the run whose step-000060 manifest is changed by PYTHON
# (m is the manifest, s its state, c its config); --resume must fail naming PATTERN and leave
# the folder as it was
edit() {
  local name=$1 code=$2 pat=$3
  rm -rf "$T/e" && cp -r "$T/run" "$T/e"
  python3 - "$T/e/ckpt/step-000060/manifest.json" "$code" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p)); s = m["state"]; c = m["config"]
exec(sys.argv[2])
json.dump(m, open(p, "w"))
PY
  local before
  before=$(cd "$T/e" && find . -type f -exec md5sum {} + | sort)
  expect_fail "resume refuses $name" "$pat" "$AX" train --out "$T/e" --resume --steps 80
  [ "$before" = "$(cd "$T/e" && find . -type f -exec md5sum {} + | sort)" ] ||
    bad "resume of $name changed the run folder"
}
M='step-000060/manifest.json: '
edit "a negative optimizer step count" 's["optim_t"] = -5' "${M}state \"optim_t\" is -5, but AdamW"
edit "an optimizer step count that is not the step" 's["optim_t"] = 59' "state \"optim_t\" is 59"
edit "a fractional optimizer step count" 's["optim_t"] = 60.5' "state \"optim_t\" is 60.5, not an integer"
edit "a huge optimizer step count" 's["optim_t"] = 1e300' "state \"optim_t\" is 1\\.0+1e\\+300, not an integer"
edit "an optimizer step count of the wrong type" 's["optim_t"] = "60"' "state \"optim_t\" is a string"
edit "a missing optimizer step count" 'del s["optim_t"]' "state \"optim_t\" is missing"
edit "a step of 9e15 in step-000060/" 'm["step"] = 9e15' '"step" is 9000000000000000 but the folder is step-000060'
edit "a negative step" 'm["step"] = -5' 'step-000060/manifest.json: "step" = -5 is not a count'
edit "a state step that is not the manifest's" 's["step"] = 59' "state \"step\" is 59, but the manifest's \"step\" is 60"
edit "a wrong dataset token count" 's["dataset_tokens"] += 1' 'state "dataset_tokens" is [0-9]+, but the dataset'
edit "a NaN learning rate" 'c["lr"] = float("nan")' "step-000060/manifest.json: invalid JSON"
edit "a learning rate out of range" 'c["lr"] = 1e30' "--lr.*out of range.*a setting in .*step-000060/manifest.json"
edit "a missing learning rate" 'del c["lr"]' "config \"lr\" is missing"
edit "a step past the run's --steps" 'c["steps"] = 50' "config \"steps\" is 50, but the manifest is of step 60"
edit "a fractional --steps" 'c["steps"] = 60.5' "config \"steps\" is 60.5, not an integer"
edit "a boolean setting of the wrong type" 'c["tie-embeddings"] = 1' '"tie-embeddings" should be a bool'
edit "moment blobs that do not match the model" \
  'm["shards"][2]["count"] += 1; m["shards"][2]["bytes"] += 4' 'blob "adam_v" holds [0-9]+ values, the model [0-9]+; the checkpoint is damaged'
# --init reads a training state's counts the same way
rm -rf "$T/e" && cp -r "$T/run" "$T/e"
python3 -c '
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["state"]["optim_t"] = 7; json.dump(m, open(p, "w"))' \
  "$T/e/ckpt/step-000060/manifest.json"
expect_fail "--init refuses an impossible training state" \
  "step-000060/manifest.json: state \"optim_t\" is 7.*pass another checkpoint to --init" \
  "$AX" train --init "$T/e" --data "$T/c.axd" --steps 2 --warmup 1 --out "$T/ft"
# the untouched run resumes
"$AX" train --out "$T/run" --resume --steps 62 >/dev/null 2>"$T/err" && ok "the untouched run resumes" ||
  bad "the untouched run resumes"

# ---- divergence: AdamW with eps 0 and beta2 0 divides by zero within a few steps
D=(--data "$T/c.axd" --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 32 --batch 4 --lr 10
   --grad-clip 0 --warmup 0 --beta2 0 --eps 0 --weight-decay 0 --steps 40 --log-every 100000)
expect_fail "a diverging run stops with an error naming the step" "step [0-9]+: training diverged" \
  "$AX" train "${D[@]}" --out "$T/div"
if ! grep -q "^done" "$T/err" && [ ! -d "$T/div/ckpt" ] && ! grep -qi "nan\|inf" "$T/div/metrics.jsonl"; then
  ok "... and writes no checkpoint and no non-finite metrics"
else bad "... and writes no checkpoint and no non-finite metrics"; fi
expect_fail "a diverging run with checkpoints names the newest good one" \
  "training diverged.*the newest checkpoint, .*/div2/ckpt/step-0000[0-9]+, is from before it" \
  "$AX" train "${D[@]}" --ckpt-every 1 --out "$T/div2"
step=$(grep -oE "step [0-9]+: training diverged" "$T/err" | grep -oE "[0-9]+" | head -1)
if [ -n "$step" ] && [ ! -e "$T/div2/ckpt/$(printf 'step-%06d' "$step")" ] &&
   [ -z "$(ls "$T/div2/ckpt" | awk -F- -v s="$step" '$2 + 0 >= s')" ]; then
  ok "... and no checkpoint at or after the diverged step ($step)"
else bad "... and no checkpoint at or after the diverged step (${step:-?})"; fi

# ---- one run per --out folder
# a long run A; while it runs, a second run and a resume into its folder are refused naming it
"$AX" train "${ARGS[@]}" --steps 1500 --out "$T/busy" >/dev/null 2>"$T/a.err" &
A=$!
LEFT+=("$A")
if wait_for "$T/busy/.lock" 20 && kill -STOP "$A" 2>/dev/null; then
  # A is paused while the others try, so a fast machine cannot finish it first
  expect_fail "a second run into a busy --out is refused naming the first" \
    "--out .*busy is in use: axmem train PID $A on host $(hostname) has held it since" \
    "$AX" train "${ARGS[@]}" --steps 1500 --out "$T/busy"
  expect_fail "--resume into a busy --out is refused" "is in use: axmem train PID $A" \
    "$AX" train --out "$T/busy" --resume
  kill -CONT "$A"
else bad "the first run took its lock"; fi
wait "$A"
rc=$?
n=$(wc -l <"$T/busy/metrics.jsonl")
if [ "$rc" = 0 ] && [ -d "$T/busy/ckpt/step-001500" ] && [ "$n" = 1500 ] && [ ! -e "$T/busy/.lock" ]; then
  ok "the first run finished with its model and its own 1500 metrics lines, and released the lock"
else echo "     (exit $rc, $n lines)"; bad "the first run finished with its model"; fi

# a run killed with SIGKILL leaves its lock; the next run takes it over
"$AX" train "${ARGS[@]}" --steps 5000 --ckpt-every 20 --out "$T/killed" >/dev/null 2>"$T/err" &
K=$!
LEFT+=("$K")
if wait_for "$T/killed/ckpt/step-000020/manifest.json" 60; then
  kill -KILL "$K"
  wait "$K" 2>/dev/null
  [ -e "$T/killed/.lock" ] && ok "a SIGKILLed run leaves its lock" || bad "a SIGKILLed run leaves its lock"
  "$AX" train --out "$T/killed" --resume --exit-after-steps 2 >/dev/null 2>"$T/err"
  rc=$?
  if [ "$rc" = 75 ] && grep -q "taking over the lock of axmem train PID $K .*no longer runs on this host" "$T/err" &&
     [ ! -e "$T/killed/.lock" ]; then ok "... which the next run takes over (and releases)"
  else echo "     (exit $rc)"; bad "... which the next run takes over (and releases)"; fi
else bad "the run to kill wrote a checkpoint"; fi

# a lock from another host is kept, with instructions; removed, the run goes on
printf '{"lock":"axmem train","host":"otherhost.example","pid":4242,"since":"2026-01-02 03:04:05 UTC","command":"axmem train --out %s"}' \
  "$T/killed" >"$T/killed/.lock"
expect_fail "a lock from another host is never broken" \
  "locked by axmem train PID 4242 on host otherhost.example since 2026-01-02.*remove .*killed/.lock and start again" \
  "$AX" train --out "$T/killed" --resume --exit-after-steps 1
grep -q otherhost "$T/killed/.lock" && ok "... and left as it was" || bad "... and left as it was"
rm "$T/killed/.lock"
"$AX" train --out "$T/killed" --resume --exit-after-steps 1 >/dev/null 2>"$T/err"
[ $? = 75 ] && ok "... and once removed, the run continues" || bad "... and once removed, the run continues"

echo "train-state: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
