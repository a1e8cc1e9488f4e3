/* The in-memory tokenizer: merge table, pair lookup, token bytes, decoding, and the
 * rank-ordered merge application shared by the encoder. */
#include "data/hf/hf_tok.h"
#include "data/merge_heap.h"
#include "data/tok_internal.h"
#include "lib/core/keyset.h"
#include "lib/core/status.h"

#include <stdlib.h>
#include <string.h>

ax_status ax_tok_from_merges(const uint32_t *merges, int n_merges, const char *what,
                             ax_tokenizer_t **out) {
    *out = NULL;
    if (n_merges < 0 || n_merges > AX_TOK_MAX_VOCAB - AX_TOK_FIRST_MERGE)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %d merges is out of range (at most %d)", what,
                         n_merges, AX_TOK_MAX_VOCAB - AX_TOK_FIRST_MERGE);
    ax_tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory building the tokenizer", what);
    int V = AX_TOK_FIRST_MERGE + n_merges;
    t->vocab_size = V;
    t->eot = AX_TOK_EOT;
    t->n_merges = n_merges;
    uint64_t cap = ax_hash_slots((uint64_t)n_merges + 1);
    t->pair_mask = cap - 1;
    t->merges = malloc(sizeof(uint32_t) * 2 * (size_t)(n_merges ? n_merges : 1));
    t->pair_keys = calloc(cap, sizeof *t->pair_keys);
    t->pair_vals = malloc(cap * sizeof *t->pair_vals);
    t->tok_off = malloc(sizeof(uint64_t) * (size_t)V);
    t->tok_len = malloc(sizeof(uint32_t) * (size_t)V);
    if (!t->merges || !t->pair_keys || !t->pair_vals || !t->tok_off || !t->tok_len) goto nomem;
    if (n_merges) memcpy(t->merges, merges, sizeof(uint32_t) * 2 * (size_t)n_merges);

    /* token lengths first (validating as we go), then one slab for all token bytes */
    uint64_t total = 256, budget = AX_TOK_BYTES_BASE + AX_TOK_BYTES_PER_MERGE * (uint64_t)n_merges;
    for (int i = 0; i < 256; i++) t->tok_len[i] = 1;
    t->tok_len[AX_TOK_EOT] = 0;
    for (int i = 0; i < n_merges; i++) {
        uint32_t a = merges[2 * i], b = merges[2 * i + 1];
        uint32_t id = (uint32_t)(AX_TOK_FIRST_MERGE + i);
        if (a >= id || b >= id || a == AX_TOK_EOT || b == AX_TOK_EOT) {
            ax_tokenizer_free(t);
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: merge %d joins (%u, %u), which are not earlier tokens; the "
                             "file is corrupt, re-run `axmem data tokenizer-train`",
                             what, i, a, b);
        }
        uint64_t len = (uint64_t)t->tok_len[a] + t->tok_len[b];
        if (len > AX_TOK_MAX_TOKEN_BYTES) {
            ax_tokenizer_free(t);
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: merge %d makes a token of %llu bytes, longer than any trained "
                             "token (%u); the file is corrupt, re-run `axmem data tokenizer-train`",
                             what, i, (unsigned long long)len, AX_TOK_MAX_TOKEN_BYTES);
        }
        t->tok_len[id] = (uint32_t)len;
        total += len;
        if (total > budget) {
            ax_tokenizer_free(t);
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: the tokens of %d merges spell more than %llu bytes together; "
                             "the file is corrupt, re-run `axmem data tokenizer-train`",
                             what, n_merges, (unsigned long long)budget);
        }
        uint64_t key = ax_tok_pair_key(a, b);
        uint64_t j = ax_tok_pair_slot(t->pair_keys, t->pair_mask, key);
        if (t->pair_keys[j] == key) {
            ax_tokenizer_free(t);
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: merge %d repeats the pair (%u, %u); the file is corrupt, "
                             "re-run `axmem data tokenizer-train`",
                             what, i, a, b);
        }
        t->pair_keys[j] = key;
        t->pair_vals[j] = (int32_t)id;
    }
    t->tok_bytes = malloc(total);
    if (!t->tok_bytes) goto nomem;
    uint64_t off = 0;
    for (int i = 0; i < V; i++) {
        t->tok_off[i] = off;
        if (i < 256)
            t->tok_bytes[off] = (uint8_t)i;
        else if (i > AX_TOK_EOT) {
            uint32_t a = merges[2 * (i - AX_TOK_FIRST_MERGE)];
            uint32_t b = merges[2 * (i - AX_TOK_FIRST_MERGE) + 1];
            memcpy(t->tok_bytes + off, t->tok_bytes + t->tok_off[a], t->tok_len[a]);
            memcpy(t->tok_bytes + off + t->tok_len[a], t->tok_bytes + t->tok_off[b], t->tok_len[b]);
        }
        off += t->tok_len[i];
    }
    *out = t;
    return AX_OK;
nomem:
    ax_tokenizer_free(t);
    return ax_errorf(AX_ERR_NOMEM, "%s: out of memory building the tokenizer", what);
}

