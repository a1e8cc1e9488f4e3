/* report.html: one self-contained page (inline CSS and SVG, no scripts, no external
 * resources) so it can be mailed or archived as a single file. Every string from an input
 * file is HTML-escaped: sample text is training data and may hold markup. */
#include "reports/cells.h"
#include "reports/charts.h"
#include "reports/model.h"

#include <stdlib.h>
#include <string.h>

static const char *CSS =
    "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;"
    "color:#1a1a1a;max-width:1100px;margin:24px auto;padding:0 16px}"
    "h1{font-size:1.6em;margin:.2em 0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
    ".headline{font-size:1.15em;background:#f3f7fb;border-left:4px solid #0072B2;"
    "padding:10px 14px}.note{background:#fff6e5;border-left:4px solid #E69F00;padding:8px 14px}"
    "table{border-collapse:collapse;margin:8px 0 16px;font-size:.92em}"
    "th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.rising "
    "td{background:#fde2e2}"
    "td.txt{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;max-width:420px;"
    "overflow-wrap:anywhere}"
    ".chart{width:100%;max-width:720px;height:auto;display:block;margin:8px 0 20px}"
    ".chart text{font-size:12px;fill:#333}.chart .ct{font-size:14px;font-weight:600}"
    ".chart .yl{text-anchor:end}.chart .xl,.chart .al,.chart .bv{text-anchor:middle}"
    ".chart .grid{stroke:#e6e6e6}.chart .axis{stroke:#888}"
    ".chart .ci{stroke:#222;stroke-width:1.5;fill:none}"
    ".row{display:flex;flex-wrap:wrap;gap:12px}.row .chart{flex:1 1 340px;max-width:540px;"
    "margin:4px 0}"
    ".muted{color:#666;font-size:.9em}code{font-size:.92em}";

static void esc(ax_rep_buf *b, const char *s) {
    ax_rep_html(b, s);
}

static void kv(ax_rep_buf *b, const char *k, const char *v) {
    ax_rep_printf(b, "<tr><th>%s</th><td>", k);
    esc(b, v);
    ax_rep_puts(b, "</td></tr>");
}

static void kv_i(ax_rep_buf *b, const char *k, long long v) {
    ax_rep_printf(b, "<tr><th>%s</th><td class=\"num\">%lld</td></tr>", k, v);
}

static void summary_table(const ax_report *r, ax_rep_buf *b) {
    char c[AX_REP_NCOLS][AX_REP_CELL];
    ax_rep_puts(b, "<table class=\"summary\"><tr>");
    for (int k = 0; k < AX_REP_NCOLS; k++) ax_rep_printf(b, "<th>%s</th>", ax_rep_cols[k]);
    ax_rep_puts(b, "</tr>\n");
    for (int i = 0; i < r->n_runs; i++) {
        ax_rep_summary_cells(&r->runs[i], c);
        ax_rep_puts(b, "<tr>");
        for (int k = 0; k < AX_REP_NCOLS; k++) {
            ax_rep_puts(b, k >= 2 ? "<td class=\"num\">" : "<td>");
            esc(b, c[k]);
            ax_rep_puts(b, "</td>");
        }
        ax_rep_puts(b, "</tr>\n");
    }
    ax_rep_puts(b, "</table>\n");
}

static void text_cell(const ax_report *r, ax_rep_buf *b, const char *s) {
    ax_rep_puts(b, "<td class=\"txt\">");
    char *clip = s ? ax_rep_clip(s, r->text_chars) : NULL;
    if (s && !clip) b->oom = 1;
    esc(b, clip ? clip : "");
    free(clip);
    ax_rep_puts(b, "</td>");
}

