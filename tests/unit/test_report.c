/* axmem report: builds small scan/metrics files by hand in /tmp, runs ax_report_build in
 * process, checks the three outputs and the error messages for bad inputs. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "reports/report.h"
#include "tests/unit/test_report_files.h"

static void setup(void) {
    rt_setup("axrep");
}

static void teardown(void) {
    rt_teardown();
}

#define HEADER(kind, gf)                                                                           \
    "{\"schema\":\"axmem-scan\",\"version\":1,\"kind\":\"" kind "\",\"checkpoint\":{\"path\":"     \
    "\"/ck/step-000300\",\"step\":300,\"goldfish\":\"" gf "\"},\"dataset\":{\"path\":\"/d.axd\","  \
    "\"xxh3\":\"0x36060a42c7f4107d\",\"docs\":16,\"tokens\":400},"

/* a probe with `exact` of 4 documents reproduced (suffix 4 tokens) */
static void probe(const char *dir, const char *gf, int exact) {
    char rel[128];
    snprintf(rel, sizeof rel, "%s/scan.json", dir);
    put(rel,
        HEADER(
            "extraction-probe",
            "%s") "\"config\":{\"prefix\":8,\"suffix\":4,\"samples\":4},"
                  "\"metrics\":{\"exact_match_rate\":{\"mean\":%g,\"ci95\":[%g,%g]},\"token_"
                  "accuracy\":"
                  "{\"mean\":0.5,\"ci95\":[0.25,0.75]},\"rouge_l\":{\"mean\":0.625,\"ci95\":[0.5,0."
                  "75]},"
                  "\"matched_prefix_mean\":2.5},\"tables\":{\"by_duplication\":[{\"bucket\":\"1\","
                  "\"samples\":3,\"exact_match_rate\":0.25},{\"bucket\":\"2-3\",\"samples\":1,"
                  "\"exact_match_rate\":1}],\"matched_prefix_hist\":[%d,0,0,0,%d]}}\n",
        gf, exact / 4.0, exact / 8.0, exact / 4.0, 4 - exact, exact);
}

static void regurg(const char *dir, int with_span) {
    char rel[128];
    snprintf(rel, sizeof rel, "%s/regurgitation.json", dir);
    put(rel,
        HEADER("regurgitation-scan",
               "none") "\"config\":{\"n\":16,\"samples\":8,\"length\":96},"
                       "\"metrics\":{\"frac_with_verbatim_span\":%g,\"mean_longest_span\":40.5,"
                       "\"max_longest_span\":96},\"tables\":{\"longest_span_hist\":{\"none\":%d,"
                       "\"n..2n-1\":%d,"
                       "\"2n..4n-1\":0,\">=4n\":0}}}\n",
        with_span / 8.0, 8 - with_span, with_span);
}

/* the older layout's samples.jsonl: one row per probe (4), one of them with text */
static void samples(const char *dir, const char *text) {
    char rel[128];
    snprintf(rel, sizeof rel, "%s/samples.jsonl", dir);
    put(rel,
        "{\"i\":0,\"doc\":3,\"offset\":0,\"exact\":false,\"matched_prefix\":1,"
        "\"token_accuracy\":0.25}\n"
        "{\"i\":1,\"doc\":7,\"offset\":5,\"exact\":true,\"matched_prefix\":4,\"token_accuracy\":1,"
        "\"truth_text\":\"%s\",\"generated_text\":\"%s\"}\n\n"
        "{\"i\":2,\"doc\":1,\"offset\":0,\"exact\":false,\"matched_prefix\":0,"
        "\"token_accuracy\":0}\n"
        "{\"i\":3,\"doc\":2,\"offset\":0,\"exact\":false,\"matched_prefix\":0,"
        "\"token_accuracy\":0}\n",
        text, text);
}

static void metrics(const char *dir) {
    char rel[128];
    snprintf(rel, sizeof rel, "%s/metrics.jsonl", dir);
    put(rel, "{\"step\":1,\"loss\":7.5,\"lr\":0.001}\n{\"step\":2,\"loss\":5.25,\"val_loss\":8}\n"
             "{\"step\":3,\"loss\":1.125,\"val_loss\":9.5,\"comm\":{\"x\":1}}\n");
}

