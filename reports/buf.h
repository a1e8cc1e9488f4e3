/* A growable text buffer with printf, and the escapings the report writers need. */
#pragma once
#include <stddef.h>

typedef struct {
    char *s;
    size_t len, cap;
    int oom; /* sticky allocation failure: checked once, when the text is written out */
} ax_rep_buf;

void ax_rep_buf_free(ax_rep_buf *b);
void ax_rep_puts(ax_rep_buf *b, const char *s);
void ax_rep_printf(ax_rep_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* HTML text/attribute escaping (& < > " '). */
void ax_rep_html(ax_rep_buf *b, const char *s);
/* A Markdown table cell: | and ` escaped, < > & as entities (renderers pass raw HTML),
 * newlines shown as a return symbol so a cell stays on one line. */
void ax_rep_md(ax_rep_buf *b, const char *s);
/* At most max_chars UTF-8 characters of s (never a split sequence; ill-formed bytes become
 * U+FFFD), newlines and tabs as visible symbols, "..." appended when cut. Returns a malloc'd
 * string (NULL on OOM). */
char *ax_rep_clip(const char *s, int max_chars);
