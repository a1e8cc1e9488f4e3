/* Lookups: one window, every window of a sequence, and the verbatim spans of a sequence. Each
 * tag match is confirmed against the dataset's tokens, so collisions never report a match. */
#include "memscan/hash.h"
#include "memscan/index_impl.h"

#include <stdlib.h>
#include <string.h>

static int find(const ax_memscan_index_t *idx, uint64_t h, const int32_t *w, uint32_t *count,
                uint64_t *first) {
    const ax_ms_table *t = &idx->t;
    ax_ms_key k = ax_ms_key_of(h);
    uint64_t b = ax_ms_home(t, k.tag);
    for (;;) {
        const ax_ms_bucket *bk = &t->b[b];
        unsigned em, mm = ax_ms_bucket_match(bk, k, &em);
        for (; mm; mm &= mm - 1) {
            uint64_t v = bk->val[__builtin_ctz(mm)];
            if (ax_ms_window_eq_q(idx->ds, ax_ms_val_pos(v), w, (int)idx->info.n)) {
                *count = ax_ms_val_count(v);
                *first = ax_ms_val_pos(v);
                return 1;
            }
        }
        if (em) return 0;
        if (++b == t->nb) b = 0;
    }
}

int ax_memscan_index_lookup(const ax_memscan_index_t *idx, const int32_t *window, uint32_t *count,
                            uint64_t *first_pos) {
    const ax_memscan_info *in = &idx->info;
    uint64_t h = ax_ms_hash(window, (int)in->n, in->seed, (int)in->hash_bits);
    *count = 0;
    *first_pos = 0;
    return find(idx, h, window, count, first_pos);
}

/* Two-stage prefetch: a window's home buckets LOOKAHEAD windows ahead, then, half-way, the
 * dataset tokens of its first key match, so the verification that confirms a hit does not
 * wait on memory either. */
#define LOOKAHEAD 16
#define VERIFY_AHEAD 8

static void prefetch_candidate(const ax_memscan_index_t *idx, uint64_t h) {
    const ax_ms_table *t = &idx->t;
    ax_ms_key k = ax_ms_key_of(h);
    const ax_ms_bucket *bk = &t->b[ax_ms_home(t, k.tag)];
    unsigned em, mm = ax_ms_bucket_match(bk, k, &em);
    if (mm) ax_ms_prefetch_tokens(idx->ds, ax_ms_val_pos(bk->val[__builtin_ctz(mm)]), idx->info.n);
}

void ax_memscan_index_lookup_all(const ax_memscan_index_t *idx, const int32_t *tokens, size_t len,
                                 uint32_t *counts, uint64_t *first) {
    const ax_memscan_info *in = &idx->info;
    size_t n = in->n;
    if (len < n) return;
    size_t W = len - n + 1;
    /* a ring of hashes computed LOOKAHEAD windows ahead */
    uint64_t ring[LOOKAHEAD];
    for (size_t i = 0; i < W && i < LOOKAHEAD; i++) {
        ring[i] = ax_ms_hash(tokens + i, (int)n, in->seed, (int)in->hash_bits);
        ax_ms_prefetch(&idx->t, ring[i]);
    }
    for (size_t i = 0; i < W; i++) {
        uint64_t h = ring[i % LOOKAHEAD];
        if (i + VERIFY_AHEAD < W) prefetch_candidate(idx, ring[(i + VERIFY_AHEAD) % LOOKAHEAD]);
        size_t ahead = i + LOOKAHEAD;
        if (ahead < W) {
            uint64_t ha = ax_ms_hash(tokens + ahead, (int)n, in->seed, (int)in->hash_bits);
            ring[ahead % LOOKAHEAD] = ha;
            ax_ms_prefetch(&idx->t, ha);
        }
        counts[i] = 0;
        first[i] = 0;
        find(idx, h, tokens + i, &counts[i], &first[i]);
    }
}

static int by_length(const void *a, const void *b) {
    const ax_memscan_span *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

ax_status ax_memscan_find_spans(const ax_memscan_index_t *idx, const int32_t *tokens, size_t len,
                                ax_memscan_span **spans, size_t *n_spans) {
    *spans = NULL;
    *n_spans = 0;
    size_t n = idx->info.n;
    if (len < n) return AX_OK;
    size_t W = len - n + 1;
    uint32_t *counts = malloc(sizeof *counts * W);
    uint64_t *first = malloc(sizeof *first * W);
    ax_memscan_span *out = NULL;
    size_t m = 0, cap = 0;
    ax_status st = AX_OK;
    if (!counts || !first) {
        st = ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for %zu windows", W);
        goto done;
    }
    ax_memscan_index_lookup_all(idx, tokens, len, counts, first);
    const ax_axd_t *ds = idx->ds;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    for (size_t i = 0; i < W;) {
        if (!counts[i]) {
            i++;
            continue;
        }
        /* window i occurs at first[i]: extend the match both ways inside that document */
        uint64_t src = first[i], doc = ax_axd_doc_of(ds, src);
        uint64_t dstart = off[doc], dend = ax_ms_doc_text_end(ds, doc);
        size_t b = i, e = i + n;
        uint64_t sb = src;
        while (b > 0 && sb > dstart && ax_axd_token(ds, sb - 1) == (uint32_t)tokens[b - 1])
            b--, sb--;
        while (e < len && src + (e - i) < dend &&
               ax_axd_token(ds, src + (e - i)) == (uint32_t)tokens[e])
            e++;
        ax_memscan_span sp = {b, e - b, sb, doc, sb - dstart, UINT32_MAX, 0};
        for (size_t k = b; k + n <= e; k++) {
            if (counts[k] < sp.count_min) sp.count_min = counts[k];
            if (counts[k] > sp.count_max) sp.count_max = counts[k];
        }
        if (m == cap) {
            cap = cap ? 2 * cap : 16;
            ax_memscan_span *np = realloc(out, sizeof *np * cap);
            if (!np) {
                st = ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for spans");
                goto done;
            }
            out = np;
        }
        out[m++] = sp;
        i = e - n + 1; /* the first window this span does not cover */
    }
    if (m > 1) qsort(out, m, sizeof *out, by_length);
    *spans = out;
    *n_spans = m;
    out = NULL;
done:
    free(out);
    free(counts);
    free(first);
    return st;
}
