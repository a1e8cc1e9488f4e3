#!/usr/bin/env bash
# memscan mia and exposure end to end on the bundled corpus: 96 short documents split into
# members and held-out non-members (`axmem data split`), canaries {d3} planted at repeat counts
# 1, 4 and 16 within the 96 tokens `--packing doc --seq-len 96` trains on (`axmem data canaries
# --within 96`), a tiny model trained for ~13 epochs on the members and a reference model on the
# held-out set. Checks the outputs' structure and value ranges, that the membership attack
# separates the sets (loss AUC >= 0.8, interval above 0.5), the model-free baselines against
# Python's zlib and a pair count, TPRs null where 43 non-members cannot resolve the rate, the
# shift warning (short non-members), refused member / non-member sets, that exposure rises with
# the repeat count, that 4 ranks on 2x1x2x1 give the single-rank scores, that every copy trained
# on is counted so (and that a model trained on copies planted anywhere is warned about, the
# copies training read counted independently here), and that exposure.json records the canaried
# dataset's checksum and documents when the secrets file names it by a relative path.
# Usage: tests/cli/privacy.sh [path/to/axmem]   (~1 min on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source tests/cli/lib.sh privacy

python3 - "$T" <<'PY'
import json, sys
lines = open("data/corpus/kjv.jsonl").readlines()
with open(f"{sys.argv[1]}/all.jsonl", "w") as f:
    for l in lines[200:296]:
        f.write(json.dumps({"text": json.loads(l)["text"][:300]}) + "\n")
PY
run "data: tokenizer, encode, split, canaries" bash -c "
  '$AX' data tokenizer-train --input '$T/all.jsonl' --vocab-size 512 --out '$T/tok' &&
  '$AX' data encode --tokenizer '$T/tok' --input '$T/all.jsonl' --out '$T/all.axd' &&
  '$AX' data split --input '$T/all.axd' --holdout 0.5 --seed 1 --out-train '$T/train.axd' \
    --out-holdout '$T/held.axd' &&
  '$AX' data canaries --input '$T/train.axd' --tokenizer '$T/tok' --format 'my PIN is {d3}' \
    --repeats 1,4,16 --per-repeat 2 --references 100 --seed 3 --within 96 --out '$T/can.axd' \
    --secrets '$T/secrets.json' &&
  '$AX' data canaries --input '$T/train.axd' --tokenizer '$T/tok' --format 'my PIN is {d3}' \
    --repeats 1,4,16 --per-repeat 2 --references 100 --seed 3 --out '$T/anywhere.axd' \
    --secrets '$T/anywhere.json'"
TRAIN=(--model tiny --packing doc --seq-len 96 --batch 8 --lr 3e-3 --warmup 10 --weight-decay 0
       --log-every 1000)
run "train: members with canaries (~13 epochs)" "$AX" train --data "$T/can.axd" "${TRAIN[@]}" \
  --steps 100 --out "$T/run"
run "train: reference model on the held-out set" "$AX" train --data "$T/held.axd" "${TRAIN[@]}" \
  --steps 30 --out "$T/ref"
run "train: copies planted anywhere in the documents" "$AX" train --data "$T/anywhere.axd" \
  "${TRAIN[@]}" --steps 10 --out "$T/anyrun"

# ---- membership inference
MIA=(--ckpt "$T/run" --members "$T/train.axd" --nonmembers "$T/held.axd" --tokens-per-doc 96
     --bootstrap 200)
run "mia runs" "$AX" memscan mia "${MIA[@]}" --tokenizer "$T/tok" --ref-ckpt "$T/ref" \
  --out "$T/mia"
python3 - "$T" <<'PY' && ok "mia prints the AUCs it wrote, one line per score" || bad "mia summary lines"
import json, re, sys
t = sys.argv[1]
j = json.load(open(f"{t}/mia/mia.json"))
m = {**j["metrics"], **j["model_free"]}
out = open(f"{t}/out").read()
got = dict(re.findall(r"^  (\w+) +AUC ([0-9.]+)", out, re.M))
ok = set(got) == set(m) and all(abs(float(got[k]) - m[k]["auc"]) <= 5e-4 for k in m)
# 43 non-members resolve neither 0.1% nor 1% FPR: n/a, and why
ok = ok and "TPR@0.1%FPR n/a: needs >= 1000 non-members to resolve 0.1% FPR; have" in out
ok = ok and "TPR@1%FPR n/a: needs >= 100 non-members" in out and "model-free baselines" in out
sys.exit(0 if ok else 1)
PY
run "mia on 2x1x2x1 (4 ranks)" mpirun --oversubscribe -np 4 "$AX" memscan mia "${MIA[@]}" \
  --tokenizer "$T/tok" --ref-ckpt "$T/ref" --grid 2x1x2x1 --out "$T/mia4"
