/* report.html's privacy sections: membership inference (table with the model-free baselines,
 * their warnings, ROC curves of the runs side by side) and canary exposure (table by repeat count,
 * chart, the most exposed canaries). A canary's secret is written only in a --show-text report. */
#include "reports/cells.h"
#include "reports/charts.h"
#include "reports/model.h"

#include <stdlib.h>

static void row(ax_rep_buf *b, char c[][AX_REP_CELL], int n) {
    ax_rep_puts(b, "<tr>");
    for (int k = 0; k < n; k++) {
        ax_rep_puts(b, k >= 2 ? "<td class=\"num\">" : "<td>");
        ax_rep_html(b, c[k]);
        ax_rep_puts(b, "</td>");
    }
    ax_rep_puts(b, "</tr>\n");
}

static void head(ax_rep_buf *b, const char *const *cols, int n) {
    ax_rep_puts(b, "<table class=\"privacy\"><tr>");
    for (int k = 0; k < n; k++) {
        ax_rep_puts(b, "<th>");
        ax_rep_html(b, cols[k]);
        ax_rep_puts(b, "</th>");
    }
    ax_rep_puts(b, "</tr>\n");
}

static void text_cell(const ax_report *r, ax_rep_buf *b, const char *s) {
    char *clip = s ? ax_rep_clip(s, r->text_chars) : NULL;
    if (s && !clip) b->oom = 1;
    ax_rep_puts(b, "<td class=\"txt\">");
    ax_rep_html(b, clip ? clip : "");
    ax_rep_puts(b, "</td>");
    free(clip);
}

/* the sentences under the table: warnings first, then what is n/a or missing and why */
static void mia_notes(const ax_report *r, ax_rep_buf *b) {
    char t[AX_REP_NOTE];
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        if (!run->mia) continue;
        for (int k = 0; k < run->mia->n_free; k++)
            if (ax_rep_mia_warning(run, k, t, sizeof t)) {
                ax_rep_puts(b, "<p class=\"note\">Warning: ");
                ax_rep_html(b, t);
                ax_rep_puts(b, "</p>\n");
            }
        if (ax_rep_mia_no_baseline(run, t, sizeof t)) {
            ax_rep_puts(b, "<p class=\"note\">");
            ax_rep_html(b, t);
            ax_rep_puts(b, "</p>\n");
        }
        if (ax_rep_mia_tpr_note(run, t, sizeof t)) {
            ax_rep_puts(b, "<p class=\"muted\">");
            ax_rep_html(b, t);
            ax_rep_puts(b, "</p>\n");
        }
    }
}

static void mia_section(const ax_report *r, ax_rep_buf *b) {
    char c[AX_REP_MIA_NCOLS][AX_REP_CELL];
    ax_rep_puts(b, "<h2 id=\"mia\">Membership inference</h2>\n<p class=\"muted\">Can an attacker "
                   "tell documents the model was trained on (members) from unseen ones of the "
                   "same distribution (non-members) by the model's scores? AUC 0.5 is chance, 1 "
                   "is perfect separation; the true positive rate at a low false positive rate "
                   "says how many members an attacker identifies with few false accusations. "
                   "Intervals: bootstrap over the documents. Model-free rows read no model: "
                   "their AUC (either side of 0.5) measures how far the two sets differ in "
                   "distribution, a baseline the model's scores must beat before their AUC "
                   "means membership.</p>\n");
    head(b, ax_rep_mia_cols, AX_REP_MIA_NCOLS);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_mia *m = r->runs[i].mia;
        for (int k = 0; m && k < m->n_score + m->n_free; k++) {
            ax_rep_mia_cells(&r->runs[i], k < m->n_score ? &m->score[k] : &m->free[k - m->n_score],
                             c);
            row(b, c, AX_REP_MIA_NCOLS);
        }
    }
    ax_rep_puts(b, "</table>\n");
    mia_notes(r, b);
    ax_rep_puts(b, "<div class=\"row\">\n");
    for (int i = 0; i < r->n_runs; i++) ax_rep_chart_roc(&r->runs[i], b);
    ax_rep_puts(b, "</div>\n");
}

static void canaries(const ax_report *r, const ax_rep_run *run, ax_rep_buf *b) {
    const ax_rep_exposure *e = run->exposure;
    int64_t idx[AX_REP_TOP_CANARIES];
    int n = ax_rep_top_canaries(e, idx, AX_REP_TOP_CANARIES);
    if (n < 0) b->oom = 1;
    if (n <= 0) return;
    ax_rep_puts(b, "<p>");
    ax_rep_html(b, run->label);
    ax_rep_printf(b, ": most exposed canaries (of %lld in ", (long long)e->n_canary);
    ax_rep_html(b, e->samples_file);
    ax_rep_puts(b, "):</p><table><tr><th>canary</th><th>repeats</th><th>exposure "
                   "(bits)</th><th>extracted</th>");
    if (r->show_text) ax_rep_puts(b, "<th>secret</th><th>greedy output</th>");
    ax_rep_puts(b, "</tr>\n");
    for (int k = 0; k < n; k++) {
        const ax_rep_canary *ca = &e->canary[idx[k]];
        ax_rep_printf(b,
                      "<tr><td class=\"num\">%lld</td><td class=\"num\">%lld</td><td "
                      "class=\"num\">%.2f</td><td>%s</td>",
                      (long long)ca->id, (long long)ca->repeats, ca->exposure,
                      ca->extracted ? "yes" : "no");
        if (r->show_text) text_cell(r, b, ca->secret), text_cell(r, b, ca->generated_text);
        ax_rep_puts(b, "</tr>\n");
    }
    ax_rep_puts(b, "</table>\n");
}

static void exposure_section(const ax_report *r, ax_rep_buf *b) {
    char c[AX_REP_EXP_NCOLS][AX_REP_CELL];
    ax_rep_puts(b, "<h2 id=\"exposure\">Canary exposure</h2>\n<p class=\"muted\">Random secrets "
                   "(canaries) were inserted into the training data a given number of times. "
                   "Exposure = log2 |R| - log2 (rank of the true secret among the |R| strings of "
                   "its format, by the model's likelihood): 0 bits when the model prefers it no "
                   "more than a random candidate, log2 |R| when it ranks it first. Extracted: "
                   "greedy decoding from the canary's prefix reproduces the secret.");
    if (!r->show_text)
        ax_rep_puts(b, " Secrets are not shown (axmem report --show-text shows them).");
    ax_rep_puts(b, "</p>\n");
    head(b, ax_rep_exp_cols, AX_REP_EXP_NCOLS);
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_exposure *e = r->runs[i].exposure;
        if (!e) continue;
        for (int k = 0; k < e->n_rows; k++) {
            ax_rep_exp_cells(&r->runs[i], &e->rows[k], c);
            row(b, c, AX_REP_EXP_NCOLS);
        }
        ax_rep_exp_cells(&r->runs[i], &e->overall, c);
        row(b, c, AX_REP_EXP_NCOLS);
    }
    ax_rep_puts(b, "</table>\n");
    ax_rep_chart_exposure(r, b);
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].exposure) canaries(r, &r->runs[i], b);
}

void ax_rep_html_privacy(const ax_report *r, ax_rep_buf *b) {
    int mia = 0, exp = 0;
    for (int i = 0; i < r->n_runs; i++) mia |= !!r->runs[i].mia, exp |= !!r->runs[i].exposure;
    if (mia) mia_section(r, b);
    if (exp) exposure_section(r, b);
}
