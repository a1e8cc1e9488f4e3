/* Membership inference (per score: AUC with its interval, TPR at the low FPRs the non-members
 * resolve, ROC curves on log-log axes; the model-free baselines beside them, warned about when
 * far from chance) and canary exposure (by repeat count, against log2 |R|, the most exposed
 * canaries). A secret is in the document only when the report shows text (load.c). */
#include "reports/sections.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ax_doc_cell tpr(double v) {
    return ax_pct(v, 1); /* NaN: the non-members cannot resolve the rate ("n/a") */
}

/* the sentences under the table: warnings first, then what is n/a or missing and why */
static void mia_notes(ax_doc *d, const ax_rep_run *run) {
    const ax_rep_mia *m = run->mia;
    for (int k = 0; k < m->n_free; k++) {
        const ax_rep_mia_score *s = &m->free[k];
        int far = ax_rep_mia_far(s);
        if (far)
            ax_doc_para(d, AX_PARA_WARNING,
                        "%s: the model-free score %s has AUC %.3f (95%% CI %.3f-%.3f)%s: members "
                        "and non-members %s in distribution without the model, so part of the "
                        "model scores' AUCs may be that shift, not membership.",
                        run->label, ax_rep_score_name(s->name), s->auc, s->auc_lo, s->auc_hi,
                        far == 2 ? ", its interval excluding 0.5" : ", its interval holding 0.5",
                        far == 2 ? "differ" : "may differ");
    }
    if (!m->has_free)
        ax_doc_para(d, AX_PARA_NOTE,
                    "%s: the scan has no model-free baseline (an older memscan mia wrote it), so "
                    "how much of its AUC the two sets' distributions explain is unknown; rerun "
                    "memscan mia.",
                    run->label);
    int64_t a = ax_rep_fpr_min_nonmembers(0.001), b = ax_rep_fpr_min_nonmembers(0.01);
    if (m->nonmembers < a)
        ax_doc_para(d, AX_PARA_MUTED,
                    "%s: TPR at 0.1%% FPR needs >= %lld non-members%s (a threshold's false "
                    "positive rate moves in steps of 1/non-members); the scan has %lld: n/a.",
                    run->label, (long long)a,
                    m->nonmembers < b ? ax_doc_printf(d, " and at 1%% FPR >= %lld", (long long)b)
                                      : "",
                    (long long)m->nonmembers);
}

static void roc_chart(ax_doc *d, const ax_rep_run *run) {
    const ax_rep_mia *m = run->mia;
    ax_doc_chart *c = ax_doc_chart_add(
        d, ax_doc_printf(d, "chart-roc-%s", run->label),
        ax_doc_printf(d, "ROC of the membership attack: %s (log-log)", run->label));
    c->xlabel = "false positive rate (non-members called members)";
    c->ylabel = "true positive rate";
    /* down to 0.1% FPR, or to one non-member when there are more than 1000 */
    c->x0 = c->y0 = fmin(1e-3, pow(10, floor(log10(1.0 / (double)m->nonmembers))));
    c->x1 = c->y1 = 1, c->xlog = c->ylog = 10, c->percent_x = c->percent_y = 1;
    c->diagonal = 1, c->vline[0] = 1e-3, c->vline[1] = 1e-2, c->n_vline = 2;
    for (int k = 0; k < m->n_score + m->n_free; k++) {
        const ax_rep_mia_score *s = k < m->n_score ? &m->score[k] : &m->free[k - m->n_score];
        ax_doc_series *se =
            ax_doc_series_add(d, c,
                              ax_doc_printf(d, "%s%s AUC %.2f", ax_rep_score_name(s->name),
                                            k < m->n_score ? "" : " (model-free)", s->auc));
        se->n = s->n_roc, se->x = s->fpr, se->y = s->tpr;
    }
}

