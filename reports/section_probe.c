/* Extraction (prompted with training text), the goldfish audit and regurgitation (free
 * generations): charts across the runs, then each run's details. */
#include "reports/sections.h"

#include <math.h>
#include <string.h>

/* the runs that have a probe (want 0), a probe with an audit (1) or a regurgitation scan (2) */
static int runs_with(const ax_report *r, int want, const ax_rep_run **out) {
    int n = 0;
    for (int i = 0; i < r->n_runs; i++) {
        const ax_rep_run *run = &r->runs[i];
        if (want == 0   ? !!run->probe
            : want == 1 ? run->probe && run->probe->audited
                        : !!run->regurg)
            out[n++] = run;
    }
    return n;
}

static void exact_chart(ax_doc *d, const ax_rep_run **rs, int n) {
    const char *name = "exact match";
    ax_doc_chart *c =
        ax_rep_bars(d, "chart-exact",
                    "Exact-match rate (95% CI): probed documents reproduced verbatim", n, &name, 1);
    double *ci = ax_doc_nums(d, 2 * (size_t)n);
    if (!c || !ci) return;
    c->xlabel = "run", c->ylabel = "exact match", c->percent_y = 1, c->color_by_cat = 1;
    c->y1 = 1, c->s[0].lo = ci, c->s[0].hi = ci + n;
    for (int k = 0; k < n; k++) {
        const ax_rep_stat *e = &rs[k]->probe->exact;
        c->cats[k] = rs[k]->label, c->s[0].y[k] = e->mean, ci[k] = e->lo, ci[n + k] = e->hi;
    }
}

/* probes and exact matches per duplication bucket: the first run's buckets, matched by label */
static void dup_chart(ax_doc *d, const ax_rep_run **rs, int n) {
    const ax_rep_probe *first = NULL;
    const char **names = ax_doc_alloc(d, sizeof *names * 2 * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; names && i < n; i++) {
        if (!rs[i]->probe->n_dup) continue;
        first = first ? first : rs[i]->probe;
        names[m++] = ax_doc_printf(d, "%s probes", rs[i]->label);
        names[m++] = ax_doc_printf(d, "%s exact matches", rs[i]->label);
    }
    ax_doc_chart *c = first ? ax_rep_bars(d, "chart-dup-exact",
                                          "Exact match by duplication: probes and exact matches "
                                          "per bucket",
                                          first->n_dup, names, m)
                            : NULL;
    if (!c) return;
    c->xlabel = "occurrences of the probed window in the training set", c->ylabel = "documents";
    for (int q = 0; q < first->n_dup; q++) c->cats[q] = first->dup[q].bucket;
    for (int i = 0, s = 0; i < n; i++) {
        const ax_rep_probe *p = rs[i]->probe;
        for (int j = 0; j < p->n_dup; j++)
            for (int q = 0; q < c->n_cat; q++)
                if (!strcmp(p->dup[j].bucket, c->cats[q])) {
                    double ns = (double)p->dup[j].samples;
                    c->s[s].y[q] = ns, c->s[s + 1].y[q] = round(ns * p->dup[j].exact_match_rate);
                }
        s += p->n_dup ? 2 : 0;
    }
    ax_rep_count_axis(c);
    if (c->ylog) c->ylabel = "documents (log scale)";
}

/* the share of probes by matched-prefix length: runs of different sizes compare */
static void prefix_chart(ax_doc *d, const ax_rep_run **rs, int n) {
    int bins = 0;
    const char **names = ax_doc_alloc(d, sizeof *names * (size_t)(n ? n : 1));
    for (int i = 0; names && i < n; i++) {
        names[i] = rs[i]->label;
        bins = rs[i]->probe->n_mp_hist > bins ? rs[i]->probe->n_mp_hist : bins;
    }
    ax_doc_chart *c =
        bins ? ax_rep_bars(d, "chart-prefix",
                           "Matched prefix: tokens reproduced before the first mistake", bins,
                           names, n)
             : NULL;
    if (!c) return;
    c->xlabel = "matched-prefix length (tokens; the last bar = exact match)";
    c->ylabel = "share of probes", c->percent_y = 1;
    double top = 0;
    for (int j = 0; j < bins; j++) c->cats[j] = ax_doc_printf(d, "%d", j);
    for (int i = 0; i < n; i++) {
        const ax_rep_probe *p = rs[i]->probe;
        for (int j = 0; j < p->n_mp_hist; j++) {
            c->s[i].y[j] = p->n ? (double)p->mp_hist[j] / (double)p->n : 0;
            top = top > c->s[i].y[j] ? top : c->s[i].y[j];
        }
    }
    c->y1 = ax_doc_axis_top(top);
}

