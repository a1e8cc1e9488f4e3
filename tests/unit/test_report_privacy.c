/* axmem report with the privacy scans: mia.json and exposure.json written by hand (with their
 * samples files and records) in /tmp; the loaders accept good files and refuse each kind of
 * damage naming file and field; the HTML, Markdown and JSON carry the new sections (with the
 * model-free baselines, their warning, and TPRs only where the non-members resolve the rate); a
 * planted canary secret appears only with --show-text. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "reports/report.h"
#include "tests/unit/test_report_files.h"

static void setup(void) {
    rt_setup("axrepp");
}

static void teardown(void) {
    rt_teardown();
}

#define HEADER(kind)                                                                               \
    "{\"schema\":\"axmem-scan\",\"version\":1,\"kind\":\"" kind "\",\"checkpoint\":{\"path\":"     \
    "\"/ck/step-000300\",\"step\":300,\"goldfish\":\"none\"},\"dataset\":{\"path\":\"/d.axd\","    \
    "\"xxh3\":\"0x36060a42c7f4107d\",\"docs\":16,\"tokens\":400},"

/* DIR/NAME.samples.jsonl = samples, DIR/NAME.json = head + body + the samples record */
static void scan(const char *dir, const char *name, const char *head, const char *body,
                 const char *samples) {
    char rel[128];
    size_t n = strlen(samples), lines = 0;
    for (size_t i = 0; i < n; i++) lines += samples[i] == '\n';
    snprintf(rel, sizeof rel, "%s/%s.samples.jsonl", dir, name);
    put(rel, "%s", samples);
    snprintf(rel, sizeof rel, "%s/%s.json", dir, name);
    put(rel,
        "%s%s,\"samples\":{\"file\":\"%s.samples.jsonl\",\"bytes\":%zu,\"lines\":%zu,\"xxh3\":"
        "\"0x%016llx\"}}\n",
        head, body, name, n, lines, (unsigned long long)XXH3_64bits(samples, n));
}

/* 4 members and 4 non-members, two scores: too few non-members to resolve a TPR at 0.1% or 1%
 * FPR (null, with the reason), and two model-free baselines, one at chance, one far from it
 * (length: AUC 0.125, interval [0, 0.375]) */
#define TPR_NULL(rate, need)                                                                       \
    "\"tpr_at_fpr_" rate "\":null,\"tpr_at_fpr_" rate "_note\":\"needs >= " need                   \
    " non-members to resolve FPR; have 4\","
static const char *MIA_BODY =
    "\"members\":{\"path\":\"/train.axd\",\"xxh3\":\"0x1\",\"docs\":16,\"tokens\":400,"
    "\"scored_docs\":4},\"nonmembers\":{\"path\":\"/held.axd\",\"xxh3\":\"0x2\",\"docs\":8,"
    "\"tokens\":200,\"scored_docs\":4},\"reference\":null,\"config\":{\"tokens_per_doc\":32,"
    "\"k_percent\":20,\"zlib_level\":6},\"counts\":{\"members\":4,\"nonmembers\":4},"
    "\"metrics\":{\"loss\":{\"auc\":0.75,\"auc_ci95\":[0.5,0.95]," TPR_NULL("0.001", "1000")
        TPR_NULL("0.01",
                 "100") "\"roc\":[[0,0],[0,0.25],[0.25,0.5],[0.5,1],[1,1]]},"
                        "\"min_k_pp\":{\"auc\":0.625,\"auc_ci95\":[0.375,0.875]," TPR_NULL("0.001",
                                                                                           "1000")
                            TPR_NULL(
                                "0.01",
                                "100") "\"roc\":[[0,0],[0.25,0.25],[0.5,0.75],[1,1]]}},"
                                       "\"model_free\":{\"zlib_bpb\":{\"auc\":0.5,\"auc_ci95\":[0."
                                       "25,0.75]," TPR_NULL("0.001", "1000") TPR_NULL(
                                           "0.01",
                                           "100") "\"roc\":[[0,0],[0.5,0.5],[1,1]],\"far_from_"
                                                  "chance\":0},"
                                                  "\"length\":{\"auc\":0.125,\"auc_ci95\":[0,0.375]"
                                                  "," TPR_NULL("0.001", "1000") TPR_NULL(
                                                      "0.01",
                                                      "100") "\"roc\":[[0,0],[0.5,0],[0.75,0.25],["
                                                             "1,0.5],[1,1]],"
                                                             "\"far_from_chance\":2}},\"warnings\":"
                                                             "[\"model-free score length ...\"]";

/* the same scan as an older memscan mia wrote it: numbers at rates 4 non-members cannot
 * resolve, no model-free baselines */
