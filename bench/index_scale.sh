#!/usr/bin/env bash
# memscan index at corpus scale (issue 12, "how we will check it"):
#  (a) a synthetic corpus of A_TOKENS tokens with planted duplicated passages (the generator of
#      bench_memscan: ~1000-token documents of random tokens from a 50k alphabet, passages of
#      200 tokens copied into 2, 8, 32, 128, 512 documents) is indexed with --mem-limit A_LIMIT
#      (spilling), and every planted passage must come back from `memscan lookup --file` as one
#      span of all its 200 tokens with its exact count, every window with that count, and every
#      place (document, offset) it was planted at; peak RSS and time of the build are printed;
#  (b) a B_TOKENS corpus is indexed with --mem-limit B_LIMIT (spilling) and in memory, and the
#      two files must be equal byte for byte (cmp; so entry for entry), INDEX.json too.
# usage: bench/index_scale.sh [--quick] [--keep] [--dir DIR] [BUILD_DIR]
#   env: A_TOKENS (1G) A_LIMIT (8G) B_TOKENS (100M) B_LIMIT (1G) N (32)
#   --quick: A_TOKENS=10M A_LIMIT=64M B_TOKENS=10M B_LIMIT=96M (a minute on 2 cores)
#   --dir DIR: where the corpora and indexes go (default: a new directory under /tmp); about
#   37 bytes per A token at the peak of (a) (dataset 2, spill ~16, index ~15, lists), removed
#   at the end unless --keep.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
DIR=""
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) A_TOKENS=${A_TOKENS:-10M} A_LIMIT=${A_LIMIT:-64M} B_TOKENS=${B_TOKENS:-10M}
             B_LIMIT=${B_LIMIT:-96M}; shift ;;
    --keep) KEEP=1; shift ;;
    --dir) DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) B=$1; shift ;;
  esac
done
A_TOKENS=${A_TOKENS:-1G} A_LIMIT=${A_LIMIT:-8G} B_TOKENS=${B_TOKENS:-100M} B_LIMIT=${B_LIMIT:-1G}
N=${N:-32}
AX=$B/bin/axmem
GEN=$B/bench/bench_memscan
for x in "$AX" "$GEN"; do
  [ -x "$x" ] || { echo "index_scale.sh: $x not built (run scons -Q -j2)"; exit 1; }
done
[ -x /usr/bin/time ] || { echo "index_scale.sh: needs /usr/bin/time (GNU time) for peak RSS"; exit 1; }
if [ -z "$DIR" ]; then DIR=$(mktemp -d /tmp/axmem-index-scale.XXXXXX); else mkdir -p "$DIR"; fi
[ "$KEEP" = 1 ] || trap 'rm -rf "$DIR"' EXIT
fail=0
echo "index_scale: A = $A_TOKENS tokens at --mem-limit $A_LIMIT; B = $B_TOKENS tokens at" \
     "--mem-limit $B_LIMIT and in memory; n = $N; in $DIR ($(df -h "$DIR" | awk 'NR==2{print $4}') free)"

# build INDEX from DATA with a limit; prints "seconds peak_kib" and keeps the CLI's output
build() { # DATA INDEX LIMIT LOG
  /usr/bin/time -f "%e %M" -o "$4.time" "$AX" memscan index --data "$1" --out "$2" --n "$N" \
    --mem-limit "$3" > "$4" 2>&1 || { cat "$4"; return 1; }
  cat "$4.time"
}
bytes() { stat -c %s "$1"; }
# the process's own peak before any work (its shared libraries: with the CUDA libraries linked
# in, ~250 MB), shown next to each build's peak so the build's part can be read off
BASE_KIB=$(/usr/bin/time -f "%M" "$AX" memscan index --help 2>&1 >/dev/null | tail -1)
rss() { echo "$(($1 / 1024)) MiB ($(( ($1 - BASE_KIB) / 1024 )) MiB above the $((BASE_KIB / 1024)) MiB of \`axmem memscan index --help\`)"; }

# ---- (a) every planted duplicate found with its exact count
t0=$(date +%s.%N)
"$GEN" --write-data "$DIR/a.axd" "$A_TOKENS" "$DIR/a.plants.jsonl"
echo "(a) corpus: $(bytes "$DIR/a.axd") bytes written in $(echo "$(date +%s.%N) - $t0" | bc) s"
# the disk the build takes at its peak: sample the directory's usage while it runs
( mx=0; while :; do u=$(du -sb "$DIR" 2>/dev/null | cut -f1); [ "${u:-0}" -gt "$mx" ] && mx=$u
    echo "$mx" > "$DIR/.du_peak"; sleep 1; done ) &