static void probe_details(ax_doc *d, const ax_report *r, const ax_rep_run *run) {
    const ax_rep_probe *p = run->probe;
    ax_doc_table *t = ax_rep_run_part(d, run, "probe", "extraction probe", p->file);
    ax_rep_fact(d, t, "setup",
                ax_doc_text(d,
                            "%lld documents; prompt = first %lld tokens, greedy %lld-token "
                            "continuation compared with the true one",
                            (long long)p->n, (long long)p->prefix, (long long)p->suffix));
    ax_rep_fact(d, t, "exact match",
                ax_of(ax_ci(ax_pct(p->exact.mean, 1), p->exact.lo, p->exact.hi), p->n_exact, p->n));
    ax_rep_fact(d, t, "token accuracy",
                ax_ci(ax_num(p->tok_acc.mean, 3), p->tok_acc.lo, p->tok_acc.hi));
    ax_rep_fact(d, t, "RougeL", ax_ci(ax_num(p->rouge_l.mean, 3), p->rouge_l.lo, p->rouge_l.hi));
    ax_rep_fact(
        d, t, "matched prefix (mean)",
        ax_note(ax_num(p->mp_mean, 2), ax_doc_printf(d, "of %lld tokens", (long long)p->suffix)));
    if (p->n_dup) {
        static const char *const cols[] = {"occurrences", "occurrences", "probes",
                                           "probes",      "exact_match", "exact match"};
        ax_doc_para(d, AX_PARA,
                    "Exact match by how often the probed window occurs in the training set:");
        t = ax_doc_table_add(d, ax_doc_printf(d, "by-duplication-%s", run->label), 3, cols);
        for (int k = 0; k < p->n_dup; k++) {
            ax_doc_cell *c = ax_doc_row(d, t);
            c[0] = ax_doc_text(d, "%s", p->dup[k].bucket);
            c[1] = ax_num((double)p->dup[k].samples, 0),
            c[2] = ax_pct(p->dup[k].exact_match_rate, 1);
        }
    }
    if (!p->n_top) return;
    int text = 0;
    for (int k = 0; k < p->n_top; k++) text |= p->top[k].truth_text || p->top[k].generated_text;
    const char *cols[] = {"rank",
                          "#",
                          "doc",
                          "doc",
                          "offset",
                          "offset",
                          "matched_prefix",
                          "matched prefix",
                          "exact",
                          "exact",
                          "token_accuracy",
                          "token acc.",
                          "truth_text",
                          ax_doc_printf(d, "true continuation (first %d chars)", r->text_chars),
                          "generated_text",
                          "model output"};
    ax_doc_para(d, AX_PARA, "Most memorized probes (of %lld in %s):", (long long)p->n_sample_rows,
                p->samples_file);
    t = ax_doc_table_add(d, ax_doc_printf(d, "top-samples-%s", run->label), text ? 8 : 6, cols);
    for (int k = 0; k < p->n_top; k++) {
        const ax_rep_sample *s = &p->top[k];
        ax_doc_cell *c = ax_doc_row(d, t);
        c[0] = ax_num(k + 1, 0), c[1] = ax_num((double)s->doc, 0),
        c[2] = ax_num((double)s->offset, 0);
        c[3] = ax_num((double)s->matched_prefix, 0),
        c[4] = ax_doc_text(d, "%s", s->exact ? "yes" : "no");
        c[5] = ax_num(s->token_accuracy, 3);
        if (text) c[6] = ax_doc_quote(d, s->truth_text), c[7] = ax_doc_quote(d, s->generated_text);
    }
}

/* where greedy output first went wrong, against the positions goldfish loss dropped */
static void audit(ax_doc *d, const ax_rep_run **rs, int n) {
    static const char *const cols[] = {"run",        "run",
                                       "goldfish",   "goldfish",
                                       "diverged",   "probes not reproduced",
                                       "on_dropped", "first divergence on a dropped position",
                                       "chance",     "positions dropped (chance level)"};
    static const char *const names[] = {"first divergences on a dropped position",
                                        "suffix positions dropped (chance level)"};
    ax_doc_section_open(d, 2, "goldfish-audit",
                        "Goldfish audit: where greedy output first diverges");
    ax_doc_para(d, AX_PARA_MUTED,
                "Goldfish loss leaves some target tokens out of training. On each probe the model "
                "does not reproduce, the audit asks whether greedy decoding first went wrong on a "
                "position the loss dropped. If goldfish is what stops the copying, first "
                "divergences land on dropped positions far more often than the share of positions "
                "dropped.");
    ax_doc_table *t = ax_doc_table_add(d, "goldfish-audit", 5, cols);
    ax_doc_chart *c = ax_rep_bars(d, "chart-goldfish-audit",
                                  "Goldfish audit: first divergences on dropped positions against "
                                  "chance",
                                  n, names, 2);
    for (int i = 0; i < n; i++) {
        const ax_rep_probe *p = rs[i]->probe;
        double share = p->diverged ? (double)p->on_dropped / (double)p->diverged : 0;
        ax_doc_cell *row = ax_doc_row(d, t);
        row[0] = ax_doc_text(d, "%s", rs[i]->label), row[1] = ax_doc_text(d, "%s", p->id.goldfish);
        row[2] = ax_num((double)p->diverged, 0);
        row[3] = ax_of(ax_pct(share, 1), p->on_dropped, p->diverged);
        row[4] = ax_pct(p->dropped_fraction, 1);
        if (c) c->cats[i] = rs[i]->label, c->s[0].y[i] = share, c->s[1].y[i] = p->dropped_fraction;
    }
    if (c) c->xlabel = "run", c->ylabel = "share", c->percent_y = 1, c->y1 = 1;
}

