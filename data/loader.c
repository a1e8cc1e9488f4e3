/* Deterministic sample order: window perm_e(g mod n) of epoch e = g / n, where perm_e is a
 * balanced Feistel network on 2h bits (2^2h >= n) keyed per epoch and round, restricted to
 * [0, n) by cycle walking (re-applying until the value lands in range; 2^2h < 4n, so a few
 * steps on average). A bijection with O(1) random access and nothing stored. */
#include "data/loader.h"
#include "data/tokenizer.h"
#include "lib/core/rng.h"
#include "lib/core/status.h"

#include <stdlib.h>

#define ROUNDS 6

struct ax_loader {
    const ax_axd_t *ds;
    int seq_len;
    uint64_t seed, n_windows;
    int docs; /* 1: one document per sample (ax_loader_create_docs) */
    unsigned half_bits;
    uint64_t half_mask;
};

/* a loader over n_windows samples (windows, or documents when docs) */
static ax_status make(const ax_axd_t *ds, int seq_len, uint64_t seed, int docs, uint64_t n_windows,
                      ax_loader_t **out) {
    ax_loader_t *l = calloc(1, sizeof *l);
    if (!l) return ax_errorf(AX_ERR_NOMEM, "out of memory creating the loader");
    *l = (ax_loader_t){.ds = ds,
                       .seq_len = seq_len,
                       .seed = seed,
                       .docs = docs,
                       .n_windows = n_windows,
                       .half_bits = 1};
    while (l->half_bits < 32 && (n_windows - 1) >> (2 * l->half_bits)) l->half_bits++;
    l->half_mask = ((uint64_t)1 << l->half_bits) - 1;
    *out = l;
    return AX_OK;
}

ax_status ax_loader_create(const ax_axd_t *ds, int seq_len, uint64_t seed, ax_loader_t **out) {
    *out = NULL;
    if (seq_len < 1) return ax_errorf(AX_ERR_ARG, "sequence length %d must be at least 1", seq_len);
    uint64_t nt = ax_axd_n_tokens(ds);
    if (nt < (uint64_t)seq_len + 1)
        return ax_errorf(AX_ERR_ARG,
                         "%s: the dataset has %llu tokens, fewer than one window of seq_len + 1 "
                         "= %d; use a shorter sequence length or a bigger dataset",
                         ax_axd_path(ds), (unsigned long long)nt, seq_len + 1);
    /* window w reads [w T, w T + T] */
    return make(ds, seq_len, seed, 0, (nt - 1) / (uint64_t)seq_len, out);
}

ax_status ax_loader_create_docs(const ax_axd_t *ds, int seq_len, uint64_t seed, ax_loader_t **out) {
    *out = NULL;
    if (seq_len < 1) return ax_errorf(AX_ERR_ARG, "sequence length %d must be at least 1", seq_len);
    if (ax_axd_n_docs(ds) < 1)
        return ax_errorf(AX_ERR_ARG, "%s holds no documents", ax_axd_path(ds));
    return make(ds, seq_len, seed, 1, ax_axd_n_docs(ds), out);
}

void ax_loader_free(ax_loader_t *l) {
    free(l);
}
uint64_t ax_loader_n_windows(const ax_loader_t *l) {
    return l->n_windows;
}

static inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

static uint64_t feistel(const ax_loader_t *l, const uint64_t *keys, uint64_t x) {
    unsigned h = l->half_bits;
    uint64_t m = l->half_mask;
    uint64_t L = (x >> h) & m, R = x & m;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t = L ^ (mix(R ^ keys[r]) & m);
        L = R;
        R = t;
    }
    return (L << h) | R;
}

uint64_t ax_loader_window(const ax_loader_t *l, uint64_t g) {
    uint64_t n = l->n_windows;
    uint64_t epoch = g / n, x = g % n;
    uint64_t keys[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) keys[r] = ax_rng_u64(l->seed, epoch, (uint64_t)r);
    do x = feistel(l, keys, x);
    while (x >= n);
    return x;
}

uint64_t ax_loader_start(const ax_loader_t *l, uint64_t g) {
    uint64_t w = ax_loader_window(l, g);
    return l->docs ? ax_axd_doc_offsets(l->ds)[w] : w * (uint64_t)l->seq_len;
}

/* a document sample: end-of-text (as every document follows one in the stream), the document,
 * then padding */
static int doc_sample(const ax_loader_t *l, uint64_t g, int32_t *tokens, uint32_t *doc_pos) {
    uint64_t T = (uint64_t)l->seq_len, d = ax_loader_window(l, g);
    const uint64_t *off = ax_axd_doc_offsets(l->ds);
    uint64_t n = off[d + 1] - off[d] < T ? off[d + 1] - off[d] : T;
    tokens[0] = (int32_t)ax_axd_eot(l->ds);
    ax_axd_tokens(l->ds, off[d], n, tokens + 1);
    for (uint64_t i = n + 1; i <= T; i++) tokens[i] = 0;
    if (doc_pos)
        for (uint64_t i = 0; i <= T; i++) doc_pos[i] = i ? (uint32_t)(i - 1) : 0;
    return (int)(n + 1);
}

int ax_loader_sample_len(const ax_loader_t *l, uint64_t g, int32_t *tokens, uint32_t *doc_pos) {
    if (l->docs) return doc_sample(l, g, tokens, doc_pos);
    uint64_t T = (uint64_t)l->seq_len, start = ax_loader_start(l, g);
    ax_axd_tokens(l->ds, start, T + 1, tokens);
    if (!doc_pos) return (int)(T + 1);
    const uint64_t *off = ax_axd_doc_offsets(l->ds);
    uint64_t nd = ax_axd_n_docs(l->ds);
    uint64_t d = ax_axd_doc_of(l->ds, start);
    for (uint64_t i = 0; i <= T; i++) {
        uint64_t idx = start + i;
        while (d + 1 < nd && off[d + 1] <= idx) d++;
        doc_pos[i] = (uint32_t)(idx - off[d]);
    }
    return (int)(T + 1);
}

void ax_loader_sample(const ax_loader_t *l, uint64_t g, int32_t *tokens, uint32_t *doc_pos) {
    ax_loader_sample_len(l, g, tokens, doc_pos);
}
