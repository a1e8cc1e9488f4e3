/* One lifetime for many allocations: everything a report loads (model.h) and builds (doc.h)
 * lives in an arena and is freed at once, so no loader or builder frees anything. */
#pragma once
#include <stdarg.h>
#include <stddef.h>

typedef struct ax_arena_chunk ax_arena_chunk;
typedef struct {
    ax_arena_chunk *head;
    int oom; /* sticky: an allocation failed */
} ax_arena;

void ax_arena_free(ax_arena *a);
/* zeroed memory; NULL (and oom set) on failure */
void *ax_arena_alloc(ax_arena *a, size_t n);
/* room for n + 1 elements of size bytes in an array that holds n (cap: its capacity, doubled
 * when full); the array itself, possibly moved, or NULL on failure */
void *ax_arena_grow(ax_arena *a, void *array, size_t n, size_t *cap, size_t size);
/* a copy of s (NULL: NULL); "" on failure (oom set), so callers need not check */
char *ax_arena_str(ax_arena *a, const char *s);
char *ax_arena_printf(ax_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *ax_arena_vprintf(ax_arena *a, const char *fmt, va_list ap);