static void mia(ax_doc *d, const ax_report *r) {
    static const char *const cols[] = {"run",
                                       "run",
                                       "score",
                                       "score",
                                       "auc",
                                       "AUC (95% CI)",
                                       "tpr_at_fpr_0.001",
                                       "TPR @ 0.1% FPR",
                                       "tpr_at_fpr_0.01",
                                       "TPR @ 1% FPR",
                                       "members",
                                       "members",
                                       "nonmembers",
                                       "non-members"};
    ax_doc_section_open(d, 2, "mia", "Membership inference");
    ax_doc_para(d, AX_PARA_MUTED,
                "Can an attacker tell documents the model was trained on (members) from unseen "
                "ones of the same distribution (non-members) by the model's scores? AUC 0.5 is "
                "chance, 1 is perfect separation; the true positive rate at a low false positive "
                "rate says how many members an attacker identifies with few false accusations. "
                "Intervals: bootstrap over the documents. Model-free rows read no model: their "
                "AUC (either side of 0.5) measures how far the two sets differ in distribution, a "
                "baseline the model's scores must beat before their AUC means membership.");
    ax_doc_table *t = ax_doc_table_add(d, "mia", 7, cols);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        for (int k = 0; m && k < m->n_score + m->n_free; k++) {
            const ax_rep_mia_score *s = k < m->n_score ? &m->score[k] : &m->free[k - m->n_score];
            ax_doc_cell *c = ax_doc_row(d, t);
            c[0] = ax_doc_text(d, "%s", r->runs[i].label);
            c[1] = ax_doc_text(d, "%s%s", ax_rep_score_name(s->name),
                               k < m->n_score ? "" : " (model-free)");
            c[1].id = s->name;
            c[2] = ax_ci(ax_num(s->auc, 3), s->auc_lo, s->auc_hi);
            c[3] = tpr(s->tpr_0_1), c[4] = tpr(s->tpr_1);
            c[5] = ax_num((double)m->members, 0), c[6] = ax_num((double)m->nonmembers, 0);
        }
    }
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].mia) mia_notes(d, &r->runs[i]);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        if (!m) continue;
        t = ax_rep_run_part(d, &r->runs[i], "mia", "membership inference", m->file);
        ax_rep_fact(d, t, "members", ax_doc_text(d, "%s", m->id.ds_path));
        ax_rep_fact(d, t, "non-members", ax_doc_text(d, "%s", m->nonmembers_path));
        ax_rep_fact(d, t, "setup",
                    ax_doc_text(d,
                                "%lld members, %lld non-members, first %lld tokens of each; %d "
                                "scores, %d model-free%s",
                                (long long)m->members, (long long)m->nonmembers,
                                (long long)m->tokens_per_doc, m->n_score, m->n_free,
                                m->zlib_level ? ax_doc_printf(d, "; zlib level %lld",
                                                              (long long)m->zlib_level)
                                              : ""));
        if (m->ref_ckpt) ax_rep_fact(d, t, "reference model", ax_doc_text(d, "%s", m->ref_ckpt));
        if (m->n_score) roc_chart(d, &r->runs[i]);
    }
}

static void exposure_chart(ax_doc *d, const ax_report *r) {
    ax_doc_chart *c = ax_doc_chart_add(d, "chart-exposure",
                                       "Canary exposure by repeat count (line: mean; circles: each "
                                       "canary)");
    c->xlabel = "times the canary was inserted in the training data (log2 scale)";
    c->ylabel = "exposure (bits)", c->xlog = 2, c->dodge = 1, c->x0 = INFINITY;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        if (!e) continue;
        c->y1 = fmax(c->y1, e->max_exposure); /* the natural bound: log2 |R| */
        c->x0 = fmin(c->x0, (double)e->rows[0].repeats / 1.6);
        c->x1 = fmax(c->x1, (double)e->rows[e->n_rows - 1].repeats * 1.6);
        ax_doc_series *s = ax_doc_series_add(d, c, r->runs[i].label);
        double *v = ax_doc_nums(d, 2 * (size_t)(e->n_rows + e->n_canary));
        if (!v) return;
        s->n = e->n_rows, s->x = v, s->y = v + e->n_rows;
        s->n_pts = (int)e->n_canary, s->px = v + 2 * e->n_rows, s->py = s->px + e->n_canary;
        for (int j = 0; j < e->n_rows; j++)
            s->x[j] = (double)e->rows[j].repeats, s->y[j] = e->rows[j].mean;
        for (int64_t j = 0; j < e->n_canary; j++)
            s->px[j] = (double)e->canary[j].repeats, s->py[j] = e->canary[j].exposure;
    }
    c->hline = c->y1 > 0 ? c->y1 : 1, c->y1 = c->hline;
    c->hline_label = ax_doc_printf(d, "maximum possible exposure log2|R| = %.2f bits", c->hline);
}

