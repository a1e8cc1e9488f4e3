/* The document's arena, its builders and how a cell reads. */
#include "reports/doc.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ax_doc_chunk {
    ax_doc_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void ax_doc_free(ax_doc *d) {
    for (ax_doc_chunk *c = d->arena, *n; c; c = n) n = c->next, free(c);
    memset(d, 0, sizeof *d);
}

void *ax_doc_alloc(ax_doc *d, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ax_doc_chunk *c = d->arena;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (d->oom || !(c = malloc(sizeof *c + cap))) {
            d->oom = 1;
            return NULL;
        }
        *c = (ax_doc_chunk){d->arena, 0, cap};
        d->arena = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return memset(p, 0, n);
}

double *ax_doc_nums(ax_doc *d, size_t n) {
    return ax_doc_alloc(d, sizeof(double) * (n ? n : 1));
}

static const char *vprintf_(ax_doc *d, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = n < 0 ? NULL : ax_doc_alloc(d, (size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s ? s : "";
}

const char *ax_doc_printf(ax_doc *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *s = vprintf_(d, fmt, ap);
    va_end(ap);
    return s;
}

/* room for one more element of a growable array held in the arena */
static void *grow(ax_doc *d, void *a, int n, int *cap, size_t size) {
    if (n < *cap) return a;
    int c = *cap ? *cap * 2 : 8;
    void *b = ax_doc_alloc(d, size * (size_t)c);
    if (!b) return a;
    if (n) memcpy(b, a, size * (size_t)n);
    *cap = c;
    return b;
}

void ax_doc_section_open(ax_doc *d, int level, const char *id, const char *heading) {
    d->sec = grow(d, d->sec, d->n_sections, &d->cap, sizeof *d->sec);
    if (d->n_sections < d->cap)
        d->sec[d->n_sections++] = (ax_doc_section){.id = id, .heading = heading, .level = level};
}

static ax_doc_block *block(ax_doc *d, int kind) {
    if (!d->n_sections) ax_doc_section_open(d, 2, "top", "");
    if (!d->n_sections) return NULL;
    ax_doc_section *s = &d->sec[d->n_sections - 1];
    s->b = grow(d, s->b, s->n_blocks, &s->cap, sizeof *s->b);
    if (s->n_blocks == s->cap) return NULL;
    s->b[s->n_blocks] = (ax_doc_block){.kind = kind};
    return &s->b[s->n_blocks++];
}

void ax_doc_para(ax_doc *d, int style, const char *fmt, ...) {
    ax_doc_block *b = block(d, AX_BLOCK_PARA);
    if (!b) return;
    va_list ap;
    va_start(ap, fmt);
    b->style = style, b->text = vprintf_(d, fmt, ap);
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
    if (!b || !t || !c || n > 256) return d->oom = 1, memset(&dead_table, 0, sizeof dead_table);
    for (int k = 0; k < n; k++) c[k] = (ax_doc_col){cols[2 * k], cols[2 * k + 1]};
    *t = (ax_doc_table){.id = id, .n_cols = n, .cols = c};
    b->table = t;
    return t;
}

ax_doc_cell *ax_doc_row(ax_doc *d, ax_doc_table *t) {
    if (t != &dead_table && t->n_rows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 8;
        ax_doc_cell *c = ax_doc_alloc(d, sizeof *c * (size_t)(cap * t->n_cols));
        int *f = ax_doc_alloc(d, sizeof *f * (size_t)cap);
        if (c && f) {
            if (t->n_rows) memcpy(c, t->cells, sizeof *c * (size_t)(t->n_rows * t->n_cols));
            if (t->n_rows) memcpy(f, t->flag, sizeof *f * (size_t)t->n_rows);
            t->cells = c, t->flag = f, t->cap = cap;
        }
    }
    if (t == &dead_table || t->n_rows == t->cap) return memset(dead_row, 0, sizeof dead_row);
    return &t->cells[t->n_rows++ * t->n_cols];
}

ax_doc_cell ax_doc_text(ax_doc *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ax_doc_cell c = {.kind = AX_CELL_TEXT, .text = vprintf_(d, fmt, ap)};
    va_end(ap);
    return c;
}

ax_doc_cell ax_doc_quote(ax_doc *d, const char *s) {
    return (ax_doc_cell){.kind = s ? AX_CELL_QUOTE : AX_CELL_NONE,
                         .text = s ? ax_doc_printf(d, "%s", s) : NULL};
}

ax_doc_chart *ax_doc_chart_add(ax_doc *d, const char *id, const char *title) {
    ax_doc_block *b = block(d, AX_BLOCK_CHART);
    ax_doc_chart *c = ax_doc_alloc(d, sizeof *c);
    if (!b || !c) return d->oom = 1, memset(&dead_chart, 0, sizeof dead_chart);
    c->id = id, c->title = title;
    b->chart = c;
    return c;
}

ax_doc_series *ax_doc_series_add(ax_doc *d, ax_doc_chart *c, const char *name) {
    if (c != &dead_chart) c->s = grow(d, c->s, c->n_series, &c->cap, sizeof *c->s);
    if (c == &dead_chart || c->n_series == c->cap)
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

int ax_doc_quote_col(const ax_doc_table *t, int k) {
    for (int i = 0; i < t->n_rows; i++)
        if (t->cells[i * t->n_cols + k].kind == AX_CELL_QUOTE) return 1;
    return 0;
}
