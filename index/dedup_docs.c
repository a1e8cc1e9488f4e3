/* Exact duplicate documents (index/dedup_docs.h): hash, sort by hash, confirm by tokens. */
#include "index/dedup_docs.h"
#include "index/hash.h"
#include "lib/dist/comm.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef struct {
    uint64_t h, d;
} doc_key;

static int by_hash_doc(const void *x, const void *y) {
    const doc_key *a = x, *b = y;
    if (a->h != b->h) return a->h < b->h ? -1 : 1;
    return (a->d > b->d) - (a->d < b->d);
}

/* XXH3 of the document's tokens as little-endian int32 (as windows are hashed) */
static uint64_t doc_hash(const ax_axd_t *ds, uint64_t s, uint64_t e, uint64_t seed, int bits,
                         XXH3_state_t *st, int32_t *buf, size_t cap) {
    XXH3_64bits_reset_withSeed(st, seed);
    for (uint64_t a = s; a < e;) {
        size_t k = e - a < cap ? (size_t)(e - a) : cap;
        ax_axd_tokens(ds, a, k, buf);
        XXH3_64bits_update(st, buf, 4 * k);
        a += k;
    }
    uint64_t h = XXH3_64bits_digest(st);
    if (bits < 64) h = ax_ms_fmix64(h & ((1ULL << bits) - 1));
    return h;
}

/* documents a and b hold the same tokens */
static int doc_eq(const ax_axd_t *ds, const uint64_t *off, uint64_t a, uint64_t b) {
    uint64_t len = off[a + 1] - off[a];
    if (len != off[b + 1] - off[b]) return 0;
    const uint64_t step = 1u << 20;
    for (uint64_t i = 0; i < len; i += step) {
        uint64_t k = len - i < step ? len - i : step;
        if (!ax_ms_window_eq_ds(ds, off[a] + i, off[b] + i, (int)k)) return 0;
    }
    return 1;
}

ax_status ax_dedup_docs(const ax_axd_t *ds, ax_grid_t *g, uint64_t seed, int bits, uint8_t **dup,
                        uint64_t *n_dup) {
    *dup = NULL;
    *n_dup = 0;
    uint64_t D = ax_axd_n_docs(ds);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int P = g ? ax_grid_size(g) : 1, r = g ? ax_grid_rank(g) : 0;
    const size_t cap = 1u << 16;
    uint64_t *h = calloc(D ? D : 1, sizeof *h);
    int32_t *buf = malloc(cap * sizeof *buf);
    XXH3_state_t *st = XXH3_createState();
    ax_status s = h && buf && st ? AX_OK
                                 : ax_errorf(AX_ERR_NOMEM,
                                             "data dedup: out of memory hashing "
                                             "%llu documents",
                                             (unsigned long long)D);
    if (s == AX_OK) /* each rank its share; the others' stay 0, so a sum gathers them all */
        for (uint64_t d = D * (uint64_t)r / (uint64_t)P; d < D * (uint64_t)(r + 1) / (uint64_t)P;
             d++)
            h[d] = doc_hash(ds, off[d], off[d + 1], seed, bits, st, buf, cap);
    XXH3_freeState(st);
    free(buf);
    if (g && P > 1) {
        s = ax_coll_agree(g, AX_AXIS_WORLD, s, "data dedup --documents");
        if (s == AX_OK) s = ax_coll_allreduce(g, AX_AXIS_WORLD, h, (long)D, AX_DT_U64, AX_OP_SUM);
    }
    if (s != AX_OK || r != 0) {
        free(h);
        return s;
    }
    doc_key *k = malloc(sizeof *k * (D ? D : 1));
    uint8_t *out = calloc(D ? D : 1, 1);
    uint64_t *reps = malloc(sizeof *reps * (D ? D : 1));
    if (!k || !out || !reps) {
        free(h), free(k), free(out), free(reps);
        return ax_errorf(AX_ERR_NOMEM, "data dedup: out of memory for %llu documents",
                         (unsigned long long)D);
    }
    for (uint64_t d = 0; d < D; d++) k[d] = (doc_key){h[d], d};
    free(h);
    qsort(k, (size_t)D, sizeof *k, by_hash_doc);
    /* within a run of equal hashes, in document order: a document equal to an earlier distinct
     * one (a representative) is a duplicate, else it becomes a representative */
    for (uint64_t i = 0; i < D;) {
        uint64_t j = i, nr = 0;
        while (j < D && k[j].h == k[i].h) j++;
        for (uint64_t a = i; a < j; a++) {
            int same = 0;
            for (uint64_t q = 0; q < nr && !same; q++) same = doc_eq(ds, off, reps[q], k[a].d);
            if (same) {
                out[k[a].d] = 1;
                (*n_dup)++;
            } else {
                reps[nr++] = k[a].d;
            }
        }
        i = j;
    }
    free(k);
    free(reps);
    *dup = out;
    return AX_OK;
}
