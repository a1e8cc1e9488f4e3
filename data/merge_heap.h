/* A binary min-heap of (merge rank, position) pairs: BPE's "lowest rank first, leftmost on
 * ties" order for long chunks (data/tokenizer.c, data/hf/hf_encode.c). Entries go stale as
 * neighbours merge; callers re-check an entry's rank when they pop it (lazy deletion). */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t rank, pos;
} ax_merge_ent;

static inline int ax_merge_less(ax_merge_ent x, ax_merge_ent y) {
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

/* h[0..*n) is a heap with room for one more entry */
static inline void ax_merge_push(ax_merge_ent *h, size_t *n, ax_merge_ent e) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ax_merge_less(e, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

/* the least entry of a non-empty heap, removed */
static inline ax_merge_ent ax_merge_pop(ax_merge_ent *h, size_t *n) {
    ax_merge_ent top = h[0], e = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && ax_merge_less(h[c + 1], h[c])) c++;
        if (!ax_merge_less(h[c], e)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = e;
    return top;
}
