#!/usr/bin/env bash
# Memorization over training (issue 11 item 6), end to end on a slice of the bundled corpus:
# `memscan probe|mia|exposure --all-steps` over a tiny run with checkpoints at steps 2, 4, 6
# (one curve point per step, in order, equal to that step's scan file; a damaged checkpoint
# skipped with its reason; a missing --steps entry refused), and `train --scan-every` (scan
# records in metrics.jsonl, losses bit-identical to a run without scans, a bad scan config
# refused before training, scans continuing over a resume). Usage: tests/cli/over_steps.sh AXMEM
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
source tests/cli/lib.sh steps

head -n 48 data/corpus/kjv.jsonl | python3 -c '
import json, sys
for l in sys.stdin: print(json.dumps({"text": json.loads(l)["text"][:200]}))' >"$T/all.jsonl"
run "data: tokenizer, encode, split, canaries" bash -c "
  '$AX' data tokenizer-train --input '$T/all.jsonl' --vocab-size 300 --out '$T/tok' &&
  '$AX' data encode --tokenizer '$T/tok' --input '$T/all.jsonl' --out '$T/all.axd' &&
  '$AX' data split --input '$T/all.axd' --holdout 0.5 --seed 1 --out-train '$T/train.axd' \
    --out-holdout '$T/held.axd' &&
  '$AX' data canaries --input '$T/train.axd' --tokenizer '$T/tok' --format 'my PIN is {d2}' \
    --repeats 1,8 --per-repeat 2 --references 20 --seed 3 --out '$T/can.axd' \
    --secrets '$T/secrets.json'"
TRAIN=(--data "$T/can.axd" --layers 1 --dim 32 --heads 2 --ffn 48 --seq-len 32 --batch 4
       --steps 6 --warmup 1 --lr 1e-2 --log-every 1000)
run "train: checkpoints at 2, 4, 6" "$AX" train "${TRAIN[@]}" --ckpt-every 2 --out "$T/run"

# ---- memscan --all-steps
PROBE=(--data "$T/can.axd" --samples 8 --prefix 8 --suffix 8)
run "probe --all-steps" "$AX" memscan probe --ckpt "$T/run" --all-steps "${PROBE[@]}" \
  --out "$T/scans/probe.json"
[ "$(grep -c "^axmem memscan probe: step [246] ([123] of 3)" "$T/err")" = 3 ] \
  && ok "probe --all-steps: a progress line per step" || bad "probe --all-steps: a progress line per step"
run "mia --all-steps" "$AX" memscan mia --ckpt "$T/run" --all-steps --members "$T/train.axd" \
  --nonmembers "$T/held.axd" --tokens-per-doc 16 --max-docs 12 --bootstrap 50 --out "$T/mia"
run "exposure --all-steps" "$AX" memscan exposure --ckpt "$T/run" --steps 2,6 \
  --canaries "$T/secrets.json" --out "$T/exp"
python3 - "$T" <<'PY' 2>"$T/err" && ok "curves: one point per step in order, equal to the step's scan" || bad "curves"
import json, sys
t = sys.argv[1]
def load(p): return json.load(open(p))
c = load(f"{t}/scans/probe.curve.json")
assert c["schema"] == "axmem-curve" and c["scan"] == "probe" and c["skipped"] == [], c
assert [p["step"] for p in c["points"]] == [2, 4, 6], c["points"]
for p in c["points"]:
    s = load(f"{t}/scans/{p['scan_file']}")
    assert s["checkpoint"]["step"] == p["step"], (s["checkpoint"], p)
    for k in ("exact_match_rate", "token_accuracy", "rouge_l"):
        assert p[k] == s["metrics"][k], (k, p[k], s["metrics"][k])
        assert p[k]["ci95"][0] <= p[k]["mean"] <= p[k]["ci95"][1]
m = load(f"{t}/mia/mia.curve.json")
assert [p["step"] for p in m["points"]] == [2, 4, 6]
for p in m["points"]:
    s = load(f"{t}/mia/{p['scan_file']}")
    for k, v in p["scores"].items():
        assert "roc" not in v and v["auc"] == s["metrics"][k]["auc"], k
        assert v["auc_ci95"] == s["metrics"][k]["auc_ci95"] and "tpr_at_fpr_0.01" in v
