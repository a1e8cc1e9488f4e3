/* Charts of the privacy scans and of exact match by duplication: what to plot (svg.c and
 * svg_xy.c know how to draw). */
#include "reports/charts.h"
#include "reports/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_rep_spans_decades(const double *v, int n) {
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0) lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    return isfinite(lo) && hi >= 100 * lo;
}

int ax_rep_chart_roc(const ax_rep_run *run, ax_rep_buf *b) {
    const ax_rep_mia *m = run->mia;
    if (!m || !m->n_score) return 0;
    ax_svg_xy_series s[AX_REP_MIA_SCORES];
    char names[AX_REP_MIA_SCORES][96];
    for (int k = 0; k < m->n_score; k++) {
        const ax_rep_mia_score *sc = &m->score[k];
        snprintf(names[k], sizeof names[k], "%.40s AUC %.2f", sc->name, sc->auc);
        s[k] = (ax_svg_xy_series){names[k], sc->n_roc, sc->fpr, sc->tpr, 0, NULL, NULL, NULL, NULL};
    }
    /* down to 0.1% FPR, or to one non-member when there are more than 1000 */
    double floor_ = fmin(1e-3, pow(10, floor(log10(1.0 / (double)m->nonmembers))));
    char title[160];
    snprintf(title, sizeof title, "ROC of the membership attack: %.80s (log-log)", run->label);
    ax_svg_xy c = {.title = title,
                   .xlabel = "false positive rate (non-members called members)",
                   .ylabel = "true positive rate",
                   .xlog = 10,
                   .ylog = 10,
                   .x0 = floor_,
                   .x1 = 1,
                   .y0 = floor_,
                   .y1 = 1,
                   .s = s,
                   .n = m->n_score,
                   .diagonal = 1,
                   .vline = {1e-3, 1e-2},
                   .n_vline = 2,
                   .percent_x = 1,
                   .percent_y = 1};
    ax_svg_xy_chart(b, &c);
    return 1;
}

int ax_rep_chart_exposure(const ax_report *r, ax_rep_buf *b) {
    int n = 0;
    double rmin = INFINITY, rmax = 0, emax = 0;
    int64_t pts = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        if (!e) continue;
        n++, pts += e->n_canary + e->n_rows;
        emax = fmax(emax, e->max_exposure);
        rmin = fmin(rmin, (double)e->rows[0].repeats);
        rmax = fmax(rmax, (double)e->rows[e->n_rows - 1].repeats);
    }
    if (!n) return 0;
    ax_svg_xy_series *s = calloc((size_t)n, sizeof *s);
    double *buf = calloc((size_t)pts * 2 + 1, sizeof *buf);
    if (!s || !buf) {
        b->oom = 1;
        free(s), free(buf);
        return 0;
    }
    double *at = buf;
    int k = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        if (!e) continue;
        /* runs side by side at one repeat count: nudge each a little along the log axis */
        double nudge = n > 1 ? pow(2, 0.12 * ((double)k - (n - 1) / 2.0)) : 1;
        double *lx = at, *ly = at + e->n_rows;
        at += 2 * e->n_rows;
        for (int j = 0; j < e->n_rows; j++)
            lx[j] = (double)e->rows[j].repeats * nudge, ly[j] = e->rows[j].mean;
        double *px = at, *py = at + e->n_canary;
        at += 2 * e->n_canary;
        for (int64_t j = 0; j < e->n_canary; j++)
            px[j] = (double)e->canary[j].repeats * nudge, py[j] = e->canary[j].exposure;
        s[k++] = (ax_svg_xy_series){
            r->runs[i].label, e->n_rows, lx, ly, (int)e->n_canary, px, py, NULL, NULL};
    }
    char label[128];
    snprintf(label, sizeof label, "maximum possible exposure log2|R| = %.2f bits", emax);
    double top = emax * 1.12;
    top = ceil(top / ax_svg_nice_step(top)) * ax_svg_nice_step(top);
    ax_svg_xy c = {.title = "Canary exposure by repeat count (line: mean; circles: each canary)",
                   .xlabel = "times the canary was inserted in the training data (log2 scale)",
                   .ylabel = "exposure (bits)",
                   .xlog = 2,
                   .x0 = rmin / 1.6,
                   .x1 = rmax * 1.6,
                   .y0 = 0,
                   .y1 = top > 0 ? top : 1,
                   .s = s,
                   .n = n,
                   .hline = emax,
                   .hline_label = label};
    ax_svg_xy_chart(b, &c);
    free(s), free(buf);
    return 1;
}

int ax_rep_chart_dup_exact(const ax_report *r, ax_rep_buf *b) {
    const ax_rep_probe *first = NULL;
    int n = 0;
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].probe && r->runs[i].probe->n_dup) {
            n++;
            if (!first) first = r->runs[i].probe;
        }
    if (!first) return 0;
    int bins = first->n_dup; /* the first run's buckets; others are matched by label */
    const char **cats = calloc((size_t)bins, sizeof *cats),
               **names = calloc(2 * (size_t)n, sizeof *names);
    char *lbl = calloc(2 * (size_t)n, 112);
    double *v = calloc(2 * (size_t)n * (size_t)bins, sizeof *v);
    if (!cats || !names || !lbl || !v) {
        b->oom = 1;
        goto out;
    }
    for (int q = 0; q < bins; q++) cats[q] = first->dup[q].bucket;
    int k = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_probe *p = r->runs[i].probe;
        if (!p || !p->n_dup) continue;
        for (int t = 0; t < 2; t++) {
            snprintf(lbl + 112 * (2 * k + t), 112, "%.80s %s", r->runs[i].label,
                     t ? "exact matches" : "probes");
            names[2 * k + t] = lbl + 112 * (2 * k + t);
        }
        for (int j = 0; j < p->n_dup; j++)
            for (int q = 0; q < bins; q++)
                if (!strcmp(p->dup[j].bucket, cats[q])) {
                    double ns = (double)p->dup[j].samples;
                    v[(2 * k) * bins + q] = ns;
                    v[(2 * k + 1) * bins + q] = round(ns * p->dup[j].exact_match_rate);
                }
        k++;
    }
    ax_svg_bars c = {.title = "Exact match by duplication: probes and exact matches per bucket",
                     .xlabel = "occurrences of the probed window in the training set",
                     .ylabel = "documents",
                     .n_cat = bins,
                     .n_series = 2 * n,
                     .cats = cats,
                     .series = names,
                     .v = v,
                     .logy = ax_rep_spans_decades(v, 2 * n * bins)};
    ax_svg_bar_chart(b, &c);
out:
    free(cats), free(names), free(lbl), free(v);
    return !b->oom;
}
