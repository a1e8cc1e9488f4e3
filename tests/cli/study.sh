#!/usr/bin/env bash
# `axmem study` on a tiny slice of the bundled corpus (4 members, 20 steps, vocabulary 300; a few
# seconds a run): one report with a comparison row per mitigation, every row scanned on the same
# members, non-members and canaries (the split's counts, the canaries planted); a run stopped by
# SIGTERM in the middle of a training resumes from its checkpoint and ends with the same report
# as a run never stopped, and a rerun of a finished study runs no stage again; a split given as
# --members/--nonmembers/--tokenizer and a plain-text corpus work; a bad --mitigations item is a
# usage error naming it, before any work.
# Usage: tests/cli/study.sh path/to/axmem
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/axmem-study.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && sed 's/^/     | /' "$T/err" | tail -5; }
MIT='none,goldfish:hash:k=4,h=13'
FLAGS=(--corpus data/corpus/kjv.jsonl --docs 4 --steps 40 --vocab-size 300 --mitigations "$MIT")

# the report: a row per mitigation, the same sets for each (python reads report.json)
check_report() { # DIR N_ROWS
  python3 - "$1" "$2" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
doc = json.load(open(f"{d}/report/report.json"))
sec = [s for s in doc["sections"] if s["id"] == "compare"]
assert sec, "no comparison section"
rows = [b for b in sec[0]["blocks"] if b.get("id") == "compare"][0]["rows"]
assert len(rows) == n, f"{len(rows)} rows, want {n}"
split = json.load(open(f"{d}/split.json")) if n > 1 else None
for r in rows:
    s = json.load(open(f"{d}/{r['run']}/study.json"))
    mia = json.load(open(f"{d}/{r['run']}/mia.json"))
    want = (s["members"], s["nonmembers"], s["canaries"])
    assert (r["members"], r["nonmembers"], r["canaries"]) == want, (r, want)
    if split: assert want == (split["members"], split["nonmembers"], 6), (want, split)
    assert r["mitigation"] == s["mitigation"], r
    assert r["heldout"] > 0 and 0 <= r["mia_auc"]["value"] <= 1, r
    assert r["epsilon"] == "none", "no DP run here: no guarantee"
charts = [b for b in sec[0]["blocks"] if b.get("type") == "line_chart"]
assert [c["id"] for c in charts] == ["tradeoff-mia", "tradeoff-exact"], charts
for c in charts:
    assert len(c["series"]) == n and all(len(s["points_x"]) == 1 for s in c["series"]), c
    for s in c["series"]:
        assert s["points_ci95_lo"][0] <= s["points_y"][0] <= s["points_ci95_hi"][0], s
PY
}

A="$T/a"
if "$AX" study "${FLAGS[@]}" --out "$A" >"$T/out" 2>"$T/err"; then ok "study runs"; else bad "study runs (exit $?)"; fi
grep -q '^study: 2 mitigations, 4 members' "$T/out" && grep -q '\[1/15\] train the tokenizer' "$T/err" &&
  grep -q '\[15/15\] canary exposure of goldfish' "$T/err" &&
  ok "study: a progress line per stage, a closing line" || bad "study: a progress line per stage, a closing line"
check_report "$A" 2 >"$T/err" 2>&1 &&
  ok "report: a comparison row and a trade-off point per mitigation, the same members, non-members and canaries" ||
  bad "report: a comparison row and a trade-off point per mitigation, the same members, non-members and canaries"

# a finished study again: every stage done before, the same report
cp "$A/report/report.json" "$T/a.json"
"$AX" study "${FLAGS[@]}" --out "$A" >"$T/out" 2>"$T/err" &&
  grep -q '0 stages run, 15 done before' "$T/out" && cmp -s "$T/a.json" "$A/report/report.json" &&
  ok "rerun of a finished study: no stage runs again, the same report" ||
  bad "rerun of a finished study: no stage runs again, the same report"