static void index_json(void) {
    put("memo.index.json",
        "{\"schema\":\"axmem.memscan.index/1\",\"n\":16,\"windows\":100,\"distinct_windows\":90,"
        "\"duplication_histogram\":{\"1\":85,\"2-3\":4,\"4-15\":1,\"16-63\":0,\"64+\":0}}");
}

static int show_text; /* --show-text for build(); each test runs in its own process */

static ax_status build(ax_report_input *in, int n, int with_index, int text_chars) {
    char out[128], idx[128];
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(idx, sizeof idx, "%s/memo.index.json", root);
    char *paths[8];
    for (int i = 0; i < n; i++) { /* inputs name paths relative to root */
        paths[i] = malloc(256);
        snprintf(paths[i], 256, "%s/%s", root, in[i].path);
        in[i].path = paths[i];
    }
    ax_report_opts o = {.inputs = in,
                        .n_inputs = n,
                        .index = with_index ? idx : NULL,
                        .out = out,
                        .text_chars = text_chars,
                        .show_text = show_text};
    ax_error_clear();
    ax_status st = ax_report_build(&o);
    for (int i = 0; i < n; i++) free(paths[i]);
    return st;
}

static void two_runs(void) {
    probe("base", "none", 4);
    regurg("base", 8);
    samples("base", "<script>alert(1)</script> & more");
    metrics("base");
    probe("gold", "hash:k=4,h=13", 0);
    regurg("gold", 3);
    metrics("gold");
    index_json();
}

Test(report, writes_three_outputs_and_json_round_trips, .init = setup, .fini = teardown) {
    two_runs();
    ax_report_input in[] = {{"baseline", "base", 0}, {"goldfish", "gold", 0}};
    cr_assert_eq(build(in, 2, 1, 80), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html"), *md = slurp("out/report.md");
    char *js = slurp("out/report.json");
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "report.json", &v), AX_OK, "%s", ax_error_msg());
    const char *s;
    int64_t ver;
    cr_assert_eq(ax_json_get_str(v, "schema", "r", &s), AX_OK);
    cr_assert_str_eq(s, "axmem-report");
    cr_assert_eq(ax_json_get_i64(v, "version", "r", &ver), AX_OK);
    cr_assert_eq(ver, 2);
    cr_assert_eq(ax_json_get_str(v, "conclusion", "r", &s), AX_OK);
    cr_assert_str_eq(s, "goldfish stopped verbatim copying (100% -> 0% exact) compared with "
                        "baseline.");
    cr_assert(strstr(html, "<strong>goldfish stopped verbatim copying"), "the verdict first");
    cr_assert_eq(ax_json_get_str(v, "headline", "r", &s), AX_OK);
    cr_assert(strstr(s, "baseline: 4/4 probed documents reproduced verbatim; goldfish: 0/4"), "%s",
              s);
    /* the summary: one column per run; cells typed (a rate with its count and interval) */
    const ax_json *em = ax_json_get(rt_row(v, "summary", 2), "baseline");
    cr_assert_str_eq(ax_json_get(rt_row(v, "summary", 2), "metric")->str, "exact match (95% CI)");
    cr_assert_float_eq(rt_num(em), 1.0, 1e-12);
    cr_assert_eq(ax_json_get(em, "count")->num, 4);
    cr_assert_eq(ax_json_get(em, "total")->num, 4);
    cr_assert_eq(ax_json_get(em, "ci95")->items[0]->num, 0.5);
    cr_assert(strstr(md, "| exact match (95% CI) | 4/4 = 100.0% (50.0-100.0%) | 0/4 = 0.0% "
                         "(0.0-0.0%) |"),
              "%s", md);
    cr_assert_float_eq(rt_num(rt_fact(v, "probe-baseline", "matched prefix (mean)")), 2.5, 1e-12);
    cr_assert_eq(ax_json_get(rt_block(v, "by-duplication-baseline"), "rows")->n, 2);
    const ax_json *top = ax_json_get(rt_block(v, "top-samples-baseline"), "rows");
    cr_assert_eq(top->n, 4);
    cr_assert_eq(rt_num(ax_json_get(top->items[0], "doc")), 7, "the exact match ranks first");
    cr_assert_str_eq(ax_json_get(top->items[0], "truth_text")->str,
                     "<script>alert(1)</script> & more", "JSON keeps the raw text");
    cr_assert_eq(
        ax_json_get(rt_fact(v, "regurgitation-goldfish", "with a verbatim training span"), "count")
            ->num,
        3);
    cr_assert_float_eq(rt_num(ax_json_get(rt_row(v, "training", 1), "final_loss")), 1.125, 1e-12);
    cr_assert_float_eq(rt_num(ax_json_get(rt_row(v, "training", 1), "final_val_loss")), 9.5, 1e-12);
    cr_assert_eq(ax_json_get(ax_json_get(rt_block(v, "chart-loss"), "series")->items[1], "y")->n,
                 3);
    cr_assert_str_eq(rt_fact(v, "run-goldfish", "goldfish")->str, "hash:k=4,h=13");
    cr_assert_str_eq(ax_json_get(rt_row(v, "duplication", 1), "occurrences")->str, "2-3");
    cr_assert_eq(rt_num(ax_json_get(rt_row(v, "duplication", 1), "distinct_windows")), 4);
    cr_assert(strstr(md, "# axmem memorization report: baseline vs goldfish"));
    /* no temporaries left behind */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s/out/.report.html.tmp", root);
    cr_assert_not(ax_path_exists(tmp));
    ax_json_free(v);
    free(html), free(md), free(js);
}

