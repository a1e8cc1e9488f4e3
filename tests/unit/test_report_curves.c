/* axmem report, memorization over training: curve files (axmem-curve v1, as memscan
 * --all-steps writes them) and train --scan-every records in metrics.jsonl, written by hand in
 * /tmp. Good curves render the per-step table (a rise above the previous upper bound flagged),
 * the charts (interval band, AUC, exposure) and report.json's over_training block; damaged
 * curves and records are refused naming the file and the field. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "reports/report.h"
#include "tests/unit/test_report_files.h"

static void setup(void) {
    rt_setup("axrepc");
}

static void teardown(void) {
    rt_teardown();
}

/* a probe point: exact-match rate mean [lo, hi], token accuracy */
#define PPT(step, m, lo, hi, tok)                                                                  \
    "{\"step\":" #step ",\"ckpt\":\"/r/ckpt/step-" #step "\",\"scan_file\":\"step/probe.json\","   \
    "\"samples\":10,\"exact_match_rate\":{\"mean\":" #m ",\"ci95\":[" #lo "," #hi "]},"            \
    "\"token_accuracy\":{\"mean\":" #tok ",\"ci95\":[0," #tok "]},\"rouge_l\":{\"mean\":0.5,"      \
    "\"ci95\":[0.4,0.6]}}"
#define CURVE(scan, points, skipped)                                                               \
    "{\"schema\":\"axmem-curve\",\"version\":1,\"scan\":\"" scan                                   \
    "\",\"run\":\"/r\",\"points\":[" points "],\"skipped\":[" skipped "]}"

static const char *good_probe = CURVE(
    "probe", PPT(2, 0, 0, 0.2, 0.3) "," PPT(4, 0.1, 0.01, 0.3, 0.5) "," PPT(6, 0.5, 0.3, 0.7, 0.8),
    "{\"step\":8,\"ckpt\":\"/r/ckpt/step-8\",\"reason\":\"truncated shard\"}");
#define MPT(step, auc, lo, hi)                                                                     \
    "{\"step\":" #step ",\"scores\":{\"zlib\":{\"auc\":0.4,\"auc_ci95\":[0.3,0.5]},\"loss\":"      \
    "{\"auc\":" #auc ",\"auc_ci95\":[" #lo "," #hi "],\"tpr_at_fpr_0.01\":0.1}}}"
static const char *good_mia = CURVE("mia", MPT(2, 0.5, 0.4, 0.6) "," MPT(6, 0.81, 0.7, 0.9), "");
#define EPT(step, mean)                                                                            \
    "{\"step\":" #step                                                                             \
    ",\"max_exposure\":9.97,\"overall\":{\"canaries\":4,\"exposure_mean\":" #mean                  \
    "},\"by_repeats\":[]}"
static const char *good_exp = CURVE("exposure", EPT(2, 1.25) "," EPT(6, 7.5), "");

static ax_status build(const char *label, const char *rel, int is_file) {
    char out[128], path[256];
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    ax_report_input in[] = {{label, path, is_file}};
    ax_report_opts o = {.inputs = in, .n_inputs = 1, .out = out, .text_chars = 80};
    ax_error_clear();
    return ax_report_build(&o);
}