static const char *MIA_BODY_OLD =
    "\"members\":{\"path\":\"/train.axd\",\"xxh3\":\"0x1\",\"docs\":16,\"tokens\":400,"
    "\"scored_docs\":4},\"nonmembers\":{\"path\":\"/held.axd\",\"xxh3\":\"0x2\",\"docs\":8,"
    "\"tokens\":200,\"scored_docs\":4},\"reference\":null,\"config\":{\"tokens_per_doc\":32,"
    "\"k_percent\":20},\"counts\":{\"members\":4,\"nonmembers\":4},\"metrics\":{"
    "\"loss\":{\"auc\":0.75,\"auc_ci95\":[0.5,0.95],\"tpr_at_fpr_0.001\":0.25,"
    "\"tpr_at_fpr_0.01\":0.5,\"roc\":[[0,0],[0,0.25],[0.25,0.5],[0.5,1],[1,1]]},"
    "\"min_k_pp\":{\"auc\":0.625,\"auc_ci95\":[0.375,0.875],\"tpr_at_fpr_0.001\":0,"
    "\"tpr_at_fpr_0.01\":0.25,\"roc\":[[0,0],[0.25,0.25],[0.5,0.75],[1,1]]}}";

static const char *MIA_SAMPLES = "{\"i\":0,\"member\":true,\"doc\":0,\"scores\":{}}\n"
                                 "{\"i\":1,\"member\":true,\"doc\":1,\"scores\":{}}\n"
                                 "{\"i\":2,\"member\":true,\"doc\":2,\"scores\":{}}\n"
                                 "{\"i\":3,\"member\":true,\"doc\":3,\"scores\":{}}\n"
                                 "{\"i\":4,\"member\":false,\"doc\":0,\"scores\":{}}\n"
                                 "{\"i\":5,\"member\":false,\"doc\":1,\"scores\":{}}\n"
                                 "{\"i\":6,\"member\":false,\"doc\":2,\"scores\":{}}\n"
                                 "{\"i\":7,\"member\":false,\"doc\":3,\"scores\":{}}\n";

/* |R| = 1000; repeats 1: exposures 1 and 2; repeats 4: 8.5 and 9 (one extracted) */
static const char *EXP_BODY =
    "\"config\":{\"canaries_file\":\"/s.json\",\"format\":\"my PIN is {d3}\",\"space\":1000,"
    "\"method\":\"exact\",\"candidates\":1000},\"max_exposure\":9.965784284662087,"
    "\"overall\":{\"canaries\":4,\"exposure_mean\":5.125,\"exposure_median\":5.25,"
    "\"exposure_min\":1,\"exposure_max\":9,\"extracted\":1,\"extracted_share\":0.25},"
    "\"by_repeats\":[{\"repeats\":1,\"canaries\":2,\"exposure_mean\":1.5,\"exposure_median\":1.5,"
    "\"exposure_min\":1,\"exposure_max\":2,\"extracted\":0,\"extracted_share\":0},"
    "{\"repeats\":4,\"canaries\":2,\"exposure_mean\":8.75,\"exposure_median\":8.75,"
    "\"exposure_min\":8.5,\"exposure_max\":9,\"extracted\":1,\"extracted_share\":0.5}]";

#define CANARY(id, rep, secret, exp, ext)                                                          \
    "{\"id\":" #id ",\"repeats\":" #rep ",\"prefix\":\"my PIN is \",\"secret\":\"" secret          \
    "\",\"loglik\":-3,\"rank\":1,\"exposure\":" #exp ",\"extracted\":" #ext                        \
    ",\"generated\":[1,2],\"generated_text\":\"" secret "\"}\n"
static const char *EXP_SAMPLES =
    CANARY(0, 1, "S3CRET-0815", 1, false) CANARY(1, 1, "S3CRET-0042", 2, false)
        CANARY(2, 4, "S3CRET-4711", 8.5, false) CANARY(3, 4, "S3CRET-0007", 9, true);

/* 4 members and 1000 non-members: TPRs at both rates, no model-free baseline */
static const char *MIA_BODY_1000 =
    "\"members\":{\"path\":\"/train.axd\",\"xxh3\":\"0x1\",\"docs\":16,\"tokens\":400,"
    "\"scored_docs\":4},\"nonmembers\":{\"path\":\"/held.axd\",\"xxh3\":\"0x2\",\"docs\":1000,"
    "\"tokens\":20000,\"scored_docs\":1000},\"reference\":null,\"config\":{\"tokens_per_doc\":"
    "32,\"k_percent\":20},\"counts\":{\"members\":4,\"nonmembers\":1000},\"metrics\":{"
    "\"loss\":{\"auc\":0.75,\"auc_ci95\":[0.5,0.95],\"tpr_at_fpr_0.001\":0.25,"
    "\"tpr_at_fpr_0.01\":0.5,\"roc\":[[0,0],[0,0.25],[0.25,0.5],[0.5,1],[1,1]]}},"
    "\"model_free\":{\"length\":{\"auc\":0.5,\"auc_ci95\":[0.45,0.55],\"tpr_at_fpr_0.001\":0,"
    "\"tpr_at_fpr_0.01\":0.25,\"roc\":[[0,0],[1,1]]}}";

static void mia(const char *dir) {
    scan(dir, "mia", HEADER("membership-inference"), MIA_BODY, MIA_SAMPLES);
}

static void mia_old(const char *dir) {
    scan(dir, "mia", HEADER("membership-inference"), MIA_BODY_OLD, MIA_SAMPLES);
}