/* canaries by exposure, highest first (ties: more repeats first, then id) */
static const ax_rep_canary *sort_base;
static int by_exposure(const void *a, const void *b) {
    const ax_rep_canary *x = &sort_base[*(const int64_t *)a], *y = &sort_base[*(const int64_t *)b];
    if (x->exposure != y->exposure) return x->exposure < y->exposure ? 1 : -1;
    if (x->repeats != y->repeats) return x->repeats < y->repeats ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

static void exposure_details(ax_doc *d, const ax_report *r, const ax_rep_run *run) {
    static const char *const cols[] = {
        "canary",    "canary",    "repeats", "repeats", "exposure",       "exposure (bits)",
        "extracted", "extracted", "secret",  "secret",  "generated_text", "greedy output"};
    const ax_rep_exposure *e = run->exposure;
    ax_doc_table *t = ax_rep_run_part(d, run, "exposure", "canary exposure", e->file);
    ax_rep_fact(d, t, "canary format", ax_doc_text(d, "%s", e->format));
    ax_rep_fact(d, t, "setup",
                ax_doc_text(d,
                            "%lld canaries; |R| = %g strings (max exposure %.2f bits); rank %s "
                            "over %lld candidates",
                            (long long)e->overall.canaries, e->space, e->max_exposure,
                            strcmp(e->method, "exact") ? "estimated from a fitted normal" : "exact",
                            (long long)e->candidates));
    int64_t *idx = e->n_canary ? ax_doc_alloc(d, sizeof *idx * (size_t)e->n_canary) : NULL;
    if (!idx) return;
    for (int64_t i = 0; i < e->n_canary; i++) idx[i] = i;
    sort_base = e->canary; /* the report is built on one thread */
    qsort(idx, (size_t)e->n_canary, sizeof *idx, by_exposure);
    ax_doc_para(d, AX_PARA,
                "The canaries by exposure, highest first (%lld in %s):", (long long)e->n_canary,
                e->samples_file);
    t = ax_doc_table_add(d, ax_doc_printf(d, "canaries-%s", run->label), r->show_text ? 6 : 4,
                         cols);
    t->show_rows = 5;
    for (int64_t k = 0; k < e->n_canary; k++) {
        const ax_rep_canary *ca = &e->canary[idx[k]];
        ax_doc_cell *c = ax_doc_row(d, t);
        c[0] = ax_num((double)ca->id, 0), c[1] = ax_num((double)ca->repeats, 0);
        c[2] = ax_num(ca->exposure, 2), c[3] = ax_doc_text(d, "%s", ca->extracted ? "yes" : "no");
        if (r->show_text)
            c[4] = ax_doc_quote(d, ca->secret), c[5] = ax_doc_quote(d, ca->generated_text);
    }
}

static void exposure(ax_doc *d, const ax_report *r) {
    static const char *const cols[] = {"run",
                                       "run",
                                       "repeats",
                                       "repeats",
                                       "canaries",
                                       "canaries",
                                       "exposure_mean",
                                       "mean exposure (bits)",
                                       "exposure_median",
                                       "median exposure (bits)",
                                       "extracted",
                                       "extracted by greedy decoding",
                                       "max_exposure",
                                       "max possible (bits)"};
    ax_doc_section_open(d, 2, "exposure", "Canary exposure");
    ax_doc_para(d, AX_PARA_MUTED,
                "Random secrets (canaries) were inserted into the training data a given number of "
                "times. Exposure = log2 |R| - log2 (rank of the true secret among the |R| strings "
                "of its format, by the model's likelihood): 0 bits when the model prefers it no "
                "more than a random candidate, log2 |R| when it ranks it first. Extracted: greedy "
                "decoding from the canary's prefix reproduces the secret.%s",
                r->show_text ? ""
                             : " Secrets are not shown (axmem report --show-text shows them).");
    ax_doc_table *t = ax_doc_table_add(d, "exposure", 7, cols);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        for (int k = 0; e && k <= e->n_rows; k++) {
            const ax_rep_exp_row *row = k < e->n_rows ? &e->rows[k] : &e->overall;
            ax_doc_cell *c = ax_doc_row(d, t);
            c[0] = ax_doc_text(d, "%s", r->runs[i].label);
            c[1] = k < e->n_rows ? ax_num((double)row->repeats, 0) : ax_doc_text(d, "all");
            c[2] = ax_num((double)row->canaries, 0);
            c[3] = ax_num(row->mean, 2), c[4] = ax_num(row->median, 2);
            c[5] = ax_of(ax_pct(row->extracted_share, 0), row->extracted, row->canaries);
            c[6] = ax_num(e->max_exposure, 2);
        }
    }
    exposure_chart(d, r);
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].exposure) exposure_details(d, r, &r->runs[i]);
}

void ax_rep_section_privacy(ax_doc *d, const ax_report *r) {
    int m = 0, e = 0;
    for (int i = 0; i < r->n_runs; i++) m |= !!r->runs[i].mia, e |= !!r->runs[i].exposure;
    if (m) mia(d, r);
    if (e) exposure(d, r);
}