Test(report_curves, good_curves_render_rows_charts_and_json, .init = setup, .fini = teardown) {
    put("r/probe.curve.json", "%s", good_probe);
    put("r/mia.curve.json", "%s", good_mia);
    put("r/exposure.curve.json", "%s", good_exp);
    cr_assert_eq(build("a", "r", 0), AX_OK, "%s", ax_error_msg());
    char *html = slurp("out/report.html"), *md = slurp("out/report.md");
    char *js = slurp("out/report.json");
    cr_assert(strstr(html, "<h2 id=\"over-training\">Memorization over training</h2>"));
    /* one row per step; step 6 (50%) rose above step 4's upper bound (30%), step 4 (10%) did
     * not rise above step 2's (20%) */
    cr_assert(strstr(html, "<tr class=\"flag\"><td>a</td><td>memscan probe --all-steps</td><td "
                           "class=\"num\"><span class=\"n\">6</span></td><td "
                           "class=\"num\"><span class=\"n\">50.0% (30.0-70.0%)</span></td><td "
                           "class=\"num\"><span class=\"n\">80.0%</span></td><td>ROSE above "
                           "the previous upper bound</td></tr>"),
              "step 6 row");
    cr_assert(strstr(html, "<tr><td>a</td><td>memscan probe --all-steps</td><td "
                           "class=\"num\"><span class=\"n\">4</span></td><td "
                           "class=\"num\"><span class=\"n\">10.0% (1.0-30.0%)</span></td><td "
                           "class=\"num\"><span class=\"n\">50.0%</span></td><td></td></tr>"),
              "step 4 row");
    cr_assert_eq(count(html, "<tr class=\"flag\">"), 1);
    cr_assert(strstr(md, "| a | memscan probe --all-steps | 6 | 50.0% (30.0-70.0%) | 80.0% | ROSE "
                         "above the previous upper bound |"));
    cr_assert(strstr(md, "| a | memscan probe --all-steps | 2 | 0.0% (0.0-20.0%) | 30.0% |  |"));
    /* charts: extraction with its band (the probe and the mia curves have intervals), AUC with
     * the chance line, mean exposure; three points as markers on each */
    cr_assert(
        strstr(html, "Extraction versus training step (exact-match rate; band: 95% interval)"));
    cr_assert(strstr(html, "Membership inference versus training step (AUC of the loss score"));
    cr_assert(strstr(html, "Canary exposure versus training step (mean over all canaries)"));
    cr_assert_eq(count(html, "class=\"band\""), 2, "a band for extraction and for AUC");
    cr_assert(strstr(html, "<title>a (memscan probe --all-steps): 6, 0.5</title></circle>"));
    cr_assert(strstr(html, "<title>a: 6, 0.81</title></circle>"));
    cr_assert(strstr(html, "<title>a: 6, 7.5</title></circle>"));
    cr_assert(strstr(html, "1 checkpoint(s) could not be opened"), "the skipped step");
    cr_assert(strstr(md, "| a | loss | 2 | 0.500 (0.400-0.600) |"), "%s", md);
    cr_assert(strstr(md, "| a | loss | 6 | 0.810 (0.700-0.900) |"), "%s", md);
    cr_assert(strstr(md, "| a | 6 | 7.500 |"), "%s", md);
    /* the exposure axis ends at log2 |R|, which the curve records */
    cr_assert(strstr(html, "log2|R| = 9.97 bits"));
    /* report.json: the tables and charts, flag included */
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "report.json", &v), AX_OK, "%s", ax_error_msg());
    const ax_json *pts = ax_json_get(rt_block(v, "curve-extraction"), "rows");
    cr_assert_eq(pts->n, 3);
    cr_assert_eq(rt_num(ax_json_get(pts->items[2], "step")), 6);
    cr_assert_eq(rt_num(ax_json_get(pts->items[2], "exact_match")), 0.5);
    cr_assert_not_null(ax_json_get(pts->items[2], "flagged"));
    cr_assert_null(ax_json_get(pts->items[1], "flagged"));
    cr_assert(strstr(js, "1 checkpoint(s) could not be opened"));
    cr_assert_str_eq(ax_json_get(ax_json_get(rt_row(v, "curve-mia", 0), "score"), "id")->str,
                     "loss");
    cr_assert_eq(rt_num(ax_json_get(rt_row(v, "curve-exposure", 1), "exposure_mean")), 7.5);
    const ax_json *ys = ax_json_get(rt_block(v, "chart-curve-exposure"), "y_axis");
    cr_assert_eq(ax_json_get(ys, "range")->items[1]->num, 9.97);
    for (size_t k = 0; k < pts->n; k++) /* no train --scan-every records in this run */
        cr_assert_str_eq(ax_json_get(pts->items[k], "source")->str, "memscan probe --all-steps");
    ax_json_free(v);
    free(html), free(md), free(js);
}

Test(report_curves, a_curve_file_given_with_scan, .init = setup, .fini = teardown) {
    put("s/any-name.json", "%s", good_probe);
    cr_assert_eq(build("b", "s/any-name.json", 1), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "| b | memscan probe --all-steps | 4 | 10.0% (1.0-30.0%) |"), "%s", md);
    free(md);
}

