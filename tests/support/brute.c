#include "tests/support/brute.h"
#include "index/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const int32_t *tok;
    int n;
} cmp_ctx;

static int by_content(const void *a, const void *b, void *ctx) {
    const cmp_ctx *c = ctx;
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    int r = memcmp(c->tok + x, c->tok + y, sizeof(int32_t) * (size_t)c->n);
    if (r) return r;
    return x < y ? -1 : x > y;
}

ax_status ax_memscan_brute_build(const ax_axd_t *ds, int n, ax_memscan_brute *out) {
    memset(out, 0, sizeof *out);
    uint64_t T = ax_axd_n_tokens(ds), D = ax_axd_n_docs(ds);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int32_t *tok = malloc(sizeof *tok * (T + 1));
    uint64_t *starts = malloc(sizeof *starts * (T + 1));
    out->count = calloc(T + 1, sizeof *out->count);
    out->first = calloc(T + 1, sizeof *out->first);
    out->at = calloc(T + 1, sizeof *out->at);
    if (!tok || !starts || !out->count || !out->first || !out->at) {
        free(tok);
        free(starts);
        ax_memscan_brute_free(out);
        return ax_errorf(AX_ERR_NOMEM, "brute reference: out of memory");
    }
    out->n = n;
    out->n_tokens = T;
    ax_axd_tokens(ds, 0, T, tok);
    uint64_t W = 0;
    for (uint64_t d = 0; d < D; d++) {
        uint64_t end = ax_ms_doc_text_end(ds, d);
        for (uint64_t p = off[d]; p + (uint64_t)n <= end; p++) starts[W++] = p;
    }
    cmp_ctx c = {tok, n};
    qsort_r(starts, W, sizeof *starts, by_content, &c);
    for (uint64_t i = 0; i < W;) {
        uint64_t j = i + 1;
        while (j < W && memcmp(tok + starts[i], tok + starts[j], sizeof *tok * (size_t)n) == 0) j++;
        for (uint64_t k = i; k < j; k++) {
            out->count[starts[k]] = (uint32_t)(j - i);
            out->first[starts[k]] = starts[i];
            out->at[starts[k]] = i;
        }
        out->hist[ax_memscan_hist_bucket(j - i)]++;
        out->n_distinct++;
        i = j;
    }
    out->n_windows = W;
    out->occ = starts; /* sorted by content, then position */
    free(tok);
    return AX_OK;
}

void ax_memscan_brute_free(ax_memscan_brute *b) {
    free(b->count);
    free(b->first);
    free(b->occ);
    free(b->at);
    memset(b, 0, sizeof *b);
}

uint64_t ax_memscan_brute_check(const ax_memscan_index_t *idx, const ax_memscan_brute *b, char *why,
                                size_t why_len) {
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    uint64_t bad = 0;
    why[0] = 0;
#define MISMATCH(...)                                                                              \
    do {                                                                                           \
        if (!bad++) snprintf(why, why_len, __VA_ARGS__);                                           \
    } while (0)
    if ((int)in->n != b->n) MISMATCH("n %u, reference %d", in->n, b->n);
    if (in->n_windows != b->n_windows)
        MISMATCH("windows %llu, reference %llu", (unsigned long long)in->n_windows,
                 (unsigned long long)b->n_windows);
    if (in->n_distinct != b->n_distinct)
        MISMATCH("distinct %llu, reference %llu", (unsigned long long)in->n_distinct,
                 (unsigned long long)b->n_distinct);
    for (int i = 0; i < AX_MEMSCAN_HIST; i++)
        if (in->hist[i] != b->hist[i])
            MISMATCH("histogram[%s] %llu, reference %llu", ax_memscan_hist_labels[i],
                     (unsigned long long)in->hist[i], (unsigned long long)b->hist[i]);
    int32_t *w = malloc(sizeof *w * (size_t)b->n);
    if (!w) {
        MISMATCH("out of memory");
        return bad;
    }
    /* a shard answers only for the windows it owns and must hold none of the others */
    for (uint64_t p = 0; p < b->n_tokens; p++) {
        if (!b->count[p]) continue;
        ax_axd_tokens(ds, p, (uint64_t)b->n, w);
        uint32_t c;
        uint64_t f;
        int found = ax_memscan_index_lookup(idx, w, &c, &f);
        if (ax_memscan_index_owner(idx, w) != ax_memscan_index_shard(idx)) {
            if (found)
                MISMATCH("window at %llu found on a rank that does not own it",
                         (unsigned long long)p);
            continue;
        }
        if (!found)
            MISMATCH("window at %llu not found (reference: %u times, first %llu)",
                     (unsigned long long)p, b->count[p], (unsigned long long)b->first[p]);
        else if (c != b->count[p] || f != b->first[p])
            MISMATCH("window at %llu: %u times, first %llu; reference %u times, first %llu",
                     (unsigned long long)p, c, (unsigned long long)f, b->count[p],
                     (unsigned long long)b->first[p]);
        else if (p == f) { /* once per window: every occurrence, in order */
            const uint64_t *list;
            uint64_t m = ax_memscan_index_occurrences(idx, f, c, &list);
            const uint64_t *ref = b->occ + b->at[p];
            if (m != b->count[p])
                MISMATCH("window at %llu: %llu occurrences listed, reference %u",
                         (unsigned long long)p, (unsigned long long)m, b->count[p]);
            else if (m == 1 ? list != NULL
                            : !list || memcmp(list, ref, sizeof *list * (size_t)m) != 0)
                MISMATCH("window at %llu: occurrence list differs from the reference",
                         (unsigned long long)p);
        }
    }
    free(w);
#undef MISMATCH
    return bad;
}
