/* Lookups: one window, every window of a sequence, and the verbatim spans of a sequence. Each
 * tag match is confirmed against the dataset's tokens, so collisions never report a match. */
#include "index/hash.h"
#include "index/index_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int find(const ax_memscan_index_t *idx, uint64_t h, const int32_t *w, uint32_t *count,
                uint64_t *first) {
    if (idx->map) return ax_ms_map_find(idx->map, idx->ds, idx->info.n, h, w, count, first);
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
    if (idx->map) { /* a file read in place: where each tag should lie, LOOKAHEAD ahead */
        uint64_t ring[LOOKAHEAD];
        for (size_t i = 0; i < W && i < LOOKAHEAD; i++) {
            ring[i] = ax_ms_hash(tokens + i, (int)n, in->seed, (int)in->hash_bits);
            ax_ms_map_prefetch(idx->map, ring[i]);
        }
        for (size_t i = 0; i < W; i++) {
            uint64_t h = ring[i % LOOKAHEAD];
            if (i + LOOKAHEAD < W) {
                uint64_t ha =
                    ax_ms_hash(tokens + i + LOOKAHEAD, (int)n, in->seed, (int)in->hash_bits);
                ring[(i + LOOKAHEAD) % LOOKAHEAD] = ha;
                ax_ms_map_prefetch(idx->map, ha);
            }
            counts[i] = 0;
            first[i] = 0;
            find(idx, h, tokens + i, &counts[i], &first[i]);
        }
        return;
    }
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

/* An occurrence of the current window and how far the match runs from it. */
typedef struct {
    uint64_t pos;
    size_t ext; /* tokens[i, i + ext) == dataset[pos, pos + ext), inside pos's document */
} occ_ext;

typedef struct {
    const ax_memscan_index_t *idx;
    const int32_t *tok;
    size_t len, max_sources;
    ax_memscan_span *sp;
    size_t m, cap;
    ax_memscan_source *src;
    size_t n_src, cap_src;
    uint64_t max_occ;
    ax_memscan_source *occ; /* every span's listed places, in turn */
    size_t n_occ, cap_occ;
} span_out;

/* length of the match of tokens[i..len) at dataset position o, inside o's document */
static size_t fresh_ext(const span_out *so, size_t i, uint64_t o) {
    const ax_axd_t *ds = so->idx->ds;
    uint64_t dend = ax_ms_doc_text_end(ds, ax_axd_doc_of(ds, o));
    size_t e = 0;
    while (i + e < so->len && o + e < dend && ax_axd_token(ds, o + e) == (uint32_t)so->tok[i + e])
        e++;
    return e;
}

/* the span [i, i + best) with the occurrences in cur[0..nc) that reach that far */
static ax_status emit(span_out *so, size_t i, size_t best, const occ_ext *cur, size_t nc) {
    const ax_axd_t *ds = so->idx->ds;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    if (so->m == so->cap) {
        size_t cap = so->cap ? 2 * so->cap : 16;
        ax_memscan_span *np = realloc(so->sp, sizeof *np * cap);
        if (!np) return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for spans");
        so->sp = np;
        so->cap = cap;
    }
    ax_memscan_span *sp = &so->sp[so->m++];
    memset(sp, 0, sizeof *sp);
    sp->start = i;
    sp->len = best;
    /* sources: index into so->src until the spans are final (pointers set then) */
    sp->sources = (const ax_memscan_source *)(uintptr_t)so->n_src;
    sp->occ = (const ax_memscan_source *)(uintptr_t)so->n_occ;
    uint64_t doc_end = 0; /* the current document's end offset: positions ascend */
    for (size_t k = 0; k < nc; k++) {
        if (cur[k].ext != best) continue;
        uint64_t o = cur[k].pos;
        sp->occurrences++;
        if (sp->n_occ < so->max_occ) {
            if (so->n_occ == so->cap_occ) {
                size_t cap = so->cap_occ ? 2 * so->cap_occ : 64;
                ax_memscan_source *no = realloc(so->occ, sizeof *no * cap);
                if (!no) return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for spans");
                so->occ = no;
                so->cap_occ = cap;
            }
            uint64_t od = ax_axd_doc_of(ds, o);
            so->occ[so->n_occ++] = (ax_memscan_source){o, od, o - off[od]};
            sp->n_occ++;
        }
        if (sp->occurrences > 1 && o < doc_end) continue; /* same document again */
        uint64_t d = ax_axd_doc_of(ds, o);
        doc_end = off[d + 1];
        if (sp->docs++ == 0) sp->pos = o, sp->doc = d, sp->doc_off = o - off[d];
        if (sp->n_sources == so->max_sources) continue;
        if (so->n_src == so->cap_src) {
            size_t cap = so->cap_src ? 2 * so->cap_src : 64;
            ax_memscan_source *ns = realloc(so->src, sizeof *ns * cap);
            if (!ns) return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for spans");
            so->src = ns;
            so->cap_src = cap;
        }
        so->src[so->n_src++] = (ax_memscan_source){o, d, o - off[d]};
        sp->n_sources++;
    }
    return AX_OK;
}

/* Every maximal span, exactly. For window i (when it occurs) let ext(i, o) be how far the
 * match runs from each occurrence o and R(i) = i + max ext: tokens[i, R(i)) is the longest
 * match starting at i, and [i, R(i)) is maximal unless window i - 1 matched with the same R
 * (R never decreases along a run of matching windows). ext carries along diagonals: if o - 1
 * occurred for window i - 1 with ext e > n, then o occurs for window i with ext e - 1, so
 * tokens are compared only where a diagonal starts. Both lists ascend by position, so the
 * carry is a merge. */
ax_status ax_memscan_find_spans(const ax_memscan_index_t *idx, const int32_t *tokens, size_t len,
                                size_t max_sources, ax_memscan_span **spans, size_t *n_spans) {
    return ax_memscan_find_spans_occ(idx, tokens, len, max_sources, 0, spans, n_spans);
}

ax_status ax_memscan_find_spans_occ(const ax_memscan_index_t *idx, const int32_t *tokens,
                                    size_t len, size_t max_sources, uint64_t max_occ,
                                    ax_memscan_span **spans, size_t *n_spans) {
    return ax_memscan_find_spans_given(idx, tokens, len, NULL, NULL, max_sources, max_occ, spans,
                                       n_spans);
}

ax_status ax_memscan_find_spans_given(const ax_memscan_index_t *idx, const int32_t *tokens,
                                      size_t len, const uint32_t *given_counts,
                                      const uint64_t *given_first, size_t max_sources,
                                      uint64_t max_occ, ax_memscan_span **spans, size_t *n_spans) {
    *spans = NULL;
    *n_spans = 0;
    size_t n = idx->info.n;
    if (len < n) return AX_OK;
    size_t W = len - n + 1;
    uint32_t *counts = malloc(sizeof *counts * W);
    uint64_t *first = malloc(sizeof *first * W), *exact = malloc(sizeof *exact * W);
    occ_ext *prev = NULL, *cur = NULL;
    size_t cap_occ = 0, n_prev = 0;
    span_out so = {idx, tokens, len, max_sources, NULL, 0, 0, NULL, 0, 0, max_occ, NULL, 0, 0};
    ax_status st = AX_OK;
    if (!counts || !first || !exact) goto oom;
    if (given_counts) { /* looked up elsewhere (by the ranks serving them) */
        memcpy(counts, given_counts, sizeof *counts * W);
        memcpy(first, given_first, sizeof *first * W);
    } else {
        ax_memscan_index_lookup_all(idx, tokens, len, counts, first);
    }
    size_t R_prev = 0;
    for (size_t i = 0; i < W; i++) {
        exact[i] = 0;
        if (!counts[i]) {
            n_prev = 0;
            continue;
        }
        const uint64_t *list;
        uint64_t m = ax_ms_index_occ(idx, first[i], counts[i], &list);
        if (!list) m = 1, list = &first[i];
        exact[i] = m;
        if (m > cap_occ) {
            size_t cap = (size_t)m > 2 * cap_occ ? (size_t)m : 2 * cap_occ;
            occ_ext *np = realloc(prev, sizeof *np * cap), *nc;
            if (!np) goto oom;
            prev = np;
            nc = realloc(cur, sizeof *nc * cap);
            if (!nc) goto oom;
            cur = nc;
            cap_occ = cap;
        }
        size_t nc = 0, best = 0, j = 0;
        for (uint64_t k = 0; k < m; k++) {
            uint64_t o = list[k];
            while (j < n_prev && prev[j].pos + 1 < o) j++;
            size_t e = j < n_prev && prev[j].pos + 1 == o && prev[j].ext > n ? prev[j].ext - 1
                                                                             : fresh_ext(&so, i, o);
            if (e < n) continue; /* not this window after all (cannot happen in a sound index) */
            cur[nc++] = (occ_ext){o, e};
            if (e > best) best = e;
        }
        if (!nc) { /* nothing verified: as if absent */
            n_prev = 0;
            continue;
        }
        size_t R = i + best;
        if (!n_prev || R != R_prev)
            if ((st = emit(&so, i, best, cur, nc)) != AX_OK) goto done;
        occ_ext *t = prev;
        prev = cur;
        cur = t;
        n_prev = nc;
        R_prev = R;
    }
    /* window counts over each span, then one block: spans, their sources, their places */
    for (size_t k = 0; k < so.m; k++) {
        ax_memscan_span *sp = &so.sp[k];
        sp->count_min = UINT64_MAX;
        for (size_t w = sp->start; w + n <= sp->start + sp->len; w++) {
            if (exact[w] < sp->count_min) sp->count_min = exact[w];
            if (exact[w] > sp->count_max) sp->count_max = exact[w];
        }
    }
    if (so.m > 1) qsort(so.sp, so.m, sizeof *so.sp, by_length);
    if (so.m) {
        ax_memscan_span *blk = malloc(sizeof *blk * so.m + sizeof *so.src * (so.n_src + so.n_occ));
        if (!blk) goto oom;
        ax_memscan_source *src = (ax_memscan_source *)(blk + so.m), *occ = src + so.n_src;
        memcpy(blk, so.sp, sizeof *blk * so.m);
        if (so.n_src) memcpy(src, so.src, sizeof *src * so.n_src);
        if (so.n_occ) memcpy(occ, so.occ, sizeof *occ * so.n_occ);
        for (size_t k = 0; k < so.m; k++) {
            blk[k].sources = src + (size_t)(uintptr_t)blk[k].sources;
            blk[k].occ = occ + (size_t)(uintptr_t)blk[k].occ;
        }
        *spans = blk;
        *n_spans = so.m;
    }
    goto done;
oom:
    st = ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for %zu windows", W);
done:
    free(so.sp);
    free(so.src);
    free(so.occ);
    free(prev);
    free(cur);
    free(counts);
    free(first);
    free(exact);
    return st;
}

uint64_t ax_memscan_window_sources(const ax_memscan_index_t *idx, uint64_t first, uint32_t count,
                                   ax_memscan_source *out, size_t max) {
    const ax_axd_t *ds = idx->ds;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    const uint64_t *list;
    uint64_t m = ax_ms_index_occ(idx, first, count, &list);
    if (!list) m = count ? 1 : 0, list = &first; /* once (or a damaged list: its first alone) */
    for (size_t k = 0; k < max && k < m; k++) {
        uint64_t d = ax_axd_doc_of(ds, list[k]);
        out[k] = (ax_memscan_source){list[k], d, list[k] - off[d]};
    }
    return m;
}
