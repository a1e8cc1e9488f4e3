/* Reads memorization over training: curve files of `memscan probe|mia|exposure --all-steps`
 * (schema axmem-curve v1: scan, run, points one per step, skipped) and the probe records of
 * `train --scan-every` in metrics.jsonl. As strict as the scan loaders: rates in [0, 1],
 * intervals ordered around their estimate, steps strictly ascending; a failure names the file
 * and the field (points[3].exact_match_rate.ci95). */
#include "lib/core/json.h"
#include "reports/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const curve_scans[AX_REP_NCURVES] = {"probe", "train", "mia", "exposure"};

static ax_status push(ax_arena *a, ax_rep_curve *c, double step, double v, double lo, double hi,
                      double tok) {
    if ((size_t)c->n == c->cap) {
        double **arr[5] = {&c->step, &c->v, &c->lo, &c->hi, &c->tok};
        size_t cap = c->cap;
        for (int k = 0; k < 5; k++) {
            double *na = ax_arena_grow(a, *arr[k], (size_t)c->n, &(size_t){cap}, sizeof(double));
            if (!na) return ax_rep_nomem();
            *arr[k] = na;
        }
        c->cap = cap ? cap * 2 : 16;
    }
    c->step[c->n] = step, c->v[c->n] = v, c->lo[c->n] = lo, c->hi[c->n] = hi, c->tok[c->n] = tok;
    c->n++;
    return AX_OK;
}

/* the point's step: a whole number above the previous point's */
static ax_status get_step(const ax_json *pt, const char *sec, const ax_rep_curve *c,
                          const char *path, int64_t *step) {
    char field[96];
    snprintf(field, sizeof field, "%s.step", sec);
    AX_CHECK(ax_rep_check_int(ax_json_get(pt, "step"), 0, AX_REP_MAX_COUNT, path, field, step));
    if (c->n && (double)*step <= c->step[c->n - 1])
        return ax_rep_damaged(path, NULL,
                              "%s.step = %lld does not ascend (the point before is %.0f)", sec,
                              (long long)*step, c->step[c->n - 1]);
    return AX_OK;
}

static ax_status probe_point(ax_arena *a, const ax_json *pt, const char *sec, const char *path,
                             ax_rep_curve *c, int64_t step) {
    ax_rep_stat em, ta;
    AX_CHECK(ax_rep_get_rate(pt, sec, "exact_match_rate", path, &em));
    AX_CHECK(ax_rep_get_rate(pt, sec, "token_accuracy", path, &ta));
    return push(a, c, (double)step, em.mean, em.lo, em.hi, ta.mean);
}

static ax_status mia_point(ax_arena *a, const ax_json *pt, const char *sec, const char *path,
                           ax_rep_curve *c, int64_t step) {
    char field[160];
    const ax_json *sc = ax_json_get(pt, "scores"), *s;
    snprintf(field, sizeof field, "%s.scores", sec);
    if (!sc || sc->type != AX_JSON_OBJ || sc->n == 0)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is missing or not a non-empty object", path,
                         field);
    if (!c->score) /* the first point decides: the loss attack, else the first score */
        c->score = ax_arena_str(a, ax_json_get(sc, "loss") ? "loss" : sc->keys[0]);
    snprintf(field, sizeof field, "%s.scores.%.60s", sec, c->score);
    if (!(s = ax_json_get(sc, c->score)) || s->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s is missing or not an object (earlier points have it)", path,
                         field);
    double auc, ci[2]; /* a bootstrap interval need not hold the estimate; its ends are ordered */
    AX_CHECK(ax_rep_get_in(s, field, "auc", 0, 1, path, &auc));
    snprintf(field, sizeof field, "%s.scores.%.60s.auc_ci95", sec, c->score);
    AX_CHECK(ax_rep_get_pair(s, "auc_ci95", field, 0, 1, NULL, path, ci));
    return push(a, c, (double)step, auc, ci[0], ci[1], 0);
}

