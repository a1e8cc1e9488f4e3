/* A report as a neutral document: sections of paragraphs, tables of typed cells and charts with
 * their data. Each section is built once from the loaded scans (section_*.c); render_html.c,
 * render_md.c and render_json.c render any document. Everything a document holds lives in its
 * arena and is freed at once (ax_doc_free). */
#pragma once
#include <stdint.h>

#include "reports/arena.h"
#include "reports/buf.h"

/* A table cell. NUM reads "[count/total = ]value[%] [(lo-hi[%])] [note]" ("n/a" for NaN);
 * JSON writes the value (a fraction even when shown in %), or an object with its interval,
 * count and note. QUOTE is training text or a secret: HTML and Markdown show it, clipped to
 * quote_chars, only when the document's show_quotes is set; JSON always writes it whole. */
enum { AX_CELL_NONE, AX_CELL_TEXT, AX_CELL_QUOTE, AX_CELL_NUM };
typedef struct {
    int kind;
    const char *text;     /* TEXT, QUOTE: the text; NUM: a note after the number, or NULL */
    const char *id;       /* TEXT: a machine name JSON adds beside the text (a score's), or NULL */
    double v, lo, hi;     /* NUM: the value, and its 95% interval when ci */
    int64_t count, total; /* NUM, total > 0: the count the value is the share of */
    int digits;           /* NUM: decimals; negative: that many significant digits */
    int pct, ci;          /* NUM: shown as a percentage; has an interval */
} ax_doc_cell;

static inline ax_doc_cell ax_num(double v, int digits) {
    return (ax_doc_cell){.kind = AX_CELL_NUM, .v = v, .digits = digits};
}
static inline ax_doc_cell ax_pct(double v, int digits) {
    return (ax_doc_cell){.kind = AX_CELL_NUM, .v = v, .digits = digits, .pct = 1};
}
static inline ax_doc_cell ax_ci(ax_doc_cell c, double lo, double hi) {
    c.ci = 1, c.lo = lo, c.hi = hi;
    return c;
}
static inline ax_doc_cell ax_of(ax_doc_cell c, int64_t count, int64_t total) {
    c.count = count, c.total = total;
    return c;
}
/* note: static or arena; read after a space, or straight after the number when it starts
 * with a comma */
static inline ax_doc_cell ax_note(ax_doc_cell c, const char *note) {
    c.text = note;
    return c;
}

typedef struct {
    const char *key, *label; /* key: JSON's name for the column; label: the reader's */
} ax_doc_col;

typedef struct {
    const char *id;
    int n_cols, n_rows;
    size_t cap;
    ax_doc_col *cols;
    ax_doc_cell *cells; /* [n_rows][n_cols] */
    int *flag;          /* [n_rows]: 1 marks a row (e.g. a rise above the previous bound) */
    int row_heads;      /* the first column labels the rows */
    int facts;          /* label / value pairs: row_heads and no header row */
    int show_rows;      /* > 0: HTML and Markdown show the first show_rows rows, JSON all */
} ax_doc_table;

/* A chart's series: a line through (x, y) with optional markers (px, py) and their whiskers
 * (plo, phi); lo / hi: a band under the line. In a bar chart y holds one bar per category (x
 * unused) and lo / hi are whiskers. */
typedef struct {
    const char *name;
    int n, n_pts;
    double *x, *y, *lo, *hi, *px, *py;
    double *plo, *phi; /* [n_pts] or NULL: each marker's 95% interval in y, drawn as a whisker */
} ax_doc_series;