# stopped in the middle of a training (SIGTERM once the goldfish run folder is started; on a
# slow machine it may land in the baseline's), then rerun: the cut training continues from its
# checkpoint, the stages before it are skipped, and the report equals the uninterrupted one's
B="$T/b"
"$AX" study "${FLAGS[@]}" --out "$B" >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 3000); do [ -e "$B/goldfish/.study-train" ] && break; sleep 0.02; done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
cut=$(sed -n "s#.*stage 'train-\([a-z]*\)' failed: training .* stopped at step.*#\1#p" "$T/err")
[ "$rc" = 1 ] && [ -n "$cut" ] && [ ! -e "$B/stages/train-$cut.json" ] && [ -e "$B/stages/index.json" ] &&
  grep -q 'run the same command again to continue' "$T/err" &&
  ok "SIGTERM during the $cut training: the study stops (exit $rc), the stages before it recorded" ||
  bad "SIGTERM during a training: the study stops (exit $rc), the stages before it recorded"
"$AX" study "${FLAGS[@]}" --out "$B" >"$T/out" 2>"$T/err"
rc=$?
sed "s#$B#$A#g" "$B/report/report.json" >"$T/b.json"
[ "$rc" = 0 ] && grep -q 'index the training set: done before' "$T/err" &&
  grep -q "continuing .*/$cut from its last checkpoint" "$T/err" && cmp -s "$T/a.json" "$T/b.json" &&
  ok "rerun after the stop: the stages done are skipped, the cut training continues, the same report" ||
  { bad "rerun after the stop: the stages done are skipped, the cut training continues, the same report";
    diff <(python3 -m json.tool "$T/a.json") <(python3 -m json.tool "$T/b.json") | head -10; }

# an existing split (the first study's), and a plain-text corpus (a document a line)
"$AX" study --members "$A/members.axd" --nonmembers "$A/heldout.axd" --tokenizer "$A/tokenizer.axt" \
  --mitigations none --steps 20 --out "$T/c" >"$T/out" 2>"$T/err" && check_report "$T/c" 1 >"$T/err" 2>&1 &&
  ok "study on an existing split (--members, --nonmembers, --tokenizer)" ||
  bad "study on an existing split (--members, --nonmembers, --tokenizer)"
python3 -c "
import json
for l in open('data/corpus/kjv.jsonl').readlines()[:40]: print(json.loads(l)['text'].replace('\n', ' ')[:400])
" >"$T/corpus.txt"
"$AX" study --corpus "$T/corpus.txt" --docs 4 --steps 5 --vocab-size 300 --mitigations none \
  --no-privacy --out "$T/d" >"$T/out" 2>"$T/err" && [ -s "$T/d/baseline/probe.json" ] &&
  [ ! -e "$T/d/baseline/mia.json" ] && ok "study on a plain-text corpus, --no-privacy" ||
  bad "study on a plain-text corpus, --no-privacy"

# bad --mitigations: exit 2, the bad item named, nothing written
n_bad=0
for m in 'none,foo' 'dedup:0' 'dedup:x' 'goldfish:hash:k=1' 'dp:eps=8,noise=1' 'dp:delta=1e-5' \
  'dp:eps=8,bogus=2' 'dp:eps=8,delta=2' 'none,none' 'none,,dedup:50'; do
  "$AX" study --corpus data/corpus/kjv.jsonl --mitigations "$m" --out "$T/e" >/dev/null 2>"$T/err"
  rc=$?
  item=${m##*,}; [ "$m" = 'none,,dedup:50' ] && item="$m"; [ "${m#dp:}" != "$m" ] && item="$m"
  [ "$m" = 'none,none' ] && item=none
  if [ "$rc" != 2 ] || ! grep -qF -- "--mitigations" "$T/err" || ! grep -qF -- "'$item'" "$T/err" ||
    [ -e "$T/e" ]; then
    echo "     '$m': exit $rc: $(cat "$T/err")"; n_bad=$((n_bad + 1))
  fi
done
[ "$n_bad" = 0 ] && ok "bad --mitigations items: usage errors naming the item, before any work" ||
  bad "bad --mitigations items: usage errors naming the item, before any work"

echo "study: $pass passed, $fail failed"
[ "$fail" = 0 ]