e = load(f"{t}/exp/exposure.curve.json")
assert [p["step"] for p in e["points"]] == [2, 6]
for p in e["points"]:
    s = load(f"{t}/exp/{p['scan_file']}")
    assert p["by_repeats"] == s["by_repeats"] and [r["repeats"] for r in p["by_repeats"]] == [1, 8]
    assert all("exposure_mean" in r and "extracted_share" in r for r in p["by_repeats"])
PY
run "probe --all-steps with sampled draws and two prefix lengths" "$AX" memscan probe \
  --ckpt "$T/run" --steps 2,6 "${PROBE[@]}" --prefix-lengths 4,8 --samples-per-prefix 2 \
  --out "$T/scans_pl/probe.json"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert [p["step"] for p in c["points"]] == [2, 6], c
for p in c["points"]:
    assert [r["prefix"] for r in p["by_prefix_length"]] == [4, 8], p
    assert 0 <= p["sampled_any_match_rate"]["mean"] <= 1, p' "$T/scans_pl/probe.curve.json" \
  2>"$T/err" && ok "probe curve: sampled extraction and rows by prefix length per step" \
  || bad "probe curve: sampled extraction and rows by prefix length per step"
cp -r "$T/run" "$T/dmg"
truncate -s 100 "$T/dmg/ckpt/step-000004/params.000.zst"
run "probe --all-steps with a damaged checkpoint still scans the others" "$AX" memscan probe \
  --ckpt "$T/dmg" --all-steps "${PROBE[@]}" --out "$T/dscans/probe.json"
grep -q "skipping step 4 (.*step-000004): .*params.000.zst" "$T/err" \
  && ok "damaged checkpoint: a skip line naming the shard" || bad "damaged checkpoint: a skip line naming the shard"
python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert [p["step"] for p in c["points"]] == [2, 6] and [s["step"] for s in c["skipped"]] == [4], c' \
  "$T/dscans/probe.curve.json" 2>"$T/err" && ok "damaged checkpoint: in the curve's skipped list" \
  || bad "damaged checkpoint: in the curve's skipped list"
expect_fail "--steps names a missing step" 2 "no checkpoint step-000003 .*steps 2 to 6" \
  "$AX" memscan probe --ckpt "$T/run" --steps 2,3 "${PROBE[@]}" --out "$T/x/probe.json"
"$AX" memscan mia --help >"$T/out" 2>&1 && grep -q -- "--all-steps" "$T/out" \
  && ok "mia --help lists --all-steps" || bad "mia --help lists --all-steps"

# ---- train --scan-every
printf 'samples = 8\nprefix = 8\nsuffix = 8\n' >"$T/scan.cfg"
run "train --scan-every 2" "$AX" train "${TRAIN[@]}" --scan-every 2 --scan-config "$T/scan.cfg" \
  --out "$T/rs"
[ -n "$(losses "$T/run/metrics.jsonl")" ] && [ "$(losses "$T/rs/metrics.jsonl")" = "$(losses "$T/run/metrics.jsonl")" ] \
  && ok "train --scan-every: losses bit-identical to a run without scans" \
  || bad "train --scan-every: losses bit-identical to a run without scans"
python3 - "$T/rs" <<'PY' 2>"$T/err" && ok "train --scan-every: a probe record per scan step in metrics.jsonl" || bad "train --scan-every: records"
import json, os, sys
rs = [json.loads(l) for l in open(f"{sys.argv[1]}/metrics.jsonl")]
sc = [r for r in rs if "scan" in r]
assert [r["step"] for r in sc] == [2, 4, 6], sc
for r in sc:
    assert r["scan"] == "probe" and r["samples"] == 8
    assert 0 <= r["exact_match_lo"] <= r["exact_match"] <= r["exact_match_hi"] <= 1, r
    assert 0 <= r["token_accuracy"] <= 1 and isinstance(r["extraction_rising"], bool), r
    s = json.load(open(r["file"]))
    assert s["checkpoint"]["step"] == r["step"] and s["metrics"]["exact_match_rate"]["mean"] == r["exact_match"]