Test(report, html_has_one_svg_per_chart_and_escapes_text, .init = setup, .fini = teardown) {
    show_text = 1;
    two_runs();
    ax_report_input in[] = {{"base<b>", "base", 0}, {"goldfish", "gold", 0}};
    cr_assert_eq(build(in, 2, 1, 80), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html");
    /* exact-match bars, exact match by duplication, matched-prefix, longest-span, loss curves,
     * duplication */
    cr_assert_eq(count(html, "<svg"), 6, "svg count %d", count(html, "<svg"));
    cr_assert_eq(count(html, "</svg>"), 6);
    cr_assert_null(strstr(html, "<script"), "sample text must be escaped");
    cr_assert_null(strstr(html, "<b>"), "labels must be escaped");
    cr_assert(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
    cr_assert(strstr(html, "base&lt;b&gt;"));
    /* self-contained: nothing loaded from elsewhere */
    cr_assert_null(strstr(html, "src="));
    cr_assert_null(strstr(html, "<link"));
    cr_assert(strstr(html, "<style>"));
    cr_assert(strstr(html, "<polyline"), "loss curve drawn");
    cr_assert(strstr(html, "<circle"), "val_loss points drawn");
    char *md = slurp("out/report.md");
    cr_assert_null(strstr(md, "<script"), "markdown escapes raw HTML too");
    free(html), free(md);
}

Test(report, text_is_clipped_or_hidden, .init = setup, .fini = teardown) {
    char long_text[300];
    memset(long_text, 'a', 200);
    memcpy(long_text + 80, "ZZZ", 3);
    long_text[200] = 0;
    show_text = 1;
    probe("r", "none", 4);
    samples("r", long_text);
    ax_report_input in[] = {{"r", "r", 0}};
    cr_assert_eq(build(in, 1, 0, 80), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html");
    cr_assert(strstr(html, "aaaa..."), "clipped with an ellipsis");
    cr_assert_null(strstr(html, "ZZZ"), "at most 80 characters shown");
    free(html);
    ax_report_input in2[] = {{"r", "r", 0}};
    cr_assert_eq(build(in2, 1, 0, 0), AX_OK, "%s", ax_error_msg());
    html = slurp("out/report.html");
    cr_assert_null(strstr(html, "aaaa"), "--text-chars 0 hides text");
    cr_assert_eq(count(html, "<svg"), 3, "only probe charts without other data");
    free(html);
}

/* the summary has a column per run (it stays narrow), each goldfish run judged against the
 * baseline in the headline */
Test(report, summary_has_one_column_per_run, .init = setup, .fini = teardown) {
    two_runs();
    probe("third", "static:k=4", 2);
    ax_report_input in[] = {
        {"baseline", "base", 0}, {"goldfish", "gold", 0}, {"third", "third", 0}};
    cr_assert_eq(build(in, 3, 0, 80), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "|  | baseline | goldfish | third |\n|---|---|---|---|\n"), "%s", md);
    cr_assert(strstr(md, "| goldfish | none | hash:k=4,h=13 | static:k=4 |"), "%s", md);
    cr_assert(strstr(md, "| exact match (95% CI) | 4/4 = 100.0% (50.0-100.0%) | 0/4 = 0.0% "
                         "(0.0-0.0%) | 2/4 = 50.0% (25.0-50.0%) |"),
              "%s", md);
    cr_assert(strstr(md, "**goldfish stopped verbatim copying (100% -> 0% exact) compared with "
                         "baseline. third did not measurably reduce verbatim copying (100% -> "
                         "50% exact) compared with baseline.**"),
              "%s", md);
    free(md);
}

Test(report, single_scan_files_merge_by_label, .init = setup, .fini = teardown) {
    probe("a", "none", 4);
    regurg("b", 5);
    ax_report_input in[] = {{"m", "a/scan.json", 1}, {"m", "b/regurgitation.json", 1}};
    cr_assert_eq(build(in, 2, 0, 80), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "m: 4/4 probed documents reproduced verbatim"), "%s", md);
    cr_assert(strstr(md, "5/8 = 62%"), "%s", md);
    free(md);
}

/* expects failure; the message must contain `needle` (a file name) */
static void expect_fail(ax_report_input *in, int n, int with_index, const char *needle) {
    ax_status st = build(in, n, with_index, 80);
    cr_assert_neq(st, AX_OK);
    cr_assert(strstr(ax_error_msg(), needle), "message '%s' should name '%s'", ax_error_msg(),
              needle);
    char out[128];
    snprintf(out, sizeof out, "%s/out/report.html", root);
    cr_assert_not(ax_path_exists(out), "no report on failure");
}

Test(report, missing_files_are_named, .init = setup, .fini = teardown) {
    put("empty/metrics.jsonl", "{\"step\":1,\"loss\":1}\n");
    ax_report_input in[] = {{"e", "empty", 0}};
    expect_fail(in, 1, 0, "empty/scan.json");
    cr_assert(strstr(ax_error_msg(), "empty/regurgitation.json"));
    ax_report_input in2[] = {{"x", "nowhere", 0}};
    expect_fail(in2, 1, 0, "nowhere");
    ax_report_input in3[] = {{"x", "nope.json", 1}};
    expect_fail(in3, 1, 0, "nope.json");
    probe("ok", "none", 1);
    ax_report_input in4[] = {{"ok", "ok", 0}};
    expect_fail(in4, 1, 1, "memo.index.json");
}

Test(report, wrong_schema_version_and_malformed_json, .init = setup, .fini = teardown) {
    put("s/scan.json", "{\"schema\":\"something-else\",\"version\":1}");
    ax_report_input in[] = {{"s", "s", 0}};
    expect_fail(in, 1, 0, "s/scan.json");
    cr_assert(strstr(ax_error_msg(), "something-else"));

    put("v/scan.json", "{\"schema\":\"axmem-scan\",\"version\":2,\"kind\":\"extraction-probe\"}");
    ax_report_input in2[] = {{"v", "v", 0}};
    expect_fail(in2, 1, 0, "v/scan.json");
    cr_assert(strstr(ax_error_msg(), "version 2"), "%s", ax_error_msg());

    put("m/scan.json", "{\"schema\":\"axmem-scan\",\"version\":1,");
    ax_report_input in3[] = {{"m", "m", 0}};
    expect_fail(in3, 1, 0, "m/scan.json");

    probe("j", "none", 4);
    put("j/metrics.jsonl", "{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":\n");
    ax_report_input in4[] = {{"j", "j", 0}};
    expect_fail(in4, 1, 0, "j/metrics.jsonl line 2");

    probe("k", "none", 4);
    put("k/samples.jsonl", "{\"i\":0,\"doc\":1}\n");
    ax_report_input in5[] = {{"k", "k", 0}};
    expect_fail(in5, 1, 0, "k/samples.jsonl line 1");

    put("q/scan.json", HEADER("extraction-probe", "none") "\"config\":{},\"metrics\":{}}");
    ax_report_input in6[] = {{"q", "q", 0}};
    expect_fail(in6, 1, 0, "q/scan.json");

    put("idx.json", "{\"schema\":\"axmem.memscan.index/1\"");
    put("memo.index.json", "{\"schema\":\"other\"}");
    probe("ok", "none", 4);
    ax_report_input in7[] = {{"ok", "ok", 0}};
    expect_fail(in7, 1, 1, "memo.index.json");
}

Test(report, duplicate_labels_are_refused, .init = setup, .fini = teardown) {
    probe("a", "none", 4);
    ax_report_input in[] = {{"x", "a", 0}, {"x", "a", 0}};
    cr_assert_eq(build(in, 2, 0, 80), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "'x'"));
    ax_report_input in2[] = {{"y", "a/scan.json", 1}, {"y", "a/scan.json", 1}};
    cr_assert_neq(build(in2, 2, 0, 80), AX_OK);
    cr_assert(strstr(ax_error_msg(), "a/scan.json"), "%s", ax_error_msg());
}

/* replaces the first `from` in root/rel by `to` (an edited scan file) */
static void edit(const char *rel, const char *from, const char *to) {
    char *text = slurp(rel), *p = strstr(text, from);
    cr_assert_not_null(p, "%s has no '%s'", rel, from);
    *p = 0;
    put(rel, "%s%s%s", text, to, p + strlen(from));
    free(text);
}

/* a fresh valid run in dir "e", then one edit; the report must fail naming file and field */
static void expect_refused(const char *rel, const char *from, const char *to, const char *field) {
    ax_rm_rf(root);
    cr_assert_eq(ax_mkdir_p(root), AX_OK);
    probe("e", "none", 2);
    regurg("e", 3);
    samples("e", "text");
    metrics("e");
    index_json();
    ax_report_input in[] = {{"e", "e", 0}};
    cr_assert_eq(build(in, 1, 1, 80), AX_OK, "valid before the edit: %s", ax_error_msg());
    edit(rel, from, to);
    ax_report_input in2[] = {{"e", "e", 0}};
    ax_status st = build(in2, 1, 1, 80);
    cr_assert_neq(st, AX_OK, "edit %s: '%s' -> '%s' was accepted", rel, from, to);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, rel) && strstr(m, field), "message '%s' should name %s and %s", m, rel,
              field);
}

