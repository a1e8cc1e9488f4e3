/* The document's builders (all memory in its arena) and how a cell reads. */
#include "reports/doc.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ax_doc_free(ax_doc *d) {
    ax_arena_free(&d->mem);
    memset(d, 0, sizeof *d);
}

void *ax_doc_alloc(ax_doc *d, size_t n) {
    return ax_arena_alloc(&d->mem, n);
}

double *ax_doc_nums(ax_doc *d, size_t n) {
    return ax_arena_alloc(&d->mem, sizeof(double) * (n ? n : 1));
}

const char *ax_doc_printf(ax_doc *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *s = ax_arena_vprintf(&d->mem, fmt, ap);
    va_end(ap);
    return s;
}

/* room for one more element of a growable array of the document; 0 (the array as it was) when
 * out of memory */
static int grow(ax_arena *m, void **a, int n, size_t *cap, size_t size) {
    void *b = ax_arena_grow(m, *a, (size_t)n, cap, size);
    return b ? (*a = b, 1) : 0;
}
#define GROW(d, a, n, cap) grow(&(d)->mem, (void **)&(a), (n), &(cap), sizeof *(a))

void ax_doc_section_open(ax_doc *d, int level, const char *id, const char *heading) {
    if (GROW(d, d->sec, d->n_sections, d->cap))
        d->sec[d->n_sections++] = (ax_doc_section){.id = id, .heading = heading, .level = level};
}

static ax_doc_block *block(ax_doc *d, int kind) {
    if (!d->n_sections) ax_doc_section_open(d, 2, "top", "");
    if (!d->n_sections) return NULL;
    ax_doc_section *s = &d->sec[d->n_sections - 1];
    if (!GROW(d, s->b, s->n_blocks, s->cap)) return NULL;
    s->b[s->n_blocks] = (ax_doc_block){.kind = kind};
    return &s->b[s->n_blocks++];
}

void ax_doc_para(ax_doc *d, int style, const char *fmt, ...) {
    ax_doc_block *b = block(d, AX_BLOCK_PARA);
    if (!b) return;
    va_list ap;
    va_start(ap, fmt);
    b->style = style, b->text = ax_arena_vprintf(&d->mem, fmt, ap);
    va_end(ap);
}

static ax_doc_table dead_table; /* what a builder fills when the arena is out of memory */
static ax_doc_chart dead_chart;
static ax_doc_cell dead_row[256];
static ax_doc_series dead_series;

ax_doc_table *ax_doc_table_add(ax_doc *d, const char *id, int n, const char *const *cols) {
    ax_doc_block *b = block(d, AX_BLOCK_TABLE);
    ax_doc_table *t = ax_doc_alloc(d, sizeof *t);
    ax_doc_col *c = ax_doc_alloc(d, sizeof *c * (size_t)n);
    if (!b || !t || !c || n > 256) return d->mem.oom = 1, memset(&dead_table, 0, sizeof dead_table);
    for (int k = 0; k < n; k++) c[k] = (ax_doc_col){cols[2 * k], cols[2 * k + 1]};
    *t = (ax_doc_table){.id = id, .n_cols = n, .cols = c};
    b->table = t;
    return t;
}

ax_doc_cell *ax_doc_row(ax_doc *d, ax_doc_table *t) {
    size_t cap = t->cap, row = sizeof *t->cells * (size_t)t->n_cols; /* cells grow a row at once */
    ax_doc_cell *c =
        t == &dead_table ? NULL : ax_arena_grow(&d->mem, t->cells, (size_t)t->n_rows, &cap, row);
    int *f = c ? ax_arena_grow(&d->mem, t->flag, (size_t)t->n_rows, &t->cap, sizeof *f) : NULL;
    if (!f) return memset(dead_row, 0, sizeof dead_row);
    t->cells = c, t->flag = f;
    return &t->cells[t->n_rows++ * t->n_cols];
}

ax_doc_cell ax_doc_text(ax_doc *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ax_doc_cell c = {.kind = AX_CELL_TEXT, .text = ax_arena_vprintf(&d->mem, fmt, ap)};
    va_end(ap);
    return c;
}

ax_doc_cell ax_doc_quote(ax_doc *d, const char *s) {
    return (ax_doc_cell){.kind = s ? AX_CELL_QUOTE : AX_CELL_NONE,
                         .text = ax_arena_str(&d->mem, s)};
}

ax_doc_chart *ax_doc_chart_add(ax_doc *d, const char *id, const char *title) {
    ax_doc_block *b = block(d, AX_BLOCK_CHART);
    ax_doc_chart *c = ax_doc_alloc(d, sizeof *c);
    if (!b || !c) return d->mem.oom = 1, memset(&dead_chart, 0, sizeof dead_chart);
    c->id = id, c->title = title;
    b->chart = c;
    return c;
}

ax_doc_series *ax_doc_series_add(ax_doc *d, ax_doc_chart *c, const char *name) {
    if (c == &dead_chart || !GROW(d, c->s, c->n_series, c->cap))
        return memset(&dead_series, 0, sizeof dead_series);
    c->s[c->n_series] = (ax_doc_series){.name = name};
    return &c->s[c->n_series++];
}

double ax_doc_axis_step(double span) {
    if (!(span > 0)) return 1;
    double raw = span / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

double ax_doc_axis_top(double max) {
    return max > 0 ? ceil(max / ax_doc_axis_step(max) - 1e-9) * ax_doc_axis_step(max) : 1;
}

static void number(ax_rep_buf *b, double v, int digits, int pct) {
    if (digits < 0)
        ax_rep_printf(b, "%.*g", -digits, v);
    else
        ax_rep_printf(b, "%.*f", digits, pct ? v * 100 : v);
}

void ax_doc_cell_text(const ax_doc *d, const ax_doc_cell *c, int with_note, ax_rep_buf *b) {
    if (c->kind == AX_CELL_NONE) return ax_rep_puts(b, "-");
    if (c->kind == AX_CELL_TEXT) return ax_rep_puts(b, c->text);
    if (c->kind == AX_CELL_QUOTE) {
        char *clip = ax_rep_clip(c->text, d->quote_chars);
        clip ? ax_rep_puts(b, clip) : (void)(b->oom = 1);
        return free(clip);
    }
    if (c->total > 0) ax_rep_printf(b, "%lld/%lld = ", (long long)c->count, (long long)c->total);
    if (isnan(c->v)) {
        ax_rep_puts(b, "n/a");
    } else {
        number(b, c->v, c->digits, c->pct);
        ax_rep_puts(b, c->pct ? "%" : "");
    }
    if (c->ci) {
        ax_rep_puts(b, " (");
        number(b, c->lo, c->digits, c->pct);
        ax_rep_puts(b, "-");
        number(b, c->hi, c->digits, c->pct);
        ax_rep_puts(b, c->pct ? "%)" : ")");
    }
    if (c->text && with_note) ax_rep_printf(b, "%s%s", c->text[0] == ',' ? "" : " ", c->text);
}

int ax_doc_shown(const ax_doc *d, const ax_doc_table *t, int vis[256], int *hidden) {
    *hidden = 0;
    for (int k = 0; k < t->n_cols; k++) {
        vis[k] = 1;
        for (int i = 0; i < t->n_rows && !d->show_quotes && vis[k]; i++)
            vis[k] = t->cells[i * t->n_cols + k].kind != AX_CELL_QUOTE;
        *hidden |= !vis[k];
    }
    return t->show_rows > 0 && t->show_rows < t->n_rows ? t->show_rows : t->n_rows;
}