static void probe_section(const ax_report *r, const ax_rep_probe *p, ax_rep_buf *b) {
    char rate[96];
    ax_rep_puts(b, "<h3>Extraction probe</h3><table>");
    kv(b, "file", p->file);
    ax_rep_printf(b,
                  "<tr><th>setup</th><td>%lld documents; prompt = first %lld tokens, greedy "
                  "%lld-token continuation compared with the true one</td></tr>",
                  (long long)p->n, (long long)p->prefix, (long long)p->suffix);
    ax_rep_fmt_rate(rate, sizeof rate, &p->exact);
    ax_rep_printf(b, "<tr><th>exact match</th><td>%lld/%lld = %s</td></tr>", (long long)p->n_exact,
                  (long long)p->n, rate);
    ax_rep_printf(b, "<tr><th>token accuracy</th><td>%.3f (%.3f-%.3f)</td></tr>", p->tok_acc.mean,
                  p->tok_acc.lo, p->tok_acc.hi);
    ax_rep_printf(b, "<tr><th>RougeL</th><td>%.3f (%.3f-%.3f)</td></tr>", p->rouge_l.mean,
                  p->rouge_l.lo, p->rouge_l.hi);
    ax_rep_printf(b, "<tr><th>matched prefix (mean)</th><td>%.2f of %lld tokens</td></tr>",
                  p->mp_mean, (long long)p->suffix);
    ax_rep_puts(b, "</table>\n");
    if (p->n_dup) {
        ax_rep_puts(b, "<p>Exact match by how often the probed window occurs in the training "
                       "set:</p><table><tr><th>occurrences</th><th>probes</th><th>exact "
                       "match</th></tr>");
        for (int k = 0; k < p->n_dup; k++) {
            ax_rep_puts(b, "<tr><td>");
            esc(b, p->dup[k].bucket);
            ax_rep_printf(b, "</td><td class=\"num\">%lld</td><td class=\"num\">%.1f%%</td></tr>",
                          (long long)p->dup[k].samples, p->dup[k].exact_match_rate * 100);
        }
        ax_rep_puts(b, "</table>\n");
    }
    if (!p->n_top) return;
    int text = 0;
    for (int k = 0; k < p->n_top; k++)
        text |= p->top[k].truth_text != NULL || p->top[k].generated_text != NULL;
    int hidden = text && !r->show_text && r->text_chars > 0;
    text = text && r->show_text;
    ax_rep_printf(b, "<p>Most memorized probes (of %lld in ", (long long)p->n_sample_rows);
    esc(b, p->samples_file);
    ax_rep_puts(b, hidden ? "; memorized text not shown: axmem report --show-text shows it" : "");
    ax_rep_puts(b, "):</p><table><tr><th>#</th><th>doc</th><th>offset</th><th>matched "
                   "prefix</th><th>exact</th><th>token acc.</th>");
    if (text)
        ax_rep_printf(b, "<th>true continuation (first %d chars)</th><th>model output</th>",
                      r->text_chars);
    ax_rep_puts(b, "</tr>\n");
    for (int k = 0; k < p->n_top; k++) {
        const ax_rep_sample *s = &p->top[k];
        ax_rep_printf(b,
                      "<tr><td class=\"num\">%d</td><td class=\"num\">%lld</td><td "
                      "class=\"num\">%lld</td><td class=\"num\">%lld</td><td>%s</td><td "
                      "class=\"num\">%.3f</td>",
                      k + 1, (long long)s->doc, (long long)s->offset, (long long)s->matched_prefix,
                      s->exact ? "yes" : "no", s->token_accuracy);
        if (text) text_cell(r, b, s->truth_text), text_cell(r, b, s->generated_text);
        ax_rep_puts(b, "</tr>\n");
    }
    ax_rep_puts(b, "</table>\n");
}

static void regurg_section(const ax_rep_regurg *g, ax_rep_buf *b) {
    int64_t hit, total;
    ax_rep_regurg_counts(g, &hit, &total);
    ax_rep_puts(b, "<h3>Regurgitation scan</h3><table>");
    kv(b, "file", g->file);
    ax_rep_printf(b,
                  "<tr><th>setup</th><td>%lld free generations of %lld tokens, slid over a "
                  "%lld-token index of the training set</td></tr>",
                  (long long)g->samples, (long long)g->length, (long long)g->n);
    ax_rep_printf(b, "<tr><th>with a verbatim training span</th><td>%lld/%lld (%.1f%%)</td></tr>",
                  (long long)hit, (long long)total, g->frac_span * 100);
    ax_rep_printf(b, "<tr><th>longest span</th><td>mean %.1f, max %lld tokens</td></tr>",
                  g->mean_span, (long long)g->max_span);
    if (g->n_hist) {
        ax_rep_puts(b, "<tr><th>longest-span histogram</th><td>");
        for (int k = 0; k < g->n_hist; k++) {
            esc(b, g->hist_labels[k]);
            ax_rep_printf(b, ": %lld%s", (long long)g->hist[k], k + 1 < g->n_hist ? ", " : "");
        }
        ax_rep_puts(b, "</td></tr>");
    }
    ax_rep_puts(b, "</table>\n");
}

