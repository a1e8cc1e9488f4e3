#!/usr/bin/env bash
# data dedup under MPI: on a corpus of planted duplicates (tests/support/dedup_ref.py gen), the
# serial output equals the definition applied literally (dedup_ref.py check: documents, tokens,
# summary counts and top spans), and 1, 2, 3 and 4 ranks write the same bytes, in memory and
# spilling the index (--mem-limit 1M), with full hashes and with 4-bit ones (collisions
# everywhere), with and without --documents; no temporary file is left.
# usage: tests/mpi/dedup.sh [BUILD_DIR]   (default build)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
AX=$B/bin/axmem
REF=tests/support/dedup_ref.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
[ -x "$AX" ] || { echo "dedup.sh: $AX not built (run scons)"; exit 1; }
T=$(mktemp -d /tmp/axmem-mpi-dedup.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
# ~130K tokens: each rank's share of the windows (>= 30K) is over what 1M holds, so it spills
python3 "$REF" gen "$T/c" --docs 3000 --n 8 --seed 3 || exit 1
"$AX" data import-megatron --prefix "$T/c" --out "$T/c.axd" --vocab-size 300 --eot 256 \
  >/dev/null 2>&1 || { echo "dedup.sh: import failed"; exit 1; }
for args in "--n 8" "--n 8 --documents" "--n 8 --hash-bits 4" "--documents --hash-bits 4"; do
  tag=$(echo "$args" | tr -d ' -')
  "$AX" data dedup --input "$T/c.axd" --out "$T/$tag.serial.axd" $args >/dev/null || fail=1
  python3 "$REF" check "$T/c.axd" "$T/$tag.serial.axd" $args \
    --summary "$T/$tag.serial.axd.dedup.json" || fail=1
  for np in 1 2 3 4; do
    for lim in "" "--mem-limit 1M"; do
      o=$T/$tag.np$np${lim:+.lim}.axd
      mpirun --oversubscribe -np "$np" "$AX" data dedup --input "$T/c.axd" --out "$o" $args \
        $lim >"$o.out" 2>&1 || { cat "$o.out"; fail=1; }
      how=ok # with --n: the index was built on np ranks, spilled under the limit
      if [[ "$args" == *--n* ]]; then
        grep -q "on $np rank" "$o.out" || how="not on $np ranks"
        [ -n "$lim" ] && ! grep -q "spilled to disk" "$o.out" && how="not spilled"
      fi
      # the summary's counts and spans too
      python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); k=("tokens","documents","windows","top_spans"); sys.exit(any(a.get(x)!=b.get(x) for x in k))' \
        "$T/$tag.serial.axd.dedup.json" "$o.dedup.json" || how="another summary"
      if cmp -s "$T/$tag.serial.axd" "$o" && [ "$how" = ok ]; then
        echo "dedup $args ${lim:-in memory} on $np ranks: same bytes as 1: ok"
      else
        echo "dedup $args ${lim:-in memory} on $np ranks: differs from 1 rank ($how): FAILED"
        fail=1
      fi
    done
  done
done
left=$(find "$T" -name '*dedup-index*' -o -name '*.partial*' -o -name '*.spill*' | head -3)
[ -z "$left" ] || { echo "dedup.sh: temporary files left: $left"; fail=1; }
[ "$fail" = 0 ] && echo "dedup.sh: all passed" || echo "dedup.sh: FAILED"
exit "$fail"
