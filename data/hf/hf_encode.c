/* Encoding with a tokenizer.json: added tokens, normalizer, pre-tokenizer, BPE by rank
 * (data/hf/hf_tok.h has the pipeline), with a per-thread cache of piece -> ids. */
#include "data/hf/hf_nfc.h"
#include "data/hf/hf_pretok.h"
#include "data/hf/hf_tok.h"
#include "data/merge_heap.h"
#include "data/tok_internal.h"
#include "lib/core/grow.h"
#include "lib/core/status.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define CACHE_SLOTS 4096 /* direct-mapped; a collision simply replaces the entry */
#define CACHE_KEY 32
#define CACHE_TOKS 16

typedef struct {
    uint64_t h; /* 0 = empty */
    uint8_t klen, ntok;
    uint8_t key[CACHE_KEY];
    int32_t tok[CACHE_TOKS];
} cslot;

typedef struct {
    void *p;
    size_t len, cap; /* in elements */
} vec;

struct ax_hf_cache {
    cslot *slots;
    vec norm, norm2, sym, heap, links; /* scratch reused across calls */
};

ax_hf_cache *ax_hf_cache_create(void) {
    ax_hf_cache *c = calloc(1, sizeof *c);
    if (c && !(c->slots = calloc(CACHE_SLOTS, sizeof *c->slots))) {
        free(c);
        return NULL;
    }
    return c;
}

void ax_hf_cache_free(ax_hf_cache *c) {
    if (!c) return;
    free(c->slots);
    free(c->norm.p);
    free(c->norm2.p);
    free(c->sym.p);
    free(c->heap.p);
    free(c->links.p);
    free(c);
}

static int vec_fit(vec *v, size_t need, size_t size) {
    return ax_grow(&v->p, &v->cap, need, size, 64);
}

static int push_ids(vec *out, const int32_t *ids, size_t n) {
    if (!vec_fit(out, out->len + n, sizeof(int32_t))) return 0;
    memcpy((int32_t *)out->p + out->len, ids, n * sizeof(int32_t));
    out->len += n;
    return 1;
}

/* ---- BPE on one piece (the heap: data/merge_heap.h) ---- */

static inline uint32_t merge_rank(const void *h, int32_t a, int32_t b, int32_t *merged) {
    return ax_hf_merge_lookup(h, a, b, merged);
}

/* Merges sym[0..n) by rank, leftmost first on ties (what the library's priority queue does);
 * returns the new length, or SIZE_MAX on allocation failure. */
static size_t merge_all(const ax_hf *h, ax_hf_cache *c, int32_t *sym, size_t n) {
    if (n < 2) return n;
    if (!vec_fit(&c->links, 2 * n, sizeof(uint32_t)) ||
        !vec_fit(&c->heap, 3 * n, sizeof(ax_merge_ent)))
        return SIZE_MAX;
    return ax_merge_apply(sym, n, c->links.p, c->heap.p, merge_rank, h);
}

/* length of the UTF-8 character at s[0] (1 for an ill-formed byte) */
static size_t utf8_len(const uint8_t *s, size_t n) {
    uint8_t b = s[0];
    size_t l = b < 0x80                 ? 1
               : b >= 0xC2 && b <= 0xDF ? 2
               : b >= 0xE0 && b <= 0xEF ? 3
               : b >= 0xF0 && b <= 0xF4 ? 4
                                        : 1;
    if (l > n) return 1;
    for (size_t k = 1; k < l; k++)
        if ((s[k] & 0xC0) != 0x80) return 1;
    return l;
}

/* initial symbols of a piece (see hf_tok.h step 4); returns the count */
static size_t initial_symbols(const ax_hf *h, const uint8_t *s, size_t n, int32_t *sym) {
    size_t m = 0;
    if (h->bytelevel) {
        for (size_t i = 0; i < n; i++)
            if (h->byte_tok[s[i]] >= 0) sym[m++] = h->byte_tok[s[i]];
        return m;
    }
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(s + i, n - i);
        int32_t id = ax_hf_strmap_get(&h->vocab, s + i, l);
        if (id >= 0) {
            sym[m++] = id;
        } else {
            int all = h->byte_fallback;
            for (size_t k = 0; k < l && all; k++) all = h->byte_tok[s[i + k]] >= 0;
            if (all) {
                for (size_t k = 0; k < l; k++) sym[m++] = h->byte_tok[s[i + k]];
            } else if (h->unk >= 0 && !(h->fuse_unk && m && sym[m - 1] == h->unk)) {
                sym[m++] = h->unk;
            }
        }
        i += l;
    }
    return m;
}