AX="$AX" python3 - "$T" <<'PY' && ok "mia.json and samples: structure, ranges, AUC, model-free baselines recomputed, grid = 1 rank" || bad "mia outputs"
import json, os, stat, struct, subprocess, sys, zlib
t = sys.argv[1]
j = json.load(open(f"{t}/mia/mia.json"))
rows = [json.loads(l) for l in open(f"{t}/mia/mia.samples.jsonl")]
rows4 = [json.loads(l) for l in open(f"{t}/mia4/mia.samples.jsonl")]
errs = []
def need(c, what):
    if not c: errs.append(what)
need(j["schema"] == "axmem-scan" and j["kind"] == "membership-inference", "header")
need(stat.S_IMODE(os.stat(f"{t}/mia/mia.samples.jsonl").st_mode) == 0o600, "samples mode 0600")
nm = sum(r["member"] for r in rows); nn = len(rows) - nm
need(j["counts"]["members"] == nm == j["members"]["scored_docs"] > 0, "member count")
need(j["counts"]["nonmembers"] == nn == j["nonmembers"]["scored_docs"] > 0, "non-member count")
need(j["samples"]["lines"] == len(rows), "samples block")
need(set(j["metrics"]) == {"loss", "zlib", "min_k", "min_k_pp", "ref", "ref_ratio"}, "scores: %s" % list(j["metrics"]))
need(set(j["model_free"]) == {"zlib_bpb", "length"}, "model-free: %s" % list(j["model_free"]))
need(j["config"]["zlib_level"] == 6, "zlib level 6 recorded")
for k, m in list(j["metrics"].items()) + list(j["model_free"].items()):
    lo, hi = m["auc_ci95"]
    need(0 <= lo <= m["auc"] <= hi <= 1, f"{k}: AUC {m['auc']} in [{lo}, {hi}]")
    for rate, n in (("0.001", 1000), ("0.01", 100)):  # fewer non-members: null and the reason
        need(m[f"tpr_at_fpr_{rate}"] is None and m[f"tpr_at_fpr_{rate}_note"] ==
             f"needs >= {n} non-members to resolve {float(rate) * 100:g}% FPR; have {nn}", f"{k}: TPR at {rate}")
    roc = m["roc"]
    need(roc[0] == [0, 0] and roc[-1] == [1, 1] and 2 <= len(roc) <= 500, f"{k}: ROC ends")
    need(all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(roc, roc[1:])), f"{k}: ROC monotone")
for r in rows:
    need(not any(("text" in key) != (key == "text_bytes") for key in r), "no text in the samples")
    need(set(r["scores"]) == set(j["metrics"]) and 0 < r["tokens"] <= 96, "sample fields")
# the model-free baselines recomputed here: each scored document decoded from the datasets with
# `axmem data decode --ids`, Python's zlib at its default level, AUC by pair count
def axd(path):
    b = open(path, "rb").read()
    width, nd, nt = struct.unpack_from("<I", b, 16)[0], *struct.unpack_from("<QQ", b, 24)
    off = struct.unpack_from(f"<{nd + 1}Q", b, 64)
    return off, struct.unpack_from(f"<{nt}{'H' if width == 2 else 'I'}", b, 64 + 8 * (nd + 1))
sets = {True: axd(f"{t}/train.axd"), False: axd(f"{t}/held.axd")}
ax = os.environ["AX"]
for r in rows:
    off, toks = sets[r["member"]]
    a, b = off[r["doc"]], off[r["doc"] + 1]
    ids = toks[a:b - 1][:r["tokens"]]
    text = subprocess.run([ax, "data", "decode", "--tokenizer", f"{t}/tok", "--ids",
                           " ".join(map(str, ids))], capture_output=True, check=True).stdout
    z = len(zlib.compress(text))
    need(r["zlib_bytes"] == z and r["text_bytes"] == len(text), f"doc {r['i']}: zlib {r['zlib_bytes']} vs {z}")
    need(r["model_free"]["zlib_bpb"] == 8 * z / len(text), f"doc {r['i']}: zlib bits per byte")
    need(r["doc_tokens"] == r["model_free"]["length"] == b - a - 1, f"doc {r['i']}: length")
