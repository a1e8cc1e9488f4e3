/* What the sections share: score names, facts tables, bar charts of counts. */
#include "reports/sections.h"

#include <math.h>
#include <string.h>

const char *ax_rep_score_name(const char *id) {
    static const char *const map[][2] = {{"loss", "loss"},
                                         {"zlib", "zlib ratio"},
                                         {"min_k", "min-k% prob"},
                                         {"min_k_pp", "min-k%++"},
                                         {"ref", "loss difference to reference model"},
                                         {"ref_ratio", "loss ratio to reference model"},
                                         {"zlib_bpb", "zlib bits per byte of the text"},
                                         {"length", "length in tokens"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(id, map[i][0])) return map[i][1];
    return id;
}

const ax_rep_mia_score *ax_rep_strongest(const ax_rep_mia *m) {
    int best = 0;
    for (int k = 1; k < m->n_score; k++)
        if (m->score[k].auc > m->score[best].auc) best = k;
    return &m->score[best];
}

ax_doc_table *ax_rep_facts(ax_doc *d, const char *id) {
    static const char *const cols[] = {"label", "", "value", ""};
    ax_doc_table *t = ax_doc_table_add(d, id, 2, cols);
    t->facts = 1;
    return t;
}

void ax_rep_fact(ax_doc *d, ax_doc_table *t, const char *label, ax_doc_cell v) {
    ax_doc_cell *c = ax_doc_row(d, t);
    c[0] = (ax_doc_cell){.kind = AX_CELL_TEXT, .text = label}, c[1] = v;
}

ax_doc_table *ax_rep_run_part(ax_doc *d, const ax_rep_run *run, const char *kind, const char *what,
                              const char *file) {
    const char *id = ax_doc_printf(d, "%s-%s", kind, run->label);
    ax_doc_section_open(d, 3, id, ax_doc_printf(d, "%s: %s", run->label, what));
    ax_doc_table *t = ax_rep_facts(d, id);
    if (file) ax_rep_fact(d, t, "file", ax_doc_text(d, "%s", file));
    return t;
}

void ax_rep_count_axis(ax_doc_chart *c) {
    double lo = INFINITY, hi = 0;
    for (int s = 0; s < c->n_series; s++)
        for (int k = 0; k < c->n_cat; k++)
            if (c->s[s].y[k] > 0) lo = fmin(lo, c->s[s].y[k]), hi = fmax(hi, c->s[s].y[k]);
    c->ylog = isfinite(lo) && hi >= 100 * lo ? 10 : 0;
    c->y0 = c->ylog ? pow(10, log10(lo) - 0.5) : 0;
    c->y1 = c->ylog ? pow(10, ceil(log10(hi) + 1e-9)) : ax_doc_axis_top(hi);
}

ax_doc_chart *ax_rep_bars(ax_doc *d, const char *id, const char *title, int n_cat,
                          const char *const *names, int n_series) {
    ax_doc_chart *c = ax_doc_chart_add(d, id, title);
    double *v = ax_doc_nums(d, (size_t)(n_cat * n_series));
    c->cats = ax_doc_alloc(d, sizeof *c->cats * (size_t)(n_cat ? n_cat : 1));
    if (!v || !c->cats) return NULL;
    c->bars = 1, c->n_cat = n_cat;
    for (int s = 0; s < n_series; s++) ax_doc_series_add(d, c, names[s])->y = v + s * n_cat;
    return d->mem.oom ? NULL : c;
}
