#!/usr/bin/env bash
# `axmem demo` end to end, small (20 steps, 4 documents, vocabulary 300; a few seconds): it
# runs, writes its summary (the report's summary section), scans and report, prints what the
# commands print, and its library calls give what the commands give: `axmem memscan probe` /
# `generate` with the flags the demo documents write the same samples, byte for byte, on the
# demo's checkpoints. The privacy part: the split, the canaries (secrets file 0600), mia.json
# and exposure.json for both models with values in range, the summary's rows (the model-free
# baselines and their notes too) equal to them, TPRs null with their reason (a few
# non-members), exposure rising from 1 to 16 repeats on the baseline (the canaries share their
# prefix, so even 20 steps rank the 16-repeat secrets above the 1-repeat ones: ~4.1 vs ~1.9
# bits), no canary text in the report or summary, and --no-privacy skips it all.
# Usage: tests/cli/demo.sh path/to/axmem
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
T=$(mktemp -d /tmp/axmem-demo.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && sed 's/^/     | /' "$T/err" | tail -5; }

D="$T/demo"
if "$AX" demo --steps 20 --docs 4 --vocab-size 300 --out "$D" >"$T/out" 2>"$T/err"; then
  ok "demo runs"
else
  bad "demo runs (exit $?)"
fi
files_ok=1
for run in baseline goldfish; do
  for f in probe.json probe.samples.jsonl regurgitation.json regurgitation.samples.jsonl \
    mia.json mia.samples.jsonl exposure.json exposure.samples.jsonl; do
    [ -s "$D/$run/$f" ] || { echo "     missing $D/$run/$f"; files_ok=0; }
  done
  for f in probe.samples.jsonl exposure.samples.jsonl; do
    [ "$(stat -c %a "$D/$run/$f")" = 600 ] || { echo "     $D/$run/$f not 0600"; files_ok=0; }
  done
done
for f in summary.md secrets.json train.axd members.axd heldout.axd report/report.html \
  report/report.md report/report.json; do
  [ -s "$D/$f" ] || { echo "     missing $D/$f"; files_ok=0; }
done
[ "$(stat -c %a "$D/secrets.json")" = 600 ] || { echo "     secrets.json not 0600"; files_ok=0; }
[ "$files_ok" = 1 ] && ok "demo: scans (samples and secrets 0600), summary and report written" ||
  bad "demo: scans, summary and report written"
[ "$(grep -c '^probe: 4 samples, prefix 32, suffix 32' "$T/out")" = 4 ] &&
  [ "$(grep -c '^generate: 32 generations of 96 tokens' "$T/out")" = 4 ] &&
  ok "demo: prints the probe and generate lines the commands print" ||
  bad "demo: prints the probe and generate lines the commands print"
# the summary (the report's summary section, one column per model) holds the scans' numbers
python3 - "$D" <<'PY' && ok "demo: summary rows match probe.json and regurgitation.json" ||
import json, sys
d = sys.argv[1]
summary = open(f"{d}/summary.md").read()
rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:4]]
        for l in summary.splitlines() if l.startswith("| ")}
assert summary.count("|  | baseline | goldfish |") == 1, "one column per model"
for col, run in enumerate(["baseline", "goldfish"]):
    m = json.load(open(f"{d}/{run}/probe.json"))["metrics"]
    g = json.load(open(f"{d}/{run}/regurgitation.json"))["metrics"]
    em = m["exact_match_rate"]
    want = {"exact match (95% CI)": "%.1f%% (%.1f-%.1f%%)" % (100 * em["mean"], 100 * em["ci95"][0], 100 * em["ci95"][1]),
            "token accuracy": "%.3f" % m["token_accuracy"]["mean"],
            "longest verbatim span (mean tokens)": "%.1f (max %d)" % (g["mean_longest_span"], g["max_longest_span"]),
            "goldfish": "none" if run == "baseline" else "hash:k=4,h=13"}
    for k, v in want.items():
        assert v in rows[k][col], (run, k, v, rows[k][col])
    if run == "goldfish":  # the audit: where greedy output first diverged vs dropped positions
        a = m["goldfish_divergence"]
        assert "%d/%d" % (a["on_dropped"], a["diverged"]) in rows["first divergences on a dropped position (goldfish audit)"][1]
assert summary.startswith("# axmem demo: goldfish loss, deduplication and DP-SGD against memorization\n\n**goldfish ")
assert " compared with baseline.**" in summary, "the headline states the conclusion"
PY
  bad "demo: summary rows match probe.json and regurgitation.json"
