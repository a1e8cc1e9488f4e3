/* Memorization over training (curves of memscan --all-steps and train --scan-every records:
 * a rise above the previous step's upper bound flagged), the training loss, each run's
 * checkpoint and data, and the training set's duplication (--index). */
#include "reports/sections.h"

#include <math.h>

static const char *source(int k) {
    return k == AX_REP_CURVE_PROBE   ? "memscan probe --all-steps"
           : k == AX_REP_CURVE_TRAIN ? "train --scan-every"
           : k == AX_REP_CURVE_MIA   ? "memscan mia --all-steps"
                                     : "memscan exposure --all-steps";
}

/* one metric versus step: a line per run and curve (extraction: both sources, with the 95%
 * band; exposure: no interval, up to log2 |R| when the curve records it), and its table */
static void curve(ax_doc *d, const ax_report *r, int k) {
    static const char *const cols[][12] = {
        {"run", "run", "source", "source", "step", "step", "exact_match", "exact match (95% CI)",
         "token_accuracy", "token accuracy", "extraction", "extraction"},
        {"run", "run", "score", "score", "step", "step", "auc", "AUC (95% CI)"},
        {"run", "run", "step", "step", "exposure_mean", "mean exposure (bits)"}};
    static const int n_cols[] = {6, 4, 3};
    static const char *const ids[] = {"extraction", "mia", "exposure"};
    int q = k == AX_REP_CURVE_PROBE ? 0 : k == AX_REP_CURVE_MIA ? 1 : 2, n = 0;
    int kinds[2] = {k, q ? -1 : AX_REP_CURVE_TRAIN};
    for (int i = 0; i < r->n_runs; i++)
        for (int j = 0; j < 2; j++)
            n += kinds[j] >= 0 && r->runs[i].curve[kinds[j]] && r->runs[i].curve[kinds[j]]->n;
    if (!n) return;
    ax_doc_chart *c = ax_doc_chart_add(d, ax_doc_printf(d, "chart-curve-%s", ids[q]), NULL);
    ax_doc_table *t = ax_doc_table_add(d, ax_doc_printf(d, "curve-%s", ids[q]), n_cols[q], cols[q]);
    const char *score = NULL;
    double top = 0, bound = 0;
    c->xlabel = "training step (checkpoint)", c->x1 = 1, c->y1 = 1;
    for (int i = 0; i < r->n_runs; i++)
        for (int j = 0; j < 2; j++) {
            const ax_rep_curve *cv = kinds[j] >= 0 ? r->runs[i].curve[kinds[j]] : NULL;
            if (!cv || !cv->n) continue;
            ax_doc_series *s = ax_doc_series_add(
                d, c,
                q ? r->runs[i].label
                  : ax_doc_printf(d, "%s (%s)", r->runs[i].label, source(kinds[j])));
            s->n = s->n_pts = (int)cv->n, s->x = s->px = cv->step, s->y = s->py = cv->v;
            if (q < 2) s->lo = cv->lo, s->hi = cv->hi;
            score = score ? score : cv->score;
            c->x1 = fmax(c->x1, cv->step[cv->n - 1] * 1.04);
            bound = fmax(bound, cv->bound);
            for (int64_t p = 0; p < cv->n; p++) {
                ax_doc_cell *row = ax_doc_row(d, t);
                top = fmax(top, cv->hi[p]);
                row[0] = ax_doc_text(d, "%s", r->runs[i].label);
                if (q == 0) {
                    int rose = ax_rep_curve_rising(cv, p);
                    row[1] = ax_doc_text(d, "%s", source(kinds[j])),
                    row[2] = ax_num(cv->step[p], 0);
                    row[3] = ax_ci(ax_pct(cv->v[p], 1), cv->lo[p], cv->hi[p]);
                    row[4] = ax_pct(cv->tok[p], 1);
                    row[5] =
                        ax_doc_text(d, "%s", rose ? "ROSE above the previous upper bound" : "");
                    t->flag[t->n_rows - 1] = rose;
                } else if (q == 1) {
                    row[1] = ax_doc_text(d, "%s", ax_rep_score_name(cv->score)),
                    row[1].id = cv->score;
                    row[2] = ax_num(cv->step[p], 0);
                    row[3] = ax_ci(ax_num(cv->v[p], 3), cv->lo[p], cv->hi[p]);
                } else {
                    row[1] = ax_num(cv->step[p], 0), row[2] = ax_num(cv->v[p], 3);
                }
            }
        }
    if (q == 0) {
        c->title = "Extraction versus training step (exact-match rate; band: 95% interval)";
        c->ylabel = "exact-match rate", c->percent_y = 1;
    } else if (q == 1) {
        c->title = ax_doc_printf(d,
                                 "Membership inference versus training step (AUC of the %s score; "
                                 "band: 95%% interval)",
                                 score ? ax_rep_score_name(score) : "first");
        c->ylabel = "ROC AUC", c->hline = 0.5, c->hline_label = "chance (AUC 0.5)";
    } else {
        c->title = "Canary exposure versus training step (mean over all canaries)";
        c->ylabel = "mean exposure (bits)", c->y1 = bound > 0 ? bound : ax_doc_axis_top(top);
        if (bound > 0)
            c->hline = bound, c->hline_label = ax_doc_printf(d, "log2|R| = %.2f bits", bound);
    }
}