Test(report, values_outside_their_domain_are_refused, .init = setup, .fini = teardown) {
    /* the cases: a -500% rate, "0/1000000000000008 documents" */
    expect_refused("e/scan.json", "\"mean\":0.5,", "\"mean\":-5,", "metrics.exact_match_rate.mean");
    expect_refused("e/scan.json", "\"matched_prefix_hist\":[2,",
                   "\"matched_prefix_hist\":[1000000000000006,", "tables.matched_prefix_hist");
    expect_refused("e/scan.json", "\"samples\":4}", "\"samples\":1000000000000008}",
                   "config.samples");
    /* rates outside [0, 1], an interval that misses the estimate, non-finite numbers */
    expect_refused("e/scan.json", "\"token_accuracy\":{\"mean\":0.5",
                   "\"token_accuracy\":{\"mean\":1.5", "metrics.token_accuracy.mean");
    expect_refused("e/scan.json", "\"ci95\":[0.25,0.5]", "\"ci95\":[0.75,0.9]",
                   "metrics.exact_match_rate.ci95");
    expect_refused("e/scan.json", "\"matched_prefix_mean\":2.5", "\"matched_prefix_mean\":1e300",
                   "metrics.matched_prefix_mean");
    /* a number past double (1e999) never becomes inf: the parser refuses it, naming the file */
    expect_refused("e/scan.json", "\"matched_prefix_mean\":2.5", "\"matched_prefix_mean\":1e999",
                   "number out of range");
    expect_refused("e/scan.json", "\"matched_prefix_mean\":2.5", "\"matched_prefix_mean\":9",
                   "metrics.matched_prefix_mean");
    /* negative counts, counts above their totals, absurd sizes, fractions of a document */
    expect_refused("e/scan.json", "\"matched_prefix_hist\":[2,", "\"matched_prefix_hist\":[-2,",
                   "tables.matched_prefix_hist[0]");
    expect_refused("e/scan.json", "\"samples\":3,", "\"samples\":9,",
                   "tables.by_duplication[0].samples");
    expect_refused("e/scan.json", "\"suffix\":4", "\"suffix\":1e30", "config.suffix");
    expect_refused("e/scan.json", "\"step\":300", "\"step\":-1", "checkpoint.step");
    expect_refused("e/scan.json", "\"docs\":16", "\"docs\":0.5", "dataset.docs");
    expect_refused("e/scan.json", "\"matched_prefix_hist\":[2,0,0,0,2]",
                   "\"matched_prefix_hist\":[2,0,0,2]", "tables.matched_prefix_hist");
    expect_refused("e/scan.json", "\"exact_match_rate\":1}", "\"exact_match_rate\":-0.1}",
                   "tables.by_duplication[1].exact_match_rate");
    /* the regurgitation scan */
    expect_refused("e/regurgitation.json", "\"frac_with_verbatim_span\":0.375",
                   "\"frac_with_verbatim_span\":-5", "metrics.frac_with_verbatim_span");
    expect_refused("e/regurgitation.json", "\"frac_with_verbatim_span\":0.375",
                   "\"frac_with_verbatim_span\":0.875", "metrics.frac_with_verbatim_span");
    expect_refused("e/regurgitation.json", "\"mean_longest_span\":40.5",
                   "\"mean_longest_span\":500", "metrics.mean_longest_span");
    expect_refused("e/regurgitation.json", "\"none\":5", "\"none\":-5",
                   "tables.longest_span_hist.none");
    expect_refused("e/regurgitation.json", "\"none\":5", "\"none\":6", "tables.longest_span_hist");
    expect_refused("e/regurgitation.json", "\"length\":96", "\"length\":-96", "config.length");
    /* samples rows, training metrics, the index sidecar */
    expect_refused("e/samples.jsonl", "\"doc\":7", "\"doc\":70", "doc");
    expect_refused("e/samples.jsonl", "\"matched_prefix\":4", "\"matched_prefix\":40",
                   "matched_prefix");
    expect_refused("e/samples.jsonl", "\"token_accuracy\":1,", "\"token_accuracy\":-1,",
                   "token_accuracy");
    expect_refused("e/metrics.jsonl", "\"loss\":5.25", "\"loss\":-1e999", "line 2: invalid JSON");
    expect_refused("memo.index.json", "\"distinct_windows\":90", "\"distinct_windows\":900",
                   "distinct_windows");
    expect_refused("memo.index.json", "\"1\":85", "\"1\":-85", "duplication_histogram.1");
}