# the mitigations: each has its run folder, its row in the summary and in the report's
# comparison (the same members, non-members and canaries for each)
python3 - "$D" <<'PY' &&
import json, os, sys
d = sys.argv[1]
doc = json.load(open(f"{d}/report/report.json"))
sec = [s for s in doc["sections"] if s["id"] == "compare"]
assert sec, "the report has the comparison section"
rows = [b for b in sec[0]["blocks"] if b.get("id") == "compare"][0]["rows"]
runs = [r["run"] for r in rows]
split = json.load(open(f"{d}/split.json"))
assert all((r["members"], r["nonmembers"], r["canaries"]) ==
           (split["members"], split["nonmembers"], 6) for r in rows), rows
want = ["baseline", "goldfish", "dedup", "dp"]
for run in want:
    assert run in runs, (run, runs)
    s = json.load(open(f"{d}/{run}/study.json"))
    assert (s["members"], s["nonmembers"], s["canaries"]) == (4, split["nonmembers"], 6), s
PY
  ok "demo: a run, a summary column and a comparison row per mitigation" ||
  bad "demo: a run, a summary column and a comparison row per mitigation"
# the privacy scans: ranges, the summary's rows (model-free baselines with their warnings),
# exposure rising with repeats, no secret shown
python3 - "$D" <<'PY' && ok "demo: mia and exposure in range, in the summary and the report, no secret shown" ||
import json, math, sys
d = sys.argv[1]
errs = []
def need(c, what):
    if not c: errs.append(what)
names = {"loss": "loss", "zlib": "zlib ratio", "min_k": "min-k% prob", "min_k_pp": "min-k%++",
         "zlib_bpb": "zlib bits per byte of the text", "length": "length in tokens"}
sec = json.load(open(f"{d}/secrets.json"))
summary = open(f"{d}/summary.md").read()
rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:4]]
        for l in summary.splitlines() if l.startswith("| ")}
for col, run in enumerate(["baseline", "goldfish"]):
    mia = json.load(open(f"{d}/{run}/mia.json"))
    need(mia["kind"] == "membership-inference", "mia kind")
    need(mia["counts"]["members"] == 4 and mia["counts"]["nonmembers"] >= 1, f"{run}: counts")
    for k, m in mia["metrics"].items():
        lo, hi = m["auc_ci95"]
        need(0 <= lo <= m["auc"] <= hi <= 1, f"{run} {k}: AUC {m['auc']} in [{lo}, {hi}]")
    # the strongest score and the model-free baseline farthest from chance, by name
    k, m = max(mia["metrics"].items(), key=lambda kv: kv[1]["auc"])
    want = "%.3f (%.3f-%.3f), %s" % (m["auc"], m["auc_ci95"][0], m["auc_ci95"][1], names[k])
    got = rows.get("membership AUC, strongest score (95% CI)", ["", ""])[col]
    need(got == want, f"{run}: summary AUC '{got}', mia.json '{want}'")
    need(mia["config"]["zlib_level"] == 6, f"{run}: zlib level recorded")
    k, m = max(mia["model_free"].items(), key=lambda kv: abs(kv[1]["auc"] - 0.5))
    want = "%.3f (%.3f-%.3f), %s" % (m["auc"], m["auc_ci95"][0], m["auc_ci95"][1], names[k])
    got = rows.get("model-free baseline AUC, farthest from 0.5 (95% CI)", ["", ""])[col]
    need(got == want, f"{run}: summary model-free AUC '{got}', mia.json '{want}'")
    for k, m in mia["model_free"].items():
        far = m["auc_ci95"][0] > 0.5 or m["auc_ci95"][1] < 0.5 or abs(m["auc"] - 0.5) >= 0.1
        need(m["far_from_chance"] == (2 if m["auc_ci95"][0] > 0.5 or m["auc_ci95"][1] < 0.5
                                      else 1 if far else 0), f"{run} {k}: far_from_chance")
        need(far == any(f"model-free score {k} " in w for w in mia["warnings"]), f"{run} {k}: warning in mia.json")
        need(far == (f"a score that reads no model, {names[k]}, separates" in summary), f"{run} {k}: note in the summary")
    # 4 members and a few non-members resolve no TPR at 0.1% or 1% FPR: null, with the reason
    for k, m in list(mia["metrics"].items()) + list(mia["model_free"].items()):
        for rate, n in (("0.001", 1000), ("0.01", 100)):
            need(m[f"tpr_at_fpr_{rate}"] is None and f"needs >= {n} non-members" in m[f"tpr_at_fpr_{rate}_note"],
                 f"{run} {k}: TPR at {rate} null with its reason")
    exp = json.load(open(f"{d}/{run}/exposure.json"))
    need(exp["kind"] == "canary-exposure" and exp["config"]["method"] == "exact", "exposure kind")
    table = exp["by_repeats"]
    need([r["repeats"] for r in table] == [1, 4, 16], f"{run}: exposure rows")
    top = math.log2(sec["space"])
    need(all(0 <= r["exposure_mean"] <= top + 1e-9 for r in table), f"{run}: exposure range")
    want = "%.2f of %.2f at 16 repeats" % (table[-1]["exposure_mean"], exp["max_exposure"])
    got = rows.get("canary exposure at the most repeats (bits)", ["", ""])[col]
    need(got == want, f"{run}: summary exposure '{got}', exposure.json '{want}'")
    if run == "baseline":
        print("     baseline exposure (bits) at 1, 4, 16 repeats: " + ", ".join("%.2f" % r["exposure_mean"] for r in table))
        need(table[-1]["exposure_mean"] > table[0]["exposure_mean"] + 1,
             "baseline: exposure rises from 1 to 16 repeats")
    o = exp["overall"]
    want = "%d/%d = %.0f%%" % (o["extracted"], o["canaries"], 100 * o["extracted_share"])
    got = rows.get("canaries extracted by greedy decoding", ["", ""])[col]
    need(got == want, f"{run}: summary extracted '{got}', exposure.json '{want}'")