static void mia_1000(const char *dir) {
    size_t cap = 1004 * 64, n = 0;
    char *samples = malloc(cap);
    for (int i = 0; i < 1004; i++)
        n += (size_t)snprintf(samples + n, cap - n,
                              "{\"i\":%d,\"member\":%s,\"doc\":%d,\"scores\":{}}\n", i,
                              i < 4 ? "true" : "false", i < 4 ? i : i - 4);
    scan(dir, "mia", HEADER("membership-inference"), MIA_BODY_1000, samples);
    free(samples);
}

static void exposure(const char *dir) {
    scan(dir, "exposure", HEADER("canary-exposure"), EXP_BODY, EXP_SAMPLES);
}

/* a probe with training text in its samples, 4 documents, one exact */
static void probe(const char *dir) {
    scan(dir, "probe", HEADER("extraction-probe"),
         "\"config\":{\"prefix\":8,\"suffix\":4,\"samples\":4},\"metrics\":{\"exact_match_rate\":"
         "{\"mean\":0.25,\"ci95\":[0.01,0.8]},\"token_accuracy\":{\"mean\":0.5,\"ci95\":[0.25,"
         "0.75]},\"rouge_l\":{\"mean\":0.5,\"ci95\":[0.25,0.75]},\"matched_prefix_mean\":1.5},"
         "\"tables\":{\"matched_prefix_hist\":[2,1,0,0,1]}",
         "{\"doc\":3,\"offset\":0,\"exact\":true,\"matched_prefix\":4,\"token_accuracy\":1,"
         "\"truth_text\":\"MEMORIZED-PASSAGE in full\",\"generated_text\":\"MEMORIZED-PASSAGE in "
         "full\"}\n{\"doc\":1,\"offset\":0,\"exact\":false,\"matched_prefix\":1,\"token_accuracy\":"
         "0.25}\n{\"doc\":2,\"offset\":0,\"exact\":false,\"matched_prefix\":0,\"token_accuracy\":0}"
         "\n{\"doc\":4,\"offset\":0,\"exact\":false,\"matched_prefix\":0,\"token_accuracy\":0}\n");
}

static ax_status build(ax_report_input *in, int n, int show_text, int redact) {
    char out[128], *paths[8];
    snprintf(out, sizeof out, "%s/out", root);
    for (int i = 0; i < n; i++) { /* inputs name paths relative to root */
        paths[i] = malloc(256);
        snprintf(paths[i], 256, "%s/%s", root, in[i].path);
        in[i].path = paths[i];
    }
    ax_report_opts o = {.inputs = in,
                        .n_inputs = n,
                        .out = out,
                        .text_chars = 80,
                        .redact = redact,
                        .show_text = show_text};
    ax_error_clear();
    ax_status st = ax_report_build(&o);
    for (int i = 0; i < n; i++) free(paths[i]);
    return st;
}

static ax_status build_dir(const char *label, const char *dir, int show_text, int redact) {
    ax_report_input in[] = {{label, dir, 0}};
    return build(in, 1, show_text, redact);
}

static int mode_of(const char *rel) {
    char path[256];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    cr_assert_eq(stat(path, &sb), 0);
    return (int)(sb.st_mode & 0777);
}