typedef struct {
    const char *id, *title, *xlabel, *ylabel;
    int bars; /* 1: grouped bars over the categories; 0: x/y lines */
    int n_cat;
    const char **cats;
    int n_series;
    size_t cap;
    ax_doc_series *s;
    int xlog, ylog;           /* 0: linear axis; 2 or 10: logarithmic, ticks at powers of it */
    double x0, x1, y0, y1;    /* axis ranges in data units (bars: y only) */
    int percent_x, percent_y; /* tick labels in % (the values are fractions) */
    int color_by_cat;         /* one bar series: each category in its run's colour */
    int dodge;                /* series side by side: nudged apart along a log x axis when drawn */
    int diagonal;             /* dashed y = x: a ROC curve's chance line */
    double vline[2];          /* dotted verticals (e.g. FPR 0.1% and 1%), n_vline of them */
    int n_vline;
    const char *hline_label; /* non-NULL: a dashed horizontal line at hline, labelled */
    double hline;
} ax_doc_chart;

enum { AX_PARA, AX_PARA_MUTED, AX_PARA_NOTE, AX_PARA_WARNING };
enum { AX_BLOCK_PARA, AX_BLOCK_TABLE, AX_BLOCK_CHART };
typedef struct {
    int kind, style; /* style: a paragraph's */
    const char *text;
    ax_doc_table *table;
    ax_doc_chart *chart;
} ax_doc_block;

typedef struct {
    const char *id, *heading;
    int level; /* 2: a section; 3: a part of the one before */
    int n_blocks;
    size_t cap;
    ax_doc_block *b;
} ax_doc_section;

typedef struct {
    const char *title, *conclusion, *headline; /* conclusion: the verdict, read first ("": none) */
    int show_quotes, quote_chars;              /* how HTML and Markdown show QUOTE cells */
    int redacted;                              /* no training text was loaded at all */
    int n_sections;
    size_t cap;
    ax_doc_section *sec;
    ax_arena mem; /* everything above; mem.oom: an allocation failed, the document is partial */
} ax_doc;

void ax_doc_free(ax_doc *d);
/* zeroed memory in the document's arena (NULL and mem.oom set on failure) */
void *ax_doc_alloc(ax_doc *d, size_t n);
double *ax_doc_nums(ax_doc *d, size_t n);
const char *ax_doc_printf(ax_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Blocks go into the last section opened. */
void ax_doc_section_open(ax_doc *d, int level, const char *id, const char *heading);
void ax_doc_para(ax_doc *d, int style, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* cols: n (at most 256) (key, label) pairs, key0, label0, key1, ... (copied) */
ax_doc_table *ax_doc_table_add(ax_doc *d, const char *id, int n, const char *const *cols);
/* the next row's n_cols cells (all NONE); valid until the next row is added */
ax_doc_cell *ax_doc_row(ax_doc *d, ax_doc_table *t);
ax_doc_cell ax_doc_text(ax_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ax_doc_cell ax_doc_quote(ax_doc *d, const char *s); /* NULL: an empty cell */
ax_doc_chart *ax_doc_chart_add(ax_doc *d, const char *id, const char *title);
ax_doc_series *ax_doc_series_add(ax_doc *d, ax_doc_chart *c, const char *name);
/* a linear axis over span: a 1-2-5 step giving about five ticks; the first tick at or just
 * above max (the axis' top, so it ends at a nice number just above the data) */
double ax_doc_axis_step(double span);
double ax_doc_axis_top(double max);

/* A cell as the reader sees it (unescaped; a quote clipped to quote_chars), appended to b;
 * a number without its note unless with_note. */
void ax_doc_cell_text(const ax_doc *d, const ax_doc_cell *c, int with_note, ax_rep_buf *b);
/* What HTML and Markdown show of table t: the rows (the count returned: show_rows or all) and
 * the columns (vis[k] 0: a column of quotes the document hides; *hidden 1 if there is one). */
int ax_doc_shown(const ax_doc *d, const ax_doc_table *t, int vis[256], int *hidden);

/* The renderers: the whole document, or (Markdown) its first n_sections sections. */
void ax_doc_html(const ax_doc *d, ax_rep_buf *b);
void ax_doc_md(const ax_doc *d, int n_sections, ax_rep_buf *b);
void ax_doc_json(const ax_doc *d, ax_rep_buf *b);
