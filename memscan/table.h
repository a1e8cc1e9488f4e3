/* The memscan hash table: open addressing over 64-byte buckets (one cache line) of 5 entries,
 * probed linearly bucket by bucket. An entry is 12 bytes:
 *   tag  u32: the high 32 bits of the window hash (picks the home bucket, filters probes)
 *   val  u64: first occurrence (global token position, 40 bits) << 24 | count (24 bits,
 *             saturating at AX_MS_COUNT_MAX); val == 0 marks an empty slot.
 * The full hash is not stored: a tag match is only a candidate, confirmed by comparing tokens,
 * so the table is exact whatever the hash quality. 12.8 bytes per slot; filled to ~85%, that
 * is ~15 bytes per distinct window. Entries are never deleted. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/status.h"

#define AX_MS_BUCKET 5
#define AX_MS_COUNT_BITS 24
#define AX_MS_COUNT_MAX ((1ULL << AX_MS_COUNT_BITS) - 1)
#define AX_MS_POS_MAX ((1ULL << 40) - 1)
#define AX_MS_LOAD 0.85     /* fill target when the size is known */
#define AX_MS_LOAD_MAX 0.93 /* grow beyond this */

typedef struct {
    uint64_t val[AX_MS_BUCKET];
    uint32_t tag[AX_MS_BUCKET];
    uint32_t pad;
} ax_ms_bucket;

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
static inline uint32_t ax_ms_tag(uint64_t h) {
    return (uint32_t)(h >> 32);
}
static inline uint64_t ax_ms_home(const ax_ms_table *t, uint32_t tag) {
    return ((uint64_t)tag * t->nb) >> 32; /* fastrange: any bucket count, no division */
}
static inline void ax_ms_prefetch(const ax_ms_table *t, uint32_t tag) {
    __builtin_prefetch(&t->b[ax_ms_home(t, tag)], 1, 1);
}

/* A table sized for `expect` entries at AX_MS_LOAD (huge pages requested). */
ax_status ax_ms_table_init(ax_ms_table *t, uint64_t expect);
void ax_ms_table_free(ax_ms_table *t);
/* Rehash into a table for `expect` entries (>= t->n). */
ax_status ax_ms_table_resize(ax_ms_table *t, uint64_t expect);
size_t ax_ms_table_bytes(const ax_ms_table *t);

/* Adds an entry known to be distinct from all others (loading a saved table, rehashing). */
static inline void ax_ms_table_put_new(ax_ms_table *t, uint32_t tag, uint64_t val) {
    uint64_t b = ax_ms_home(t, tag);
    for (;;) {
        ax_ms_bucket *bk = &t->b[b];
        for (int j = 0; j < AX_MS_BUCKET; j++)
            if (bk->val[j] == 0) {
                bk->val[j] = val;
                bk->tag[j] = tag;
                t->n++;
                return;
            }
        if (++b == t->nb) b = 0;
    }
}

/* Probe cursor: walks the slots of tag's run. Returns the next slot holding `tag` (as
 * bucket * AX_MS_BUCKET + j), or the first empty slot with *empty = 1 (the end of the run). */
static inline uint64_t ax_ms_table_next(const ax_ms_table *t, uint32_t tag, uint64_t *cursor,
                                        int *empty) {
    uint64_t s = *cursor;
    uint64_t b = s / AX_MS_BUCKET;
    int j = (int)(s % AX_MS_BUCKET);
    for (;;) {
        const ax_ms_bucket *bk = &t->b[b];
        for (; j < AX_MS_BUCKET; j++) {
            if (bk->val[j] == 0) {
                *empty = 1;
                return b * AX_MS_BUCKET + (uint64_t)j;
            }
            if (bk->tag[j] == tag) {
                *empty = 0;
                uint64_t slot = b * AX_MS_BUCKET + (uint64_t)j;
                *cursor = slot + 1 == t->nb * AX_MS_BUCKET ? 0 : slot + 1;
                return slot;
            }
        }
        j = 0;
        if (++b == t->nb) b = 0;
    }
}
static inline uint64_t ax_ms_table_start(const ax_ms_table *t, uint32_t tag) {
    return ax_ms_home(t, tag) * AX_MS_BUCKET;
}
static inline uint64_t *ax_ms_slot_val(const ax_ms_table *t, uint64_t slot) {
    return &t->b[slot / AX_MS_BUCKET].val[slot % AX_MS_BUCKET];
}
static inline uint32_t *ax_ms_slot_tag(const ax_ms_table *t, uint64_t slot) {
    return &t->b[slot / AX_MS_BUCKET].tag[slot % AX_MS_BUCKET];
}
