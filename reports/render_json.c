/* A document as JSON (schema axmem-report v2) for tools: every section's blocks in order, a
 * table's rows as objects keyed by its columns' keys, a chart with its data. Numbers are the
 * values themselves (rates as fractions), quotes whole: this is what a tool compares over
 * time, not what a reader scans. */
#include "lib/core/json.h"
#include "reports/doc.h"

static void nums(ax_jw *w, const char *key, const double *v, int n) {
    if (!v) return;
    ax_jw_key(w, key);
    ax_jw_arr_begin(w);
    for (int i = 0; i < n; i++) ax_jw_num(w, v[i]);
    ax_jw_arr_end(w);
}

static void cell(ax_jw *w, const ax_doc_cell *c) {
    if (c->kind == AX_CELL_NONE) return ax_jw_null(w);
    if (c->kind != AX_CELL_NUM && !c->id) return ax_jw_str(w, c->text);
    if (c->kind == AX_CELL_NUM && !c->ci && !c->total && !c->text) return ax_jw_num(w, c->v);
    ax_jw_obj_begin(w);
    if (c->id) ax_jw_key(w, "id"), ax_jw_str(w, c->id);
    if (c->kind != AX_CELL_NUM) ax_jw_key(w, "text"), ax_jw_str(w, c->text);
    if (c->kind == AX_CELL_NUM) ax_jw_key(w, "value"), ax_jw_num(w, c->v);
    if (c->ci) nums(w, "ci95", (const double[]){c->lo, c->hi}, 2);
    if (c->total) ax_jw_key(w, "count"), ax_jw_int(w, c->count);
    if (c->total) ax_jw_key(w, "total"), ax_jw_int(w, c->total);
    if (c->kind == AX_CELL_NUM && c->text) ax_jw_key(w, "note"), ax_jw_str(w, c->text);
    ax_jw_obj_end(w);
}

static void table(ax_jw *w, const ax_doc_table *t) {
    ax_jw_key(w, "type"), ax_jw_str(w, t->facts ? "facts" : "table");
    ax_jw_key(w, "id"), ax_jw_str(w, t->id);
    if (t->facts) { /* one object: label -> value */
        ax_jw_key(w, "facts");
        ax_jw_obj_begin(w);
        for (int i = 0; i < t->n_rows; i++)
            ax_jw_key(w, t->cells[i * t->n_cols].text), cell(w, &t->cells[i * t->n_cols + 1]);
        return ax_jw_obj_end(w);
    }
    ax_jw_key(w, "columns");
    ax_jw_obj_begin(w);
    for (int k = 0; k < t->n_cols; k++)
        ax_jw_key(w, t->cols[k].key), ax_jw_str(w, t->cols[k].label);
    ax_jw_obj_end(w);
    ax_jw_key(w, "rows");
    ax_jw_arr_begin(w);
    for (int i = 0; i < t->n_rows; i++) {
        ax_jw_obj_begin(w);
        for (int k = 0; k < t->n_cols; k++)
            ax_jw_key(w, t->cols[k].key), cell(w, &t->cells[i * t->n_cols + k]);
        if (t->flag[i]) ax_jw_key(w, "flagged"), ax_jw_bool(w, 1);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
}

static void axis(ax_jw *w, const char *key, const char *label, int log, double v0, double v1,
                 int percent) {
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "label"), ax_jw_str(w, label);
    ax_jw_key(w, "log_base"), ax_jw_int(w, log);
    nums(w, "range", (const double[]){v0, v1}, 2);
    ax_jw_key(w, "percent"), ax_jw_bool(w, percent);
    ax_jw_obj_end(w);
}