static void over_training(ax_doc *d, const ax_report *r) {
    int any = 0;
    for (int i = 0; i < r->n_runs; i++)
        for (int k = 0; k < AX_REP_NCURVES; k++) any |= !!r->runs[i].curve[k];
    if (!any) return;
    ax_doc_section_open(d, 2, "over-training", "Memorization over training");
    ax_doc_para(d, AX_PARA_MUTED,
                "The same scan on every checkpoint of a run (memscan --all-steps) or inside "
                "training (train --scan-every): when memorization appeared. A step is flagged "
                "when its exact-match rate rose above the previous step's upper 95%% bound.");
    curve(d, r, AX_REP_CURVE_PROBE);
    curve(d, r, AX_REP_CURVE_MIA);
    curve(d, r, AX_REP_CURVE_EXPOSURE);
    for (int i = 0; i < r->n_runs; i++)
        for (int k = 0; k < AX_REP_NCURVES; k++) {
            const ax_rep_curve *cv = r->runs[i].curve[k];
            if (cv && cv->n_skipped)
                ax_doc_para(d, AX_PARA_NOTE,
                            "%s: %lld checkpoint(s) could not be opened and are missing from %s "
                            "(its \"skipped\" list says why).",
                            r->runs[i].label, (long long)cv->n_skipped, cv->file);
        }
}

/* at most ~1500 vertices per line (the last one kept): a browser draws that at once and it
 * still shows the curve's shape */
static int thin(ax_doc *d, const double *x, const double *y, int64_t n, double **ox, double **oy) {
    int64_t stride = (n + 1499) / 1500, m = n ? (n - 1) / stride + 1 + ((n - 1) % stride != 0) : 0;
    double *v = ax_doc_nums(d, 2 * (size_t)m);
    if (!v) return 0;
    *ox = v, *oy = v + m;
    for (int64_t i = 0, j = 0; i < n; i += stride, j++) v[j] = x[i], v[m + j] = y[i];
    if (m) v[m - 1] = x[n - 1], v[2 * m - 1] = y[n - 1];
    return (int)m;
}

static void training(ax_doc *d, const ax_report *r) {
    static const char *const cols[] = {
        "run",          "run",        "file",       "file",           "steps",
        "steps logged", "final_loss", "final loss", "final_val_loss", "final held-out loss"};
    int any = 0;
    for (int i = 0; i < r->n_runs; i++) any |= !!r->runs[i].train;
    if (!any) return;
    ax_doc_section_open(d, 2, "training", "Training");
    ax_doc_chart *c =
        ax_doc_chart_add(d, "chart-loss", "Training loss (lines) and held-out loss (circles)");
    ax_doc_table *t = ax_doc_table_add(d, "training", 5, cols);
    double top = 0;
    c->xlabel = "step", c->ylabel = "loss", c->x0 = INFINITY, c->x1 = -INFINITY;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_train *tr = r->runs[i].train;
        if (!tr) continue;
        ax_doc_series *s = ax_doc_series_add(d, c, r->runs[i].label);
        s->n = thin(d, tr->step, tr->loss, tr->n, &s->x, &s->y);
        s->n_pts = thin(d, tr->val_step, tr->val_loss, tr->n_val, &s->px, &s->py);
        for (int64_t j = 0; j < tr->n; j++)
            c->x0 = fmin(c->x0, tr->step[j]), c->x1 = fmax(c->x1, tr->step[j]),
            top = fmax(top, tr->loss[j]);
        for (int64_t j = 0; j < tr->n_val; j++) top = fmax(top, tr->val_loss[j]);
        ax_doc_cell *row = ax_doc_row(d, t);
        row[0] = ax_doc_text(d, "%s", r->runs[i].label), row[1] = ax_doc_text(d, "%s", tr->file);
        row[2] = ax_num((double)tr->n, 0);
        if (tr->n)
            row[3] = ax_note(ax_num(tr->loss[tr->n - 1], 4),
                             ax_doc_printf(d, "at step %g", tr->step[tr->n - 1]));
        if (tr->n_val)
            row[4] = ax_note(ax_num(tr->val_loss[tr->n_val - 1], 4),
                             ax_doc_printf(d, "at step %g", tr->val_step[tr->n_val - 1]));
    }
    if (!(c->x1 > c->x0)) c->x0 = isfinite(c->x0) ? c->x0 : 0, c->x1 = c->x0 + 1;
    c->y1 = ax_doc_axis_top(top);
}

