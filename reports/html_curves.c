/* report.html's "Memorization over training" section: extraction versus step (chart with its
 * 95% interval band, and a table per step flagging a rise above the previous upper bound),
 * then AUC and mean exposure versus step when those curves exist. */
#include "reports/cells.h"
#include "reports/charts.h"
#include "reports/model.h"

void ax_rep_html_curves(const ax_report *r, ax_rep_buf *b) {
    if (!ax_rep_any_curve(r)) return;
    char c[AX_REP_CURVE_NCOLS][AX_REP_CELL];
    ax_rep_puts(b, "<h2 id=\"over-training\">Memorization over training</h2>\n<p "
                   "class=\"muted\">The same scan on every checkpoint of a run (memscan "
                   "--all-steps) or inside training (train --scan-every): when memorization "
                   "appeared. A step is flagged when its exact-match rate rose above the "
                   "previous step's upper 95% bound.</p>\n");
    ax_rep_chart_curve(r, AX_REP_CURVE_PROBE, b);
    int rows = 0;
    for (int i = 0; i < r->n_runs; i++)
        for (int k = AX_REP_CURVE_PROBE; k <= AX_REP_CURVE_TRAIN; k++)
            for (int64_t j = 0; r->runs[i].curve[k] && j < r->runs[i].curve[k]->n; j++) {
                if (!rows++) {
                    ax_rep_puts(b, "<table class=\"curve\"><tr>");
                    for (int q = 0; q < AX_REP_CURVE_NCOLS; q++) {
                        ax_rep_puts(b, "<th>");
                        ax_rep_html(b, ax_rep_curve_cols[q]);
                        ax_rep_puts(b, "</th>");
                    }
                    ax_rep_puts(b, "</tr>\n");
                }
                ax_rep_curve_cells(&r->runs[i], k, j, c);
                ax_rep_puts(b, ax_rep_curve_rising(r->runs[i].curve[k], j) ? "<tr class=\"rising\">"
                                                                           : "<tr>");
                for (int q = 0; q < AX_REP_CURVE_NCOLS; q++) {
                    ax_rep_puts(b, q >= 2 && q <= 5 ? "<td class=\"num\">" : "<td>");
                    ax_rep_html(b, c[q]);
                    ax_rep_puts(b, "</td>");
                }
                ax_rep_puts(b, "</tr>\n");
            }
    if (rows) ax_rep_puts(b, "</table>\n");
    ax_rep_chart_curve(r, AX_REP_CURVE_MIA, b);
    ax_rep_chart_curve(r, AX_REP_CURVE_EXPOSURE, b);
    for (int i = 0; i < r->n_runs; i++)
        for (int k = 0; k < AX_REP_NCURVES; k++) {
            const ax_rep_curve *cv = r->runs[i].curve[k];
            if (!cv || !cv->n_skipped) continue;
            ax_rep_puts(b, "<p class=\"note\">");
            ax_rep_html(b, r->runs[i].label);
            ax_rep_printf(b, ": %lld checkpoint(s) could not be opened and are missing from ",
                          (long long)cv->n_skipped);
            ax_rep_html(b, cv->file);
            ax_rep_puts(b, " (its \"skipped\" list says why).</p>\n");
        }
}
