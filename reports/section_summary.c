/* The summary: the headline states the conclusion from the numbers (each goldfish run against
 * the baseline, an effect counting only where the two 95% intervals are apart), then each
 * run's headline numbers; notes qualify them; one table holds the key numbers, a column per
 * run, so it stays narrow however many metrics there are. */
#include "reports/sections.h"

#include <math.h>
#include <string.h>

/* "goldfish stopped verbatim copying (100% -> 0% exact) but not membership inference (AUC
 * 1.00 -> 1.00) compared with baseline." */
static void conclusion(ax_rep_buf *b, const ax_rep_run *base, const ax_rep_run *g) {
    const ax_rep_probe *p0 = base->probe, *p1 = g->probe;
    const ax_rep_mia_score *m0 = base->mia ? ax_rep_strongest(base->mia) : NULL,
                           *m1 = g->mia ? ax_rep_strongest(g->mia) : NULL;
    int e = -1, m = -1; /* 1: an effect, 0: none shown, -1: not measured */
    if (!(p0 && p1) && !(m0 && m1)) return;
    ax_rep_printf(b, "%s%s", b->len ? " " : "", g->label);
    if (p0 && p1) {
        e = p1->exact.hi < p0->exact.lo;
        ax_rep_printf(b, " %s verbatim copying (%.0f%% -> %.0f%% exact)",
                      !e            ? "did not measurably reduce"
                      : p1->n_exact ? "reduced"
                                    : "stopped",
                      100 * p0->exact.mean, 100 * p1->exact.mean);
    }
    if (m0 && m1) {
        m = m1->auc_hi < m0->auc_lo;
        int chance = m && m1->auc_lo <= 0.5; /* its interval holds 0.5 */
        ax_rep_printf(b, "%s%s membership inference%s (AUC %.2f -> %.2f)",
                      e < 0    ? " "
                      : e && m ? " and "
                      : e != m ? " but "
                               : " ",
                      chance  ? "brought"
                      : m     ? "reduced"
                      : e < 0 ? "did not measurably reduce"
                      : e     ? "not"
                              : "nor",
                      chance ? " to chance" : "", m0->auc, m1->auc);
    }
    ax_rep_printf(b, " compared with %s.", base->label);
}

/* each run's numbers: exact matches, verbatim spans, the strongest membership score, the
 * exposure at the most repeats */
static void numbers(ax_rep_buf *b, const ax_report *r) {
    const char *lead[4] = {" probed documents reproduced verbatim",
                           "Free generations containing a verbatim training passage",
                           "Membership inference AUC (0.5 = chance, strongest score)",
                           "Canary exposure"};
    for (int q = 0; q < 4; q++) {
        int first = 1;
        for (int i = 0; i < r->n_runs; i++) {
            const ax_rep_run *run = &r->runs[i];
            const char *sep = first ? (q ? ": " : "") : q == 3 ? "; " : q ? ", " : "; ";
            if (q == 0 && run->probe) {
                ax_rep_printf(b, "%s%s%s: %lld/%lld%s", first && b->len ? " " : "", sep, run->label,
                              (long long)run->probe->n_exact, (long long)run->probe->n,
                              first ? lead[0] : "");
            } else if (q == 1 && run->regurg) {
                int64_t hit, total;
                ax_rep_regurg_counts(run->regurg, &hit, &total);
                if (first)
                    ax_rep_printf(b, "%s%s (>= %lld tokens)", b->len ? " " : "", lead[1],
                                  (long long)run->regurg->n);
                ax_rep_printf(b, "%s%s %lld/%lld", sep, run->label, (long long)hit,
                              (long long)total);
            } else if (q == 2 && run->mia) {
                const ax_rep_mia_score *s = ax_rep_strongest(run->mia);
                if (first) ax_rep_printf(b, "%s%s", b->len ? " " : "", lead[2]);
                ax_rep_printf(b, "%s%s %.2f (%s)", sep, run->label, s->auc,
                              ax_rep_score_name(s->name));
            } else if (q == 3 && run->exposure) {
                const ax_rep_exposure *e = run->exposure;
                const ax_rep_exp_row *top = &e->rows[e->n_rows - 1];
                if (first) ax_rep_printf(b, "%s%s", b->len ? " " : "", lead[3]);
                ax_rep_printf(b,
                              "%s%s %.1f of %.1f bits at %lld repeats (%lld/%lld canaries "
                              "extracted by greedy decoding)",
                              sep, run->label, top->mean, e->max_exposure, (long long)top->repeats,
                              (long long)e->overall.extracted, (long long)e->overall.canaries);
            } else {
                continue;
            }
            first = 0;
        }
        if (!first) ax_rep_puts(b, ".");
    }
}

static int same_score(const ax_rep_mia_score *a, const ax_rep_mia_score *b) {
    return !strcmp(a->name, b->name) && a->auc == b->auc && a->auc_lo == b->auc_lo &&
           a->auc_hi == b->auc_hi;
}