def auc(key):
    mem = [key(r) for r in rows if r["member"]]; non = [key(r) for r in rows if not r["member"]]
    return sum((x > y) + 0.5 * (x == y) for x in mem for y in non) / (len(mem) * len(non))
for k in ("zlib_bpb", "length"):
    want = auc(lambda r: r["model_free"][k])
    need(abs(j["model_free"][k]["auc"] - want) < 1e-12, f"{k}: AUC {j['model_free'][k]['auc']} vs {want}")
for k in j["metrics"]:
    need(abs(j["metrics"][k]["auc"] - auc(lambda r: r["scores"][k])) < 1e-12, f"{k}: AUC by pairs")
# trained ~13 epochs on the members: the loss attack separates them
auc, lo = j["metrics"]["loss"]["auc"], j["metrics"]["loss"]["auc_ci95"][0]
print(f"     loss AUC {auc:.3f} (lower 95% bound {lo:.3f}); min-k%++ AUC {j['metrics']['min_k_pp']['auc']:.3f}")
need(auc >= 0.8 and lo > 0.5, "loss AUC well above 0.5")
need(len(rows4) == len(rows), "same documents on 4 ranks")
worst = max(abs(a["scores"][k] - b["scores"][k]) for a, b in zip(rows, rows4) for k in a["scores"])
need(all(a["model_free"] == b["model_free"] for a, b in zip(rows, rows4)), "4 ranks: model-free")
need(all(a["doc"] == b["doc"] and a["member"] == b["member"] for a, b in zip(rows, rows4)), "same docs")
need(worst <= 1e-4, f"4-rank scores differ by {worst}")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY

# ---- model-free baselines far from chance: non-members cut to 60 characters against members of
# 300: every member longer (length AUC 1) and more compressible (zlib bits per byte AUC 0, as
# telling as 1) -> warnings on stderr, in mia.json, in the report
python3 - "$T" <<'PY'
import json, sys
lines = open("data/corpus/kjv.jsonl").readlines()
with open(f"{sys.argv[1]}/short.jsonl", "w") as f:
    for l in lines[400:430]:
        f.write(json.dumps({"text": json.loads(l)["text"][:60]}) + "\n")
PY
run "mia: short non-members" bash -c "
  '$AX' data encode --tokenizer '$T/tok' --input '$T/short.jsonl' --out '$T/short.axd' &&
  '$AX' memscan mia --ckpt '$T/run' --members '$T/train.axd' --nonmembers '$T/short.axd' \
    --tokenizer '$T/tok' --tokens-per-doc 96 --bootstrap 200 --out '$T/miashift'"
grep -q "^warning: memscan mia: model-free score length (it reads no model) has AUC 1.000" "$T/err" &&
  grep -q "^warning: memscan mia: model-free score zlib_bpb (it reads no model) has AUC 0.000" "$T/err" &&
  ok "mia: a model-free score far from chance is a warning on stderr" ||
  bad "mia: a model-free score far from chance is a warning on stderr"
python3 - "$T" <<'PY' && ok "mia.json: the warning and far_from_chance" || bad "mia.json: the warning"
import json, sys
j = json.load(open(f"{sys.argv[1]}/miashift/mia.json"))
m, z = j["model_free"]["length"], j["model_free"]["zlib_bpb"]
ok = m["auc"] == 1 and m["far_from_chance"] == 2 and m["auc_ci95"][0] > 0.5
ok = ok and z["auc"] == 0 and z["far_from_chance"] == 2 and z["auc_ci95"][1] < 0.5
ok = ok and len(j["warnings"]) == 2 and any(
    w.startswith("model-free score length (it reads no model) has AUC 1.000") and
    "part of the model scores' AUCs may be that shift" in w for w in j["warnings"])
sys.exit(0 if ok else 1)
PY
run "report: the shifted scan" "$AX" report --scan "shift=$T/miashift/mia.json" --out "$T/rep-shift"
grep -q "^\*\*Warning:\*\* shift: the model-free score length in tokens has AUC 1.000" \
  "$T/rep-shift/report.md" && grep -q '<p class="note">Warning: shift: the model-free score length' \
  "$T/rep-shift/report.html" &&
  python3 -c 'import json, sys; w = [b["text"] for s in json.load(open(sys.argv[1]))["sections"] for b in s["blocks"] if b.get("style") == "warning"]; sys.exit(0 if len(w) == 2 and "zlib bits per byte of the text has AUC 0.000" in w[0] else 1)' "$T/rep-shift/report.json" &&
  ok "report: the warning in HTML, Markdown and JSON" || bad "report: the warning in HTML, Markdown and JSON"

