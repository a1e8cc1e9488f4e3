#!/usr/bin/env bash
# Stopping `axmem train` never crashes or loses work. SIGINT and SIGTERM at random moments,
# on one rank and under mpirun (to every rank, to one rank, to mpirun itself, SIGUSR1 through
# mpirun): every run exits with the documented code (128 + signal), leaves a checkpoint, and
# `--out DIR --resume` alone continues it with the uninterrupted run's losses bit for bit.
# Also: a second signal exits at once, --exit-after-steps/-minutes exit 75 with a checkpoint,
# and a SIGSTOPped rank fails the job with a clear message after --stall-timeout.
# Usage: tests/cli/signals.sh [path/to/axmem]. Prints ok/FAIL lines, then "N passed, N failed".
set -uo pipefail
AX=$(realpath "${1:-build/bin/axmem}")
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
T=$(mktemp -d /tmp/axmem-signals.XXXXXX)
LEFT=() # processes to clean up whatever happens
cleanup() {
  for p in "${LEFT[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && grep -v '^\(---\|$\)' "$T/err" | tail -4 | sed 's/^/     | /'; }
RANDOM=${SIGNALS_SEED:-$$}
echo "signals: seed $RANDOM (set SIGNALS_SEED to replay)"

head -n 40 data/corpus/kjv.jsonl >"$T/c.jsonl"
"$AX" data tokenizer-train --input "$T/c.jsonl" --vocab-size 300 --out "$T/tok" 2>"$T/err" &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/c.jsonl" --out "$T/c.axd" 2>"$T/err" ||
  { bad "prepare data"; echo "signals: $pass passed, $((fail)) failed"; exit 1; }
# tiny and fast; --steps far beyond any trial (the schedule's length is part of the run);
# --ckpt-every 5 so some signals land while a checkpoint is being written (half the trials
# turn it off: then most land inside a step)
ARGS=(--data "$T/c.axd" --layers 1 --dim 32 --heads 2 --ffn 64 --seq-len 32 --batch 4 --lr 3e-3
      --warmup 3 --steps 5000 --ckpt-every 5 --log-every 100000)

# losses FILE [N]: "step loss grad_norm lr" of the first N lines (all when N is absent)
losses() { python3 -c '
import json,sys
n=int(sys.argv[2]) if len(sys.argv)>2 else None
for l in open(sys.argv[1]).readlines()[:n]:
    r=json.loads(l); print(r["step"], repr(r["loss"]), repr(r["grad_norm"]), repr(r["lr"]))' "$@"; }

wait_for() { # wait_for FILE SECONDS: until FILE exists and is not empty
  local i
  for ((i = 0; i < $2 * 20; i++)); do [ -s "$1" ] && return 0; sleep 0.05; done
  return 1
}
rand_sleep() { sleep "$(awk -v r=$RANDOM -v m="$1" 'BEGIN{printf "%.3f", r / 32767 * m}')"; }
last_ckpt() { ls -d "$1"/ckpt/step-* 2>/dev/null | grep -v partial | tail -1 | sed 's/.*step-0*//;s/^$/0/'; }

# launch NAME NP GRID [flags]: start a run in the background (pid in $RUN_PID)
launch() {
  local name=$1 np=$2 grid=$3; shift 3
  if [ "$np" = 1 ]; then "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/$name" "$@" >"$T/$name.out" 2>"$T/err" &
  else "${MPIRUN[@]}" -np "$np" "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/$name" "$@" >"$T/$name.out" 2>"$T/err" & fi
  RUN_PID=$!
  LEFT+=("$RUN_PID")
}
resume() { # resume NAME NP [flags]: `--out DIR --resume` alone (+ flags)
  local name=$1 np=$2; shift 2
  if [ "$np" = 1 ]; then timeout 120 "$AX" train --out "$T/$name" --resume "$@" >/dev/null 2>"$T/err"
  else timeout 120 "${MPIRUN[@]}" -np "$np" "$AX" train --out "$T/$name" --resume "$@" >/dev/null 2>"$T/err"; fi
}

# trial NAME NP GRID SIGNAL TARGET WANT_EXIT [flags]: start, wait for the first step, a random moment later send
# SIGNAL to TARGET (self | all | one | mpirun), then check the exit code and the checkpoint,
# and continue 4 steps with --resume alone. Records NAME in TRIALS for the comparison.
TRIALS=()
trial() {
  local name=$1 np=$2 grid=$3 sig=$4 target=$5 want=$6
  shift 6
  launch "$name" "$np" "$grid" "$@"
  local pid=$RUN_PID
  if ! wait_for "$T/$name/metrics.jsonl" 60; then kill -KILL "$pid"; wait "$pid"; bad "$name: no first step"; return; fi
  rand_sleep 0.6
  local ranks
  ranks=$(pgrep -P "$pid" | tr '\n' ' ')
  case $target in
    self | mpirun) kill -"$sig" "$pid" ;;
    all) kill -"$sig" $ranks ;;
    one) kill -"$sig" "$(echo $ranks | tr ' ' '\n' | shuf -n 1 --random-source=<(yes $RANDOM))" ;;
  esac
  wait "$pid"
  local rc=$? step
  step=$(last_ckpt "$T/$name")
  if [[ " $want " == *" $rc "* ]] && [ -n "$step" ] && grep -q "stopped at step $step " "$T/err"; then
    ok "$name: SIG$sig to $target: exit $rc, checkpoint at step $step"
  else bad "$name: SIG$sig to $target: exit $rc (want $want), last checkpoint '${step}'"; return; fi
  if resume "$name" "$np" --exit-after-steps 4; rc=$?; [ "$rc" = 75 ]; then TRIALS+=("$name:$((step + 4)):$grid")
  else bad "$name: --resume --exit-after-steps 4 exits 75 (got $rc)"; fi
}

