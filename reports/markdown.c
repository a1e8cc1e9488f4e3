/* report.md: the same findings as the HTML page as plain Markdown tables (no charts), for
 * pull requests and terminals. Input strings are escaped so a cell stays one cell. */
#include "reports/cells.h"
#include "reports/model.h"

#include <stdlib.h>

static void top_samples(const ax_report *r, const ax_rep_probe *p, ax_rep_buf *b) {
    int text = 0;
    for (int k = 0; k < p->n_top; k++)
        text |= p->top[k].truth_text != NULL || p->top[k].generated_text != NULL;
    int hidden = text && !r->show_text && r->text_chars > 0;
    text = text && r->show_text;
    ax_rep_printf(b,
                  "\nMost memorized probes (of %lld%s):\n\n| # | doc | offset | matched prefix | "
                  "exact | token acc. |%s\n|---|---|---|---|---|---|%s\n",
                  (long long)p->n_sample_rows,
                  hidden ? "; memorized text not shown: --show-text shows it" : "",
                  text ? " true continuation | model output |" : "", text ? "---|---|" : "");
    for (int k = 0; k < p->n_top; k++) {
        const ax_rep_sample *s = &p->top[k];
        ax_rep_printf(b, "| %d | %lld | %lld | %lld | %s | %.3f |", k + 1, (long long)s->doc,
                      (long long)s->offset, (long long)s->matched_prefix, s->exact ? "yes" : "no",
                      s->token_accuracy);
        if (text) {
            const char *t[2] = {s->truth_text, s->generated_text};
            for (int j = 0; j < 2; j++) {
                char *clip = t[j] ? ax_rep_clip(t[j], r->text_chars) : NULL;
                if (t[j] && !clip) b->oom = 1;
                ax_rep_puts(b, " ");
                ax_rep_md(b, clip ? clip : "");
                ax_rep_puts(b, " |");
                free(clip);
            }
        }
        ax_rep_puts(b, "\n");
    }
}

static void run_section(const ax_report *r, const ax_rep_run *run, ax_rep_buf *b) {
    const ax_rep_ident *id = ax_rep_run_ident(run);
    ax_rep_puts(b, "\n## ");
    ax_rep_md(b, run->label);
    ax_rep_puts(b, "\n\n");
    if (run->warning) {
        ax_rep_puts(b, "**Warning:** ");
        ax_rep_md(b, run->warning);
        ax_rep_puts(b, "\n\n");
    }
    if (id) { /* NULL: the run has curves only (memscan --all-steps) */
        ax_rep_puts(b, "- checkpoint: ");
        ax_rep_md(b, id->ckpt_path);
        ax_rep_printf(b, " (step %lld)\n- goldfish: ", (long long)id->step);
        ax_rep_md(b, id->goldfish);
        ax_rep_puts(b, "\n- dataset: ");
        ax_rep_md(b, id->ds_path);
        ax_rep_printf(b, " (xxh3 ");
        ax_rep_md(b, id->ds_xxh3);
        ax_rep_printf(b, ", %lld documents, %lld tokens)\n", (long long)id->ds_docs,
                      (long long)id->ds_tokens);
    }
    const ax_rep_probe *p = run->probe;
    if (p) {
        ax_rep_printf(b, "- probe: %lld documents, %lld-token prompt, %lld-token continuation\n",
                      (long long)p->n, (long long)p->prefix, (long long)p->suffix);
    }
    const ax_rep_regurg *g = run->regurg;
    if (g) {
        ax_rep_printf(b, "- regurgitation: %lld generations of %lld tokens, %lld-token index",
                      (long long)g->samples, (long long)g->length, (long long)g->n);
        if (g->n_hist) ax_rep_puts(b, "; longest-span histogram:");
        for (int k = 0; k < g->n_hist; k++) {
            ax_rep_puts(b, k ? ", " : " ");
            ax_rep_md(b, g->hist_labels[k]);
            ax_rep_printf(b, ": %lld", (long long)g->hist[k]);
        }
        ax_rep_puts(b, "\n");
    }
    if (run->mia) {
        const ax_rep_mia *m = run->mia;
        ax_rep_puts(b, "- membership inference: ");
        ax_rep_md(b, m->file);
        ax_rep_printf(b, " (%lld members, %lld non-members, first %lld tokens each",
                      (long long)m->members, (long long)m->nonmembers,
                      (long long)m->tokens_per_doc);
        if (m->zlib_level) ax_rep_printf(b, "; zlib level %lld", (long long)m->zlib_level);
        if (m->ref_ckpt) ax_rep_puts(b, "; reference model "), ax_rep_md(b, m->ref_ckpt);
        ax_rep_puts(b, ")\n");
    }
    if (run->exposure) {
        const ax_rep_exposure *e = run->exposure;
        ax_rep_puts(b, "- canary exposure: ");
        ax_rep_md(b, e->file);
        ax_rep_printf(b, " (%lld canaries of format \"", (long long)e->overall.canaries);
        ax_rep_md(b, e->format);
        ax_rep_printf(b, "\", |R| = %g, rank %s over %lld candidates)\n", e->space, e->method,
                      (long long)e->candidates);
    }
    if (p) {
        if (p->n_dup) {
            ax_rep_puts(b, "\nExact match by training-set occurrences of the probed window:\n\n"
                           "| occurrences | probes | exact match |\n|---|---|---|\n");
            for (int k = 0; k < p->n_dup; k++) {
                ax_rep_puts(b, "| ");
                ax_rep_md(b, p->dup[k].bucket);
                ax_rep_printf(b, " | %lld | %.1f%% |\n", (long long)p->dup[k].samples,
                              p->dup[k].exact_match_rate * 100);
            }
        }
        if (p->n_top) top_samples(r, p, b);
    }
}

