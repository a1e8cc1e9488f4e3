#!/usr/bin/env bash
# memscan under MPI: per-token scores on grids against 1 rank (mpi_score); the index driver
# checks every result against a brute-force reference, on 1, 2 and 4 ranks, with full hashes
# and with hashes masked to 3 bits (collisions everywhere).
# usage: tests/mpi/memscan.sh [BUILD_DIR]   (default build)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
DRIVER=$B/tests/mpi/mpi_index
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
[ -x "$DRIVER" ] || { echo "memscan.sh: $DRIVER not built (run scons)"; exit 1; }
T=$(mktemp -d /tmp/axmem-mpi-memscan.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
for np in 1 2 4; do
  for bits in 64 3; do
    mpirun --oversubscribe -np "$np" "$DRIVER" --bits "$bits" --dir "$T/np$np-b$bits" || fail=1
  done
done

# per-token scores (memscan mia, exposure) on grids equal the single-rank ones
for grid in 2x1x2x1 1x2x1x2; do
  np=$(( ${grid//x/*} ))
  mpirun --oversubscribe -np "$np" "$B/tests/mpi/mpi_score" --grid "$grid" || fail=1
done

# the CLI under mpirun: the index written by 3 ranks matches the serial one; and spilled
AX=$B/bin/axmem
if [ -x "$AX" ] && [ -x "$B/tests/mpi/mpi_index" ]; then
  mpirun --oversubscribe -np 1 "$DRIVER" --dir "$T/cli" >/dev/null || fail=1
  D=$T/cli/planted.axd
  "$AX" memscan index --data "$D" --out "$T/serial.idx" --n 12 >/dev/null || fail=1
  mpirun --oversubscribe -np 3 "$AX" memscan index --data "$D" --out "$T/mpi.idx" --n 12 \
    --round-windows 1000 >"$T/mpi.out" || fail=1
  # same header, histogram and counts whatever the rank count (build_ranks aside)
  a=$("$AX" memscan info --json --verify "$T/serial.idx" | sed 's/"build_ranks":[0-9]*//')
  b=$("$AX" memscan info --json --verify "$T/mpi.idx" | sed 's/"build_ranks":[0-9]*//')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "memscan CLI: 3-rank index matches serial: ok"
  else echo "memscan CLI: 3-rank index differs from serial: FAILED"; fail=1; fi
  grep -q "built on 3 ranks" "$T/mpi.out" || { echo "memscan CLI: no summary from rank 0"; fail=1; }
  # --mem-limit on 2 and 4 ranks: each rank's share (~50-100K windows) is over
  # a 1M limit, so every rank spills its owned windows in hash partitions and rank 0 gathers
  # them partition by partition; the file and INDEX.json equal the in-memory build's on as
  # many ranks byte for byte (with full hashes and with 16-bit ones: tag collisions), match the
  # serial index (build_ranks aside), and no temporary file is left
  L=$T/cli/large.axd
  mkdir -p "$T/lim"
  "$AX" memscan index --data "$L" --out "$T/lim/serial.idx" --n 8 >/dev/null || fail=1
  s=$("$AX" memscan info --json "$T/lim/serial.idx" | sed 's/"build_ranks":[0-9]*//')
  for np in 2 4; do
    for bits in 64 16; do
      o=$T/lim/np$np-b$bits
      mpirun --oversubscribe -np "$np" "$AX" memscan index --hash-bits "$bits" \
        --data "$L" --out "$o.mem.idx" --n 8 --round-windows 5000 >/dev/null || fail=1
      mpirun --oversubscribe -np "$np" "$AX" memscan index --hash-bits "$bits" \
        --data "$L" --out "$o.lim.idx" --n 8 --mem-limit 1M >"$o.out" || fail=1
      c=$("$AX" memscan info --json "$o.lim.idx" | sed 's/"build_ranks":[0-9]*//')
      if grep -q "spilling to disk" "$o.out" && grep -q "on $np ranks" "$o.out" &&
        cmp -s "$o.mem.idx" "$o.lim.idx" && cmp -s "$o.mem.idx.json" "$o.lim.idx.json" &&
        { [ "$bits" != 64 ] || [ "$c" = "$s" ]; } &&
        "$AX" memscan info --verify "$o.lim.idx" >/dev/null; then
        echo "memscan index --mem-limit 1M on $np ranks (hash bits $bits): spilled, same bytes: ok"
      else echo "memscan index --mem-limit 1M on $np ranks (hash bits $bits): FAILED"; fail=1; fi
    done
  done
  # the save of an in-memory build on 2 ranks: gathered on rank 0 in memory by default (the
  # files above), and, when --mem-limit lets each rank build its share in memory (48 bytes a
  # window) but leaves no room to gather every entry on rank 0, streamed through a version-2
  # file reordered on disk; both write the same bytes
  W=$("$AX" memscan info --json "$T/lim/serial.idx" | grep -o '"windows":[0-9]*' | head -1 |
    cut -d: -f2)
  o=$T/lim/np2-b64
  AXMEM_LOG=debug mpirun --oversubscribe -np 2 "$AX" memscan index --data "$L" \
    --out "$o.v2.idx" --n 8 --mem-limit $(( 48 * (W + 1) / 2 )) >"$o.v2.out" 2>&1 || fail=1
  AXMEM_LOG=debug mpirun --oversubscribe -np 2 "$AX" memscan index --data "$L" \
    --out "$o.g.idx" --n 8 >"$o.g.out" 2>&1 || fail=1
  if grep -q "gathered in memory on rank 0" "$o.g.out" && grep -q "built on 2 ranks" "$o.v2.out" &&
    grep -q "version-2 stream" "$o.v2.out" &&
    cmp -s "$o.mem.idx" "$o.v2.idx" && cmp -s "$o.mem.idx" "$o.g.idx" &&
    cmp -s "$o.mem.idx.json" "$o.v2.idx.json"; then
    echo "memscan index on 2 ranks: saved gathered and through version 2, same bytes: ok"
  else echo "memscan index on 2 ranks: gathered or version-2 save FAILED"; fail=1; fi
  # peak RSS per rank (getrusage in the driver): the spilled build stays within a 4 MB limit
  # plus the dataset's pages plus 8 MB on 2 and 4 ranks, the in-memory one does not, same bytes
  SP=$B/tests/mpi/mpi_index_spill
  if [ -x "$SP" ]; then
    "$SP" --make "$T/lim" || fail=1
    for np in 2 4; do
      mpirun --oversubscribe -np "$np" "$SP" --build "$T/lim" 4194304 || fail=1
    done
  else echo "memscan.sh: $SP not built"; fail=1; fi
  if ls "$T/lim" | grep -Eq '\.(spill|tags|exts|vals|lists|partial)$'; then
    echo "memscan index --mem-limit under mpirun left temporary files: FAILED"; fail=1
  else echo "memscan index --mem-limit under mpirun leaves no temporary files: ok"; fi
fi
# one index served by any number of ranks: built on 4 ranks, the same count
# queries answered on 1, 2 and 4 ranks (each window looked up by the rank serving its hash
# range) give the same answers, gathered in query order
SV=$B/tests/mpi/mpi_index_serve
if [ -x "$SV" ]; then
  mkdir -p "$T/serve"
  timeout 300 mpirun --oversubscribe -np 4 "$SV" --build "$T/serve" || fail=1
  for np in 1 2 4; do
    timeout 300 mpirun --oversubscribe -np "$np" "$SV" --query "$T/serve" --out "$T/serve/a$np" || fail=1
  done
  if [ -s "$T/serve/a1" ] && cmp -s "$T/serve/a1" "$T/serve/a2" && cmp -s "$T/serve/a1" "$T/serve/a4"; then
    echo "memscan served on 1, 2, 4 ranks (built on 4): identical answers: ok"
  else echo "memscan served on 1, 2, 4 ranks: answers differ: FAILED"; fail=1; fi
  # the CLI: `memscan lookup --file Q.jsonl` under mpirun (each rank answers a block of queries,
  # windows routed to the ranks serving them, rank 0 prints in query order) equals one process
  if [ -x "$AX" ] && [ -s "$T/serve/serve.axd" ]; then
    mpirun --oversubscribe -np 4 "$AX" memscan index --data "$T/serve/serve.axd" --n 12 \
      --out "$T/serve/cli.idx" >/dev/null || fail=1
    python3 - "$T/serve/serve.axd" >"$T/serve/q.jsonl" <<'PY'
import random, struct, sys
raw = open(sys.argv[1], "rb").read()
vocab, width = struct.unpack_from("<II", raw, 12)
nd = struct.unpack_from("<Q", raw, 24)[0]
off = struct.unpack_from(f"<{nd + 1}Q", raw, 64)
t0, fmt = 64 + 8 * (nd + 1), "H" if width == 2 else "I"
tok = lambda a, b: list(struct.unpack_from(f"<{b - a}{fmt}", raw, t0 + a * width))
rng = random.Random(3)
for i in range(60):  # dataset passages, the same inside random tokens, random tokens
    d = rng.randrange(nd); a, b = off[d], off[d + 1] - 1
    s = rng.randrange(a, max(a + 1, b - 30)); q = tok(s, min(b, s + 30))
    if i % 3 == 1: q = [rng.randrange(vocab) for _ in range(5)] + q + [rng.randrange(vocab) for _ in range(7)]
    if i % 3 == 2: q = [rng.randrange(vocab) for _ in range(20)]
    print('{"id": %d, "tokens": %s}' % (i, q))
PY
    "$AX" memscan lookup --index "$T/serve/cli.idx" --file "$T/serve/q.jsonl" --occurrences 3 \
      >"$T/serve/c0" || fail=1
    same=1
    for np in 1 2 4; do
      mpirun --oversubscribe -np "$np" "$AX" memscan lookup --index "$T/serve/cli.idx" \
        --file "$T/serve/q.jsonl" --occurrences 3 >"$T/serve/c$np" || fail=1
      cmp -s "$T/serve/c0" "$T/serve/c$np" || same=0
    done
    if [ "$same" = 1 ] && [ "$(wc -l <"$T/serve/c0")" = 60 ] && grep -q '"longest":{' "$T/serve/c0"; then
      echo "memscan lookup --file under mpirun on 1, 2, 4 ranks equals one process: ok"
    else echo "memscan lookup --file under mpirun differs from one process: FAILED"; fail=1; fi
    # a damaged index (one page of the table's values, read only where a tag matched): the
    # queries meeting it get error lines with no answer, the others their answers; on every
    # rank count the same lines as one process, exit 1
    python3 - "$T/serve/cli.idx" "$T/serve/dmg.idx" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
L = struct.unpack_from("<I", d, 120)[0]; ext = 136 + L + 8
off_dir, off_vals, off_firsts = (struct.unpack_from("<Q", d, ext + 8 + 8 * i)[0] for i in (2, 5, 6))
pg = ((off_vals + off_firsts) // 2 - off_dir) // 65536  # a page inside the values
assert pg >= 1, "the index is too small to damage a page past the directory's"
d[off_dir + pg * 65536 + 100] ^= 0x40
open(sys.argv[2], "wb").write(d)
PY
    "$AX" memscan lookup --index "$T/serve/dmg.idx" --file "$T/serve/q.jsonl" >"$T/serve/d0" 2>/dev/null
    rcs=$?
    same=1
    for np in 2 4; do
      mpirun --oversubscribe -np "$np" "$AX" memscan lookup --index "$T/serve/dmg.idx" \
        --file "$T/serve/q.jsonl" >"$T/serve/d$np" 2>/dev/null
      [ $? = 1 ] && cmp -s "$T/serve/d0" "$T/serve/d$np" || same=0
    done
    if [ "$rcs" = 1 ] && [ "$same" = 1 ] && python3 - "$T/serve/d0" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
err = [o for o in out if "error" in o]
assert len(out) == 60 and err and len(err) < 60, len(err)
assert all("windows_found" not in o and "is damaged" in o["error"] for o in err)
PY
    then echo "memscan lookup --file, damaged index: error lines, no answers, on 1, 2, 4 ranks alike: ok"
    else echo "memscan lookup --file, damaged index: FAILED"; fail=1; fi
  fi
else echo "memscan.sh: $SV not built"; fail=1; fi
# memscan probe with sampled continuations: a model that memorized 24 documents, probed at two
# prefix lengths with 6 draws each (top-k, top-p, temperature): every per-document result,
# draw counts included, is the same on 1 rank and on 2x1x2x1 (the vocabulary split over Y)
if [ -x "$AX" ]; then
  P=$T/probe
  mkdir -p "$P"
  head -n 24 data/corpus/kjv.jsonl >"$P/k.jsonl"
  "$AX" data tokenizer-train --input "$P/k.jsonl" --vocab-size 300 --out "$P/tok" 2>/dev/null &&
    "$AX" data encode --tokenizer "$P/tok" --input "$P/k.jsonl" --out "$P/k.axd" 2>/dev/null &&
    "$AX" train --data "$P/k.axd" --model tiny --seq-len 48 --batch 8 --lr 3e-3 --warmup 5 \
      --steps 100 --packing doc --log-every 100 --out "$P/run" >/dev/null 2>&1 || fail=1
  F=(--ckpt "$P/run" --data "$P/k.axd" --samples 10 --prefix-lengths 12,16 --suffix 16
     --samples-per-prefix 6 --top-k 40 --top-p 0.95 --temperature 1.2 --batch 5)
  "$AX" memscan probe "${F[@]}" --out "$P/s1.json" >/dev/null || fail=1
  mpirun --oversubscribe -np 4 "$AX" memscan probe "${F[@]}" --grid 2x1x2x1 \
    --out "$P/s4.json" >/dev/null || fail=1
  if python3 - "$P/s1" "$P/s4" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p + ".samples.jsonl")] for p in sys.argv[1:])
ja, jb = (json.load(open(p + ".json")) for p in sys.argv[1:])
counts = [x["sampled_exact"] for x in a]
ok = (a == b and len(a) == 20 and len(set(counts)) >= 3 and ja["metrics"] == jb["metrics"]
      and ja["tables"] == jb["tables"])
print("memscan probe draws: 2x1x2x1 equals 1 rank (counts %s): %s" % (counts, "ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
  then :; else fail=1; fi
fi
exit $fail