# every scan record follows its step's metrics line
steps = [r["step"] for r in rs]
for r in sc: assert steps.index(r["step"]) < rs.index(r)
PY
cp "$T/rs/scans/step-000006/probe.json" "$T/rs/scans/step-000006/probe.samples.jsonl" "$T/rs/"
run "report reads a metrics.jsonl holding scan records" "$AX" report --run a="$T/rs" --out "$T/rep"
# a run that memorizes 4 short documents: extraction jumps between scans, and training says so
head -n 4 data/corpus/kjv.jsonl | python3 -c '
import json, sys
for l in sys.stdin: print(json.dumps({"text": json.loads(l)["text"][:120]}))' >"$T/few.jsonl"
"$AX" data encode --tokenizer "$T/tok" --input "$T/few.jsonl" --out "$T/few.axd" 2>/dev/null
printf 'samples = 4\nprefix = 8\nsuffix = 16\n' >"$T/few.cfg"
run "train --scan-every on a memorizing run" "$AX" train --data "$T/few.axd" --layers 1 --dim 64 \
  --heads 2 --ffn 96 --seq-len 48 --batch 4 --packing doc --steps 80 --warmup 2 --lr 1e-2 \
  --weight-decay 0 --log-every 1000 --scan-every 20 --scan-config "$T/few.cfg" --out "$T/rw"
grep -q "warn: step [0-9]*: extraction rising: exact_match" "$T/err" && python3 -c '
import json, sys
sc = [json.loads(l) for l in open(sys.argv[1]) if "\"scan\"" in l]
assert [r["step"] for r in sc] == [20, 40, 60, 80] and not sc[0]["extraction_rising"], sc
assert any(r["extraction_rising"] for r in sc) and sc[-1]["exact_match"] > sc[0]["exact_match_hi"], sc' \
  "$T/rw/metrics.jsonl" 2>>"$T/err" && ok "train --scan-every: 'extraction rising' when exact match jumps" \
  || bad "train --scan-every: 'extraction rising' when exact match jumps"
printf 'samples = 8\nbogus = 1\n' >"$T/bad.cfg"
expect_fail "train: unknown key in --scan-config, before training" 2 "bogus" \
  "$AX" train "${TRAIN[@]}" --scan-every 2 --scan-config "$T/bad.cfg" --out "$T/rb"
[ ! -e "$T/rb/metrics.jsonl" ] && ok "train: a bad scan config trains nothing" || bad "train: a bad scan config trains nothing"
printf 'ckpt = %s\n' "$T/run" >"$T/own.cfg"
expect_fail "train: --scan-config may not set what the run decides" 2 "sets 'ckpt', which the run decides" \
  "$AX" train "${TRAIN[@]}" --scan-every 2 --scan-config "$T/own.cfg" --out "$T/rb"
expect_fail "train: --scan-every needs --scan-config" 2 "needs --scan-config" \
  "$AX" train "${TRAIN[@]}" --scan-every 2 --out "$T/rb"
"$AX" train "${TRAIN[@]}" --scan-every 2 --scan-config "$T/scan.cfg" --exit-after-steps 3 \
  --out "$T/rr" >/dev/null 2>&1
run "train --scan-every: resume" "$AX" train --out "$T/rr" --resume
python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
assert [r["step"] for r in rs if "scan" in r] == [2, 4, 6], rs' "$T/rr" 2>"$T/err" \
  && [ "$(losses "$T/rr/metrics.jsonl")" = "$(losses "$T/run/metrics.jsonl")" ] \
  && ok "train --scan-every: scans continue over a resume, losses unchanged" \
  || bad "train --scan-every: scans continue over a resume, losses unchanged"

# ---- on the grid: the same records and curve as on one rank
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  run "train --scan-every on 1x1x2x1 (2 ranks)" mpirun --oversubscribe -np 2 "$AX" train \
    "${TRAIN[@]}" --scan-every 2 --scan-config "$T/scan.cfg" --grid 1x1x2x1 --out "$T/rs2"
  run "probe --all-steps on 2x1x1x1 (2 ranks)" mpirun --oversubscribe -np 2 "$AX" memscan probe \
    --ckpt "$T/run" --all-steps "${PROBE[@]}" --grid 2x1x1x1 --out "$T/scans2/probe.json"
  python3 - "$T" <<'PY' 2>"$T/err" && ok "grid scans equal the single-rank ones" || bad "grid scans equal the single-rank ones"
import json, sys
t = sys.argv[1]
def recs(d): return [(r["step"], r["exact_match"], r["token_accuracy"], r["rouge_l"])
                     for r in map(json.loads, open(f"{t}/{d}/metrics.jsonl")) if "scan" in r]
