/* Mitigations compared (runs written by `axmem study`, which carry study.json): one row per
 * mitigation with its leakage (exact extraction, verbatim spans, membership AUC beside the
 * model-free baseline, exposure by repeat count) against its utility (held-out loss) and, for
 * DP-SGD, the privacy spent; then the trade-off as charts, one point per mitigation with its
 * 95% interval. The member, non-member and canary counts are each scan's own, so a reader sees
 * that every model was scanned on the same sets. */
#include "reports/sections.h"

#include <math.h>
#include <string.h>

#define MAX_REPEATS 6 /* exposure columns: the first run's repeat counts, at most this many */

static const ax_rep_mia_score *farthest_free(const ax_rep_mia *m) {
    const ax_rep_mia_score *s = m && m->n_free ? &m->free[0] : NULL;
    for (int j = 1; m && j < m->n_free; j++)
        if (fabs(m->free[j].auc - 0.5) > fabs(s->auc - 0.5)) s = &m->free[j];
    return s;
}

/* the privacy guarantee: epsilon at delta from training's accountant, else the target asked */
static ax_doc_cell guarantee(ax_doc *d, const ax_rep_run *run) {
    const ax_rep_train *t = run->train;
    const ax_rep_study *s = run->study;
    if (t && t->has_dp)
        return ax_note(ax_num(t->epsilon, -3), ax_doc_printf(d, "at delta %g", t->delta));
    if (s && !strcmp(s->kind, "dp"))
        return ax_doc_text(d, "target epsilon %g at delta %g (not in metrics.jsonl)", s->eps_target,
                           s->delta);
    return ax_doc_text(d, "none");
}

static double val_loss(const ax_rep_run *run) {
    const ax_rep_train *t = run->train;
    return t && t->n_val ? t->val_loss[t->n_val - 1] : NAN;
}

/* a chart of one leakage number (AUC or exact match) against held-out loss, a point per run */
static void tradeoff(ax_doc *d, const ax_report *r, int exact) {
    ax_doc_chart *c = ax_doc_chart_add(
        d, exact ? "tradeoff-exact" : "tradeoff-mia",
        exact ? "Privacy-utility trade-off: exact extraction against held-out loss"
              : "Privacy-utility trade-off: membership inference AUC against held-out loss");
    if (!c) return;
    c->xlabel = "held-out loss (lower: more useful)";
    c->ylabel = exact ? "exact match" : "membership AUC (strongest score)";
    c->percent_y = exact;
    double x0 = INFINITY, x1 = -INFINITY, y0 = exact ? 0 : 0.5, y1 = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        double x = val_loss(run), y, lo, hi;
        if (exact && run->probe)
            y = run->probe->exact.mean, lo = run->probe->exact.lo, hi = run->probe->exact.hi;
        else if (!exact && run->mia) {
            const ax_rep_mia_score *s = ax_rep_strongest(run->mia);
            y = s->auc, lo = s->auc_lo, hi = s->auc_hi;
        } else {
            continue;
        }
        if (!isfinite(x)) continue;
        ax_doc_series *se = ax_doc_series_add(d, c, run->label);
        double *v = ax_doc_nums(d, 4);
        if (!se || !v) return;
        v[0] = x, v[1] = y, v[2] = lo, v[3] = hi;
        se->n_pts = 1, se->px = v, se->py = v + 1, se->plo = v + 2, se->phi = v + 3;
        x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, lo), y1 = fmax(y1, hi);
    }
    double pad = fmax(0.05, 0.1 * (x1 - x0)); /* every point inside the frame */
    c->x0 = x0 - pad, c->x1 = x1 + pad;
    if (!exact) {
        c->y0 = floor(y0 * 10) / 10, c->y1 = 1;
        c->hline = 0.5, c->hline_label = "chance (AUC 0.5)";
    } else {
        c->y0 = 0, c->y1 = y1 > 0 ? ax_doc_axis_top(y1) : 1;
        if (c->y1 > 1) c->y1 = 1;
    }
}