void ax_rep_write_md(const ax_report *r, ax_rep_buf *b) {
    char c[AX_REP_NCOLS][AX_REP_CELL];
    ax_rep_puts(b, "# ");
    ax_rep_md(b, r->title);
    ax_rep_puts(b, "\n\n**");
    ax_rep_md(b, r->headline);
    ax_rep_puts(b, "**\n\n");
    if (r->note) {
        ax_rep_md(b, r->note);
        ax_rep_puts(b, "\n\n");
    }
    ax_rep_puts(b, "|");
    for (int k = 0; k < AX_REP_NCOLS; k++) ax_rep_printf(b, " %s |", ax_rep_cols[k]);
    ax_rep_puts(b, "\n|");
    for (int k = 0; k < AX_REP_NCOLS; k++) ax_rep_puts(b, "---|");
    ax_rep_puts(b, "\n");
    for (int i = 0; i < r->n_runs; i++) {
        ax_rep_summary_cells(&r->runs[i], c);
        ax_rep_puts(b, "|");
        for (int k = 0; k < AX_REP_NCOLS; k++) {
            ax_rep_puts(b, " ");
            ax_rep_md(b, c[k]);
            ax_rep_puts(b, " |");
        }
        ax_rep_puts(b, "\n");
    }
    ax_rep_md_privacy(r, b);
    ax_rep_md_curves(r, b);
    for (int i = 0; i < r->n_runs; i++) run_section(r, &r->runs[i], b);
    if (r->index) {
        const ax_rep_index *x = r->index;
        ax_rep_printf(b,
                      "\n## Training-set duplication\n\n%lld windows of %lld tokens, %lld "
                      "distinct.\n\n| occurrences | distinct windows |\n|---|---|\n",
                      (long long)x->windows, (long long)x->n, (long long)x->distinct);
        for (int k = 0; k < x->n_hist; k++) {
            ax_rep_puts(b, "| ");
            ax_rep_md(b, x->labels[k]);
            ax_rep_printf(b, " | %lld |\n", (long long)x->counts[k]);
        }
    }
    ax_rep_puts(b, "\nCharts: report.html. Data: report.json.\n");
}