Test(report_privacy, good_files_render_tables_and_charts, .init = setup, .fini = teardown) {
    mia("p"), exposure("p");
    cr_assert_eq(build_dir("base", "p", 0, 0), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html"), *md = slurp("out/report.md");
    char *js = slurp("out/report.json");
    /* the membership-inference table: one row per score, AUC with its interval, TPRs (n/a: 4
     * non-members resolve neither rate), counts; then the model-free rows */
    cr_assert(strstr(html, "<h2 id=\"mia\">Membership inference</h2>"));
    cr_assert(strstr(html, "<td>base</td><td>loss</td><td class=\"num\"><span class=\"n\">0.750 "
                           "(0.500-0.950)</span></td><td class=\"num\"><span "
                           "class=\"n\">n/a</span></td><td class=\"num\"><span "
                           "class=\"n\">n/a</span></td><td class=\"num\"><span "
                           "class=\"n\">4</span></td>"),
              "mia row");
    cr_assert(strstr(html, "<td>min-k%++</td><td class=\"num\"><span class=\"n\">0.625 "
                           "(0.375-0.875)</span></td>"));
    cr_assert(strstr(md, "| base | loss | 0.750 (0.500-0.950) | n/a | n/a | 4 | 4 |"));
    cr_assert(strstr(md, "| base | min-k%++ | 0.625 (0.375-0.875) | n/a | n/a | 4 | 4 |"));
    cr_assert(strstr(md, "| base | zlib bits per byte of the text (model-free) | 0.500 "
                         "(0.250-0.750) | n/a | n/a | 4 | 4 |"));
    cr_assert(strstr(md, "| base | length in tokens (model-free) | 0.125 (0.000-0.375) | n/a | "
                         "n/a | 4 | 4 |"));
    cr_assert(strstr(html, "<td>base</td><td>length in tokens (model-free)</td><td "
                           "class=\"num\"><span class=\"n\">0.125 (0.000-0.375)</span></td>"));
    /* readers see score names, never the scans' ids */
    cr_assert_null(strstr(html, "min_k_pp"));
    cr_assert_null(strstr(md, "min_k_pp"));
    cr_assert_null(strstr(html, "zlib_bpb"));
    /* the model-free length is far from chance: a warning in both, beside the headline too;
     * why the TPRs are n/a */
    const char *warn = "base: the model-free score length in tokens has AUC 0.125 "
                       "(95% CI 0.000-0.375), its interval excluding 0.5: members and "
                       "non-members differ in distribution without the model, so part of the "
                       "model scores";
    cr_assert(strstr(md, "**Warning:** base: the model-free score length"), "%s", md);
    cr_assert(strstr(md, warn), "%s", md);
    cr_assert(strstr(html, "<p class=\"note\">Warning: base: the model-free score length"));
    cr_assert_eq(count(md, "**Warning:**"), 1, "zlib_bpb at chance: no warning");
    cr_assert(strstr(md, "base: TPR at 0.1% FPR needs >= 1000 non-members and at 1% FPR >= 100 "
                         "(a threshold's false positive rate moves in steps of 1/non-members); "
                         "the scan has 4: n/a."),
              "%s", md);
    cr_assert(strstr(html, "base: a score that reads no model, length in tokens, separates "
                           "members from non-members (AUC 0.12, 95% CI 0.00-0.38), so part of the "
                           "membership AUC may be distribution shift."),
              "note beside the headline");
    cr_assert(strstr(md, "zlib level 6"));
    /* ROC on log-log axes with the chance diagonal, one curve per score */
    cr_assert(strstr(html, "ROC of the membership attack: base (log-log)"));
    cr_assert_eq(count(html, "class=\"chance\""), 1);
    cr_assert(strstr(html, "<title>loss AUC 0.75</title></polyline>"));
    cr_assert(strstr(html, "<title>min-k%++ AUC 0.62</title></polyline>"));
    cr_assert(strstr(html, "<title>length in tokens (model-free) AUC 0.12</title></polyline>"));
    cr_assert(strstr(html, "<li><i style=\"background:#D55E00\"></i>min-k%++ AUC 0.62</li>"),
              "the legend is HTML text");
    cr_assert(strstr(html, ">0.1%</text>") && strstr(html, ">100%</text>"), "log FPR ticks");
    /* exposure: table by repeat count, then the run's overall row; chart with the maximum */
    cr_assert(strstr(html, "<h2 id=\"exposure\">Canary exposure</h2>"));
    cr_assert(strstr(md, "| base | 1 | 2 | 1.50 | 1.50 | 0/2 = 0% | 9.97 |"));
    cr_assert(strstr(md, "| base | 4 | 2 | 8.75 | 8.75 | 1/2 = 50% | 9.97 |"));
    cr_assert(strstr(md, "| base | all | 4 | 5.12 | 5.25 | 1/4 = 25% | 9.97 |"));
    cr_assert(strstr(html, "<td>base</td><td class=\"num\"><span class=\"n\">4</span></td><td "
                           "class=\"num\"><span class=\"n\">2</span></td><td "
                           "class=\"num\"><span class=\"n\">8.75</span></td>"));
    cr_assert(strstr(html, "Canary exposure by repeat count"));
    cr_assert(strstr(html, "maximum possible exposure log2|R| = 9.97 bits"));
    cr_assert_eq(count(html, "class=\"maxline\""), 1);
    cr_assert(strstr(html, "log2 scale"));
    cr_assert(strstr(html, ">16</text>") == NULL, "x ticks stop near the largest repeat count");
    /* the y axis ends at the natural bound log2 |R| = 9.97, not a rounded 15 */
    cr_assert(strstr(html, "class=\"yl\">8</text>") && !strstr(html, "class=\"yl\">10</text>"));
    cr_assert(strstr(html, ">4</text>") && strstr(html, ">2</text>"), "powers of 2 on x");
    cr_assert_eq(count(html, "<circle"), 4, "one marker per canary");
    /* the summary table's columns for them */
    cr_assert(
        strstr(md, "| membership AUC, strongest score (95% CI) | 0.750 (0.500-0.950), loss |"),
        "%s", md);
    cr_assert(strstr(md, "| model-free baseline AUC, farthest from 0.5 (95% CI) | 0.125 "
                         "(0.000-0.375), length in tokens |"),
              "%s", md);
    cr_assert(strstr(md, "| canary exposure at the most repeats (bits) | 8.75 of 9.97 at 4 "
                         "repeats |"),
              "%s", md);
    /* the headline names both */
    cr_assert(strstr(html, "Membership inference AUC (0.5 = chance, strongest score): base 0.75 "
                           "(loss)."),
              "headline");
    cr_assert(strstr(html, "Canary exposure: base 8.8 of 10.0 bits at 4 repeats (1/4 canaries "
                           "extracted by greedy decoding)."));
    /* report.json: the same numbers, no secrets */
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "report.json", &v), AX_OK, "%s", ax_error_msg());
    const ax_json *loss = rt_row(v, "mia", 0), *len = rt_row(v, "mia", 3);
    cr_assert_str_eq(ax_json_get(ax_json_get(loss, "score"), "id")->str, "loss");
    cr_assert_eq(rt_num(ax_json_get(loss, "auc")), 0.75);
    cr_assert_eq(ax_json_get(ax_json_get(loss, "auc"), "ci95")->items[1]->num, 0.95);
    cr_assert_eq(ax_json_get(loss, "tpr_at_fpr_0.001")->type, AX_JSON_NULL);
    cr_assert_eq(ax_json_get(loss, "tpr_at_fpr_0.01")->type, AX_JSON_NULL);
    cr_assert_str_eq(ax_json_get(ax_json_get(len, "score"), "id")->str, "length");
    cr_assert_eq(rt_num(ax_json_get(len, "auc")), 0.125);
    const ax_json *roc = ax_json_get(rt_block(v, "chart-roc-base"), "series");
    cr_assert_eq(roc->n, 4, "two scores and two model-free baselines");
    cr_assert_eq(ax_json_get(roc->items[0], "x")->n, 5);
    cr_assert(strstr(js, "needs >= 1000 non-members"));
    cr_assert(strstr(js, warn));
    cr_assert(strstr(js, "\"style\":\"warning\""));
    cr_assert_str_eq(rt_fact(v, "mia-base", "setup")->str,
                     "4 members, 4 non-members, first 32 tokens of each; 2 scores, 2 model-free; "
                     "zlib level 6");
    cr_assert_eq(ax_json_get(rt_block(v, "exposure"), "rows")->n, 3);
    const ax_json *cans = ax_json_get(rt_block(v, "canaries-base"), "rows");
    cr_assert_eq(cans->n, 4);
    cr_assert_null(ax_json_get(cans->items[3], "secret"));
    cr_assert_eq(ax_json_get(v, "show_text")->type, AX_JSON_BOOL);
    cr_assert_eq(ax_json_get(v, "show_text")->num, 0);
    cr_assert_null(rt_block(v, "probe-base"), "no probe, no probe section");
    ax_json_free(v);
    cr_assert_eq(mode_of("out/report.html"), 0600);
    cr_assert_eq(mode_of("out/report.md"), 0600);
    cr_assert_eq(mode_of("out/report.json"), 0600);
    free(html), free(md), free(js);
}