Test(report_curves, scan_records_in_metrics_jsonl, .init = setup, .fini = teardown) {
    put("r/exposure.curve.json", "%s", good_exp);
    put("r/metrics.jsonl",
        "{\"step\":1,\"loss\":5.0,\"grad_norm\":1}\n{\"step\":2,\"loss\":4.0,\"grad_norm\":1}\n"
        "{\"step\":2,\"scan\":\"probe\",\"samples\":8,\"exact_match\":0,\"exact_match_lo\":0,"
        "\"exact_match_hi\":0.25,\"token_accuracy\":0.2,\"rouge_l\":0.3,\"extraction_rising\":"
        "false,"
        "\"file\":\"/x\"}\n{\"step\":4,\"loss\":3.0,\"grad_norm\":1}\n"
        "{\"step\":4,\"scan\":\"probe\",\"samples\":8,\"exact_match\":0.75,\"exact_match_lo\":0.5,"
        "\"exact_match_hi\":0.9,\"token_accuracy\":0.9,\"rouge_l\":0.9,\"extraction_rising\":true,"
        "\"file\":\"/x\"}\n");
    cr_assert_eq(build("t", "r", 0), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md"), *js = slurp("out/report.json");
    cr_assert(strstr(md, "| t | train --scan-every | 2 | 0.0% (0.0-25.0%) | 20.0% |  |"), "%s", md);
    cr_assert(strstr(md, "| t | train --scan-every | 4 | 75.0% (50.0-90.0%) | 90.0% | ROSE above "
                         "the previous upper bound |"));
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "report.json", &v), AX_OK);
    /* losses still read, scan records not mistaken for them */
    cr_assert_eq(rt_num(ax_json_get(rt_row(v, "training", 0), "steps")), 3);
    cr_assert_eq(ax_json_get(rt_block(v, "curve-extraction"), "rows")->n, 2);
    cr_assert_str_eq(ax_json_get(rt_row(v, "curve-extraction", 1), "source")->str,
                     "train --scan-every");
    ax_json_free(v);
    free(md), free(js);
}

/* the build fails and the message names the file (by its suffix) and each of the fragments */
static void refused(const char *file_suffix, const char *f1, const char *f2) {
    cr_assert_neq(build("a", "r", 0), AX_OK, "damage accepted (wanted %s)", f1);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, file_suffix), "message does not name %s: %s", file_suffix, m);
    cr_assert(strstr(m, f1), "message does not name '%s': %s", f1, m);
    if (f2) cr_assert(strstr(m, f2), "message does not say '%s': %s", f2, m);
}

Test(report_curves, damaged_curves_refused_naming_the_field, .init = setup, .fini = teardown) {
    put("r/probe.curve.json", "%s",
        CURVE("probe", PPT(4, 0, 0, 0.2, 0.3) "," PPT(2, 0, 0, 0.2, 0.3), ""));
    refused("r/probe.curve.json", "points[1].step = 2", "does not ascend");
    put("r/probe.curve.json", "%s",
        CURVE("probe", PPT(2, 0, 0, 0.2, 0.3) "," PPT(2, 0, 0, 0.2, 0.3), ""));
    refused("r/probe.curve.json", "points[1].step", "does not ascend");
    put("r/probe.curve.json", "%s", CURVE("probe", PPT(2, 1.5, 0, 1, 0.3), ""));
    refused("r/probe.curve.json", "points[0].exact_match_rate", "outside");
    put("r/probe.curve.json", "%s", CURVE("probe", PPT(2, 0.5, 0.6, 0.7, 0.3), ""));
    refused("r/probe.curve.json", "points[0].exact_match_rate", NULL);
    put("r/probe.curve.json", "%s", CURVE("probe", PPT(2, 0.5, 0.1, 0.7, 1.2), ""));
    refused("r/probe.curve.json", "points[0].token_accuracy", NULL);
    put("r/probe.curve.json", "%s",
        CURVE("probe", "{\"step\":2,\"token_accuracy\":{\"mean\":0,\"ci95\":[0,0]}}", ""));
    refused("r/probe.curve.json", "points[0].exact_match_rate", "missing");
    put("r/probe.curve.json", "%s", CURVE("probe", "{\"step\":-1}", ""));
    refused("r/probe.curve.json", "points[0].step", NULL);
    put("r/probe.curve.json", "{\"schema\":\"axmem-curve\",\"version\":2,\"scan\":\"probe\","
                              "\"points\":[]}");
    refused("r/probe.curve.json", "version", NULL);
    put("r/probe.curve.json", "%s", CURVE("regurgitation", "", ""));
    refused("r/probe.curve.json", "regurgitation", "not reported");
    put("r/probe.curve.json", "%s",
        "{\"schema\":\"axmem-curve\",\"version\":1,\"scan\":\"probe\"}");
    refused("r/probe.curve.json", "points", "not an array");
    /* a scan file under a curve's name, and a curve under a scan's */
    put("r/probe.curve.json", "{\"schema\":\"axmem-scan\",\"version\":1}");
    refused("r/probe.curve.json", "axmem-curve", NULL);
    ax_rm_rf(root), ax_mkdir_p(root);
    put("r/probe.json", "%s", good_probe);
    refused("r/probe.json", "a curve file", NULL);
    ax_rm_rf(root), ax_mkdir_p(root);
    put("r/mia.curve.json", "%s", CURVE("mia", MPT(2, 0.5, 0.7, 0.6), ""));
    refused("r/mia.curve.json", "points[0].scores.loss.auc_ci95", "not ordered");
    put("r/mia.curve.json", "%s", CURVE("mia", MPT(2, 1.5, 0.4, 0.6), ""));
    refused("r/mia.curve.json", "points[0].scores.loss", "auc");
    put("r/mia.curve.json", "%s",
        CURVE("mia",
              MPT(2, 0.5, 0.4, 0.6) ",{\"step\":4,\"scores\":{\"zlib\":{\"auc\":0.5,"
                                    "\"auc_ci95\":[0.4,0.6]}}}",
              ""));
    refused("r/mia.curve.json", "points[1].scores.loss", "missing");
    ax_rm_rf(root), ax_mkdir_p(root);
    put("r/exposure.curve.json", "%s", CURVE("exposure", EPT(2, 12.5), ""));
    refused("r/exposure.curve.json", "points[0].overall", "exposure_mean");
    put("r/exposure.curve.json", "%s", CURVE("exposure", "{\"step\":2}", ""));
    refused("r/exposure.curve.json", "points[0].overall", "missing");
}

