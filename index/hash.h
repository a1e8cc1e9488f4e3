/* memscan window hashing: the one definition shared by index builds, lookups and benches.
 *
 * A window is n consecutive token ids. Its hash is XXH3_64 (with the index's seed) of the ids
 * as n little-endian uint32 values (4n bytes), i.e. the int32 array itself on little-endian
 * hosts. Hashes only pick a place in the table: every hit is verified against the tokens, so
 * the index stays exact even when hashes collide (ax_memscan_build_opts.hash_bits). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "data/axd.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "memscan hashes int32 token arrays as little-endian bytes; port ax_ms_hash first"
#endif

/* murmur3's 64-bit finaliser: a bijection that spreads a masked hash over all 64 bits */
static inline uint64_t ax_ms_fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb53fe1a85ec1ULL;
    h ^= h >> 33;
    return h;
}

/* The effective hash of a window: XXH3, then (only when bits < 64) masked and re-spread so
 * the table's bucket and tag bits stay well distributed while collisions stay frequent. */
static inline uint64_t ax_ms_hash(const int32_t *w, int n, uint64_t seed, int bits) {
    uint64_t h = XXH3_64bits_withSeed(w, 4 * (size_t)n, seed);
    if (bits < 64) h = ax_ms_fmix64(h & ((1ULL << bits) - 1));
    return h;
}

/* Owner rank of a hash among P ranks (P < 2^26): hash bits 0..25 scaled to [0, P) (a
 * multiply, not a division), independent of the bits the table keeps (26..63, table.h). */
static inline int ax_ms_owner(uint64_t h, int P) {
    return (int)(((h & ((1ULL << 26) - 1)) * (uint64_t)P) >> 26);
}

/* Dataset windows [a, a+n) and [b, b+n) hold the same tokens. */
int ax_ms_window_eq_ds(const ax_axd_t *ds, uint64_t a, uint64_t b, int n);
/* Dataset window [a, a+n) holds the tokens q[0..n). */
int ax_ms_window_eq_q(const ax_axd_t *ds, uint64_t a, const int32_t *q, int n);

/* Prefetch hint for the n tokens at pos (computed from the .axd layout; never faults). */
void ax_ms_prefetch_tokens(const ax_axd_t *ds, uint64_t pos, uint32_t n);

/* End of document d's text: its last token when that is not end-of-text, else one before. */
uint64_t ax_ms_doc_text_end(const ax_axd_t *ds, uint64_t d);
