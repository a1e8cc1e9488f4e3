/* Encoding: pre-tokenise, then per chunk either a cache hit (chunk bytes -> tokens) or the
 * rank-ordered merge application. Big inputs are cut at safe chunk boundaries into blocks
 * encoded by OpenMP threads, each with its own cache, and concatenated in order, so the
 * output never depends on the thread count. */
#include "data/hf/hf_tok.h"
#include "data/pretok.h"
#include "data/tok_internal.h"
#include "lib/core/grow.h"
#include "lib/core/status.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define CACHE_MAX_CHUNK 48 /* longer chunks are rare and not worth caching */
#define CACHE_MAX_SLOTS (1u << 18)
#define SCAN_MAX 64 /* longer chunks use the heap path */
#define DEFAULT_BLOCK (256u << 10)

/* ---- chunk cache: open addressing on XXH3 of the chunk, bytes and tokens in arenas ---- */
typedef struct {
    uint64_t h; /* 0 = empty */
    uint32_t key_off, tok_off;
    uint8_t key_len, n_tok;
} slot;

typedef struct {
    slot *slots;
    uint32_t mask, used;
    uint8_t *keys;
    size_t keys_len, keys_cap;
    int32_t *toks;
    size_t toks_len, toks_cap;
} cache;

static void cache_free(cache *c) {
    if (!c) return;
    free(c->slots);
    free(c->keys);
    free(c->toks);
    free(c);
}

static cache *cache_create(uint32_t slots) {
    cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->slots = calloc(slots, sizeof *c->slots);
    c->mask = slots - 1;
    c->keys_cap = (size_t)slots * 4;
    c->toks_cap = (size_t)slots * 2;
    c->keys = malloc(c->keys_cap);
    c->toks = malloc(c->toks_cap * sizeof *c->toks);
    if (!c->slots || !c->keys || !c->toks) {
        cache_free(c);
        return NULL;
    }
    return c;
}

static void cache_clear(cache *c) {
    memset(c->slots, 0, ((size_t)c->mask + 1) * sizeof *c->slots);
    c->used = 0;
    c->keys_len = c->toks_len = 0;
}