static ax_status exposure_point(ax_arena *a, const ax_json *pt, const char *sec, const char *path,
                                ax_rep_curve *c, int64_t step) {
    char field[96];
    double mx = 1000, mean; /* log2 |R|: at most ~1000 bits for any format a double can count */
    const ax_json *o = ax_json_get(pt, "overall");
    if (ax_json_get(pt, "max_exposure"))
        AX_CHECK(ax_rep_get_in(pt, sec, "max_exposure", 0, 1000, path, &mx));
    snprintf(field, sizeof field, "%s.overall", sec);
    if (!o || o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is missing or not an object", path, field);
    AX_CHECK(
        ax_rep_get_in(o, field, "exposure_mean", 0, mx + 1e-9 * (mx > 1 ? mx : 1), path, &mean));
    if (ax_json_get(pt, "max_exposure") && mx > c->bound) c->bound = mx;
    return push(a, c, (double)step, mean, mean, mean, 0);
}

ax_status ax_rep_parse_curve(ax_arena *a, const ax_json *v, const char *path, ax_rep_run *run) {
    const ax_json *pts = ax_json_get(v, "points"), *sk = ax_json_get(v, "skipped");
    const char *scan;
    int64_t version;
    AX_CHECK(ax_rep_get_int(v, "", "version", 1, 1, path, &version));
    AX_CHECK(ax_json_get_str(v, "scan", path, &scan));
    int k = 0;
    while (k < AX_REP_NCURVES && (k == AX_REP_CURVE_TRAIN || strcmp(scan, curve_scans[k]))) k++;
    if (k == AX_REP_NCURVES)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s: curve of scan \"%s\" is not reported (known: probe, mia, exposure)",
                         path, scan);
    if (run->curve[k])
        return ax_errorf(AX_ERR_ARG,
                         "run '%s' has two %s curves (%s and %s); remove the stale one, or give "
                         "each its own label (--scan LABEL=FILE)",
                         run->label, scan, run->curve[k]->file, path);
    if (!pts || pts->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_CORRUPT, "%s: points is missing or not an array", path);
    if (sk && sk->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_CORRUPT, "%s: skipped is not an array", path);
    ax_rep_curve *c = ax_arena_alloc(a, sizeof *c);
    if (!c) return ax_rep_nomem();
    run->curve[k] = c, c->file = ax_arena_str(a, path);
    c->n_skipped = sk ? (int64_t)sk->n : 0;
    for (size_t i = 0; i < pts->n; i++) {
        char sec[48];
        int64_t step;
        snprintf(sec, sizeof sec, "points[%zu]", i);
        if (pts->items[i]->type != AX_JSON_OBJ)
            return ax_errorf(AX_ERR_CORRUPT, "%s: %s is not an object", path, sec);
        AX_CHECK(get_step(pts->items[i], sec, c, path, &step));
        if (k == AX_REP_CURVE_PROBE) AX_CHECK(probe_point(a, pts->items[i], sec, path, c, step));
        if (k == AX_REP_CURVE_MIA) AX_CHECK(mia_point(a, pts->items[i], sec, path, c, step));
        if (k == AX_REP_CURVE_EXPOSURE)
            AX_CHECK(exposure_point(a, pts->items[i], sec, path, c, step));
    }
    return AX_OK;
}

/* {"step", "scan": "probe", "exact_match", "exact_match_lo", "exact_match_hi",
 *  "token_accuracy", ...}; what is "metrics.jsonl line N" */
ax_status ax_rep_scan_record(ax_arena *a, const ax_json *row, const char *what, const char *file,
                             ax_rep_run *run) {
    const char *scan;
    AX_CHECK(ax_json_get_str(row, "scan", what, &scan));
    if (strcmp(scan, "probe"))
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s: scan record of \"%s\" is not reported (known: probe)", what, scan);
    ax_rep_curve *c = run->curve[AX_REP_CURVE_TRAIN];
    if (!c) {
        if (!(c = ax_arena_alloc(a, sizeof *c))) return ax_rep_nomem();
        run->curve[AX_REP_CURVE_TRAIN] = c, c->file = ax_arena_str(a, file);
    }
    int64_t step;
    ax_rep_stat em;
    double tok;
    AX_CHECK(get_step(row, "scan record", c, what, &step));
    AX_CHECK(ax_rep_get_in(row, "", "exact_match", 0, 1, what, &em.mean));
    AX_CHECK(ax_rep_get_in(row, "", "exact_match_lo", 0, 1, what, &em.lo));
    AX_CHECK(ax_rep_get_in(row, "", "exact_match_hi", 0, 1, what, &em.hi));
    AX_CHECK(ax_rep_check_stat(&em, 0, 1, what, "exact_match [exact_match_lo, exact_match_hi]"));
    AX_CHECK(ax_rep_get_in(row, "", "token_accuracy", 0, 1, what, &tok));
    return push(a, c, (double)step, em.mean, em.lo, em.hi, tok);
}

int ax_rep_curve_rising(const ax_rep_curve *c, int64_t i) {
    return i > 0 && c->v[i] > c->hi[i - 1];
}