static void chart(ax_jw *w, const ax_doc_chart *c) {
    ax_jw_key(w, "type"), ax_jw_str(w, c->bars ? "bar_chart" : "line_chart");
    ax_jw_key(w, "id"), ax_jw_str(w, c->id);
    ax_jw_key(w, "title"), ax_jw_str(w, c->title);
    if (c->bars) {
        ax_jw_key(w, "x_label"), ax_jw_str(w, c->xlabel);
        ax_jw_key(w, "categories");
        ax_jw_arr_begin(w);
        for (int k = 0; k < c->n_cat; k++) ax_jw_str(w, c->cats[k]);
        ax_jw_arr_end(w);
    } else {
        axis(w, "x_axis", c->xlabel, c->xlog, c->x0, c->x1, c->percent_x);
    }
    axis(w, "y_axis", c->ylabel, c->ylog, c->y0, c->y1, c->percent_y);
    if (c->hline_label) {
        ax_jw_key(w, "reference_line");
        ax_jw_obj_begin(w);
        ax_jw_key(w, "y"), ax_jw_num(w, c->hline);
        ax_jw_key(w, "label"), ax_jw_str(w, c->hline_label);
        ax_jw_obj_end(w);
    }
    ax_jw_key(w, "series");
    ax_jw_arr_begin(w);
    for (int k = 0; k < c->n_series; k++) {
        const ax_doc_series *s = &c->s[k];
        int n = c->bars ? c->n_cat : s->n;
        ax_jw_obj_begin(w);
        ax_jw_key(w, "name"), ax_jw_str(w, s->name);
        nums(w, "x", c->bars ? NULL : s->x, n);
        nums(w, "y", s->y, n);
        nums(w, c->bars ? "ci95_lo" : "band_lo", s->lo, n);
        nums(w, c->bars ? "ci95_hi" : "band_hi", s->hi, n);
        nums(w, "points_x", s->px, s->n_pts);
        nums(w, "points_y", s->py, s->n_pts);
        nums(w, "points_ci95_lo", s->plo, s->n_pts);
        nums(w, "points_ci95_hi", s->phi, s->n_pts);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
}

void ax_doc_json(const ax_doc *d, ax_rep_buf *b) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "schema"), ax_jw_str(&w, "axmem-report");
    ax_jw_key(&w, "version"), ax_jw_int(&w, 2);
    ax_jw_key(&w, "title"), ax_jw_str(&w, d->title);
    ax_jw_key(&w, "conclusion"), ax_jw_str(&w, d->conclusion);
    ax_jw_key(&w, "headline"), ax_jw_str(&w, d->headline);
    ax_jw_key(&w, "redacted"), ax_jw_bool(&w, d->redacted);     /* no training text anywhere */
    ax_jw_key(&w, "show_text"), ax_jw_bool(&w, d->show_quotes); /* HTML and Markdown quote it */
    ax_jw_key(&w, "sections");
    ax_jw_arr_begin(&w);
    for (int i = 0; i < d->n_sections; i++) {
        const ax_doc_section *s = &d->sec[i];
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "id"), ax_jw_str(&w, s->id);
        ax_jw_key(&w, "heading"), ax_jw_str(&w, s->heading);
        ax_jw_key(&w, "level"), ax_jw_int(&w, s->level);
        ax_jw_key(&w, "blocks");
        ax_jw_arr_begin(&w);
        for (int j = 0; j < s->n_blocks; j++) {
            const ax_doc_block *k = &s->b[j];
            static const char *const style[] = {"text", "muted", "note", "warning"};
            ax_jw_obj_begin(&w);
            if (k->kind == AX_BLOCK_PARA) {
                ax_jw_key(&w, "type"), ax_jw_str(&w, "paragraph");
                ax_jw_key(&w, "style"), ax_jw_str(&w, style[k->style]);
                ax_jw_key(&w, "text"), ax_jw_str(&w, k->text);
            } else if (k->kind == AX_BLOCK_TABLE) {
                table(&w, k->table);
            } else {
                chart(&w, k->chart);
            }
            ax_jw_obj_end(&w);
        }
        ax_jw_arr_end(&w);
        ax_jw_obj_end(&w);
    }
    ax_jw_arr_end(&w);
    ax_jw_obj_end(&w);
    if (ax_jw_text(&w))
        ax_rep_puts(b, ax_jw_text(&w)), ax_rep_puts(b, "\n");
    else
        b->oom = 1;
    ax_jw_free(&w);
}
