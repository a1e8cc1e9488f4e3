#!/usr/bin/env bash
# Fingerprints what axmem computes, for a change that must not alter behaviour (a refactor):
# a small demo (tokenizer, split, canaries, two trainings, index, probe, generate, mia,
# exposure, report) and training on two 2-rank grids, then one SHA-256 per output with
# timings, paths and host details removed. Two commits behave alike when their lists match:
#   scripts/fingerprint.sh build/bin/axmem > before.txt   (then after the change: diff)
# Usage: scripts/fingerprint.sh [path/to/axmem]   (~1 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
AX=$(realpath "${1:-build/bin/axmem}")
# one fixed folder (an index records its dataset's absolute path, under its checksum), so two
# fingerprints must not run at once
T=/tmp/axmem-fingerprint
rm -rf "$T" && mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
CORPUS=$(realpath data/corpus/kjv.jsonl)
cd "$T"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$AX" demo --steps 20 --docs 4 --vocab-size 300 --corpus "$CORPUS" --out demo >/dev/null 2>&1
D=demo
ARGS=(--data "$D/train.axd" --model tiny --steps 6 --warmup 2 --batch 2 --seq-len 32 --ckpt-every 6)
for grid in 1x2x1x1 2x1x1x1 1x1x1x2; do
  mpirun --oversubscribe -np 2 "$AX" train "${ARGS[@]}" --grid "$grid" --out "g$grid" >/dev/null 2>&1
done
"$AX" memscan index --data "$D/train.axd" --n 8 --out n8.idx >/dev/null 2>&1
"$AX" memscan lookup --index n8.idx --tokenizer "$D/tokenizer.axt" --json \
  "And God said, Let there be light" >lookup.json 2>/dev/null
"$AX" goldfish stats --spec hash:k=4,h=13 --data "$D/train.axd" >goldfish_stats.txt 2>&1
"$AX" model export --ckpt "$D/baseline" --out hf >/dev/null 2>&1
"$AX" plan --layers 24 --dim 2048 --heads 16 --ffn 8192 --vocab 50304 --seq-len 2048 \
  --global-batch 512 --devices 64 --machine h100 --json >plan.json 2>/dev/null
python3 - "$T" <<'PY'
import hashlib, json, os, re, sys
root = sys.argv[1]
# keys whose values differ from run to run or machine to machine, not with behaviour
VOLATILE = re.compile(r"(time|second|elapsed|per_s|_s$|_s_|wall|date|host|pid|commit|version|"
                      r"path|dir$|started|throughput|threads|tokens_per|speed|ckpt$|out$|"
                      r"index$|data$|tokenizer$|dataset$|members$|nonmembers$|file)", re.I)
def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items() if not VOLATILE.search(k)}
    if isinstance(x, list):
        return [clean(v) for v in x]
    if isinstance(x, str) and root in x:
        return "<path>"
    return x
def digest(path):
    raw = open(path, "rb").read()
    name = os.path.basename(path)
    if name.endswith(".json") or name.endswith(".jsonl"):
        lines = raw.decode().splitlines() if name.endswith(".jsonl") else [raw.decode()]
        out = [json.dumps(clean(json.loads(l)), sort_keys=True) for l in lines if l.strip()]
        raw = "\n".join(out).encode()
    else:  # text or binary (an index stores its dataset's path): the run's folder blanked
        raw = raw.replace(root.encode(), b"<root>")
    return hashlib.sha256(raw).hexdigest()[:16]
for dp, dn, fn in sorted(os.walk(root)):
    dn.sort()
    for f in sorted(fn):
        p = os.path.join(dp, f)
        rel = os.path.relpath(p, root)
        if f in (".lock",) or f.endswith((".log",)):
            continue
        print(digest(p), rel)
PY