/* doubles the table (or clears it at the size cap); returns 0 on allocation failure */
static int cache_grow(cache *c) {
    uint32_t cap = c->mask + 1;
    if (cap >= CACHE_MAX_SLOTS) {
        cache_clear(c);
        return 1;
    }
    slot *ns = calloc((size_t)cap * 2, sizeof *ns);
    if (!ns) return 0;
    uint32_t nm = cap * 2 - 1;
    for (uint32_t i = 0; i < cap; i++) {
        if (!c->slots[i].h) continue;
        uint32_t j = (uint32_t)c->slots[i].h & nm;
        while (ns[j].h) j = (j + 1) & nm;
        ns[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = ns;
    c->mask = nm;
    return 1;
}

/* ---- one block ---- */

/* Encodes p[0..n) appending to out (capacity >= n + *len guaranteed by the caller).
 * Returns 0 on allocation failure. */
static int encode_block(const ax_tokenizer_t *t, cache *c, const uint8_t *p, size_t n, int32_t *out,
                        size_t *len) {
    size_t o = *len;
    int32_t small[SCAN_MAX];
    for (size_t i = 0; i < n;) {
        size_t j = ax_pretok_next(p, n, i);
        size_t cl = j - i;
        const uint8_t *s = p + i;
        i = j;
        if (cl == 1) {
            out[o++] = s[0];
            continue;
        }
        if (cl <= CACHE_MAX_CHUNK && c) {
            uint64_t h = XXH3_64bits(s, cl) | 1;
            uint32_t k = (uint32_t)h & c->mask;
            for (;; k = (k + 1) & c->mask) {
                slot *e = &c->slots[k];
                if (!e->h) break;
                if (e->h == h && e->key_len == cl && !memcmp(c->keys + e->key_off, s, cl)) {
                    memcpy(out + o, c->toks + e->tok_off, e->n_tok * sizeof *out);
                    o += e->n_tok;
                    goto next;
                }
            }
            for (size_t q = 0; q < cl; q++) small[q] = s[q];
            size_t m = ax_tok_apply_merges(t, small, cl, 0);
            memcpy(out + o, small, m * sizeof *out);
            o += m;
            /* insert (keep load <= 1/2) */
            if (2 * (c->used + 1) > c->mask + 1) {
                if (!cache_grow(c)) return 0;
                k = (uint32_t)h & c->mask;
                while (c->slots[k].h) k = (k + 1) & c->mask;
            }
            if (!ax_grow(&c->keys, &c->keys_cap, c->keys_len + cl, 1, 0) ||
                !ax_grow(&c->toks, &c->toks_cap, c->toks_len + m, sizeof(int32_t), 0))
                return 0;
            c->slots[k] =
                (slot){h, (uint32_t)c->keys_len, (uint32_t)c->toks_len, (uint8_t)cl, (uint8_t)m};
            memcpy(c->keys + c->keys_len, s, cl);
            memcpy(c->toks + c->toks_len, small, m * sizeof(int32_t));
            c->keys_len += cl;
            c->toks_len += m;
            c->used++;
        } else {
            for (size_t q = 0; q < cl; q++) out[o + q] = s[q];
            o += ax_tok_apply_merges(t, out + o, cl, cl > SCAN_MAX);
        }
    next:;
    }
    *len = o;
    return 1;
}

/* ---- encoder ---- */

struct ax_tok_encoder {
    const ax_tokenizer_t *t;
    int n_threads;
    size_t block;
    cache **caches;          /* per thread, created on first use */
    ax_hf_cache **hf_caches; /* the same for a tokenizer.json */
};

ax_status ax_tok_encoder_create(const ax_tokenizer_t *t, int n_threads, ax_tok_encoder_t **out) {
    *out = NULL;
    ax_tok_encoder_t *e = calloc(1, sizeof *e);
    if (n_threads <= 0) n_threads = omp_get_max_threads();
    if (e) e->caches = calloc((size_t)n_threads, sizeof *e->caches);
    if (e) e->hf_caches = calloc((size_t)n_threads, sizeof *e->hf_caches);
    if (!e || !e->caches || !e->hf_caches) {
        if (e) free(e->caches);
        free(e);
        return ax_errorf(AX_ERR_NOMEM, "out of memory creating the encoder");
    }
    e->t = t;
    e->n_threads = n_threads;
    e->block = DEFAULT_BLOCK;
    *out = e;
    return AX_OK;
}

void ax_tok_encoder_free(ax_tok_encoder_t *e) {
    if (!e) return;
    for (int i = 0; i < e->n_threads; i++) {
        cache_free(e->caches[i]);
        ax_hf_cache_free(e->hf_caches[i]);
    }
    free(e->caches);
    free(e->hf_caches);
    free(e);
}

void ax_tok_encoder_set_block_bytes(ax_tok_encoder_t *e, size_t bytes) {
    e->block = bytes ? bytes : 1;
}

typedef struct {
    size_t seg, start, end;
    int32_t *out;
    size_t n_out;
} item;

/* A tokenizer.json: documents in parallel, each encoded whole by one thread (its
 * pre-tokenizers have no safe-split rule here, so a long document is not cut). */
static ax_status encode_many_hf(ax_tok_encoder_t *e, size_t n_segs, const uint8_t *const *segs,
                                const size_t *lens, int32_t **outs, size_t *n_outs) {
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(e->n_threads) if (n_segs > 1)
    for (size_t s = 0; s < n_segs; s++) {
        int tid = omp_get_thread_num();
        if (!e->hf_caches[tid]) e->hf_caches[tid] = ax_hf_cache_create();
        if (!e->hf_caches[tid] || ax_hf_encode(e->t, e->hf_caches[tid], segs[s], lens[s], &outs[s],
                                               &n_outs[s]) != AX_OK) {
#pragma omp atomic write
            failed = 1;
        }
    }
    if (!failed) return AX_OK;
    for (size_t s = 0; s < n_segs; s++) {
        free(outs[s]);
        outs[s] = NULL;
        n_outs[s] = 0;
    }
    return ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
}

ax_status ax_tok_encoder_encode_many(ax_tok_encoder_t *e, size_t n_segs, const uint8_t *const *segs,
                                     const size_t *lens, int32_t **outs, size_t *n_outs) {
    for (size_t s = 0; s < n_segs; s++) {
        outs[s] = NULL;
        n_outs[s] = 0;
    }
    if (e->t->hf) return encode_many_hf(e, n_segs, segs, lens, outs, n_outs);
    /* cut every segment into blocks at safe chunk boundaries (serial, cheap) */
    size_t n_items = 0, cap = n_segs + 16;
    item *items = malloc(cap * sizeof *items);
    if (!items) return ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
    for (size_t s = 0; s < n_segs; s++) {
        size_t start = 0;
        while (start < lens[s]) {
            size_t end = lens[s];
            if (end - start > e->block)
                end = ax_pretok_find_split(segs[s], lens[s], start + e->block);
            if (!ax_grow(&items, &cap, n_items + 1, sizeof *items, 0)) {
                free(items);
                return ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
            }
            items[n_items++] = (item){s, start, end, NULL, 0};
            start = end;
        }
    }
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(e->n_threads) if (n_items > 1)
    for (size_t k = 0; k < n_items; k++) {
        int tid = omp_get_thread_num();
        item *it = &items[k];
        size_t n = it->end - it->start;
        if (!e->caches[tid]) e->caches[tid] = cache_create(1u << 12);
        it->out = malloc(n * sizeof *it->out);
        if (!it->out || !encode_block(e->t, e->caches[tid], segs[it->seg] + it->start, n, it->out,
                                      &it->n_out)) {
#pragma omp atomic write
            failed = 1;
        }
    }
    ax_status st = AX_OK;
    if (failed) st = ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
    /* stitch blocks back into segments, in order */
    for (size_t k = 0; k < n_items && st == AX_OK;) {
        size_t s = items[k].seg, k2 = k, total = 0;
        while (k2 < n_items && items[k2].seg == s) total += items[k2++].n_out;
        if (k2 == k + 1) {
            int32_t *shrunk = realloc(items[k].out, (total ? total : 1) * sizeof(int32_t));
            outs[s] = shrunk ? shrunk : items[k].out;
            items[k].out = NULL;
        } else {
            outs[s] = malloc(total * sizeof(int32_t));
            if (!outs[s]) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory encoding");
                break;
            }
            size_t o = 0;
            for (size_t q = k; q < k2; q++) {
                memcpy(outs[s] + o, items[q].out, items[q].n_out * sizeof(int32_t));
                o += items[q].n_out;
            }
        }
        n_outs[s] = total;
        k = k2;
    }
    for (size_t k = 0; k < n_items; k++) free(items[k].out);
    free(items);
    if (st != AX_OK)
        for (size_t s = 0; s < n_segs; s++) {
            free(outs[s]);
            outs[s] = NULL;
            n_outs[s] = 0;
        }
    return st;
}

ax_status ax_tok_encoder_encode(ax_tok_encoder_t *e, const uint8_t *bytes, size_t n, int32_t **out,
                                size_t *n_out) {
    return ax_tok_encoder_encode_many(e, 1, &bytes, &n, out, n_out);
}

ax_status ax_tokenizer_encode(const ax_tokenizer_t *t, const uint8_t *bytes, size_t n,
                              int32_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    ax_tok_encoder_t *e;
    /* threads only pay off once there are several blocks */
    AX_CHECK(ax_tok_encoder_create(t, n >= 2 * DEFAULT_BLOCK ? 0 : 1, &e));
    ax_status st = ax_tok_encoder_encode(e, bytes, n, out, n_out);
    ax_tok_encoder_free(e);
    if (st == AX_OK && !*out) *out = malloc(sizeof(int32_t)); /* callers may free/index it */
    return st;
}