static int bpe_piece(const ax_hf *h, ax_hf_cache *c, const uint8_t *s, size_t n, vec *out) {
    if (!n) return 1;
    uint64_t hh = 0;
    cslot *slot = NULL;
    if (n <= CACHE_KEY) {
        hh = XXH3_64bits(s, n) | 1;
        slot = &c->slots[hh & (CACHE_SLOTS - 1)];
        if (slot->h == hh && slot->klen == n && !memcmp(slot->key, s, n))
            return push_ids(out, slot->tok, slot->ntok);
    }
    if (h->ignore_merges) {
        int32_t id = ax_hf_strmap_get(&h->vocab, s, n);
        if (id >= 0) return push_ids(out, &id, 1);
    }
    if (!vec_fit(&c->sym, n, sizeof(int32_t))) return 0;
    int32_t *sym = c->sym.p;
    size_t m = initial_symbols(h, s, n, sym);
    m = merge_all(h, c, sym, m);
    if (m == SIZE_MAX) return 0;
    if (slot && m <= CACHE_TOKS) {
        slot->h = hh;
        slot->klen = (uint8_t)n;
        slot->ntok = (uint8_t)m;
        memcpy(slot->key, s, n);
        memcpy(slot->tok, sym, m * sizeof *sym);
    }
    return push_ids(out, sym, m);
}

/* ---- one segment between added tokens ---- */

/* applies the normalizer ops; returns the text (seg itself when there are none) */
static const uint8_t *normalize(const ax_hf *h, ax_hf_cache *c, const uint8_t *seg, size_t n,
                                size_t *n_out) {
    const uint8_t *cur = seg;
    vec *bufs[2] = {&c->norm, &c->norm2};
    int which = 0;
    for (int k = 0; k < h->n_norm; k++) {
        const ax_hf_norm_op *op = &h->norm[k];
        vec *dst = bufs[which];
        if (op->kind == AX_HF_NORM_NFC) {
            if (ax_hf_nfc_trivial(cur, n)) continue;
            uint8_t *nb;
            size_t nl;
            if (!ax_hf_nfc(cur, n, &nb, &nl)) return NULL;
            free(dst->p); /* take the result as this buffer */
            dst->p = nb;
            dst->cap = nl + 1;
            cur = nb;
            n = nl;
            which ^= 1;
            continue;
        }
        size_t bound = op->kind == AX_HF_NORM_PREPEND
                           ? n + op->a_len
                           : n + (n / (op->a_len ? op->a_len : 1) + 1) * op->b_len;
        if (!vec_fit(dst, bound + 1, 1)) return NULL;
        uint8_t *d = dst->p;
        size_t o = 0;
        if (op->kind == AX_HF_NORM_PREPEND) {
            if (n) {
                memcpy(d, op->a, op->a_len);
                memcpy(d + op->a_len, cur, n);
                o = n + op->a_len;
            }
        } else {
            for (size_t i = 0; i < n;) {
                if (i + op->a_len <= n && !memcmp(cur + i, op->a, op->a_len)) {
                    memcpy(d + o, op->b, op->b_len);
                    o += op->b_len;
                    i += op->a_len;
                } else {
                    d[o++] = cur[i++];
                }
            }
        }
        cur = d;
        n = o;
        which ^= 1;
    }
    *n_out = n;
    return cur;
}

/* the longest added token of the given pass (normalized or not) at p[i], or NULL */
static const ax_hf_added *added_at(const ax_hf *h, const uint8_t *p, size_t n, size_t i,
                                   int normalized) {
    for (int k = h->first_added[p[i]]; k < h->first_added[p[i] + 1]; k++) {
        const ax_hf_added *a = &h->added[k];
        if (a->normalized == normalized && a->len <= n - i && !memcmp(p + i, a->bytes, a->len))
            return a; /* longest first */
    }
    return NULL;
}

static int in_vec(const vec *v, const uint8_t *s) {
    return v->p && s >= (const uint8_t *)v->p && s < (const uint8_t *)v->p + v->cap;
}