# ---- one rank: SIGINT and SIGTERM at random moments
for i in 1 2 3 4 5 6 7 8; do
  sig=$([ $((RANDOM % 2)) = 0 ] && echo INT || echo TERM)
  trial "s$i" 1 1x1x1x1 "$sig" self "$([ $sig = INT ] && echo 130 || echo 143)" \
    --ckpt-every $((i % 2 * 5))
done
# ---- mpirun, 2 ranks: the signal reaches every rank (as srun and slurmstepd send it) or one
for i in 1 2 3; do
  sig=$([ $((RANDOM % 2)) = 0 ] && echo INT || echo TERM)
  trial "d$i" 2 2x1x1x1 "$sig" all "130 143" --ckpt-every $((i % 2 * 5))
  trial "x$i" 2 1x2x1x1 "$sig" one "130 143" --ckpt-every $((i % 2 * 5))
done
# mpirun forwards SIGUSR1 to every rank at once: a clean stop with nothing killed
trial "u1" 2 2x1x1x1 USR1 mpirun 138
# SIGTERM (or Ctrl-C) to mpirun: it sends SIGTERM to the ranks after odls_base_sigkill_timeout
# seconds and SIGKILL after as many again; with room for a step and a checkpoint, they make it
MPIRUN_SAVE=("${MPIRUN[@]}")
MPIRUN+=(--mca odls_base_sigkill_timeout 3)
trial "m1" 2 1x2x1x1 TERM mpirun "1 143"
MPIRUN=("${MPIRUN_SAVE[@]}")

