/* The scans `--all-steps` drives (memscan/over_steps.h), and the headline metrics each puts on
 * its curve: read back from the scan JSON the scan wrote, so a curve point holds exactly the
 * numbers of that step's scan file. */
#include "memscan/over_steps.h"
#include "memscan/exposure_run.h"
#include "memscan/mia_run.h"
#include "memscan/probe_run.h"

#include <string.h>

static ax_status need_obj(const ax_json *scan, const char *key, const char *what,
                          const ax_json **out) {
    *out = ax_json_get(scan, key);
    if (*out && (*out)->type == AX_JSON_OBJ) return AX_OK;
    return ax_errorf(AX_ERR_CORRUPT, "%s has no \"%s\" object; is it a scan JSON of this kind?",
                     what, key);
}

/* probe: every metric (exact-match rate, token accuracy, RougeL, each {mean, ci95}; the mean
 * matched prefix; the sampled-extraction rates; whatever else the probe reports), the number of
 * probes, and the rows by prefix length when several were probed */
static ax_status probe_point(const ax_json *scan, const char *what, ax_jw *w) {
    const ax_json *m, *cfg = ax_json_get(scan, "config");
    AX_CHECK(need_obj(scan, "metrics", what, &m));
    if (!ax_json_get(m, "exact_match_rate"))
        return ax_errorf(AX_ERR_CORRUPT, "%s has no metrics.exact_match_rate", what);
    if (cfg && ax_json_get(cfg, "samples"))
        ax_jw_key(w, "samples"), ax_jw_json(w, ax_json_get(cfg, "samples"));
    for (size_t i = 0; i < m->n; i++) ax_jw_key(w, m->keys[i]), ax_jw_json(w, m->items[i]);
    /* --prefix-lengths: one row per length (extraction versus prefix length, per step) */
    const ax_json *t = ax_json_get(scan, "tables"), *bp = ax_json_get(t, "by_prefix_length");
    if (bp && bp->type == AX_JSON_ARR) ax_jw_key(w, "by_prefix_length"), ax_jw_json(w, bp);
    return AX_OK;
}

/* mia: per score its AUC with interval and TPR at 0.1% and 1% FPR (not the ROC points) */
static ax_status mia_point(const ax_json *scan, const char *what, ax_jw *w) {
    const ax_json *m;
    AX_CHECK(need_obj(scan, "metrics", what, &m));
    ax_jw_key(w, "scores");
    ax_jw_obj_begin(w);
    for (size_t i = 0; i < m->n; i++) {
        const ax_json *s = m->items[i];
        if (s->type != AX_JSON_OBJ) continue;
        ax_jw_key(w, m->keys[i]);
        ax_jw_obj_begin(w);
        for (size_t j = 0; j < s->n; j++)
            if (strcmp(s->keys[j], "roc")) ax_jw_key(w, s->keys[j]), ax_jw_json(w, s->items[j]);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
    return AX_OK;
}

/* exposure: the largest possible exposure, the overall row and the rows by repeat count (mean
 * exposure, share extracted, ...) */
static ax_status exposure_point(const ax_json *scan, const char *what, ax_jw *w) {
    const ax_json *o, *rows = ax_json_get(scan, "by_repeats"),
                      *mx = ax_json_get(scan, "max_exposure");
    AX_CHECK(need_obj(scan, "overall", what, &o));
    if (!rows || rows->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_CORRUPT, "%s has no \"by_repeats\" list", what);
    if (mx) ax_jw_key(w, "max_exposure"), ax_jw_json(w, mx);
    ax_jw_key(w, "overall"), ax_jw_json(w, o);
    ax_jw_key(w, "by_repeats"), ax_jw_json(w, rows);
    return AX_OK;
}

/* the library entry points, with the loop's untyped signature */
static ax_status probe_run(const void *o, void *s) {
    return ax_ms_probe_run(o, s);
}
static void probe_print(const void *o, const void *s, FILE *f) {
    ax_ms_probe_print(o, s, f);
}
static ax_status mia_run(const void *o, void *s) {
    return ax_ms_mia_run(o, s);
}
static void mia_print(const void *o, const void *s, FILE *f) {
    ax_ms_mia_print(o, s, f);
}
static ax_status exposure_run(const void *o, void *s) {
    return ax_ms_exposure_run(o, s);
}
static void exposure_print(const void *o, const void *s, FILE *f) {
    (void)o;
    ax_ms_exposure_print(s, f);
}

#define KIND(kind, dir, file)                                                                      \
    {                                                                                              \
        .name = #kind, .out_is_dir = dir, .scan_file = file, .table = &ax_ms_##kind##_table,       \
        .opts_size = sizeof(ax_ms_##kind##_opts), .summary_size = sizeof(ax_ms_##kind##_summary),  \
        .run = kind##_run, .print = kind##_print, .point = kind##_point                            \
    }
const ax_ms_steps_kind ax_ms_steps_probe = KIND(probe, 0, NULL);
const ax_ms_steps_kind ax_ms_steps_mia = KIND(mia, 1, "mia.json");
const ax_ms_steps_kind ax_ms_steps_exposure = KIND(exposure, 1, "exposure.json");
