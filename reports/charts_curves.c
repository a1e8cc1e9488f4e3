/* Memorization over training: a headline metric versus checkpoint step, one line per run and
 * curve (svg_xy.c draws). Extraction carries its 95% interval as a band, so a rise is read
 * against the noise of a few dozen probes. */
#include "reports/cells.h"
#include "reports/charts.h"
#include "reports/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int ax_rep_chart_curve(const ax_report *r, int k, ax_rep_buf *b) {
    /* the curves this chart draws: extraction has two sources (probe curve, train records) */
    int kinds[2] = {k, k == AX_REP_CURVE_PROBE ? AX_REP_CURVE_TRAIN : -1}, n = 0;
    for (int i = 0; i < r->n_runs; i++)
        for (int j = 0; j < 2; j++)
            if (kinds[j] >= 0 && r->runs[i].curve[kinds[j]] && r->runs[i].curve[kinds[j]]->n) n++;
    if (!n) return 0;
    ax_svg_xy_series *s = calloc((size_t)n, sizeof *s);
    char *names = calloc((size_t)n, 160);
    if (!s || !names) {
        b->oom = 1;
        free(s), free(names);
        return 0;
    }
    double x1 = 0, ymax = 0;
    const char *score = NULL;
    int m = 0;
    for (int i = 0; i < r->n_runs; i++)
        for (int j = 0; j < 2; j++) {
            const ax_rep_curve *c = kinds[j] >= 0 ? r->runs[i].curve[kinds[j]] : NULL;
            if (!c || !c->n) continue;
            char *nm = names + 160 * m;
            if (k == AX_REP_CURVE_PROBE)
                snprintf(nm, 160, "%.80s (%s)", r->runs[i].label, ax_rep_curve_source(kinds[j]));
            else
                snprintf(nm, 160, "%.80s", r->runs[i].label);
            if (!score) score = c->score;
            s[m++] = (ax_svg_xy_series){nm,
                                        (int)c->n,
                                        c->step,
                                        c->v,
                                        (int)c->n,
                                        c->step,
                                        c->v,
                                        k == AX_REP_CURVE_EXPOSURE ? NULL : c->lo,
                                        k == AX_REP_CURVE_EXPOSURE ? NULL : c->hi};
            x1 = fmax(x1, c->step[c->n - 1]);
            for (int64_t t = 0; t < c->n; t++) ymax = fmax(ymax, c->hi[t]);
        }
    char title[160];
    ax_svg_xy c = {.xlabel = "training step (checkpoint)",
                   .xlog = 0,
                   .x0 = 0, /* training starts at step 0; whole-number ticks */
                   .x1 = x1 > 0 ? x1 * 1.04 : 1,
                   .y0 = 0,
                   .y1 = 1,
                   .s = s,
                   .n = m};
    if (k == AX_REP_CURVE_PROBE) {
        c.title = "Extraction versus training step (exact-match rate; band: 95% interval)";
        c.ylabel = "exact-match rate";
        c.percent_y = 1;
    } else if (k == AX_REP_CURVE_MIA) {
        snprintf(title, sizeof title,
                 "Membership inference versus training step (AUC of the %.40s score; band: 95%% "
                 "interval)",
                 score ? score : "first");
        c.title = title, c.ylabel = "ROC AUC";
        c.hline = 0.5, c.hline_label = "chance (AUC 0.5)";
    } else {
        c.title = "Canary exposure versus training step (mean over all canaries)";
        c.ylabel = "mean exposure (bits)";
        double top = ymax > 0 ? ymax * 1.12 : 1;
        c.y1 = ceil(top / ax_svg_nice_step(top)) * ax_svg_nice_step(top);
    }
    ax_svg_xy_chart(b, &c);
    free(s), free(names);
    return 1;
}