# ---- every continued run equals the uninterrupted one (same grid), line for line
for grid in 1x1x1x1 2x1x1x1 1x2x1x1; do
  max=0
  for t in "${TRIALS[@]}"; do IFS=: read -r n s g <<<"$t"; [ "$g" = "$grid" ] && [ "$s" -gt "$max" ] && max=$s; done
  [ "$max" = 0 ] && continue
  np=$(( ${grid//x/*} ))
  if [ "$np" = 1 ]; then "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/ref$grid" --exit-after-steps "$max" >/dev/null 2>"$T/err"
  else "${MPIRUN[@]}" -np "$np" "$AX" train "${ARGS[@]}" --grid "$grid" --out "$T/ref$grid" --exit-after-steps "$max" >/dev/null 2>"$T/err"; fi
  [ $? = 75 ] || { bad "reference run on $grid"; continue; }
  same=0 diff=""
  for t in "${TRIALS[@]}"; do
    IFS=: read -r n s g <<<"$t"
    [ "$g" = "$grid" ] || continue
    if cmp -s <(losses "$T/ref$grid/metrics.jsonl" "$s") <(losses "$T/$n/metrics.jsonl"); then same=$((same + 1))
    else diff="$diff $n"; fi
  done
  if [ -z "$diff" ]; then ok "$grid: $same interrupted+resumed runs = the uninterrupted run, bit for bit"
  else bad "$grid: runs differ from the uninterrupted one:$diff"; fi
done

# ---- a second signal exits at once, even in the middle of a long step
"$AX" train --data "$T/c.axd" --model small --seq-len 256 --batch 16 --steps 100 --out "$T/twice" >/dev/null 2>"$T/err" &
pid=$!
LEFT+=("$pid")
wait_for "$T/twice/metrics.jsonl" 60
kill -INT "$pid"; sleep 0.05; t0=$(date +%s%N); kill -INT "$pid"
wait "$pid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" = 130 ] && grep -q "second stop signal" "$T/err" && [ "$ms" -lt 2000 ]; then ok "second SIGINT exits 130 at once (${ms} ms)"
else bad "second SIGINT exits 130 at once (exit $rc, ${ms} ms)"; fi

# ---- --exit-after-minutes: stops on time with a checkpoint, decided together on 2 ranks
for np in 1 2; do
  grid=$([ $np = 1 ] && echo 1x1x1x1 || echo 2x1x1x1)
  t0=$SECONDS
  launch "min$np" "$np" "$grid" --exit-after-minutes 0.04
  wait "$RUN_PID"; rc=$?
  step=$(last_ckpt "$T/min$np")
  if [ "$rc" = 75 ] && [ -n "$step" ] && [ "$step" -gt 0 ] && [ $((SECONDS - t0)) -lt 30 ] &&
     grep -q -- "--exit-after-minutes reached" "$T/err"; then ok "--exit-after-minutes on $np rank(s): exit 75, checkpoint at step $step"
  else bad "--exit-after-minutes on $np rank(s): exit $rc, checkpoint '$step'"; fi
done
# the printed hint is a command that works as printed
"$AX" train "${ARGS[@]}" --out "$T/hint" --exit-after-steps 2 >/dev/null 2>"$T/err"
hint=$(sed -n 's/.*continue with: \(.*--resume\).*/\1/p' "$T/err")
if [ -n "$hint" ] && (eval "$hint --exit-after-steps 1" >/dev/null 2>"$T/err"; [ $? = 75 ]) &&
   [ "$(last_ckpt "$T/hint")" = 3 ]; then ok "the printed resume command works: $hint"
else bad "the printed resume command works: '$hint'"; fi

# ---- a stalled rank fails the job with a message instead of hanging it
launch stall 2 2x1x1x1 --stall-timeout 5
pid=$RUN_PID
wait_for "$T/stall/metrics.jsonl" 60
victim=$(pgrep -P "$pid" | tail -1)
LEFT+=("$victim")
t0=$SECONDS
kill -STOP "$victim"
( sleep 40; kill -KILL "$pid" 2>/dev/null ) &
guard=$!
wait "$pid"; rc=$?
kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
dt=$((SECONDS - t0))
if [ "$rc" != 0 ] && [ "$dt" -le 20 ] && grep -q "waited [0-9]* s in a collective.*stalled or dead" "$T/err"; then
  ok "SIGSTOPped rank: job fails in ${dt} s with the stall message"
else bad "SIGSTOPped rank: job fails within 20 s with the stall message (exit $rc after ${dt} s)"; fi
kill -CONT "$victim" 2>/dev/null

# ---- the same in a memscan index build on one host, where the ranks exchange through shared
# memory and wait on each other's counters, not in MPI: the whole corpus in rounds of one
# window (~1.5 s of rounds on 2 cores), the rank stopped once both have sized their tables
"$AX" data encode --tokenizer "$T/tok" --input data/corpus/kjv.jsonl --out "$T/kjv.axd" 2>"$T/err" ||
  bad "encode the corpus for memscan"
AXMEM_LOG=debug AXMEM_STALL_TIMEOUT=3 "${MPIRUN[@]}" -np 2 "$AX" memscan index --data "$T/kjv.axd" \
  --out "$T/kjv.idx" --round-windows 1 >"$T/ms.out" 2>"$T/err" &
pid=$!
LEFT+=("$pid")
for ((i = 0; i < 600; i++)); do
  [ "$(grep -c 'table per rank' "$T/err")" -ge 2 ] && break
  sleep 0.05
done
sleep 0.02 # into the rounds (~1 s of them): later, a fast build may be past them
victim=$(pgrep -P "$pid" | tail -1)
LEFT+=("$victim")
t0=$SECONDS
kill -STOP "$victim"
( sleep 40; kill -KILL "$pid" 2>/dev/null ) &
guard=$!
wait "$pid"; rc=$?
kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
dt=$((SECONDS - t0))
if [ "$rc" != 0 ] && [ "$dt" -le 20 ] && grep -q "waited [0-9]* s in a collective (memscan index round" "$T/err" &&
   [ ! -e "$T/kjv.idx" ]; then
  ok "SIGSTOPped rank in a memscan index build: job fails in ${dt} s with the stall message, no index"
else bad "SIGSTOPped rank in a memscan index build: fails within 20 s with the stall message (exit $rc after ${dt} s)"; fi
kill -CONT "$victim" 2>/dev/null

echo "signals: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
