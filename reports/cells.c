#include "reports/cells.h"

#include <stdio.h>

const char *const ax_rep_cols[AX_REP_NCOLS] = {"run",
                                               "goldfish",
                                               "step",
                                               "exact match (95% CI)",
                                               "token accuracy",
                                               "RougeL",
                                               "matched prefix (mean tokens)",
                                               "generations with a verbatim span",
                                               "longest span mean / max",
                                               "membership AUC (strongest score)",
                                               "canary exposure at most repeats",
                                               "final loss",
                                               "final val_loss"};

void ax_rep_fmt_rate(char *dst, size_t n, const ax_rep_stat *s) {
    snprintf(dst, n, "%.1f%% (%.1f-%.1f%%)", s->mean * 100, s->lo * 100, s->hi * 100);
}

void ax_rep_summary_cells(const ax_rep_run *run, char c[AX_REP_NCOLS][AX_REP_CELL]) {
    for (int k = 0; k < AX_REP_NCOLS; k++) snprintf(c[k], AX_REP_CELL, "-");
    const ax_rep_ident *id = ax_rep_run_ident(run);
    snprintf(c[0], AX_REP_CELL, "%s", run->label);
    if (id) {
        snprintf(c[1], AX_REP_CELL, "%s", id->goldfish);
        snprintf(c[2], AX_REP_CELL, "%lld", (long long)id->step);
    }
    const ax_rep_probe *p = run->probe;
    if (p) {
        char rate[96];
        ax_rep_fmt_rate(rate, sizeof rate, &p->exact);
        snprintf(c[3], AX_REP_CELL, "%lld/%lld = %s", (long long)p->n_exact, (long long)p->n, rate);
        snprintf(c[4], AX_REP_CELL, "%.3f", p->tok_acc.mean);
        snprintf(c[5], AX_REP_CELL, "%.3f", p->rouge_l.mean);
        snprintf(c[6], AX_REP_CELL, "%.1f / %lld", p->mp_mean, (long long)p->suffix);
    }
    const ax_rep_regurg *g = run->regurg;
    if (g) {
        int64_t hit, total;
        ax_rep_regurg_counts(g, &hit, &total);
        snprintf(c[7], AX_REP_CELL, "%lld/%lld (%.0f%%)", (long long)hit, (long long)total,
                 g->frac_span * 100);
        snprintf(c[8], AX_REP_CELL, "%.1f / %lld tokens", g->mean_span, (long long)g->max_span);
    }
    const ax_rep_mia *m = run->mia;
    if (m) {
        int best = 0;
        for (int k = 1; k < m->n_score; k++)
            if (m->score[k].auc > m->score[best].auc) best = k;
        snprintf(c[9], AX_REP_CELL, "%.3f (%s)", m->score[best].auc, m->score[best].name);
    }
    const ax_rep_exposure *e = run->exposure;
    if (e) {
        const ax_rep_exp_row *top = &e->rows[e->n_rows - 1];
        snprintf(c[10], AX_REP_CELL, "%.2f of %.2f bits (x%lld)", top->mean, e->max_exposure,
                 (long long)top->repeats);
    }
    const ax_rep_train *t = run->train;
    if (t && t->n)
        snprintf(c[11], AX_REP_CELL, "%.4g (step %g)", t->loss[t->n - 1], t->step[t->n - 1]);
    if (t && t->n_val)
        snprintf(c[12], AX_REP_CELL, "%.4g (step %g)", t->val_loss[t->n_val - 1],
                 t->val_step[t->n_val - 1]);
}