/* an older scan: numbers at rates its 4 non-members cannot resolve (the TPR at FPR 0 under
 * another name) are not shown, and the missing baseline is said */
Test(report_privacy, older_scan_unresolved_tpr_and_no_baseline, .init = setup, .fini = teardown) {
    mia_old("p");
    cr_assert_eq(build_dir("old", "p", 0, 0), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html"), *md = slurp("out/report.md");
    char *js = slurp("out/report.json");
    cr_assert(strstr(md, "| old | loss | 0.750 (0.500-0.950) | n/a | n/a | 4 | 4 |"), "%s", md);
    cr_assert_null(strstr(md, "25.0%"));
    cr_assert(strstr(md, "old: the scan has no model-free baseline"));
    cr_assert(strstr(html, "old: its membership scan has no model-free baseline; rerun memscan "
                           "mia."));
    cr_assert_null(strstr(md, "(model-free)"));
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "report.json", &v), AX_OK, "%s", ax_error_msg());
    const ax_json *rows = ax_json_get(rt_block(v, "mia"), "rows");
    for (size_t k = 0; k < rows->n; k++)
        cr_assert_null(
            strstr(ax_json_get(ax_json_get(rows->items[k], "score"), "text")->str, "model-free"));
    cr_assert_eq(ax_json_get(rows->items[0], "tpr_at_fpr_0.001")->type, AX_JSON_NULL);
    ax_json_free(v);
    free(html), free(md), free(js);
}

/* 1000 non-members resolve both rates: the numbers are shown, and no note */
Test(report_privacy, tpr_shown_where_the_nonmembers_resolve_it, .init = setup, .fini = teardown) {
    mia_1000("p");
    cr_assert_eq(build_dir("big", "p", 0, 0), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "| big | loss | 0.750 (0.500-0.950) | 25.0% | 50.0% | 4 | 1000 |"), "%s",
              md);
    cr_assert(strstr(md, "| big | length in tokens (model-free) | 0.500 (0.450-0.550) | 0.0% | "
                         "25.0% | 4 | 1000 |"),
              "%s", md);
    cr_assert_null(strstr(md, "needs >="));
    cr_assert_null(strstr(md, "Warning"));
    free(md);
}

