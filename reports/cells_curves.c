/* The cells of the memorization-over-training table, shared by the HTML and Markdown writers
 * so they agree. A row is flagged when its exact-match rate rose above the previous step's
 * upper bound (the same test `train --scan-every` warns on). */
#include "reports/cells.h"

#include <stdio.h>

const char *const ax_rep_curve_cols[AX_REP_CURVE_NCOLS] = {
    "run", "source", "step", "exact match", "95% interval", "token accuracy", "extraction"};

const char *ax_rep_curve_source(int k) {
    switch (k) {
    case AX_REP_CURVE_PROBE:
        return "memscan probe --all-steps";
    case AX_REP_CURVE_TRAIN:
        return "train --scan-every";
    case AX_REP_CURVE_MIA:
        return "memscan mia --all-steps";
    default:
        return "memscan exposure --all-steps";
    }
}

int ax_rep_any_curve(const ax_report *r) {
    for (int i = 0; i < r->n_runs; i++)
        for (int k = 0; k < AX_REP_NCURVES; k++)
            if (r->runs[i].curve[k]) return 1;
    return 0;
}

void ax_rep_curve_cells(const ax_rep_run *run, int k, int64_t i, char c[][AX_REP_CELL]) {
    const ax_rep_curve *cv = run->curve[k];
    snprintf(c[0], AX_REP_CELL, "%s", run->label);
    snprintf(c[1], AX_REP_CELL, "%s", ax_rep_curve_source(k));
    snprintf(c[2], AX_REP_CELL, "%.0f", cv->step[i]);
    snprintf(c[3], AX_REP_CELL, "%.1f%%", cv->v[i] * 100);
    snprintf(c[4], AX_REP_CELL, "%.1f-%.1f%%", cv->lo[i] * 100, cv->hi[i] * 100);
    snprintf(c[5], AX_REP_CELL, "%.1f%%", cv->tok[i] * 100);
    snprintf(c[6], AX_REP_CELL, "%s",
             ax_rep_curve_rising(cv, i) ? "ROSE above the previous upper bound" : "");
}
