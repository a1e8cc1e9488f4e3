#!/usr/bin/env bash
# report.html in a real browser: a small demo's report laid out by headless Chromium at 1280 and
# 800 px, measured from the DOM by a script injected into a copy of the page. The page never
# scrolls sideways (a wide table scrolls in its own box), no number in a table wraps, the chart
# text and the legends are at least 12 px as drawn, no bar's value label touches its interval
# whisker, the headline states a conclusion, and the exposure axis ends at log2 |R|. Screenshots
# of both widths are kept in REPORT_SHOTS (a folder) when it is set.
# Exit 77 (skipped) only when chromium is not installed (scripts/setup.sh installs it).
# Usage: tests/cli/report_browser.sh path/to/axmem
set -uo pipefail
AX=$(realpath "$1")
cd "$(dirname "$0")/../.."
CHROME=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROME" ] || { echo "SKIP: chromium is not installed (scripts/setup.sh installs it)"; exit 77; }
T=$(mktemp -d /tmp/axmem-browser.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && sed 's/^/     | /' "$T/err" | tail -5; }
browse() { # browse WIDTH HEIGHT URL ARGS...: headless Chromium, its chatter to $T/chrome.log
  local w=$1 h=$2 url=$3; shift 3
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --no-first-run --user-data-dir="$T/profile" --window-size="$w,$h" "$@" "$url" 2>>"$T/chrome.log"
}

D="$T/demo"
"$AX" demo --steps 20 --docs 4 --vocab-size 300 --out "$D" >/dev/null 2>"$T/err" &&
  ok "a demo's report to measure" || { bad "a demo's report to measure"; exit 1; }

# the measurements, as JSON in a <pre> the dumped DOM carries
cat >"$T/measure.js" <<'JS'
(function () {
  var r = {width: innerWidth, scroll: document.documentElement.scrollWidth,
           wrapped: [], small: [], legend: [], overlap: [], bars: 0, height: 0};
  document.querySelectorAll("td.num .n").forEach(function (e) {
    if (e.getClientRects().length > 1) r.wrapped.push(e.textContent);
  });
  document.querySelectorAll(".legend li").forEach(function (e) {
    r.legend.push(parseFloat(getComputedStyle(e).fontSize));
  });
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    svg.querySelectorAll("text").forEach(function (t) {
      var px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < 11.95) r.small.push(t.textContent + " " + px.toFixed(1) + "px");
    });
    var ci = svg.querySelectorAll("path.ci");
    svg.querySelectorAll("text.bv").forEach(function (t) {
      var a = t.getBoundingClientRect();
      r.bars++;
      ci.forEach(function (p) {
        var b = p.getBoundingClientRect();
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
          r.overlap.push(t.textContent);
      });
    });
  });
  r.height = document.documentElement.scrollHeight;
  var pre = document.createElement("pre");
  pre.id = "axmem-measure";
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
JS
python3 - "$D/report/report.html" "$T/measured.html" "$T/measure.js" <<'PY'
import sys
page, js = open(sys.argv[1]).read(), open(sys.argv[3]).read()
open(sys.argv[2], "w").write(page.replace("</body>", "<script>" + js + "</script></body>"))
PY
for w in 1280 800; do
  browse "$w" 900 "file://$T/measured.html" --virtual-time-budget=5000 --dump-dom >"$T/dom$w.html"
  python3 - "$T/dom$w.html" "$w" "$D" <<'PY' >"$T/err" 2>&1 && ok "report.html at $w px: fits, numbers on one line, text >= 12 px, labels clear of whiskers" ||
import html, json, re, sys
dom, w, d = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
m = re.search(r'<pre id="axmem-measure">(.*?)</pre>', dom, re.S)
assert m, "no measurements (did the page load?)"
r = json.loads(html.unescape(m.group(1)))
errs = []
if r["width"] != w: errs.append(f"window {r['width']} px, wanted {w}")
if r["scroll"] > r["width"]: errs.append(f"the page is {r['scroll']} px wide in a {r['width']} px window")
if r["wrapped"]: errs.append(f"numbers wrap: {r['wrapped'][:5]}")
if r["small"]: errs.append(f"chart text under 12 px: {r['small'][:5]}")
if not r["legend"] or min(r["legend"]) < 12: errs.append(f"legend font sizes {sorted(set(r['legend']))}")
if not r["bars"]: errs.append("no bar value labels measured")
if r["overlap"]: errs.append(f"bar labels on their whiskers: {r['overlap']}")
if "<strong>goldfish " not in dom or " compared with baseline." not in dom:
    errs.append("the headline states no conclusion")
rep = json.load(open(f"{d}/report/report.json"))
chart = [b for s in rep["sections"] for b in s["blocks"] if b.get("id") == "chart-exposure"][0]
top = json.load(open(f"{d}/baseline/exposure.json"))["max_exposure"]
if chart["y_axis"]["range"][1] != top: errs.append(f"exposure axis ends at {chart['y_axis']['range'][1]}, log2|R| = {top}")
if "min_k_pp" in dom: errs.append("an internal score id reaches the reader")
print(f"     {w} px: page {r['scroll']} px wide, {r['height']} px tall; {r['bars']} bar labels; legends {sorted(set(r['legend']))} px")
open(sys.argv[1] + ".height", "w").write(str(r["height"]))
for e in errs: print("     " + e)
sys.exit(1 if errs else 0)
PY
    bad "report.html at $w px: fits, numbers on one line, text >= 12 px, labels clear of whiskers"
  sed -n 1p "$T/err" | grep '^     ' || true
  if [ -n "${REPORT_SHOTS:-}" ]; then # the whole page, to look at
    mkdir -p "$REPORT_SHOTS"
    h=$(cat "$T/dom$w.html.height" 2>/dev/null || echo 4000)
    browse "$w" "$((h < 16000 ? h : 16000))" "file://$(realpath "$D/report/report.html")" \
      --run-all-compositor-stages-before-draw --screenshot="$REPORT_SHOTS/report-$w.png" >/dev/null &&
      echo "     screenshot: $REPORT_SHOTS/report-$w.png"
  fi
done
echo "report-browser: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
