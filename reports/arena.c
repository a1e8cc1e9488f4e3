#include "reports/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ax_arena_chunk {
    ax_arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void ax_arena_free(ax_arena *a) {
    for (ax_arena_chunk *c = a->head, *n; c; c = n) n = c->next, free(c);
    a->head = NULL, a->oom = 0;
}

void *ax_arena_alloc(ax_arena *a, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ax_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) { /* a new chunk; a big request gets one of its own */
        size_t cap = n > 65536 ? n : 65536;
        if (a->oom || n > ((size_t)-1) / 2 || !(c = malloc(sizeof *c + cap))) {
            a->oom = 1;
            return NULL;
        }
        *c = (ax_arena_chunk){a->head, 0, cap};
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return memset(p, 0, n);
}

void *ax_arena_grow(ax_arena *a, void *array, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return array;
    size_t c = *cap ? *cap * 2 : 16;
    void *b = c < ((size_t)-1) / 2 / size ? ax_arena_alloc(a, size * c) : NULL;
    if (!b) return a->oom = 1, NULL;
    if (n) memcpy(b, array, size * n);
    *cap = c;
    return b;
}

char *ax_arena_str(ax_arena *a, const char *s) {
    return s ? ax_arena_printf(a, "%s", s) : NULL;
}

char *ax_arena_vprintf(ax_arena *a, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = n < 0 ? NULL : ax_arena_alloc(a, (size_t)n + 1);
    if (!s) return a->oom = 1, (char *)"";
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *ax_arena_printf(ax_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = ax_arena_vprintf(a, fmt, ap);
    va_end(ap);
    return s;
}