Test(report_privacy, runs_side_by_side, .init = setup, .fini = teardown) {
    mia("a"), exposure("a"), mia("b"), exposure("b");
    ax_report_input in[] = {{"baseline", "a", 0}, {"goldfish", "b", 0}};
    cr_assert_eq(build(in, 2, 0, 0), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html"), *md = slurp("out/report.md");
    /* one ROC chart per run, each full width (legible); one exposure chart with both runs */
    cr_assert_eq(count(html, "class=\"chance\""), 2);
    cr_assert(strstr(html, "baseline (log-log)") && strstr(html, "goldfish (log-log)"));
    cr_assert_eq(count(html, "class=\"maxline\""), 1);
    cr_assert_eq(count(html, "<circle"), 8);
    cr_assert_eq(count(md, "| loss | 0.750"), 2);
    cr_assert_eq(count(md, "| all | 4 |"), 2);
    free(html), free(md);
}

/* every output of the last build, concatenated */
static char *all_outputs(void) {
    char *h = slurp("out/report.html"), *m = slurp("out/report.md"), *j = slurp("out/report.json");
    size_t n = strlen(h) + strlen(m) + strlen(j) + 1;
    char *all = malloc(n);
    snprintf(all, n, "%s%s%s", h, m, j);
    free(h), free(m), free(j);
    return all;
}

Test(report_privacy, secrets_and_text_only_with_show_text, .init = setup, .fini = teardown) {
    mia("p"), exposure("p"), probe("p");
    /* default: no secret anywhere; memorized text in report.json only (it is 0600, for tools) */
    cr_assert_eq(build_dir("r", "p", 0, 0), AX_OK, "%s", ax_error_msg());
    char *all = all_outputs(), *html = slurp("out/report.html"), *md = slurp("out/report.md");
    cr_assert_null(strstr(all, "S3CRET"), "a canary secret leaked without --show-text");
    cr_assert_null(strstr(html, "MEMORIZED-PASSAGE"));
    cr_assert_null(strstr(md, "MEMORIZED-PASSAGE"));
    cr_assert(strstr(all, "MEMORIZED-PASSAGE"), "report.json keeps the text (test can fail)");
    cr_assert(strstr(html, "--show-text shows"), "the reader is told what is hidden");
    free(all), free(html), free(md);
    /* --show-text: the most exposed canary's secret and the text in HTML and Markdown */
    cr_assert_eq(build_dir("r", "p", 1, 0), AX_OK, "%s", ax_error_msg());
    html = slurp("out/report.html"), md = slurp("out/report.md");
    char *js = slurp("out/report.json");
    cr_assert(strstr(html, "<td class=\"txt\">S3CRET-0007</td>"));
    cr_assert(strstr(md, "| 3 | 4 | 9.00 | yes | S3CRET-0007 | S3CRET-0007 |"), "%s", md);
    cr_assert(strstr(js, "\"secret\":\"S3CRET-0007\""));
    cr_assert(strstr(html, "MEMORIZED-PASSAGE") && strstr(md, "MEMORIZED-PASSAGE"));
    free(html), free(md), free(js);
    /* --redact wins over --show-text: nothing in any output */
    cr_assert_eq(build_dir("r", "p", 1, 1), AX_OK, "%s", ax_error_msg());
    all = all_outputs();
    cr_assert_null(strstr(all, "S3CRET"));
    cr_assert_null(strstr(all, "MEMORIZED"));
    free(all);
}

/* replaces the first `from` in root/rel by `to` */
static void edit(const char *rel, const char *from, const char *to) {
    char *text = slurp(rel), *p = strstr(text, from);
    cr_assert_not_null(p, "%s has no '%s'", rel, from);
    *p = 0;
    put(rel, "%s%s%s", text, to, p + strlen(from));
    free(text);
}

static void expect_msg(const char *what, const char *a, const char *b) {
    ax_status st = build_dir("e", "e", 1, 0);
    cr_assert_neq(st, AX_OK, "%s was accepted", what);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, a) && strstr(m, b), "%s: message '%s' should name '%s' and '%s'", what, m,
              a, b);
    char out[128];
    snprintf(out, sizeof out, "%s/out/report.html", root);
    cr_assert_not(ax_path_exists(out), "no report on failure");
}

/* a fresh valid run "e" (mia or exposure), one edit of its scan JSON, then refused naming
 * the file and field */
static void refused_json(int is_mia, const char *from, const char *to, const char *field) {
    ax_rm_rf(root);
    cr_assert_eq(ax_mkdir_p(root), AX_OK);
    is_mia == 2 ? mia_1000("e") : is_mia ? mia("e") : exposure("e");
    cr_assert_eq(build_dir("e", "e", 1, 0), AX_OK, "valid before the edit: %s", ax_error_msg());
    char out[128];
    snprintf(out, sizeof out, "%s/out", root);
    ax_rm_rf(out);
    const char *rel = is_mia ? "e/mia.json" : "e/exposure.json";
    edit(rel, from, to);
    char what[512];
    snprintf(what, sizeof what, "%s: '%s' -> '%s'", rel, from, to);
    expect_msg(what, rel, field);
}