/* the runs (from i on) whose model-free score s is the same, as "a, b"; "" when a run before
 * i has it (its note names them all) */
static const char *runs_sharing(ax_doc *d, const ax_report *r, int i, const ax_rep_mia_score *s) {
    ax_rep_buf b = {0};
    for (int j = 0; j < r->n_runs; j++) {
        const ax_rep_mia *m = r->runs[j].mia;
        for (int k = 0; m && k < m->n_free; k++) {
            if (!same_score(&m->free[k], s)) continue;
            if (j < i) return ax_rep_buf_free(&b), "";
            ax_rep_printf(&b, "%s%s", b.len ? ", " : "", r->runs[j].label);
        }
    }
    const char *who = ax_doc_printf(d, "%s", b.s ? b.s : "");
    d->mem.oom |= b.oom;
    ax_rep_buf_free(&b);
    return who;
}

/* notes beside the headline: runs scanned against different datasets are not comparable, and
 * a membership AUC is read with its model-free baseline (one note for the runs that share it) */
static void notes(ax_doc *d, const ax_report *r) {
    const ax_rep_ident *id0 = NULL;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_ident *id = ax_rep_run_ident(&r->runs[i]);
        if (id && id0 && strcmp(id->ds_xxh3, id0->ds_xxh3)) {
            ax_doc_para(d, AX_PARA_NOTE,
                        "The runs were scanned against different datasets (see their dataset "
                        "xxh3): their rates are not directly comparable.");
            break;
        }
        id0 = id0 ? id0 : id;
    }
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        for (int k = 0; m && k < m->n_free; k++) {
            const ax_rep_mia_score *s = &m->free[k];
            const char *who = ax_rep_mia_far(s) ? runs_sharing(d, r, i, s) : "";
            if (who[0])
                ax_doc_para(d, AX_PARA_NOTE,
                            "%s: a score that reads no model, %s, separates members from "
                            "non-members (AUC %.2f, 95%% CI %.2f-%.2f), so part of the membership "
                            "AUC may be distribution shift.",
                            who, ax_rep_score_name(s->name), s->auc, s->auc_lo, s->auc_hi);
        }
        if (m && !m->has_free)
            ax_doc_para(d, AX_PARA_NOTE,
                        "%s: its membership scan has no model-free baseline; rerun memscan mia.",
                        r->runs[i].label);
    }
}

enum { N_METRICS = 17 };
static const char *const metric_names[N_METRICS] = {
    "mitigation",
    "goldfish",
    "checkpoint step",
    "exact match (95% CI)",
    "token accuracy",
    "RougeL",
    "matched prefix (mean tokens)",
    "first divergences on a dropped position (goldfish audit)",
    "generations with a verbatim training span",
    "longest verbatim span (mean tokens)",
    "membership AUC, strongest score (95% CI)",
    "model-free baseline AUC, farthest from 0.5 (95% CI)",
    "canary exposure at the most repeats (bits)",
    "canaries extracted by greedy decoding",
    "final training loss",
    "final held-out loss",
    "privacy guarantee: epsilon (DP-SGD)"};

