#include "reports/buf.h"
#include "lib/core/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ax_rep_buf_free(ax_rep_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

static int reserve(ax_rep_buf *b, size_t extra) {
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return 0;
    }
    b->s = s, b->cap = cap;
    return 1;
}

static void putn(ax_rep_buf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void ax_rep_puts(ax_rep_buf *b, const char *s) {
    putn(b, s, strlen(s));
}

void ax_rep_printf(ax_rep_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* s with each character of from written as the string at its index in to */
static void escape(ax_rep_buf *b, const char *s, const char *from, const char *const *to) {
    for (; s && *s; s++) {
        const char *hit = strchr(from, *s);
        if (hit)
            ax_rep_puts(b, to[hit - from]);
        else
            putn(b, s, 1);
    }
}

void ax_rep_html(ax_rep_buf *b, const char *s) {
    static const char *const to[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
    escape(b, s, "&<>\"'", to);
}

void ax_rep_md(ax_rep_buf *b, const char *s) {
    /* a newline as U+21B5, so a table cell stays on its line; \r dropped */
    static const char *const to[] = {"&amp;", "&lt;", "\\|", "\\`", "\\\\", "", "\xe2\x86\xb5"};
    escape(b, s, "&<|`\\\r\n", to);
}

char *ax_rep_clip(const char *s, int max_chars) {
    ax_rep_buf b = {0};
    int chars = 0;
    size_t i = 0, n = strlen(s);
    while (i < n && chars < max_chars) {
        unsigned char c = (unsigned char)s[i];
        size_t len;
        if (!ax_utf8_next(s + i, n - i, &len))
            ax_rep_puts(&b, "\xef\xbf\xbd"); /* ill-formed UTF-8: U+FFFD */
        else if (c == '\n')
            ax_rep_puts(&b, "\xe2\x86\xb5");
        else if (c == '\t')
            ax_rep_puts(&b, "\xe2\x86\x92");
        else if (c < 0x20 || c == 0x7f)
            ax_rep_puts(&b, "\xef\xbf\xbd"); /* control: U+FFFD */
        else
            putn(&b, s + i, len);
        i += len, chars++;
    }
    if (i < n) ax_rep_puts(&b, "...");
    if (!b.s) putn(&b, "", 0);
    if (b.oom) {
        ax_rep_buf_free(&b);
        return NULL;
    }
    return b.s;
}