Test(report_privacy, damaged_mia_is_refused_naming_the_field, .init = setup, .fini = teardown) {
    refused_json(1, "\"auc\":0.75", "\"auc\":1.5", "metrics.loss.auc");
    refused_json(1, "\"auc_ci95\":[0.5,0.95]", "\"auc_ci95\":[0.95,0.5]", "metrics.loss.auc_ci95");
    refused_json(1, "\"auc_ci95\":[0.5,0.95]", "\"auc_ci95\":[0.5]", "metrics.loss.auc_ci95");
    refused_json(2, "\"tpr_at_fpr_0.01\":0.5", "\"tpr_at_fpr_0.01\":1.2",
                 "metrics.loss.tpr_at_fpr_0.01");
    refused_json(2, "\"tpr_at_fpr_0.001\":0.25", "\"tpr_at_fpr_0.001\":0.75",
                 "metrics.loss.tpr_at_fpr_0.001");
    /* null where 1000 non-members resolve the rate; a number out of range even where not */
    refused_json(2, "\"tpr_at_fpr_0.001\":0.25", "\"tpr_at_fpr_0.001\":null",
                 "metrics.loss.tpr_at_fpr_0.001 is null but 1000 non-members resolve 0.1% FPR");
    refused_json(1, "\"tpr_at_fpr_0.01\":null", "\"tpr_at_fpr_0.01\":1.2",
                 "metrics.loss.tpr_at_fpr_0.01");
    refused_json(1, "\"auc\":0.125", "\"auc\":1.125", "model_free.length.auc");
    refused_json(1, "[0.75,0.25],[1,0.5]", "[0.75,0.25],[0.5,0.5]", "model_free.length.roc[3]");
    refused_json(1, "\"model_free\":{", "\"model_free\":{\"x\":1,", "model_free.x");
    refused_json(1, "[0.25,0.5],[0.5,1]", "[0.25,0.5],[0.2,1]", "metrics.loss.roc[3]");
    refused_json(1, "[0.5,1],[1,1]]", "[0.5,1],[1,0.99]]", "metrics.loss.roc");
    refused_json(1, "[0.5,1],[1,1]]", "[0.5,1],[1,\"x\"]]", "metrics.loss.roc[4]");
    refused_json(1, "\"counts\":{\"members\":4", "\"counts\":{\"members\":5",
                 "members.scored_docs");
    refused_json(1, "\"counts\":{\"members\":4", "\"counts\":{\"members\":-1", "counts.members");
    refused_json(1, "\"metrics\":{", "\"metricz\":{", "metrics");
    refused_json(1, "\"min_k_pp\":{", "\"ref\":{", "metrics.ref");
    refused_json(1, "\"tokens_per_doc\":32", "\"tokens_per_doc\":0", "config.tokens_per_doc");
    /* counts that agree with each other but not with the samples file's lines */
    refused_json(1, "\"scored_docs\":4},\"reference\"", "\"scored_docs\":3},\"reference\"",
                 "nonmembers.scored_docs");
    ax_rm_rf(root);
    cr_assert_eq(ax_mkdir_p(root), AX_OK);
    mia("e");
    edit("e/mia.json", "\"scored_docs\":4},\"reference\"", "\"scored_docs\":3},\"reference\"");
    edit("e/mia.json", "\"nonmembers\":4}", "\"nonmembers\":3}");
    expect_msg("mia: 7 documents counted, 8 sample lines", "e/mia.json", "samples.lines");
}

Test(report_privacy, damaged_exposure_is_refused_naming_the_field, .init = setup,
     .fini = teardown) {
    refused_json(0, "\"exposure_mean\":8.75", "\"exposure_mean\":10.5",
                 "by_repeats[1].exposure_mean");
    refused_json(0, "\"exposure_mean\":1.5", "\"exposure_mean\":-1", "by_repeats[0].exposure_mean");
    refused_json(0, "\"exposure_median\":8.75", "\"exposure_median\":8",
                 "by_repeats[1]: exposure min");
    refused_json(0, "\"max_exposure\":9.965784284662087", "\"max_exposure\":12", "max_exposure");
    refused_json(0, "\"space\":1000", "\"space\":0", "config.space");
    refused_json(0, "\"extracted\":1,\"extracted_share\":0.5",
                 "\"extracted\":3,\"extracted_share\":1.5", "by_repeats[1].extracted");
    refused_json(0, "\"extracted\":1,\"extracted_share\":0.5",
                 "\"extracted\":1,\"extracted_share\":0.75", "by_repeats[1].extracted_share");
    refused_json(0, "{\"repeats\":4,", "{\"repeats\":1,", "by_repeats[1].repeats");
    refused_json(0, "\"overall\":{\"canaries\":4", "\"overall\":{\"canaries\":5", "overall");
    refused_json(0, "\"method\":\"exact\"", "\"method\":\"guess\"", "config.method");
    refused_json(0, "\"by_repeats\":[", "\"by_repeatz\":[", "by_repeats");
}

/* a valid exposure.json whose samples file (recorded correctly) says something else */
static void refused_samples(const char *samples, const char *a, const char *b) {
    ax_rm_rf(root);
    cr_assert_eq(ax_mkdir_p(root), AX_OK);
    scan("e", "exposure", HEADER("canary-exposure"), EXP_BODY, samples);
    expect_msg(samples, a, b);
}