void ax_tokenizer_free(ax_tokenizer_t *t) {
    if (!t) return;
    ax_hf_free(t->hf);
    free(t->merges);
    free(t->pair_keys);
    free(t->pair_vals);
    free(t->tok_off);
    free(t->tok_len);
    free(t->tok_bytes);
    free(t);
}

int ax_tokenizer_vocab_size(const ax_tokenizer_t *t) {
    return t->vocab_size;
}
uint64_t ax_tokenizer_checksum(const ax_tokenizer_t *t) {
    return t->checksum;
}
int32_t ax_tokenizer_eot(const ax_tokenizer_t *t) {
    return t->eot;
}
int ax_tokenizer_is_hf(const ax_tokenizer_t *t) {
    return t->hf != NULL;
}
int ax_tokenizer_n_merges(const ax_tokenizer_t *t) {
    return t->n_merges;
}

void ax_tokenizer_merge(const ax_tokenizer_t *t, int i, uint32_t *a, uint32_t *b) {
    *a = t->merges[2 * i];
    *b = t->merges[2 * i + 1];
}

const uint8_t *ax_tokenizer_token_bytes(const ax_tokenizer_t *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->vocab_size) {
        *len = 0;
        return NULL;
    }
    *len = t->tok_len[id];
    return t->tok_bytes + t->tok_off[id];
}

ax_status ax_tokenizer_decode(const ax_tokenizer_t *t, const int32_t *ids, size_t n, uint8_t **out,
                              size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size)
            return ax_errorf(AX_ERR_ARG,
                             "token id %d at position %zu is outside the vocabulary [0, %d); "
                             "was it encoded with another tokenizer?",
                             ids[i], i, t->vocab_size);
        total += t->tok_len[ids[i]];
    }
    uint8_t *buf = malloc(total ? total : 1);
    if (!buf) return ax_errorf(AX_ERR_NOMEM, "out of memory decoding %zu tokens", n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + o, t->tok_bytes + t->tok_off[ids[i]], t->tok_len[ids[i]]);
        o += t->tok_len[ids[i]];
    }
    /* the "▁" a Metaspace tokenizer prepends on encode is not part of the text */
    if (t->hf && t->hf->strip_lead_space && total && buf[0] == ' ') {
        memmove(buf, buf + 1, --total);
    }
    *out = buf;
    *n_out = total;
    return AX_OK;
}

/* ---- merge application ---- */

/* Short chunks: rank per adjacent pair, repeatedly merge the lowest (leftmost on ties).
 * Merged id order equals rank order, so ids are compared directly. */
static int32_t scan_rank(const ax_tokenizer_t *t, int32_t a, int32_t b) {
    int32_t r = ax_tok_pair_lookup(t, (uint32_t)a, (uint32_t)b);
    return r < 0 ? INT32_MAX : r;
}

static size_t apply_scan(const ax_tokenizer_t *t, int32_t *sym, size_t n) {
    if (n < 2) return n;
    int32_t stack_rank[128];
    int32_t *rank = n <= 128 ? stack_rank : malloc(n * sizeof *rank);
    if (!rank) return n; /* only reachable from tests forcing the scan on huge input */
    for (size_t i = 0; i + 1 < n; i++) rank[i] = scan_rank(t, sym[i], sym[i + 1]);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best]) best = i;
        if (rank[best] == INT32_MAX) break;
        sym[best] = rank[best];
        memmove(sym + best + 1, sym + best + 2, (n - best - 2) * sizeof *sym);
        memmove(rank + best + 1, rank + best + 2, (n - best - 2) * sizeof *rank);
        n--;
        if (best > 0) rank[best - 1] = scan_rank(t, sym[best - 1], sym[best]);
        if (best + 1 < n) rank[best] = scan_rank(t, sym[best], sym[best + 1]);
    }
    if (rank != stack_rank) free(rank);
    return n;
}

/* A merged id is its merge's rank. */
static inline uint32_t merge_rank(const void *t, int32_t a, int32_t b, int32_t *merged) {
    *merged = ax_tok_pair_lookup(t, (uint32_t)a, (uint32_t)b);
    return *merged < 0 ? UINT32_MAX : (uint32_t)*merged;
}

/* Long chunks: the linked list and heap of data/merge_heap.h, O(n log n). */
static size_t apply_heap(const ax_tokenizer_t *t, int32_t *sym, size_t n) {
    if (n < 2) return n;
    uint32_t *links = malloc(n * (2 * sizeof(uint32_t) + 3 * sizeof(ax_merge_ent)));
    if (!links) return apply_scan(t, sym, n); /* slow but correct */
    size_t m = ax_merge_apply(sym, n, links, (ax_merge_ent *)(links + 2 * n), merge_rank, t);
    free(links);
    return m;
}

size_t ax_tok_apply_merges(const ax_tokenizer_t *t, int32_t *sym, size_t n, int use_heap) {
    return use_heap ? apply_heap(t, sym, n) : apply_scan(t, sym, n);
}
