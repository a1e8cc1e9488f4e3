/* The memscan hash table: open addressing over 64-byte buckets (one cache line) of 5 entries,
 * probed linearly bucket by bucket. An entry is 12.8 bytes:
 *   tag  u32: bits 32..63 of the window hash; picks the home bucket (so a resize or a load
 *             can place it again) and filters probes
 *   ext  6 bits (in the bucket's spare word): hash bits 26..31, more filtering: within a
 *             bucket the tag's top bits are all alike, so without them a large table would
 *             send many probes to the dataset for nothing
 *   val  u64: first occurrence (global token position, 40 bits) << 24 | count (24 bits,
 *             saturating at AX_MS_COUNT_MAX); val == 0 marks an empty slot.
 * The full hash is not stored: a key match is only a candidate, confirmed by comparing tokens,
 * so the table is exact whatever the hash quality. Filled to ~85%, that is ~15 bytes per
 * distinct window. Entries are never deleted, so a bucket's occupied slots come first. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

#define AX_MS_BUCKET 5
#define AX_MS_COUNT_BITS 24
#define AX_MS_COUNT_MAX ((1ULL << AX_MS_COUNT_BITS) - 1)
#define AX_MS_POS_MAX ((1ULL << 40) - 1)
#define AX_MS_EXT_BITS 6
#define AX_MS_LOAD 0.85     /* fill target when the size is known */
#define AX_MS_LOAD_MAX 0.93 /* grow beyond this */

typedef struct {
    uint64_t val[AX_MS_BUCKET];
    uint32_t tag[AX_MS_BUCKET];
    uint32_t ext; /* slot j: bits [6j, 6j + 6) */
} ax_ms_bucket;

typedef struct {
    uint32_t tag, ext;
} ax_ms_key;

typedef struct {
    ax_ms_bucket *b;
    uint64_t nb;     /* buckets */
    uint64_t n;      /* entries */
    uint64_t n_grow; /* n at which to grow */
} ax_ms_table;

static inline uint64_t ax_ms_val(uint64_t pos, uint64_t count) {
    return pos << AX_MS_COUNT_BITS | count;
}
static inline uint64_t ax_ms_val_pos(uint64_t v) {
    return v >> AX_MS_COUNT_BITS;
}
static inline uint32_t ax_ms_val_count(uint64_t v) {
    return (uint32_t)(v & AX_MS_COUNT_MAX);
}
static inline ax_ms_key ax_ms_key_of(uint64_t h) {
    ax_ms_key k = {(uint32_t)(h >> 32), (uint32_t)(h >> 26) & 63};
    return k;
}
static inline uint64_t ax_ms_home(const ax_ms_table *t, uint32_t tag) {
    return ((uint64_t)tag * t->nb) >> 32; /* fastrange: any bucket count, no division */
}
/* the home bucket and the next: at the fill target a home bucket is often full, and a
 * second miss taken in line would cost as much as the first */
static inline void ax_ms_prefetch(const ax_ms_table *t, uint64_t h) {
    const ax_ms_bucket *b = &t->b[ax_ms_home(t, (uint32_t)(h >> 32))];
    __builtin_prefetch(b, 1, 1);
    __builtin_prefetch(b + 1, 1, 1); /* the table has one spare bucket at the end */
}
static inline uint32_t ax_ms_slot_ext(const ax_ms_bucket *bk, int j) {
    return (bk->ext >> (AX_MS_EXT_BITS * j)) & 63;
}
static inline void ax_ms_slot_set(ax_ms_bucket *bk, int j, ax_ms_key k, uint64_t val) {
    bk->val[j] = val;
    bk->tag[j] = k.tag;
    bk->ext |= k.ext << (AX_MS_EXT_BITS * j);
}

/* Slot masks of one bucket, computed without branches (which slot is free is unpredictable):
 * returns the occupied slots whose key matches; *empty gets the free ones. */
static inline unsigned ax_ms_bucket_match(const ax_ms_bucket *bk, ax_ms_key k, unsigned *empty) {
    unsigned m = 0, e = 0;
    for (int j = 0; j < AX_MS_BUCKET; j++) {
        unsigned occ = bk->val[j] != 0;
        e |= (occ ^ 1u) << j;
        m |= (occ & (bk->tag[j] == k.tag) & (ax_ms_slot_ext(bk, j) == k.ext)) << j;
    }
    *empty = e;
    return m;
}

/* bytes of zeroed memory (mmap: free with munmap), faulted in now: huge pages while the system
 * hands them over fast, else 4 KB pages; NULL (errno set) when out of memory */
void *ax_ms_alloc_populated(size_t bytes);

/* A table sized for `expect` entries at AX_MS_LOAD (populated by ax_ms_alloc_populated). */
ax_status ax_ms_table_init(ax_ms_table *t, uint64_t expect);
void ax_ms_table_free(ax_ms_table *t);
/* Rehash into a table for `expect` entries (>= t->n). */
ax_status ax_ms_table_resize(ax_ms_table *t, uint64_t expect);
size_t ax_ms_table_bytes(const ax_ms_table *t);

/* Adds an entry known to be distinct from all others (loading a saved table, rehashing). */
static inline void ax_ms_table_put_new(ax_ms_table *t, ax_ms_key k, uint64_t val) {
    uint64_t b = ax_ms_home(t, k.tag);
    for (;;) {
        ax_ms_bucket *bk = &t->b[b];
        unsigned em;
        ax_ms_bucket_match(bk, k, &em);
        if (em) {
            ax_ms_slot_set(bk, __builtin_ctz(em), k, val);
            t->n++;
            return;
        }
        if (++b == t->nb) b = 0;
    }
}