Test(report_privacy, exposure_samples_must_agree_with_the_table, .init = setup, .fini = teardown) {
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 2, false)
                        CANARY(2, 4, "S", 8.5, false) CANARY(3, 4, "S", 12, true),
                    "exposure.samples.jsonl line 4", "exposure");
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 2, false)
                        CANARY(2, 4, "S", 8.5, false) CANARY(3, 8, "S", 9, true),
                    "exposure.samples.jsonl line 4", "8 repeats");
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 3, false)
                        CANARY(2, 4, "S", 8.5, false) CANARY(3, 4, "S", 9, true),
                    "by_repeats[0]", "exposure.samples.jsonl");
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 2, false)
                        CANARY(2, 4, "S", 8.5, false),
                    "exposure.samples.jsonl has 3 canaries", "exposure.json");
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 2, false)
                        CANARY(2, 4, "S", 8.5, false) CANARY(3, 4, "S", 9, "yes"),
                    "exposure.samples.jsonl line 4", "extracted");
    refused_samples(CANARY(0, 1, "S", 1, false) CANARY(1, 1, "S", 2, false)
                        CANARY(2, 4, "S", 8.5, false) "{\"id\":3,\"repeats\":4,\"exposure\":9,"
                                                      "\"extracted\":true}\n",
                    "exposure.samples.jsonl line 4", "secret");
}

Test(report_privacy, samples_file_must_match_its_record, .init = setup, .fini = teardown) {
    exposure("e");
    char *t = slurp("e/exposure.samples.jsonl");
    t[strlen(t) - 3] = ' '; /* same size, other content */
    put("e/exposure.samples.jsonl", "%s", t);
    free(t);
    expect_msg("edited samples", "exposure.samples.jsonl does not belong to", "exposure.json");
    ax_rm_rf(root);
    cr_assert_eq(ax_mkdir_p(root), AX_OK);
    mia("e");
    put("e/mia.samples.jsonl", "{}\n");
    expect_msg("swapped samples", "mia.samples.jsonl does not belong to", "mia.json");
}

Test(report_privacy, duplication_buckets_use_a_log_axis_when_counts_span_decades, .init = setup,
     .fini = teardown) {
    scan("d", "probe", HEADER("extraction-probe"),
         "\"config\":{\"prefix\":8,\"suffix\":4,\"samples\":1000},\"metrics\":{"
         "\"exact_match_rate\":{\"mean\":0.1,\"ci95\":[0.08,0.12]},\"token_accuracy\":{\"mean\":"
         "0.5,\"ci95\":[0.25,0.75]},\"rouge_l\":{\"mean\":0.5,\"ci95\":[0.25,0.75]},"
         "\"matched_prefix_mean\":1},\"tables\":{\"matched_prefix_hist\":[900,0,0,0,100],"
         "\"by_duplication\":[{\"bucket\":\"1\",\"samples\":990,\"exact_match_rate\":0.09},"
         "{\"bucket\":\"2-3\",\"samples\":8,\"exact_match_rate\":0.5},{\"bucket\":\"4+\","
         "\"samples\":2,\"exact_match_rate\":1}]}",
         "");
    /* a probe without samples rows: drop the record so none are expected */
    edit("d/probe.json", ",\"samples\":{", ",\"x\":{");
    cr_assert_eq(build_dir("d", "d", 0, 0), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html");
    char *c = strstr(html, "Exact match by duplication");
    cr_assert_not_null(c);
    char *end = strstr(c, "</svg>");
    *end = 0;
    cr_assert(strstr(c, "(log scale)"), "990 vs 1 exact match: a log axis");
    cr_assert(strstr(c, ">1000</text>") && strstr(c, ">1</text>"), "decade ticks");
    cr_assert(strstr(c, "d exact matches 1: 89</title>"), "990 x 0.09 = 89 exact");
    free(html);
}

/* the headline's conclusion: each goldfish run against the baseline, an effect only where the
 * two intervals are apart */
Test(report_privacy, the_headline_concludes_goldfish_against_the_baseline, .init = setup,
     .fini = teardown) {
    mia("a"), mia("b");
    edit("b/mia.json", "\"goldfish\":\"none\"", "\"goldfish\":\"hash:k=4,h=13\"");
    ax_report_input in[] = {{"baseline", "a", 0}, {"goldfish", "b", 0}};
    cr_assert_eq(build(in, 2, 0, 0), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "**goldfish did not measurably reduce membership inference (AUC 0.75 -> "
                         "0.75) compared with baseline.**"),
              "%s", md);
    free(md);
    /* the goldfish run's scores near chance, their intervals below the baseline's */
    edit("b/mia.json", "\"auc\":0.75,\"auc_ci95\":[0.5,0.95]",
         "\"auc\":0.45,\"auc_ci95\":[0.3,0.49]");
    edit("b/mia.json", "\"auc\":0.625,\"auc_ci95\":[0.375,0.875]",
         "\"auc\":0.4,\"auc_ci95\":[0.2,0.45]");
    ax_report_input in2[] = {{"baseline", "a", 0}, {"goldfish", "b", 0}};
    cr_assert_eq(build(in2, 2, 0, 0), AX_OK, "%s", ax_error_msg());
    md = slurp("out/report.md");
    cr_assert(strstr(md, "**goldfish brought membership inference to chance (AUC 0.75 -> 0.45) "
                         "compared with baseline.**"),
              "%s", md);
    free(md);
}
