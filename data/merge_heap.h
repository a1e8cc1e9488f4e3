/* BPE's "lowest rank first, leftmost on ties" merging for long chunks (data/tokenizer.c,
 * data/hf/hf_encode.c): doubly linked symbols and a binary min-heap of (merge rank, position).
 * Entries go stale as neighbours merge; an entry's rank is re-checked when it is popped (lazy
 * deletion). Positions only grow left to right, so (rank, pos) order is the leftmost-lowest
 * choice of a scan. */
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

/* The rank of merging (a, b) (UINT32_MAX: none) and the id it makes in *merged. */
typedef uint32_t (*ax_merge_rank_fn)(const void *ctx, int32_t a, int32_t b, int32_t *merged);

/* Merges sym[0..n) in place by rank; returns the new length. links[2n] and heap[3n] are
 * scratch: n - 1 initial pairs and at most two entries per merge. Inlined so that `rank`, a
 * constant at each caller, is inlined too. */
static inline __attribute__((always_inline)) size_t
ax_merge_apply(int32_t *sym, size_t n, uint32_t *links, ax_merge_ent *heap, ax_merge_rank_fn rank,
               const void *ctx) {
    if (n < 2) return n;
    uint32_t *next = links, *prev = links + n, r;
    const uint32_t NONE = UINT32_MAX;
    size_t hn = 0;
    int32_t nw;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : NONE;
        prev[i] = i ? (uint32_t)(i - 1) : NONE;
        if (i + 1 < n && (r = rank(ctx, sym[i], sym[i + 1], &nw)) != NONE)
            ax_merge_push(heap, &hn, (ax_merge_ent){r, (uint32_t)i});
    }
    while (hn) { /* dead symbols get sym = -1 */
        ax_merge_ent e = ax_merge_pop(heap, &hn);
        uint32_t p = e.pos, q = next[p];
        if (sym[p] < 0 || q == NONE || rank(ctx, sym[p], sym[q], &nw) != e.rank) continue;
        sym[p] = nw;
        sym[q] = -1;
        next[p] = next[q];
        if (next[q] != NONE) prev[next[q]] = p;
        if (prev[p] != NONE && (r = rank(ctx, sym[prev[p]], sym[p], &nw)) != NONE)
            ax_merge_push(heap, &hn, (ax_merge_ent){r, prev[p]});
        if (next[p] != NONE && (r = rank(ctx, sym[p], sym[next[p]], &nw)) != NONE)
            ax_merge_push(heap, &hn, (ax_merge_ent){r, p});
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (sym[i] >= 0) sym[m++] = sym[i];
    return m;
}