# ---- the same documents on both sides are refused before any scoring
cp "$T/train.axd" "$T/train-copy.axd"
expect_fail "mia: --members X --nonmembers X refused" 2 "are the same file" "$AX" memscan mia \
  --ckpt "$T/run" --members "$T/train.axd" --nonmembers "$T/train.axd" --out "$T/x"
expect_fail "mia: a copy of the members as non-members refused" 2 \
  "hold the same documents \(payload checksum" "$AX" memscan mia --ckpt "$T/run" \
  --members "$T/train.axd" --nonmembers "$T/train-copy.axd" --out "$T/x"
expect_fail "mia: non-members holding member documents refused" 2 \
  "48 of the 96 documents scored from --nonmembers .*all.axd are also documents of --members" \
  "$AX" memscan mia --ckpt "$T/run" --members "$T/train.axd" --nonmembers "$T/all.axd" \
  --max-docs 0 --out "$T/x"
[ ! -e "$T/x" ] && ok "mia: nothing written when refused" || bad "mia: nothing written when refused"

# ---- canary exposure
run "exposure runs (exact: 1000 candidates)" "$AX" memscan exposure --ckpt "$T/run" \
  --canaries "$T/secrets.json" --out "$T/exp"
cat "$T/out" | sed 's/^/     /'
run "exposure estimated (--exact-max 100: the 100 references)" "$AX" memscan exposure \
  --ckpt "$T/run" --canaries "$T/secrets.json" --exact-max 100 --out "$T/expe"
run "exposure on 2x1x2x1 (4 ranks)" mpirun --oversubscribe -np 4 "$AX" memscan exposure \
  --ckpt "$T/run" --canaries "$T/secrets.json" --grid 2x1x2x1 --out "$T/exp4"
python3 - "$T" <<'PY' && ok "exposure.json and samples: structure, ranges, rises with repeats" || bad "exposure outputs"
import json, math, os, stat, sys
t = sys.argv[1]
errs = []
def need(c, what):
    if not c: errs.append(what)
sec = json.load(open(f"{t}/secrets.json"))
for d, method, ncand in (("exp", "exact", 1000), ("expe", "estimate", 100)):
    j = json.load(open(f"{t}/{d}/exposure.json"))
    rows = [json.loads(l) for l in open(f"{t}/{d}/exposure.samples.jsonl")]
    need(stat.S_IMODE(os.stat(f"{t}/{d}/exposure.samples.jsonl").st_mode) == 0o600, "samples 0600")
    need(j["kind"] == "canary-exposure" and j["config"]["method"] == method, f"{d}: method")
    need(j["config"]["candidates"] == ncand and j["config"]["space"] == 1000, f"{d}: candidates")
    c = j["config"]
    need(c["estimator"] == {"exact": "exact", "estimate": "skew-normal"}[method], f"{d}: estimator")
    need(c["sample_size"] == ncand and c["lead"] == " ", f"{d}: sample size, lead")
    need("ties count against the secret" in c["rank_definition"] or method != "exact", f"{d}: ties")
    need(method == "exact" or (len(j["fits"]) == 1 and j["fits"][0]["omega"] > 0 and
                               j["fits"][0]["candidates"] == ncand), f"{d}: fits")
    need(j["training_reads"]["known"] and j["training_reads"]["canaries_short"] == 0, f"{d}: reads")
    need(abs(j["max_exposure"] - math.log2(1000)) < 1e-9, "max exposure")
    need(len(rows) == len(sec["canaries"]) == j["overall"]["canaries"] == 6, f"{d}: canaries")
    need({r["secret"] for r in rows} == {c["secret"] for c in sec["canaries"]}, "secrets")
    need([b["repeats"] for b in j["by_repeats"]] == [1, 4, 16], f"{d}: repeat buckets")
    for b in j["by_repeats"] + [j["overall"]]:
        need(0 <= b["exposure_min"] <= b["exposure_median"] <= b["exposure_max"] <= math.log2(1000) + 1e-9, f"{d}: exposure range {b}")
        need(0 <= b["extracted_share"] <= 1, "extracted share")
    for r in rows:
        need((r["rank"] is None) == (method == "estimate"), "rank only when exact")
        need(r["loglik"] < 0 and isinstance(r["extracted"], bool), "row fields")
    def strings(v):
        if isinstance(v, str): yield v
        elif isinstance(v, dict): yield from (x for w in list(v) + list(v.values()) for x in strings(w))
        elif isinstance(v, list): yield from (x for w in v for x in strings(w))
    secrets = {c["secret"] for c in sec["canaries"]}
    need(not any(s in secrets for s in strings(j)), "no secret in exposure.json")
    by = {b["repeats"]: b["exposure_mean"] for b in j["by_repeats"]}
    print(f"     {method}: mean exposure by repeats " + ", ".join(f"{k}: {v:.2f}" for k, v in by.items()))
    need(by[16] > by[1] + 1, f"{d}: exposure rises with repeats")