void ax_rep_section_compare(ax_doc *d, const ax_report *r) {
    int any = 0, repeats[MAX_REPEATS] = {0}, n_rep = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        any |= r->runs[i].study != NULL;
        if (e && !n_rep) /* the first run's repeat counts */
            for (int k = 0; k < e->n_rows && k < MAX_REPEATS; k++)
                repeats[k] = (int)e->rows[k].repeats, n_rep = k + 1;
    }
    if (!any) return;
    ax_doc_section_open(d, 2, "compare", "Mitigations compared");
    ax_doc_para(d, AX_PARA_MUTED,
                "Each mitigation trained a model with the same seed, steps and shape, and each "
                "model was scanned on the same members, non-members and canaries (the counts are "
                "each scan's own). Leakage: exact extraction and the longest verbatim span (lower "
                "is better), membership AUC (0.5 is chance) beside the model-free baseline that "
                "reads no model, canary exposure (0 bits: the secret ranks like any other "
                "string). Utility: the held-out loss (lower is better). Privacy: the (epsilon, "
                "delta) guarantee of DP-SGD per training example; the other mitigations give "
                "none.");
    enum { N_FIXED = 11 };
    const char *cols[2 * (N_FIXED + MAX_REPEATS + 2)] = {
        "run",         "run",
        "mitigation",  "mitigation",
        "train_set",   "training set",
        "members",     "members",
        "nonmembers",  "non-members",
        "canaries",    "canaries",
        "exact_match", "exact match (95% CI)",
        "verbatim",    "longest verbatim span (mean tokens)",
        "mia_auc",     "membership AUC, strongest score (95% CI)",
        "free_auc",    "model-free baseline AUC (95% CI)",
        "heldout",     "held-out loss"};
    int nc = N_FIXED;
    for (int k = 0; k < n_rep; k++, nc++) {
        cols[2 * nc] = ax_doc_printf(d, "exposure_%d", repeats[k]);
        cols[2 * nc + 1] = ax_doc_printf(d, "exposure at %d repeats (bits)", repeats[k]);
    }
    cols[2 * nc] = "epsilon", cols[2 * nc + 1] = "privacy guarantee: epsilon";
    nc++;
    ax_doc_table *t = ax_doc_table_add(d, "compare", nc, cols);
    if (!t) return;
    t->row_heads = 1;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        const ax_rep_study *s = run->study;
        const ax_rep_probe *p = run->probe;
        const ax_rep_regurg *g = run->regurg;
        const ax_rep_mia *m = run->mia;
        const ax_rep_exposure *e = run->exposure;
        const ax_rep_mia_score *best = m ? ax_rep_strongest(m) : NULL, *fr = farthest_free(m);
        ax_doc_cell *c = ax_doc_row(d, t);
        if (!c) return;
        c[0] = ax_doc_text(d, "%s", run->label);
        c[1] = s ? ax_doc_text(d, "%s", s->mitigation)
               : ax_rep_run_ident(run)
                   ? ax_doc_text(d, "goldfish %s", ax_rep_run_ident(run)->goldfish)
                   : (ax_doc_cell){0};
        if (s)
            c[2] = ax_doc_text(d, "%lld docs, %lld tokens", (long long)s->train_docs,
                               (long long)s->train_tokens);
        if (m) c[3] = ax_num((double)m->members, 0), c[4] = ax_num((double)m->nonmembers, 0);
        if (e) c[5] = ax_num((double)e->overall.canaries, 0);
        if (p)
            c[6] =
                ax_of(ax_ci(ax_pct(p->exact.mean, 1), p->exact.lo, p->exact.hi), p->n_exact, p->n);
        if (g)
            c[7] = ax_note(ax_num(g->mean_span, 1),
                           ax_doc_printf(d, "(max %lld)", (long long)g->max_span));
        if (best)
            c[8] = ax_note(ax_ci(ax_num(best->auc, 3), best->auc_lo, best->auc_hi),
                           ax_doc_printf(d, ", %s", ax_rep_score_name(best->name)));
        if (fr)
            c[9] = ax_note(ax_ci(ax_num(fr->auc, 3), fr->auc_lo, fr->auc_hi),
                           ax_doc_printf(d, ", %s", ax_rep_score_name(fr->name)));
        if (isfinite(val_loss(run))) c[10] = ax_num(val_loss(run), -4);
        for (int k = 0; e && k < n_rep; k++)
            for (int j = 0; j < e->n_rows; j++)
                if (e->rows[j].repeats == repeats[k]) c[N_FIXED + k] = ax_num(e->rows[j].mean, 2);
        c[nc - 1] = guarantee(d, run);
    }
    tradeoff(d, r, 0);
    tradeoff(d, r, 1);
}
