/* report.md's privacy sections: the membership-inference and exposure tables (the charts are
 * in report.html) and the most exposed canaries, secrets only in a --show-text report. */
#include "reports/cells.h"
#include "reports/model.h"

#include <stdlib.h>

static void table(ax_rep_buf *b, const char *const *cols, int n) {
    ax_rep_puts(b, "|");
    for (int k = 0; k < n; k++) ax_rep_printf(b, " %s |", cols[k]);
    ax_rep_puts(b, "\n|");
    for (int k = 0; k < n; k++) ax_rep_puts(b, "---|");
    ax_rep_puts(b, "\n");
}

static void row(ax_rep_buf *b, char c[][AX_REP_CELL], int n) {
    ax_rep_puts(b, "|");
    for (int k = 0; k < n; k++) {
        ax_rep_puts(b, " ");
        ax_rep_md(b, c[k]);
        ax_rep_puts(b, " |");
    }
    ax_rep_puts(b, "\n");
}

static void text_cell(const ax_report *r, ax_rep_buf *b, const char *s) {
    char *clip = s ? ax_rep_clip(s, r->text_chars) : NULL;
    if (s && !clip) b->oom = 1;
    ax_rep_puts(b, " ");
    ax_rep_md(b, clip ? clip : "");
    ax_rep_puts(b, " |");
    free(clip);
}

static void canaries(const ax_report *r, const ax_rep_run *run, ax_rep_buf *b) {
    const ax_rep_exposure *e = run->exposure;
    int64_t idx[AX_REP_TOP_CANARIES];
    int n = ax_rep_top_canaries(e, idx, AX_REP_TOP_CANARIES);
    if (n < 0) b->oom = 1;
    if (n <= 0) return;
    ax_rep_puts(b, "\n");
    ax_rep_md(b, run->label);
    ax_rep_printf(b,
                  ": most exposed canaries (of %lld):\n\n| canary | repeats | exposure (bits) | "
                  "extracted |%s\n|---|---|---|---|%s\n",
                  (long long)e->n_canary, r->show_text ? " secret | greedy output |" : "",
                  r->show_text ? "---|---|" : "");
    for (int k = 0; k < n; k++) {
        const ax_rep_canary *c = &e->canary[idx[k]];
        ax_rep_printf(b, "| %lld | %lld | %.2f | %s |", (long long)c->id, (long long)c->repeats,
                      c->exposure, c->extracted ? "yes" : "no");
        if (r->show_text) text_cell(r, b, c->secret), text_cell(r, b, c->generated_text);
        ax_rep_puts(b, "\n");
    }
}

/* a paragraph: a blank line, the lead (Markdown), the text (escaped) */
static void para(ax_rep_buf *b, const char *lead, const char *t) {
    ax_rep_printf(b, "\n%s", lead);
    ax_rep_md(b, t);
    ax_rep_puts(b, "\n");
}

/* the sentences under the table: warnings first, then what is n/a or missing and why */
static void mia_notes(const ax_report *r, ax_rep_buf *b) {
    char t[AX_REP_NOTE];
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        if (!run->mia) continue;
        for (int k = 0; k < run->mia->n_free; k++)
            if (ax_rep_mia_warning(run, k, t, sizeof t)) para(b, "**Warning:** ", t);
        if (ax_rep_mia_no_baseline(run, t, sizeof t)) para(b, "", t);
        if (ax_rep_mia_tpr_note(run, t, sizeof t)) para(b, "", t);
    }
}

void ax_rep_md_privacy(const ax_report *r, ax_rep_buf *b) {
    int mia = 0, exp = 0;
    for (int i = 0; i < r->n_runs; i++) mia |= !!r->runs[i].mia, exp |= !!r->runs[i].exposure;
    if (mia) {
        char c[AX_REP_MIA_NCOLS][AX_REP_CELL];
        ax_rep_puts(b, "\n## Membership inference\n\nAUC 0.5 = chance; TPR at a low FPR = "
                       "members identified with few false accusations. Model-free rows read no "
                       "model: their AUC (either side of 0.5) measures how far the two sets differ "
                       "in distribution. ROC curves (log-log): report.html.\n\n");
        table(b, ax_rep_mia_cols, AX_REP_MIA_NCOLS);
        for (int i = 0; i < r->n_runs; i++) {
            const ax_rep_mia *m = r->runs[i].mia;
            for (int k = 0; m && k < m->n_score + m->n_free; k++) {
                ax_rep_mia_cells(&r->runs[i],
                                 k < m->n_score ? &m->score[k] : &m->free[k - m->n_score], c);
                row(b, c, AX_REP_MIA_NCOLS);
            }
        }
        mia_notes(r, b);
    }
    if (exp) {
        char c[AX_REP_EXP_NCOLS][AX_REP_CELL];
        ax_rep_printf(b,
                      "\n## Canary exposure\n\nExposure = log2 |R| - log2 rank of the true "
                      "secret among the strings of its format; extracted = greedy decoding "
                      "from the prefix reproduces it.%s\n\n",
                      r->show_text ? "" : " Secrets are not shown (--show-text shows them).");
        table(b, ax_rep_exp_cols, AX_REP_EXP_NCOLS);
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
        for (int i = 0; i < r->n_runs; i++)
            if (r->runs[i].exposure) canaries(r, &r->runs[i], b);
    }
}
