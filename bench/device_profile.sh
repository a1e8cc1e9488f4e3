#!/usr/bin/env bash
# On the lent GPU machine (after `source bench/device_env.sh`): the CUDA op check, then the
# ~1B model of bench/device_check.sh in bf16 (tokens/s, MFU against the 989 TFLOP/s dense bf16
# peak; median of the steps after the first two) under each variant's environment, its
# attention alone (build/bench/bench_attention: blocks on cuBLAS vs the flash kernels), then
# one run with AXMEM_CUDA_PROFILE=1 (per-op device time). Logs under ${OUT:-/tmp/device_profile}.
#   bash bench/device_profile.sh [NAME="VAR=VALUE ..." ...]   default: the product as it is
# (NAME=); the profiled run adds $DP_PROFILE_ENV. DC_BIG overrides the shape, DP_DEVICE the
# device flags (to try the script on a CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/device_profile}
mkdir -p "$O"
AX=build/bin/axmem
T=$(mktemp -d /tmp/device_profile.XXXXXX)
timeout 200 build/tests/cuda_ops_check >"$O/ops.txt" 2>&1
echo "cuda_ops_check exit $?: $(grep -c FAIL "$O/ops.txt") FAIL lines; $(tail -1 "$O/ops.txt")"
head -n 2000 data/corpus/kjv.jsonl >"$T/kjv.jsonl"
"$AX" data tokenizer-train --input "$T/kjv.jsonl" --vocab-size 512 --out "$T/tok" 2>/dev/null &&
  "$AX" data encode --tokenizer "$T/tok" --input "$T/kjv.jsonl" --out "$T/kjv.axd" 2>/dev/null
read -r -a BIG <<<"${DC_BIG:---layers 24 --dim 2048 --heads 16 --ffn 5632 --seq-len 2048 --batch 4 --vocab 32768}"
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(product=)
for v in "${variants[@]}"; do
  name=${v%%=*}
  # 6 steps, then SIGKILL: the final checkpoint (~16 GB with the AdamW moments) is not timed
  env ${v#*=} "$AX" train --data "$T/kjv.axd" "${BIG[@]}" --steps 1000 --warmup 2 \
    --log-every 1 ${DP_DEVICE:---device cuda --precision bf16} --out "$T/$name" >"$O/$name.log" 2>&1 &
  pid=$! t0=$SECONDS # env execs axmem: $pid is the trainer itself
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(cat "$T/$name/metrics.jsonl" 2>/dev/null | wc -l)" -ge 6 ] || [ $((SECONDS - t0)) -gt 150 ]; then
      kill -9 "$pid" 2>/dev/null
    fi
    sleep 0.5
  done
  wait "$pid" 2>/dev/null
  echo "== $name (${v#*=}): $(tail -1 "$O/$name.log" | cut -c1-100)"
  python3 - "$T/$name/metrics.jsonl" <<'PY' 2>&1 | tail -1
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1])][2:6]
tps = statistics.median(x["tokens_per_s"] for x in r)
fps = statistics.median(x["flops_per_s"] for x in r)
print(f"  {len(r)} steps: {tps:,.0f} tokens/s, {fps / 1e12:.1f} TFLOP/s, MFU {100 * fps / 989e12:.1f}%")
PY
done
echo "== attention alone: $(timeout 120 build/bench/bench_attention 5 >"$O/attention.txt" 2>&1; echo exit $?)"
cat "$O/attention.txt"
env AXMEM_CUDA_PROFILE=1 ${DP_PROFILE_ENV:-} timeout 150 "$AX" train --data "$T/kjv.axd" "${BIG[@]}" --steps 3 --warmup 1 \
  ${DP_DEVICE:---device cuda --precision bf16} --out "$T/prof" >/dev/null 2>"$O/profile.txt"
echo "== profile (3 steps, every op waited for): exit $?"
grep -A40 "cuda profile" "$O/profile.txt"
rm -rf "$T"