Test(report, samples_rows_must_match_the_probe_count, .init = setup, .fini = teardown) {
    probe("c", "none", 2);
    samples("c", "text");
    char *t = slurp("c/samples.jsonl");
    *strrchr(t, '{') = 0; /* the last row lost */
    put("c/samples.jsonl", "%s", t);
    free(t);
    ax_report_input in[] = {{"c", "c", 0}};
    expect_fail(in, 1, 0, "c/samples.jsonl");
    cr_assert(strstr(ax_error_msg(), "c/scan.json"), "%s", ax_error_msg());
}

Test(report, invalid_utf8_in_samples_is_replaced_in_every_output, .init = setup, .fini = teardown) {
    show_text = 1;
    probe("u", "none", 4);
    samples("u", "cut \xe2\x82 here \xff");
    ax_report_input in[] = {{"u", "u", 0}};
    cr_assert_eq(build(in, 1, 0, 80), AX_OK, "%s", ax_error_msg());
    static const char *names[] = {"out/report.html", "out/report.md", "out/report.json"};
    for (int k = 0; k < 3; k++) {
        char *t = slurp(names[k]);
        size_t n = strlen(t), len;
        for (size_t i = 0; i < n; i += len)
            cr_assert(ax_utf8_next(t + i, n - i, &len), "%s: invalid UTF-8 at byte %zu", names[k],
                      i);
        cr_assert(strstr(t, "cut \xef\xbf\xbd here \xef\xbf\xbd"), "%s keeps the text around it",
                  names[k]);
        free(t);
    }
}