need(sec["references_complete"] and len(sec["canaries"]) == 6, "secrets: 6 canaries, exact")
for f in ("report/report.html", "report/report.md", "report/report.json", "summary.md"):
    text = open(f"{d}/{f}").read()
    shown = [c["prefix"] + c["secret"] for c in sec["canaries"] if c["prefix"] + c["secret"] in text]
    need(not shown, f"{f} shows canaries {shown}")
md, html = open(f"{d}/report/report.md").read(), open(f"{d}/report/report.html").read()
need(md.startswith(summary.rstrip("\n")), "summary.md is the report's first section")
need("## Membership inference" in md and "## Canary exposure" in md, "report.md: privacy sections")
need("length in tokens (model-free)" in md and "length in tokens (model-free)" in html, "report: model-free rows")
need("TPR at 0.1% FPR needs >= 1000 non-members" in md, "report: why the TPRs are n/a")
need("Membership inference" in html and "Canary exposure" in html, "report.html: privacy sections")
need('id="goldfish-audit"' in html, "report.html: the goldfish audit")
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY
  bad "demo: mia and exposure in range, in the summary and the report, no secret shown"
# the commands with the demo's documented settings give the same samples
for run in baseline goldfish; do
  "$AX" memscan probe --ckpt "$D/$run" --data "$D/train.axd" --tokenizer "$D/tokenizer.axt" \
    --samples 4 --prefix 32 --suffix 32 --out "$T/$run.p.json" >/dev/null 2>"$T/err" &&
    "$AX" memscan generate --ckpt "$D/$run" --index "$D/train.index" \
      --tokenizer "$D/tokenizer.axt" --samples 32 --length 96 --temperature 0.7 \
      --out "$T/$run.g.json" >/dev/null 2>>"$T/err" &&
    cmp -s "$T/$run.p.samples.jsonl" "$D/$run/probe.samples.jsonl" &&
    cmp -s "$T/$run.g.samples.jsonl" "$D/$run/regurgitation.samples.jsonl" &&
    ok "demo ($run): the library calls write what the commands write" ||
    bad "demo ($run): the library calls write what the commands write"
done
# flags: --help documents the privacy steps; a bad repeat list is a usage error; --no-privacy
# plants nothing and runs no attack
"$AX" demo --help >"$T/help" 2>&1 && grep -q -- "--no-privacy" "$T/help" &&
  grep -q -- "--canary-repeats" "$T/help" && grep -q "memscan mia" "$T/help" &&
  grep -q "model-free baselines" "$T/help" &&
  ok "demo --help: privacy flags and steps" || bad "demo --help: privacy flags and steps"
"$AX" demo --canary-repeats 1,x --out "$T/bad" >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q -- "--canary-repeats '1,x'" "$T/err" && [ ! -e "$T/bad" ] &&
  ok "demo: a bad --canary-repeats is a usage error" || bad "demo: bad --canary-repeats"
"$AX" demo --canary-format 'PIN {x3}' --out "$T/bad" >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q -- "--canary-format" "$T/err" && [ ! -e "$T/bad" ] &&
  ok "demo: a bad --canary-format is a usage error, before any work" || bad "demo: bad --canary-format"
N="$T/noprivacy"
"$AX" demo --no-privacy --steps 2 --docs 2 --vocab-size 300 --out "$N" >"$T/out" 2>"$T/err" &&
  [ -s "$N/baseline/probe.json" ] && [ ! -e "$N/secrets.json" ] && [ ! -e "$N/train.axd" ] &&
  [ ! -e "$N/baseline/mia.json" ] && [ ! -e "$N/goldfish/exposure.json" ] &&
  ! grep -q "membership inference" "$N/summary.md" && [ -s "$N/report/report.html" ] &&
  ok "demo --no-privacy: no canaries, no attacks" || bad "demo --no-privacy: no canaries, no attacks"
echo "demo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