a = [json.loads(l) for l in open(f"{t}/exp/exposure.samples.jsonl")]
e = [json.loads(l) for l in open(f"{t}/expe/exposure.samples.jsonl")]
print("     skew-normal estimate - exact, bits: " + ", ".join(
    f"{y['exposure'] - x['exposure']:+.2f} (rank {x['rank']:g})" for x, y in zip(a, e)))
b = [json.loads(l) for l in open(f"{t}/exp4/exposure.samples.jsonl")]
need(all(abs(x["loglik"] - y["loglik"]) < 1e-3 and x["generated"] == y["generated"] for x, y in zip(a, b)), "4 ranks = 1 rank")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY

# ---- which planted copies training read
run "exposure: every copy within --seq-len was read" "$AX" memscan exposure --ckpt "$T/run" \
  --canaries "$T/secrets.json" --exact-max 100 --out "$T/expw"
if grep -q "training read" "$T/err"; then bad "no warning when training read every copy"; else
  ok "no warning when training read every copy"; fi
run "exposure: copies planted anywhere" "$AX" memscan exposure --ckpt "$T/anyrun" \
  --canaries "$T/anywhere.json" --exact-max 100 --out "$T/expa"
cp "$T/err" "$T/expa.err"
python3 - "$T" <<'PY' && ok "trained_repeats: the copies within the first 96 tokens, warned when short" || bad "trained_repeats"
import json, sys
t = sys.argv[1]
errs = []
def need(c, what):
    if not c: errs.append(what)
for d, sec, warn in (("expw", "secrets.json", False), ("expa", "anywhere.json", True)):
    j = json.load(open(f"{t}/{d}/exposure.json"))
    s = json.load(open(f"{t}/{sec}"))
    rows = {r["id"]: r for r in map(json.loads, open(f"{t}/{d}/exposure.samples.jsonl"))}
    tr = j["training_reads"]
    need(tr["known"] and tr["packing"] == "doc" and tr["seq_len"] == 96, f"{d}: {tr}")
    # a copy is trained on when all its tokens are among a document's first 96
    want = {c["id"]: sum(i["token_pos"] + len(c["tokens"]) <= 96 for i in c["inserted"])
            for c in s["canaries"]}
    need(all(rows[k]["trained_repeats"] == v for k, v in want.items()), f"{d}: trained_repeats {want}")
    short = sum(v < c["repeats"] for c, v in zip(s["canaries"], want.values()))
    need(tr["copies_read"] == sum(want.values()) and tr["canaries_short"] == short, f"{d}: counts")
    need(tr["copies_planted"] == sum(c["repeats"] for c in s["canaries"]), f"{d}: planted")
    need((short > 0) == warn, f"{d}: {short} canaries short")
    print(f"     {d}: training read {tr['copies_read']} of {tr['copies_planted']} planted copies")
err = open(f"{t}/expa.err").read()
need("training read" in err and "--within 96" in err, "the warning names the fix")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY

# ---- the canaried dataset's identity when the secrets file names it by a relative path
run "canaries written with relative paths" bash -c "cd '$T' && mkdir -p rel &&
  '$AX' data canaries --input train.axd --tokenizer tok --format 'pin {d2}' --repeats 1 \
    --per-repeat 2 --out rel/beside.axd --secrets rel/beside.json &&
  cd rel && '$AX' data canaries --input ../train.axd --tokenizer ../tok --format 'pin {d2}' \
    --repeats 1 --per-repeat 2 --out beside2.axd --secrets beside2.json"
