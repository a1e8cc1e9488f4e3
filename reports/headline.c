/* The verdict a sign-off reader needs first, in plain words, and notes that qualify it. */
#include "reports/buf.h"
#include "reports/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* generations that held a verbatim span: the histogram's total minus its "none" bucket when
 * present, else the rate times the configured sample count */
void ax_rep_regurg_counts(const ax_rep_regurg *g, int64_t *hit, int64_t *total) {
    int64_t sum = 0, none = -1;
    for (int k = 0; k < g->n_hist; k++) {
        sum += g->hist[k];
        if (!strcmp(g->hist_labels[k], "none")) none = g->hist[k];
    }
    if (g->n_hist && none >= 0) {
        *total = sum, *hit = sum - none;
    } else {
        *total = g->samples, *hit = (int64_t)llround(g->frac_span * (double)g->samples);
    }
}

/* membership inference: each run's strongest score; exposure: each run's mean at its highest
 * repeat count, and the canaries greedy decoding reproduced */
static void privacy_headline(const ax_report *r, ax_rep_buf *b, int empty) {
    int first = 1;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        if (!m) continue;
        int best = 0;
        for (int k = 1; k < m->n_score; k++)
            if (m->score[k].auc > m->score[best].auc) best = k;
        if (first)
            ax_rep_puts(b, empty ? "Membership inference AUC (0.5 = chance, strongest score):"
                                 : " Membership inference AUC (0.5 = chance, strongest score):");
        ax_rep_printf(b, "%s %s %.2f (%s)", first ? "" : ",", r->runs[i].label, m->score[best].auc,
                      m->score[best].name);
        first = 0, empty = 0;
    }
    if (!first) ax_rep_puts(b, ".");
    first = 1;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        if (!e) continue;
        const ax_rep_exp_row *top = &e->rows[e->n_rows - 1];
        ax_rep_printf(b,
                      "%s%s %s %.1f of %.1f bits at %lld repeats (%lld/%lld canaries extracted "
                      "by greedy decoding)",
                      first && !empty ? " " : "", first ? "Canary exposure:" : ";",
                      r->runs[i].label, top->mean, e->max_exposure, (long long)top->repeats,
                      (long long)e->overall.extracted, (long long)e->overall.canaries);
        first = 0;
    }
    if (!first) ax_rep_puts(b, ".");
}

ax_status ax_rep_summarise(ax_report *r) {
    ax_rep_buf b = {0}, n = {0};
    int first = 1;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_probe *p = r->runs[i].probe;
        if (!p) continue;
        ax_rep_printf(&b, "%s%s: %lld/%lld", first ? "" : "; ", r->runs[i].label,
                      (long long)p->n_exact, (long long)p->n);
        if (first) ax_rep_puts(&b, " probed documents reproduced verbatim");
        first = 0;
    }
    if (!first) ax_rep_puts(&b, ".");
    int gfirst = 1;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_regurg *g = r->runs[i].regurg;
        if (!g) continue;
        int64_t hit, total;
        ax_rep_regurg_counts(g, &hit, &total);
        if (gfirst)
            ax_rep_printf(&b,
                          "%sFree generations containing a verbatim training passage (>= %lld "
                          "tokens)",
                          first ? "" : " ", (long long)g->n);
        ax_rep_printf(&b, "%s %s %lld/%lld", gfirst ? ":" : ",", r->runs[i].label, (long long)hit,
                      (long long)total);
        gfirst = 0;
    }
    if (!gfirst) ax_rep_puts(&b, ".");
    privacy_headline(r, &b, first && gfirst);
    /* runs scanned against different training sets are not comparable */
    const ax_rep_ident *id0 = NULL;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_ident *id = ax_rep_run_ident(&r->runs[i]);
        if (!id) continue;
        if (!id0)
            id0 = id;
        else if (strcmp(id->ds_xxh3, id0->ds_xxh3)) {
            ax_rep_puts(&n, "The runs were scanned against different datasets (see the xxh3 "
                            "column): their rates are not directly comparable.");
            break;
        }
    }
    /* a membership AUC is read with its model-free baseline: say where that baseline is far
     * from chance (or missing) beside the headline, not only in the section */
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        for (int k = 0; m && k < m->n_free; k++) {
            const ax_rep_mia_score *s = &m->free[k];
            if (!ax_rep_mia_far(s)) continue;
            ax_rep_printf(&n,
                          "%s%s: a score that reads no model separates members from non-members "
                          "(%s AUC %.2f, 95%% CI %.2f-%.2f), so part of its membership AUC may be "
                          "distribution shift.",
                          n.len ? " " : "", r->runs[i].label, s->name, s->auc, s->auc_lo,
                          s->auc_hi);
        }
        if (m && !m->has_free)
            ax_rep_printf(&n,
                          "%s%s: its membership scan has no model-free baseline; rerun memscan "
                          "mia.",
                          n.len ? " " : "", r->runs[i].label);
    }
    if (b.oom || n.oom) {
        ax_rep_buf_free(&b), ax_rep_buf_free(&n);
        return ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
    }
    r->headline = b.s ? b.s : strdup("");
    r->note = n.s;
    return r->headline ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
}
