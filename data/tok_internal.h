/* Internals shared by the tokenizer's files (file format, training, encoding) and tests. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "data/tokenizer.h"

#define AX_TOK_MAX_VOCAB (1 << 22)
/* Bounds on the bytes a tokenizer's tokens spell, checked before anything is allocated: a
 * merge list can double a token's length with every merge (31 merges, a 280-byte file, spell
 * 4 GB). Training never learns from chunks longer than AX_TOK_MAX_TOKEN_BYTES, so no trained
 * token is longer; all tokens together may hold AX_TOK_BYTES_BASE + AX_TOK_BYTES_PER_MERGE per
 * merge (a file of M merges is 8M bytes: memory stays within 64 MiB + 32x the file). */
#define AX_TOK_MAX_TOKEN_BYTES (1u << 20)
#define AX_TOK_BYTES_BASE ((uint64_t)64 << 20)
#define AX_TOK_BYTES_PER_MERGE 256u

struct ax_hf;
struct ax_tokenizer {
    int vocab_size;
    int32_t eot; /* end-of-text id: AX_TOK_EOT for axmem's own, the file's for tokenizer.json */
    struct ax_hf *hf; /* non-NULL: a Hugging Face tokenizer.json (data/hf/hf_tok.h); no merges */
    int n_merges;
    uint32_t *merges; /* [n_merges][2]: merge i makes id AX_TOK_FIRST_MERGE + i */
    uint64_t checksum;
    /* pair (a,b) -> merged id; open addressing, key 0 = empty (pair (0,0) stored as +1) */
    uint64_t *pair_keys;
    int32_t *pair_vals;
    uint64_t pair_mask;
    /* bytes of each token: tok_bytes[tok_off[id] .. tok_off[id] + tok_len[id]) */
    uint64_t *tok_off;
    uint32_t *tok_len;
    uint8_t *tok_bytes;
};

static inline uint64_t ax_tok_pair_key(uint32_t a, uint32_t b) {
    return (((uint64_t)a << 32) | b) + 1; /* +1 keeps 0 free as the empty marker */
}
/* Where pair key `key` sits in an open-addressing table keys[mask + 1] (0 = empty slot): its
 * slot, or the empty slot it would take. Shared by every pair table of the tokenizers. */
static inline uint64_t ax_tok_pair_slot(const uint64_t *keys, uint64_t mask, uint64_t key) {
    uint64_t k = key ^ (key >> 29);
    k *= 0xbf58476d1ce4e5b9ULL;
    uint64_t j = (k ^ (k >> 32)) & mask;
    while (keys[j] && keys[j] != key) j = (j + 1) & mask;
    return j;
}
/* merged id for (a,b), or -1 when the pair is not a merge */
static inline int32_t ax_tok_pair_lookup(const struct ax_tokenizer *t, uint32_t a, uint32_t b) {
    uint64_t key = ax_tok_pair_key(a, b), j = ax_tok_pair_slot(t->pair_keys, t->pair_mask, key);
    return t->pair_keys[j] ? t->pair_vals[j] : -1;
}

/* Builds a tokenizer from a merge list (validated: each side an earlier id, no EOT, no
 * duplicate pair). `what` names the source in errors. The checksum is left 0. */
ax_status ax_tok_from_merges(const uint32_t *merges, int n_merges, const char *what,
                             ax_tokenizer_t **out);
/* Parses a tokenizer file's bytes: an axmem file (magic AXMEMTOK) or a Hugging Face
 * tokenizer.json (anything else; data/hf/hf_load.c) (what ax_tokenizer_load reads; fuzz targets
 * call it directly). `path` names the source in errors. */
ax_status ax_tok_load_bytes(const uint8_t *bytes, size_t n, const char *path, ax_tokenizer_t **out);
/* XXH3 of the serialised file (the tokenizer's identity) */
uint64_t ax_tok_compute_checksum(const ax_tokenizer_t *t);

/* Applies merges by rank to sym[0..n) in place; returns the new length. use_heap selects the
 * O(n log n) linked-list + heap path (chosen automatically for long chunks); both paths give
 * the same result, which tests check. */
size_t ax_tok_apply_merges(const ax_tokenizer_t *t, int32_t *sym, size_t n, int use_heap);