run "exposure: dataset named from the working directory it was planted in" "$AX" memscan \
  exposure --ckpt "$T/run" --canaries "$T/rel/beside.json" --tokenizer "$T/tok" --out "$T/exprel"
run "exposure: dataset (and tokenizer) named beside the secrets file" "$AX" memscan exposure \
  --ckpt "$T/run" --canaries "$T/rel/beside2.json" --out "$T/exprel2"
python3 - "$T" <<'PY' && ok "exposure.json: the dataset's checksum and documents, found or from the secrets" || bad "dataset identity"
import json, struct, sys
t = sys.argv[1]
errs = []
def need(c, what):
    if not c: errs.append(what)
def header(path):  # .axd: n_docs at byte 24, payload XXH3 at byte 40 (little-endian u64)
    b = open(path, "rb").read(64)
    return struct.unpack_from("<Q", b, 40)[0], struct.unpack_from("<Q", b, 24)[0]
for d, axd, found in (("exprel", "rel/beside.axd", False), ("exprel2", "rel/beside2.axd", True)):
    j = json.load(open(f"{t}/{d}/exposure.json"))
    xxh, docs = header(f"{t}/{axd}")
    ds = j["dataset"]
    need(ds["xxh3"] == f"0x{xxh:016x}" and ds["docs"] == docs, f"{d}: {ds} vs 0x{xxh:016x} {docs}")
    need(j["dataset_found"] == found, f"{d}: found {j['dataset_found']}")
    need(j["dataset_identity"] == ("the dataset file" if found else "the secrets file"), d)
    print(f"     {d}: {ds['path']} {ds['xxh3']} ({j['dataset_note']})")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY

# ---- bad input: one clear line
expect_fail "mia needs --members" 2 "--members" "$AX" memscan mia --ckpt "$T/run" \
  --nonmembers "$T/held.axd" --out "$T/x"
expect_fail "mia: missing dataset named" 1 "nope.axd" "$AX" memscan mia --ckpt "$T/run" \
  --members "$T/nope.axd" --nonmembers "$T/held.axd" --out "$T/x"
expect_fail "exposure: missing secrets file named" 1 "nope.json" "$AX" memscan exposure \
  --ckpt "$T/run" --canaries "$T/nope.json" --out "$T/x"
echo '{"format":"my PIN is {d3}","space":1000,"canaries":[]}' >"$T/empty.json"
expect_fail "exposure: no canaries" 1 "canaries" "$AX" memscan exposure --ckpt "$T/run" \
  --canaries "$T/empty.json" --out "$T/x"

# ---- axmem report with the privacy scans: two runs side by side (the 1-rank and the 4-rank
# scans), membership inference and exposure sections, no secret unless --show-text
run "report: mia + exposure of two runs" "$AX" report --scan "one=$T/mia/mia.json" \
  --scan "one=$T/exp/exposure.json" --scan "four=$T/mia4/mia.json" \
  --scan "four=$T/exp4/exposure.json" --out "$T/rep"
run "report --show-text" "$AX" report --scan "one=$T/mia/mia.json" \
  --scan "one=$T/exp/exposure.json" --show-text --out "$T/rep-text"
python3 - "$T" <<'PY' && ok "report: privacy sections, same numbers as the scans, secrets only with --show-text" || bad "report privacy sections"
import json, os, stat, sys
t = sys.argv[1]
errs = []
def need(c, what):
    if not c: errs.append(what)
html = open(f"{t}/rep/report.html").read()
md = open(f"{t}/rep/report.md").read()
rep = json.load(open(f"{t}/rep/report.json"))
for f in ("report.html", "report.md", "report.json"):
    need(stat.S_IMODE(os.stat(f"{t}/rep/{f}").st_mode) == 0o600, f"{f} mode 0600")
