/* report.md's "Memorization over training" section: the extraction table per step (flagging a
 * rise above the previous upper bound) and AUC / mean exposure per step; charts: report.html. */
#include "reports/cells.h"
#include "reports/model.h"

static void other(const ax_report *r, int k, const char *what, ax_rep_buf *b) {
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_curve *c = r->runs[i].curve[k];
        if (!c || !c->n) continue;
        ax_rep_puts(b, "\n");
        ax_rep_md(b, r->runs[i].label);
        ax_rep_printf(b, ": %s", what);
        if (c->score) {
            ax_rep_puts(b, " (");
            ax_rep_md(b, c->score);
            ax_rep_puts(b, " score)");
        }
        ax_rep_puts(b, " by step:");
        for (int64_t j = 0; j < c->n; j++) {
            ax_rep_printf(b, "%s step %.0f: %.3f", j ? ";" : "", c->step[j], c->v[j]);
            if (k == AX_REP_CURVE_MIA) ax_rep_printf(b, " (%.3f-%.3f)", c->lo[j], c->hi[j]);
        }
        ax_rep_puts(b, "\n");
    }
}

void ax_rep_md_curves(const ax_report *r, ax_rep_buf *b) {
    if (!ax_rep_any_curve(r)) return;
    char c[AX_REP_CURVE_NCOLS][AX_REP_CELL];
    int rows = 0;
    ax_rep_puts(b, "\n## Memorization over training\n\nThe same scan on every checkpoint "
                   "(memscan --all-steps) or inside training (train --scan-every). Flagged: "
                   "exact match rose above the previous step's upper 95% bound. Charts: "
                   "report.html.\n");
    for (int i = 0; i < r->n_runs; i++)
        for (int k = AX_REP_CURVE_PROBE; k <= AX_REP_CURVE_TRAIN; k++)
            for (int64_t j = 0; r->runs[i].curve[k] && j < r->runs[i].curve[k]->n; j++) {
                if (!rows++) {
                    ax_rep_puts(b, "\n|");
                    for (int q = 0; q < AX_REP_CURVE_NCOLS; q++)
                        ax_rep_printf(b, " %s |", ax_rep_curve_cols[q]);
                    ax_rep_puts(b, "\n|");
                    for (int q = 0; q < AX_REP_CURVE_NCOLS; q++) ax_rep_puts(b, "---|");
                    ax_rep_puts(b, "\n");
                }
                ax_rep_curve_cells(&r->runs[i], k, j, c);
                ax_rep_puts(b, "|");
                for (int q = 0; q < AX_REP_CURVE_NCOLS; q++) {
                    ax_rep_puts(b, " ");
                    ax_rep_md(b, c[q]);
                    ax_rep_puts(b, " |");
                }
                ax_rep_puts(b, "\n");
            }
    other(r, AX_REP_CURVE_MIA, "membership-inference AUC", b);
    other(r, AX_REP_CURVE_EXPOSURE, "mean canary exposure (bits)", b);
}