static void run_section(const ax_report *r, const ax_rep_run *run, ax_rep_buf *b) {
    const ax_rep_ident *id = ax_rep_run_ident(run);
    ax_rep_puts(b, "<h2>Run: ");
    esc(b, run->label);
    ax_rep_puts(b, "</h2>\n");
    if (run->warning) {
        ax_rep_puts(b, "<p class=\"note\">Warning: ");
        esc(b, run->warning);
        ax_rep_puts(b, "</p>\n");
    }
    ax_rep_puts(b, "<table>");
    if (run->dir) kv(b, "run directory", run->dir);
    if (id) { /* NULL: the run has curves only (memscan --all-steps) */
        kv(b, "checkpoint", id->ckpt_path);
        kv_i(b, "step", (long long)id->step);
        kv(b, "goldfish", id->goldfish);
        kv(b, "dataset", id->ds_path);
        kv(b, "dataset xxh3", id->ds_xxh3);
        kv_i(b, "documents", (long long)id->ds_docs);
        kv_i(b, "tokens", (long long)id->ds_tokens);
    }
    ax_rep_puts(b, "</table>\n");
    if (run->probe) probe_section(r, run->probe, b);
    if (run->regurg) regurg_section(run->regurg, b);
    if (run->mia) {
        const ax_rep_mia *m = run->mia;
        ax_rep_puts(b, "<h3>Membership inference</h3><table>");
        kv(b, "file", m->file);
        kv(b, "members", m->id.ds_path);
        kv(b, "non-members", m->nonmembers_path);
        ax_rep_printf(b,
                      "<tr><th>setup</th><td>%lld members, %lld non-members, first %lld tokens "
                      "of each; %d scores, %d model-free",
                      (long long)m->members, (long long)m->nonmembers, (long long)m->tokens_per_doc,
                      m->n_score, m->n_free);
        if (m->zlib_level) ax_rep_printf(b, "; zlib level %lld", (long long)m->zlib_level);
        ax_rep_puts(b, "</td></tr>");
        if (m->ref_ckpt) kv(b, "reference model", m->ref_ckpt);
        ax_rep_puts(b, "</table>\n");
    }
    if (run->exposure) {
        const ax_rep_exposure *e = run->exposure;
        ax_rep_puts(b, "<h3>Canary exposure</h3><table>");
        kv(b, "file", e->file);
        kv(b, "canary format", e->format);
        ax_rep_printf(b,
                      "<tr><th>setup</th><td>%lld canaries; |R| = %g strings (max exposure "
                      "%.2f bits); rank %s over %lld candidates</td></tr>",
                      (long long)e->overall.canaries, e->space, e->max_exposure,
                      strcmp(e->method, "exact") ? "estimated from a fitted normal" : "exact",
                      (long long)e->candidates);
        ax_rep_puts(b, "</table>\n");
    }
    if (run->train) {
        const ax_rep_train *t = run->train;
        ax_rep_puts(b, "<h3>Training</h3><table>");
        kv(b, "file", t->file);
        kv_i(b, "steps logged", (long long)t->n);
        if (t->n)
            ax_rep_printf(b, "<tr><th>final loss</th><td>%.4f at step %g</td></tr>",
                          t->loss[t->n - 1], t->step[t->n - 1]);
        if (t->n_val)
            ax_rep_printf(b, "<tr><th>final val_loss</th><td>%.4f at step %g</td></tr>",
                          t->val_loss[t->n_val - 1], t->val_step[t->n_val - 1]);
        ax_rep_puts(b, "</table>\n");
    }
}

static void index_section(const ax_rep_index *x, ax_rep_buf *b) {
    ax_rep_puts(b, "<h2>Training-set duplication</h2><table>");
    kv(b, "index", x->file);
    kv_i(b, "window length n (tokens)", (long long)x->n);
    kv_i(b, "windows", (long long)x->windows);
    kv_i(b, "distinct windows", (long long)x->distinct);
    ax_rep_puts(b, "</table><table><tr><th>occurrences</th><th>distinct windows</th></tr>");
    for (int k = 0; k < x->n_hist; k++) {
        ax_rep_puts(b, "<tr><td>");
        esc(b, x->labels[k]);
        ax_rep_printf(b, "</td><td class=\"num\">%lld</td></tr>", (long long)x->counts[k]);
    }
    ax_rep_puts(b, "</table>\n");
}

void ax_rep_write_html(const ax_report *r, ax_rep_buf *b) {
    ax_rep_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<title>");
    esc(b, r->title);
    ax_rep_printf(b, "</title><style>%s</style></head>\n<body>\n<h1>", CSS);
    esc(b, r->title);
    ax_rep_puts(b, "</h1>\n<p class=\"headline\">");
    esc(b, r->headline);
    ax_rep_puts(b, "</p>\n");
    if (r->note) {
        ax_rep_puts(b, "<p class=\"note\">");
        esc(b, r->note);
        ax_rep_puts(b, "</p>\n");
    }
    ax_rep_puts(b, "<p class=\"muted\">Exact match: the model, prompted with the start of a "
                   "training document, continues it token for token. Lower is better for a "
                   "model meant not to memorize; goldfish loss aims for 0%.</p>\n");
    summary_table(r, b);
    ax_rep_puts(b, "<h2>Charts</h2>\n");
    ax_rep_chart_exact(r, b);
    ax_rep_chart_dup_exact(r, b);
    ax_rep_chart_prefix(r, b);
    ax_rep_chart_spans(r, b);
    ax_rep_chart_loss(r, b);
    ax_rep_chart_dup(r, b);
    ax_rep_html_privacy(r, b);
    ax_rep_html_curves(r, b);
    for (int i = 0; i < r->n_runs; i++) run_section(r, &r->runs[i], b);
    if (r->index) index_section(r->index, b);
    ax_rep_puts(
        b, "<p class=\"muted\">Written by axmem report from the scan files named above. "
           "Intervals are 95%: exact (Clopper-Pearson) for the exact-match rate, bootstrap over "
           "the probed documents for means.</p>\n"
           "</body></html>\n");
}