static void runs(ax_doc *d, const ax_report *r) {
    ax_doc_section_open(d, 2, "runs", "Runs: checkpoints and data");
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        const ax_rep_ident *id = ax_rep_run_ident(run);
        ax_doc_table *t = ax_rep_run_part(d, run, "run", "checkpoint and data", NULL);
        if (run->warning) ax_doc_para(d, AX_PARA_WARNING, "%s", run->warning);
        if (run->dir) ax_rep_fact(d, t, "run directory", ax_doc_text(d, "%s", run->dir));
        if (!id) continue; /* the run has curves only (memscan --all-steps) */
        ax_rep_fact(d, t, "checkpoint", ax_doc_text(d, "%s", id->ckpt_path));
        ax_rep_fact(d, t, "step", ax_num((double)id->step, 0));
        ax_rep_fact(d, t, "goldfish", ax_doc_text(d, "%s", id->goldfish));
        ax_rep_fact(d, t, "dataset", ax_doc_text(d, "%s", id->ds_path));
        ax_rep_fact(d, t, "dataset xxh3", ax_doc_text(d, "%s", id->ds_xxh3));
        ax_rep_fact(d, t, "documents", ax_num((double)id->ds_docs, 0));
        ax_rep_fact(d, t, "tokens", ax_num((double)id->ds_tokens, 0));
    }
}

static void duplication(ax_doc *d, const ax_rep_index *x) {
    static const char *const cols[] = {"occurrences", "occurrences", "distinct_windows",
                                       "distinct windows"};
    static const char *const name[] = {"distinct windows"};
    ax_doc_section_open(d, 2, "duplication", "Training-set duplication");
    ax_doc_table *t = ax_rep_facts(d, "index");
    ax_rep_fact(d, t, "index", ax_doc_text(d, "%s", x->file));
    ax_rep_fact(d, t, "window length n (tokens)", ax_num((double)x->n, 0));
    ax_rep_fact(d, t, "windows", ax_num((double)x->windows, 0));
    ax_rep_fact(d, t, "distinct windows", ax_num((double)x->distinct, 0));
    t = ax_doc_table_add(d, "duplication", 2, cols);
    ax_doc_chart *c = x->n_hist ? ax_rep_bars(d, "chart-duplication",
                                              "Training-set duplication: distinct windows by "
                                              "occurrence count",
                                              x->n_hist, name, 1)
                                : NULL;
    for (int k = 0; k < x->n_hist; k++) {
        ax_doc_cell *row = ax_doc_row(d, t);
        row[0] = ax_doc_text(d, "%s", x->labels[k]), row[1] = ax_num((double)x->counts[k], 0);
        if (c) c->cats[k] = x->labels[k], c->s[0].y[k] = (double)x->counts[k];
    }
    if (!c) return;
    c->xlabel =
        ax_doc_printf(d, "times a %lld-token window occurs in the training set", (long long)x->n);
    ax_rep_count_axis(c);
    c->ylabel = c->ylog ? "distinct windows (log scale)" : "distinct windows";
}

void ax_rep_section_training(ax_doc *d, const ax_report *r) {
    over_training(d, r);
    training(d, r);
    runs(d, r);
    if (r->index) duplication(d, r->index);
    ax_doc_para(d, AX_PARA_MUTED,
                "Written by axmem report from the scan files named above; report.json holds this "
                "document with its data for tools.");
}