assert recs("rs2") == recs("rs") and len(recs("rs")) == 3, (recs("rs2"), recs("rs"))
a, b = (json.load(open(f"{t}/{d}/probe.curve.json")) for d in ("scans2", "scans"))
key = lambda c: [(p["step"], p["exact_match_rate"], p["token_accuracy"]) for p in c["points"]]
assert key(a) == key(b), (key(a), key(b))
PY
fi

# ---- the report: memorization over training (issue 11 item 8)
run "report: --all-steps curves, train --scan-every records, a curve with a skipped step" \
  "$AX" report --scan steps="$T/scans/probe.curve.json" --scan steps="$T/mia/mia.curve.json" \
  --scan steps="$T/exp/exposure.curve.json" --run train="$T/rs" --run mem="$T/rw" \
  --run dmg="$T/dscans" --out "$T/rc"
python3 - "$T" <<'PY' 2>"$T/err" && ok "report: curve points, flags and section equal to the curve files and records" || bad "report: memorization over training"
import json, sys
t = sys.argv[1]
def load(p): return json.load(open(p))
rep = load(f"{t}/rc/report.json")  # the document: blocks by id, table rows keyed by column
B = {b["id"]: b for s in rep["sections"] for b in s["blocks"] if "id" in b}
ext = lambda run, src: [r for r in B["curve-extraction"]["rows"] if r["run"] == run and r["source"] == src]
c = load(f"{t}/scans/probe.curve.json")
pts = ext("steps", "memscan probe --all-steps")
assert [p["step"] for p in pts] == [p["step"] for p in c["points"]] == [2, 4, 6], pts
for a, b in zip(pts, c["points"]):
    assert a["exact_match"]["value"] == b["exact_match_rate"]["mean"] and a["exact_match"]["ci95"] == b["exact_match_rate"]["ci95"]
    assert a["token_accuracy"] == b["token_accuracy"]["mean"]
mia = [r for r in B["curve-mia"]["rows"] if r["run"] == "steps"]
assert [p["auc"]["value"] for p in mia] == \
       [p["scores"][mia[0]["score"]["id"]]["auc"] for p in load(f"{t}/mia/mia.curve.json")["points"]]
assert [r["exposure_mean"] for r in B["curve-exposure"]["rows"] if r["run"] == "steps"] == \
       [p["overall"]["exposure_mean"] for p in load(f"{t}/exp/exposure.curve.json")["points"]]
for run, d in (("train", "rs"), ("mem", "rw")):  # the records as written; the flags agree
    recs = [json.loads(l) for l in open(f"{t}/{d}/metrics.jsonl") if '"scan"' in l]
    got = [(p["step"], p["exact_match"]["value"], p["exact_match"]["ci95"], p.get("flagged", False))
           for p in ext(run, "train --scan-every")]
    assert got == [(r["step"], r["exact_match"], [r["exact_match_lo"], r["exact_match_hi"]],
                    r["extraction_rising"]) for r in recs], (run, got)
assert any(p.get("flagged") for p in ext("mem", "train --scan-every"))
html, md = open(f"{t}/rc/report.html").read(), open(f"{t}/rc/report.md").read()
assert "dmg: 1 checkpoint(s) could not be opened" in md
assert html.count("Memorization over training</h2>") == 1 and html.count('class="band"') >= 2
assert "Membership inference versus training step" in html
assert "Canary exposure versus training step" in html
flags = sum(1 for r in B["curve-extraction"]["rows"] if r.get("flagged"))
assert html.count('<tr class="flag">') == flags >= 1, flags
for p in c["points"]: assert f"| steps | memscan probe --all-steps | {p['step']} |" in md
assert "| mem | train --scan-every | 80 |" in md and "ROSE above the previous upper bound" in md
PY
python3 -c '
import json, sys
c = json.load(open(sys.argv[1])); c["points"][1]["step"] = 1
json.dump(c, open(sys.argv[2], "w"))' "$T/scans/probe.curve.json" "$T/bad.curve.json"
expect_fail "report: a curve whose steps do not ascend is refused, naming the field" 1 \
  "bad.curve.json: points\[1\]\.step = 1 does not ascend" \
  "$AX" report --scan x="$T/bad.curve.json" --out "$T/rx"

finish over-steps