DU=$!
read -r secs kib < <(build "$DIR/a.axd" "$DIR/a.idx" "$A_LIMIT" "$DIR/a.log" | tail -1)
kill "$DU" 2>/dev/null; wait "$DU" 2>/dev/null || true
grep -q "spilling to disk" "$DIR/a.log" || echo "(a) note: the build fit in --mem-limit $A_LIMIT (no spill)"
echo "(a) index: $secs s, peak RSS $(rss "$kib") (limit $A_LIMIT), file $(bytes "$DIR/a.idx")" \
     "bytes; directory peak $(( $(cat "$DIR/.du_peak") / 1000000 )) MB (dataset included)"
t0=$(date +%s.%N)
"$AX" memscan lookup --index "$DIR/a.idx" --file "$DIR/a.plants.jsonl" --occurrences 100000 \
  > "$DIR/a.answers.jsonl" || { echo "(a) FAIL: lookup exited $?"; fail=1; }
echo "(a) lookups of the planted passages: $(echo "$(date +%s.%N) - $t0" | bc) s"
python3 - "$DIR/a.plants.jsonl" "$DIR/a.answers.jsonl" "$N" <<'EOF' || fail=1
import json, sys
plants = [json.loads(l) for l in open(sys.argv[1])]
answers = [json.loads(l) for l in open(sys.argv[2])]
n = int(sys.argv[3])
bad = 0
if len(answers) != len(plants):
    print(f"(a) FAIL: {len(plants)} passages, {len(answers)} answers"); sys.exit(1)
for p, a in zip(plants, answers):
    c, L = p["copies"], len(p["tokens"])
    want = sorted(tuple(x) for x in p["places"])
    why = []
    if a.get("id") != p["id"]: why.append(f"answer id {a.get('id')}")
    if a.get("windows_found") != L - n + 1: why.append(f"{a.get('windows_found')} windows found")
    sp = a.get("spans", [])
    if len(sp) != 1 or sp[0]["start"] != 0 or sp[0]["len"] != L:
        why.append("not one span of the whole passage: " +
                   str([(s["start"], s["len"]) for s in sp]))
    else:
        s = sp[0]
        if s["occurrences"] != c: why.append(f"span occurs {s['occurrences']} times")
        if s["count_min"] != c or s["count_max"] != c:
            why.append(f"window counts {s['count_min']}..{s['count_max']}")
        got = sorted((x["doc"], x["offset"]) for x in s.get("places", []))
        if got != want: why.append(f"places differ ({len(got)} listed, {len(want)} planted)")
    wins = a.get("matching_windows", [])
    if len(wins) != L - n + 1 or any(w["count"] != c for w in wins):
        why.append("a window's count is not the passage's")
    status = "ok" if not why else "FAIL: " + "; ".join(why)
    bad += bool(why)
    print(f"(a) passage {p['id']}: {c} copies, {L} tokens: {status}")
print(f"(a) {len(plants) - bad} of {len(plants)} planted passages found with their exact counts")
sys.exit(1 if bad else 0)
EOF

# ---- (b) spilled build == in-memory build, byte for byte
if [ "$B_TOKENS" = "$A_TOKENS" ]; then
  ln -sf "$DIR/a.axd" "$DIR/b.axd"
else
  "$GEN" --write-data "$DIR/b.axd" "$B_TOKENS"
fi
rm -f "$DIR/a.idx" "$DIR/a.idx.json" "$DIR/a.answers.jsonl"
read -r s1 k1 < <(build "$DIR/b.axd" "$DIR/b.spill.idx" "$B_LIMIT" "$DIR/b1.log" | tail -1)
grep -q "spilling to disk" "$DIR/b1.log" || { echo "(b) FAIL: --mem-limit $B_LIMIT did not spill"; fail=1; }
read -r s2 k2 < <(build "$DIR/b.axd" "$DIR/b.mem.idx" 1T "$DIR/b2.log" | tail -1)
grep -q "spilling to disk" "$DIR/b2.log" && { echo "(b) FAIL: the in-memory build spilled"; fail=1; }
echo "(b) spilled: $s1 s, peak RSS $(rss "$k1") (limit $B_LIMIT); in memory: $s2 s," \
     "peak RSS $(rss "$k2"); files $(bytes "$DIR/b.spill.idx") and $(bytes "$DIR/b.mem.idx") bytes"
if cmp "$DIR/b.spill.idx" "$DIR/b.mem.idx" && cmp "$DIR/b.spill.idx.json" "$DIR/b.mem.idx.json"; then
  echo "(b) spilled and in-memory indexes are byte-identical: ok"
else
  echo "(b) FAIL: the spilled index differs from the in-memory one"; fail=1
fi
[ "$fail" = 0 ] && echo "index_scale: ok" || echo "index_scale: FAILED"
exit "$fail"