/* metric k of a run; NONE where the run has no such number */
static ax_doc_cell metric(ax_doc *d, int k, const ax_rep_run *run) {
    const ax_rep_ident *id = ax_rep_run_ident(run);
    const ax_rep_probe *p = run->probe;
    const ax_rep_regurg *g = run->regurg;
    const ax_rep_mia *m = run->mia;
    const ax_rep_exposure *e = run->exposure;
    const ax_rep_train *t = run->train;
    const ax_rep_mia_score *s = m ? ax_rep_strongest(m) : NULL;
    int64_t hit = 0, total = 0;
    if (g) ax_rep_regurg_counts(g, &hit, &total);
    if (k == 0) /* the mitigation `axmem study` trained with */
        return run->study ? ax_doc_text(d, "%s", run->study->mitigation) : (ax_doc_cell){0};
    if (k == 16) /* the accountant's epsilon as training last recorded it */
        return t && t->has_dp
                   ? ax_note(ax_num(t->epsilon, -3), ax_doc_printf(d, "at delta %g", t->delta))
                   : (ax_doc_cell){0};
    k--;
    if (k == 10 && m) { /* the model-free score farthest from chance */
        s = m->n_free ? &m->free[0] : NULL;
        for (int j = 1; j < m->n_free; j++)
            if (fabs(m->free[j].auc - 0.5) > fabs(s->auc - 0.5)) s = &m->free[j];
    }
    switch (k) {
    case 0:
        return id ? ax_doc_text(d, "%s", id->goldfish) : (ax_doc_cell){0};
    case 1:
        return id ? ax_num((double)id->step, 0) : (ax_doc_cell){0};
    case 2:
        return p ? ax_of(ax_ci(ax_pct(p->exact.mean, 1), p->exact.lo, p->exact.hi), p->n_exact,
                         p->n)
                 : (ax_doc_cell){0};
    case 3:
        return p ? ax_num(p->tok_acc.mean, 3) : (ax_doc_cell){0};
    case 4:
        return p ? ax_num(p->rouge_l.mean, 3) : (ax_doc_cell){0};
    case 5:
        return p ? ax_note(ax_num(p->mp_mean, 1), ax_doc_printf(d, "of %lld", (long long)p->suffix))
                 : (ax_doc_cell){0};
    case 6:
        return p && p->audited
                   ? ax_note(ax_of(ax_pct(p->diverged ? (double)p->on_dropped / p->diverged : 0, 1),
                                   p->on_dropped, p->diverged),
                             ax_doc_printf(d, "(chance: %.1f%%)", 100 * p->dropped_fraction))
                   : (ax_doc_cell){0};
    case 7:
        return g ? ax_of(ax_pct(g->frac_span, 0), hit, total) : (ax_doc_cell){0};
    case 8:
        return g ? ax_note(ax_num(g->mean_span, 1),
                           ax_doc_printf(d, "(max %lld)", (long long)g->max_span))
                 : (ax_doc_cell){0};
    case 9:
    case 10:
        return s ? ax_note(ax_ci(ax_num(s->auc, 3), s->auc_lo, s->auc_hi),
                           ax_doc_printf(d, ", %s", ax_rep_score_name(s->name)))
                 : (ax_doc_cell){0};
    case 11:
        return e ? ax_note(ax_num(e->rows[e->n_rows - 1].mean, 2),
                           ax_doc_printf(d, "of %.2f at %lld repeats", e->max_exposure,
                                         (long long)e->rows[e->n_rows - 1].repeats))
                 : (ax_doc_cell){0};
    case 12:
        return e ? ax_of(ax_pct(e->overall.extracted_share, 0), e->overall.extracted,
                         e->overall.canaries)
                 : (ax_doc_cell){0};
    case 13:
        return t && t->n ? ax_note(ax_num(t->loss[t->n - 1], -4),
                                   ax_doc_printf(d, "(step %g)", t->step[t->n - 1]))
                         : (ax_doc_cell){0};
    default:
        return t && t->n_val ? ax_note(ax_num(t->val_loss[t->n_val - 1], -4),
                                       ax_doc_printf(d, "(step %g)", t->val_step[t->n_val - 1]))
                             : (ax_doc_cell){0};
    }
}

void ax_rep_section_summary(ax_doc *d, const ax_report *r, const char *intro) {
    ax_rep_buf b = {0};
    for (int i = 0; i < r->n_runs; i++) { /* each mitigated run against the first baseline */
        if (!ax_rep_run_ident(&r->runs[i]) || ax_rep_is_baseline(&r->runs[i])) continue;
        for (int j = 0; j < r->n_runs; j++) {
            if (ax_rep_run_ident(&r->runs[j]) && ax_rep_is_baseline(&r->runs[j])) {
                conclusion(&b, &r->runs[j], &r->runs[i]);
                break;
            }
        }
    }
    d->conclusion = ax_doc_printf(d, "%s", b.s ? b.s : "");
    b.len = 0;
    numbers(&b, r);
    d->headline = ax_doc_printf(d, "%s", b.len ? b.s : "");
    d->mem.oom |= b.oom;
    ax_rep_buf_free(&b);
    ax_doc_section_open(d, 2, "summary", "Summary");
    notes(d, r);
    if (intro) ax_doc_para(d, AX_PARA, "%s", intro);
    ax_doc_para(d, AX_PARA_MUTED,
                "Exact match: the model, prompted with the start of a training document, "
                "continues it token for token. Lower is better for a model meant not to memorize; "
                "goldfish loss aims for 0%%. Membership AUC: 0.5 is chance, 1 tells every training "
                "document from an unseen one.");
    const char **cols = ax_doc_alloc(d, sizeof *cols * 2 * (size_t)(r->n_runs + 1));
    if (!cols) return;
    cols[0] = "metric", cols[1] = "";
    for (int i = 0; i < r->n_runs; i++) cols[2 * i + 2] = cols[2 * i + 3] = r->runs[i].label;
    ax_doc_table *t = ax_doc_table_add(d, "summary", r->n_runs + 1, cols);
    t->row_heads = 1;
    for (int k = 0; k < N_METRICS; k++) {
        ax_doc_cell *c = ax_doc_row(d, t);
        int any = 0;
        c[0] = (ax_doc_cell){.kind = AX_CELL_TEXT, .text = metric_names[k]};
        for (int i = 0; i < r->n_runs; i++) any |= (c[i + 1] = metric(d, k, &r->runs[i])).kind;
        for (int i = 0; i < r->n_runs && any && k == N_METRICS - 1; i++)
            if (!c[i + 1].kind) c[i + 1] = ax_doc_text(d, "none"); /* no guarantee */
        t->n_rows -= !any && t->n_rows;                            /* no run has it */
    }
}