need('id="mia"' in html and 'id="exposure"' in html, "html sections")
need(html.count('class="chance"') == 2, "one log-log ROC per run, with the chance line")
need("(log-log)" in html and html.count('<ul class="legend">') >= 2, "ROC charts, HTML legends")
need(html.count('class="maxline"') == 1 and "log2 scale" in html, "exposure chart, max marked")
need("## Membership inference" in md and "## Canary exposure" in md, "markdown sections")
mia = json.load(open(f"{t}/mia/mia.json"))
exp = json.load(open(f"{t}/exp/exposure.json"))
# report.json is the document: blocks by id, table rows keyed by column
B = {b["id"]: b for s in rep["sections"] for b in s["blocks"] if "id" in b}
rows = {r["score"]["id"]: r for r in B["mia"]["rows"] if r["run"] == "one"}
scores = list(mia["metrics"].items()) + list(mia["model_free"].items())
need(set(rows) == {k for k, _ in scores}, "report.json scores")
for (k, v), s in zip(scores, B["chart-roc-one"]["series"]):  # the ROC chart's data, in order
    need(rows[k]["auc"]["value"] == v["auc"] and rows[k]["auc"]["ci95"] == v["auc_ci95"], f"{k}: AUC")
    need(s["x"] == [p[0] for p in v["roc"]] and s["y"] == [p[1] for p in v["roc"]], f"{k}: ROC")
for k, v in mia["metrics"].items():
    need(f"| one | " in md and f"{v['auc']:.3f} ({v['auc_ci95'][0]:.3f}-{v['auc_ci95'][1]:.3f})" in md, f"{k}: md row")
for k, name in (("zlib_bpb", "zlib bits per byte of the text"), ("length", "length in tokens")):
    v = mia["model_free"][k]
    need(f"| one | {name} (model-free) | {v['auc']:.3f} ({v['auc_ci95'][0]:.3f}-{v['auc_ci95'][1]:.3f}) | n/a | n/a |" in md, f"{k}: md row")
need("min_k_pp" not in html and "min_k_pp" not in md, "score names, not ids, for readers")
need("TPR at 0.1% FPR needs >= 1000 non-members" in md and rows["loss"]["tpr_at_fpr_0.01"] is None, "TPRs n/a")
e = [r for r in B["exposure"]["rows"] if r["run"] == "one" and r["repeats"] != "all"]
need([r["repeats"] for r in e] == [b["repeats"] for b in exp["by_repeats"]], "repeat rows")
need(all(abs(a["exposure_mean"] - b["exposure_mean"]) < 1e-12 for a, b in zip(e, exp["by_repeats"])), "exposure means")
need(B["chart-exposure"]["y_axis"]["range"][1] == exp["max_exposure"], "exposure axis ends at log2 |R|")
for b in exp["by_repeats"]:
    need(f"| one | {b['repeats']} | {b['canaries']} | {b['exposure_mean']:.2f} |" in md, f"md exposure row {b['repeats']}")
# 3-digit secrets also occur as digits of numbers: look where a report would put them (the
# unit tests plant a distinctive secret and search every byte)
secrets = [c["secret"] for c in json.load(open(f"{t}/secrets.json"))["canaries"]]
def strings(v):
    if isinstance(v, str): yield v
    elif isinstance(v, dict): yield from (x for w in list(v) + list(v.values()) for x in strings(w))
    elif isinstance(v, list): yield from (x for w in v for x in strings(w))
need(not [s for s in strings(rep) if any(x in s for x in secrets)], "no secret in report.json")
need(not [s for s in secrets if f'<td class="txt">{s}' in html or f"| {s} |" in md], "no secret in html/md")
need("<th>secret</th>" not in html and "| secret |" not in md, "no secret column")
rows = [json.loads(l) for l in open(f"{t}/exp/exposure.samples.jsonl")]
top = max(rows, key=lambda r: (r["exposure"], r["repeats"], -r["id"]))
need(f'<td class="txt">{top["secret"]}</td>' in open(f"{t}/rep-text/report.html").read(), "--show-text: the top secret shown")
need(f'"secret": "{top["secret"]}"' in json.dumps(json.load(open(f"{t}/rep-text/report.json"))), "--show-text: secrets in report.json")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY
mkdir -p "$T/miabad" && python3 - "$T" <<'PY'
import json, shutil, sys
t = sys.argv[1]
j = json.load(open(f"{t}/mia/mia.json"))
j["metrics"]["loss"]["auc"] = 1.5
j["samples"]["file"] = f"{t}/mia/mia.samples.jsonl"
json.dump(j, open(f"{t}/miabad/mia.json", "w"))
PY
expect_fail "report: an edited AUC is refused, naming file and field" 1 \
  "miabad/mia.json: metrics.loss.auc = 1.5 is outside" "$AX" report --run "x=$T/miabad" --out "$T/rep-bad"
finish privacy
