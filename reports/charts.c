/* Builds the report's charts from its data (what to plot); svg.c knows how to draw. */
#include "reports/charts.h"
#include "reports/svg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_probes(const ax_report *r) {
    int n = 0;
    for (int i = 0; i < r->n_runs; i++) n += r->runs[i].probe != NULL;
    return n;
}

static int count_regurg(const ax_report *r) {
    int n = 0;
    for (int i = 0; i < r->n_runs; i++) n += r->runs[i].regurg != NULL;
    return n;
}

int ax_rep_chart_exact(const ax_report *r, ax_rep_buf *b) {
    int n = count_probes(r), k = 0;
    if (!n) return 0;
    const char **cats = calloc((size_t)n, sizeof *cats);
    double *v = calloc((size_t)n * 3, sizeof *v);
    if (!cats || !v) {
        b->oom = 1;
        free(cats), free(v);
        return 0;
    }
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_probe *p = r->runs[i].probe;
        if (!p) continue;
        cats[k] = r->runs[i].label;
        v[k] = p->exact.mean, v[n + k] = p->exact.lo, v[2 * n + k] = p->exact.hi;
        k++;
    }
    ax_svg_bars c = {.title = "Exact-match rate (95% CI): probed documents reproduced verbatim",
                     .xlabel = "run",
                     .ylabel = "exact match",
                     .n_cat = n,
                     .n_series = 1,
                     .cats = cats,
                     .v = v,
                     .lo = v + n,
                     .hi = v + 2 * n,
                     .ymax = 1,
                     .percent = 1,
                     .color_by_cat = 1};
    ax_svg_bar_chart(b, &c);
    free(cats), free(v);
    return 1;
}

int ax_rep_chart_prefix(const ax_report *r, ax_rep_buf *b) {
    int n = count_probes(r), bins = 0, k = 0;
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].probe && r->runs[i].probe->n_mp_hist > bins)
            bins = r->runs[i].probe->n_mp_hist;
    if (!n || !bins) return 0;
    const char **names = calloc((size_t)n, sizeof *names),
               **cats = calloc((size_t)bins, sizeof *cats);
    char *lbl = calloc((size_t)bins, 12);
    double *v = calloc((size_t)n * (size_t)bins, sizeof *v);
    if (!names || !cats || !lbl || !v) {
        b->oom = 1;
        goto out;
    }
    for (int j = 0; j < bins; j++) {
        snprintf(lbl + 12 * j, 12, "%d", j);
        cats[j] = lbl + 12 * j;
    }
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_probe *p = r->runs[i].probe;
        if (!p) continue;
        names[k] = r->runs[i].label;
        for (int j = 0; j < p->n_mp_hist; j++) /* share, so runs of different sizes compare */
            v[k * bins + j] = p->n ? (double)p->mp_hist[j] / (double)p->n : 0;
        k++;
    }
    ax_svg_bars c = {.title = "Matched prefix: tokens reproduced before the first mistake",
                     .xlabel = "matched-prefix length (tokens; the last bar = exact match)",
                     .ylabel = "share of probes",
                     .n_cat = bins,
                     .n_series = n,
                     .cats = cats,
                     .series = names,
                     .v = v,
                     .percent = 1};
    ax_svg_bar_chart(b, &c);
out:
    free(names), free(cats), free(lbl), free(v);
    return !b->oom;
}

int ax_rep_chart_spans(const ax_report *r, ax_rep_buf *b) {
    int n = count_regurg(r), k = 0;
    const ax_rep_regurg *first = NULL;
    for (int i = 0; i < r->n_runs && !first; i++)
        if (r->runs[i].regurg && r->runs[i].regurg->n_hist) first = r->runs[i].regurg;
    if (!n || !first) return 0;
    int bins = first->n_hist; /* the first run's buckets; others are matched by label */
    const char **names = calloc((size_t)n, sizeof *names);
    double *v = calloc((size_t)n * (size_t)bins, sizeof *v);
    if (!names || !v) {
        b->oom = 1;
        free(names), free(v);
        return 0;
    }
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_regurg *g = r->runs[i].regurg;
        if (!g) continue;
        int64_t total = 0;
        for (int j = 0; j < g->n_hist; j++) total += g->hist[j];
        for (int j = 0; j < g->n_hist; j++)
            for (int q = 0; q < bins; q++)
                if (!strcmp(g->hist_labels[j], first->hist_labels[q]))
                    v[k * bins + q] = total ? (double)g->hist[j] / (double)total : 0;
        names[k++] = r->runs[i].label;
    }
    char xl[128];
    snprintf(xl, sizeof xl, "longest verbatim training span per generation (n = %lld tokens)",
             (long long)first->n);
    ax_svg_bars c = {.title = "Longest verbatim span in free generations",
                     .xlabel = xl,
                     .ylabel = "share of generations",
                     .n_cat = bins,
                     .n_series = n,
                     .cats = (const char *const *)first->hist_labels,
                     .series = names,
                     .v = v,
                     .ymax = 1,
                     .percent = 1};
    ax_svg_bar_chart(b, &c);
    free(names), free(v);
    return 1;
}

int ax_rep_chart_loss(const ax_report *r, ax_rep_buf *b) {
    int n = 0;
    for (int i = 0; i < r->n_runs; i++) n += r->runs[i].train != NULL;
    if (!n) return 0;
    ax_svg_line *s = calloc((size_t)n, sizeof *s);
    if (!s) {
        b->oom = 1;
        return 0;
    }
    n = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_train *t = r->runs[i].train;
        if (!t) continue;
        s[n++] = (ax_svg_line){r->runs[i].label, t->n,        t->step,    t->loss,
                               t->n_val,         t->val_step, t->val_loss};
    }
    ax_svg_line_chart(b, "Training loss (lines) and held-out val_loss (circles)", "step", "loss", s,
                      n);
    free(s);
    return 1;
}

int ax_rep_chart_dup(const ax_report *r, ax_rep_buf *b) {
    const ax_rep_index *x = r->index;
    if (!x || !x->n_hist) return 0;
    double *v = calloc((size_t)x->n_hist, sizeof *v);
    if (!v) {
        b->oom = 1;
        return 0;
    }
    for (int k = 0; k < x->n_hist; k++) v[k] = (double)x->counts[k];
    char xl[96];
    snprintf(xl, sizeof xl, "times a %lld-token window occurs in the training set",
             (long long)x->n);
    ax_svg_bars c = {.title = "Training-set duplication: distinct windows by occurrence count",
                     .xlabel = xl,
                     .ylabel = "distinct windows",
                     .n_cat = x->n_hist,
                     .n_series = 1,
                     .cats = (const char *const *)x->labels,
                     .v = v,
                     .logy = ax_rep_spans_decades(v, x->n_hist)};
    ax_svg_bar_chart(b, &c);
    free(v);
    return 1;
}