Test(report_curves, damaged_scan_records_refused, .init = setup, .fini = teardown) {
    put("r/exposure.curve.json", "%s", good_exp);
    put("r/metrics.jsonl",
        "{\"step\":2,\"loss\":4.0}\n{\"step\":2,\"scan\":\"probe\",\"exact_match\":0.5,"
        "\"exact_match_lo\":0.6,\"exact_match_hi\":0.9,\"token_accuracy\":0.2}\n");
    refused("r/metrics.jsonl line 2", "exact_match", NULL);
    put("r/metrics.jsonl",
        "{\"step\":4,\"scan\":\"probe\",\"exact_match\":0.5,\"exact_match_lo\":0.1,"
        "\"exact_match_hi\":0.9,\"token_accuracy\":0.2}\n{\"step\":2,\"scan\":\"probe\","
        "\"exact_match\":0.5,\"exact_match_lo\":0.1,\"exact_match_hi\":0.9,\"token_accuracy\":0.2}"
        "\n");
    refused("r/metrics.jsonl line 2", "scan record.step = 2", "does not ascend");
    put("r/metrics.jsonl", "{\"step\":4,\"scan\":\"probe\",\"exact_match\":0.5,"
                           "\"exact_match_lo\":0.1,\"exact_match_hi\":0.9,\"token_accuracy\":2}\n");
    refused("r/metrics.jsonl line 1", "token_accuracy", NULL);
    put("r/metrics.jsonl", "{\"step\":4,\"scan\":\"mia\"}\n");
    refused("r/metrics.jsonl line 1", "\"mia\"", "not reported");
}

Test(report_curves, a_training_run_with_scan_records_alone, .init = setup, .fini = teardown) {
    put("r/metrics.jsonl", "{\"step\":2,\"loss\":4.0}\n");
    cr_assert_neq(build("t", "r", 0), AX_OK, "a run with neither scans nor scan records");
    cr_assert(strstr(ax_error_msg(), "scan records in metrics.jsonl"), "%s", ax_error_msg());
    put("r/metrics.jsonl",
        "{\"step\":2,\"loss\":4.0}\n{\"step\":2,\"scan\":\"probe\",\"exact_match\":0.25,"
        "\"exact_match_lo\":0.1,\"exact_match_hi\":0.5,\"token_accuracy\":0.5}\n");
    cr_assert_eq(build("t", "r", 0), AX_OK, "%s", ax_error_msg());
    char *md = slurp("out/report.md");
    cr_assert(strstr(md, "| t | train --scan-every | 2 | 25.0% (10.0-50.0%) | 50.0% |  |"), "%s",
              md);
    free(md);
}