static void spans_chart(ax_doc *d, const ax_rep_run **rs, int n) {
    const ax_rep_regurg *first = NULL;
    const char **names = ax_doc_alloc(d, sizeof *names * (size_t)(n ? n : 1));
    for (int i = 0; names && i < n; i++) {
        names[i] = rs[i]->label;
        if (!first && rs[i]->regurg->n_hist) first = rs[i]->regurg;
    }
    ax_doc_chart *c =
        first ? ax_rep_bars(d, "chart-spans", "Longest verbatim span in free generations",
                            first->n_hist, names, n)
              : NULL;
    if (!c) return;
    c->xlabel = ax_doc_printf(d, "longest verbatim training span per generation (n = %lld tokens)",
                              (long long)first->n);
    c->ylabel = "share of generations", c->percent_y = 1, c->y1 = 1;
    for (int q = 0; q < first->n_hist; q++) c->cats[q] = first->hist_labels[q];
    for (int i = 0; i < n; i++) { /* the first run's buckets; others matched by label */
        const ax_rep_regurg *g = rs[i]->regurg;
        int64_t total = 0;
        for (int j = 0; j < g->n_hist; j++) total += g->hist[j];
        for (int j = 0; j < g->n_hist; j++)
            for (int q = 0; q < c->n_cat; q++)
                if (!strcmp(g->hist_labels[j], c->cats[q]))
                    c->s[i].y[q] = total ? (double)g->hist[j] / (double)total : 0;
    }
}

static void regurg_details(ax_doc *d, const ax_rep_run *run) {
    const ax_rep_regurg *g = run->regurg;
    int64_t hit, total;
    ax_rep_regurg_counts(g, &hit, &total);
    ax_doc_table *t = ax_rep_run_part(d, run, "regurgitation", "regurgitation scan", g->file);
    ax_rep_fact(d, t, "setup",
                ax_doc_text(d,
                            "%lld free generations of %lld tokens, slid over a %lld-token index "
                            "of the training set",
                            (long long)g->samples, (long long)g->length, (long long)g->n));
    ax_rep_fact(d, t, "with a verbatim training span", ax_of(ax_pct(g->frac_span, 1), hit, total));
    ax_rep_fact(d, t, "longest span (mean)",
                ax_note(ax_num(g->mean_span, 1),
                        ax_doc_printf(d, "tokens, max %lld", (long long)g->max_span)));
    ax_rep_buf h = {0};
    for (int k = 0; k < g->n_hist; k++)
        ax_rep_printf(&h, "%s%s: %lld", k ? ", " : "", g->hist_labels[k], (long long)g->hist[k]);
    if (g->n_hist)
        ax_rep_fact(d, t, "longest-span histogram", ax_doc_text(d, "%s", h.s ? h.s : ""));
    d->mem.oom |= h.oom;
    ax_rep_buf_free(&h);
}

void ax_rep_section_probe(ax_doc *d, const ax_report *r) {
    const ax_rep_run **rs = ax_doc_alloc(d, sizeof *rs * (size_t)(r->n_runs ? r->n_runs : 1));
    int n = rs ? runs_with(r, 0, rs) : 0;
    if (n) {
        ax_doc_section_open(d, 2, "extraction", "Extraction: prompted with training text");
        ax_doc_para(d, AX_PARA_MUTED,
                    "Each probe prompts the model with the start of a training document and "
                    "compares its greedy continuation with the true one. Intervals are 95%%: "
                    "exact (Clopper-Pearson) for the exact-match rate, bootstrap over the probed "
                    "documents for means.");
        exact_chart(d, rs, n);
        dup_chart(d, rs, n);
        prefix_chart(d, rs, n);
        for (int i = 0; i < n; i++) probe_details(d, r, rs[i]);
    }
    if (rs && (n = runs_with(r, 1, rs))) audit(d, rs, n);
    if (rs && (n = runs_with(r, 2, rs))) {
        ax_doc_section_open(d, 2, "regurgitation", "Regurgitation: free generations");
        ax_doc_para(d, AX_PARA_MUTED,
                    "Generations from no prompt, slid over an index of the training set: the "
                    "longest run of tokens each shares verbatim with the training data.");
        spans_chart(d, rs, n);
        for (int i = 0; i < n; i++) regurg_details(d, rs[i]);
    }
}