/* pre-tokenizes normalized text and applies BPE to each piece */
static int pretok_bpe(const ax_hf *h, ax_hf_cache *c, const uint8_t *s, size_t m, int at_start,
                      vec *out) {
    if (!m) return 1;
    if (h->meta) {
        /* spaces -> replacement, maybe prepend one, maybe split before each replacement */
        const char *r = h->meta_rep;
        size_t rl = h->meta_rep_len;
        vec *dst = in_vec(&c->norm, s) ? &c->norm2 : &c->norm;
        if (!vec_fit(dst, m * rl + rl + 1, 1)) return 0;
        uint8_t *d = dst->p;
        size_t o = 0;
        int starts = m >= rl && !memcmp(s, r, rl);
        if (!starts && m && s[0] == ' ') starts = 1;
        if (!starts && (h->meta_prepend == AX_HF_META_ALWAYS ||
                        (h->meta_prepend == AX_HF_META_FIRST && at_start))) {
            memcpy(d, r, rl);
            o = rl;
        }
        for (size_t i = 0; i < m; i++) {
            if (s[i] == ' ') {
                memcpy(d + o, r, rl);
                o += rl;
            } else {
                d[o++] = s[i];
            }
        }
        if (!h->meta_split) return bpe_piece(h, c, d, o, out);
        size_t st = 0;
        for (size_t i = rl; i + rl <= o; i++)
            if (!memcmp(d + i, r, rl)) {
                if (!bpe_piece(h, c, d + st, i - st, out)) return 0;
                st = i;
                i += rl - 1;
            }
        return bpe_piece(h, c, d + st, o - st, out);
    }
    if (h->bytelevel && h->prefix_space && s[0] != ' ') {
        vec *dst = in_vec(&c->norm, s) ? &c->norm2 : &c->norm;
        if (!vec_fit(dst, m + 1, 1)) return 0;
        uint8_t *d = dst->p;
        d[0] = ' ';
        memcpy(d + 1, s, m);
        s = d;
        m++;
    }
    if (!h->regex) return bpe_piece(h, c, s, m, out);
    for (size_t i = 0; i < m;) {
        size_t j = h->regex == AX_HF_RE_GPT2
                       ? ax_hf_match_gpt2(s, m, i)
                       : ax_hf_match_llama3(s, m, i, h->regex == AX_HF_RE_QWEN2 ? 1 : 3);
        if (!bpe_piece(h, c, s + i, j - i, out)) return 0;
        i = j;
    }
    return 1;
}

/* one segment between the first pass's added tokens: normalize, cut out the normalized added
 * tokens (Metaspace's "first" is the piece at offset 0 of the whole text) */
static int encode_segment(const ax_hf *h, ax_hf_cache *c, const uint8_t *seg, size_t n,
                          int at_start, vec *out) {
    if (!n) return 1;
    size_t m;
    const uint8_t *s = normalize(h, c, seg, n, &m);
    if (!s) return 0;
    if (!h->n_added_normalized) return pretok_bpe(h, c, s, m, at_start, out);
    size_t g = 0;
    for (size_t i = 0; i < m;) {
        const ax_hf_added *hit = added_at(h, s, m, i, 1);
        if (!hit) {
            i++;
            continue;
        }
        if (!pretok_bpe(h, c, s + g, i - g, at_start && g == 0, out) || !push_ids(out, &hit->id, 1))
            return 0;
        i += hit->len;
        g = i;
    }
    return pretok_bpe(h, c, s + g, m - g, at_start && g == 0, out);
}

ax_status ax_hf_encode(const ax_tokenizer_t *t, ax_hf_cache *c, const uint8_t *p, size_t n,
                       int32_t **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    const ax_hf *h = t->hf;
    vec o = {0};
    int ok = vec_fit(&o, n + 16, sizeof(int32_t));
    size_t seg = 0;
    for (size_t i = 0; i < n && ok;) {
        const ax_hf_added *hit = added_at(h, p, n, i, 0);
        if (!hit) {
            i++;
            continue;
        }
        ok = encode_segment(h, c, p + seg, i - seg, seg == 0, &o) && push_ids(&o, &hit->id, 1);
        i += hit->len;
        seg = i;
    }
    if (ok) ok = encode_segment(h, c, p + seg, n - seg, seg == 0, &o);
    if (!ok) {
        free(o.p);
        return ax_errorf(AX_ERR_NOMEM, "out of memory encoding %zu bytes", n);
    }
    *out = o.p;
    *n_out = o.len;
    return AX_OK;
}
