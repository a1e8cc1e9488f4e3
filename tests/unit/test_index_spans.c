/* Exact verbatim spans against a brute-force search. On corpora with planted duplicates (a
 * passage copied whole into a late document and cut short in earlier ones, copies with one
 * token changed, a small alphabet that repeats windows everywhere), every maximal span of a
 * query, its first occurrence, occurrence count, distinct source documents and the first K of
 * them must equal what scanning every dataset position for the longest match finds. The
 * index is used as built, reloaded from its file, and with hashes masked so they collide. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "lib/core/log.h"
#include "lib/core/rng.h"
#include "index/hash.h"
#include "index/index.h"
#include "tests/support/brute.h"
#include "tests/unit/test_suite_files.h"

TestSuite(index_spans, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

#define PLEN 90 /* the planted passage */

/* The corpus: 60 documents. Random tokens from `alphabet` (from 100 up), and the passage X
 * (tokens 5000+) planted: whole in documents 40 and 52, its first 50 tokens in documents 3 and
 * 9 (earlier: they hold X's first windows' first occurrences), its last 60 in document 20,
 * whole but with token 45 changed in document 30, and twice in document 47 (two places in
 * one document). */
static void write_corpus(const char *path, int alphabet, uint64_t seed, int32_t *X) {
    for (int i = 0; i < PLEN; i++) X[i] = 5000 + (int32_t)ax_rng_below(seed, 9, (uint64_t)i, 40);
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(path, 6000, &w), AX_OK, "%s", ax_error_msg());
    int32_t doc[600];
    for (int d = 0; d < 60; d++) {
        int base = 20 + (int)ax_rng_below(seed, 1, (uint64_t)d, 200), at = base / 3;
        int len = base + (d == 40 || d == 52 || d == 30 ? PLEN
                          : d == 3 || d == 9            ? 50
                          : d == 20                     ? 60
                          : d == 47                     ? 2 * PLEN + 7
                                                        : 0);
        for (int i = 0; i < len; i++)
            doc[i] =
                100 + (int32_t)ax_rng_below(seed, 2 + (uint64_t)d, (uint64_t)i, (uint64_t)alphabet);
        if (d == 40 || d == 52) memcpy(doc + at, X, sizeof *X * PLEN);
        if (d == 3 || d == 9) memcpy(doc + at, X, sizeof *X * 50);
        if (d == 20) memcpy(doc + at, X + 30, sizeof *X * 60);
        if (d == 30) memcpy(doc + at, X, sizeof *X * PLEN), doc[at + 45] = 4999;
        if (d == 47) {
            memcpy(doc + at, X, sizeof *X * PLEN);
            memcpy(doc + at + PLEN + 7, X, sizeof *X * PLEN);
        }
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, (size_t)len), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

/* Reference: for each query start b, the longest match over every dataset position. */
typedef struct {
    size_t start, len;
    uint64_t pos, occurrences, docs;
    uint64_t src_pos[64];
    size_t n_src;
    uint64_t occ_pos[64]; /* the first 64 places of the whole span */
} ref_span;

static size_t match_at(const ax_axd_t *ds, const int32_t *q, size_t len, size_t b, uint64_t o,
                       uint64_t dend) {
    size_t e = 0;
    while (b + e < len && o + e < dend && ax_axd_token(ds, o + e) == (uint32_t)q[b + e]) e++;
    return e;
}

static size_t brute_spans(const ax_axd_t *ds, const int32_t *q, size_t len, size_t n, size_t K,
                          ref_span *out) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t D = ax_axd_n_docs(ds), T = ax_axd_n_tokens(ds);
    size_t *ml = calloc((size_t)T, sizeof *ml); /* match length at every position */
    size_t m = 0, R_prev = 0, L_prev = 0;
    for (size_t b = 0; b < len; b++) {
        size_t best = 0;
        for (uint64_t d = 0; d < D; d++) {
            uint64_t dend = ax_ms_doc_text_end(ds, d);
            for (uint64_t o = off[d]; o < dend; o++) {
                ml[o] = match_at(ds, q, len, b, o, dend);
                if (ml[o] > best) best = ml[o];
            }
        }
        size_t R = b + best;
        int maximal = best >= n && (b == 0 || L_prev < n || R_prev != R);
        R_prev = R, L_prev = best;
        if (!maximal) continue;
        ref_span *s = &out[m++];
        memset(s, 0, sizeof *s);
        s->start = b, s->len = best;
        for (uint64_t d = 0; d < D; d++) {
            uint64_t dend = ax_ms_doc_text_end(ds, d), here = 0;
            for (uint64_t o = off[d]; o < dend; o++) {
                if (ml[o] != best) continue;
                if (s->occurrences < 64) s->occ_pos[s->occurrences] = o;
                if (!s->occurrences++) s->pos = o;
                if (!here++) {
                    s->docs++;
                    if (s->n_src < K) s->src_pos[s->n_src++] = o;
                }
            }
        }
    }
    free(ml);
    /* longest first, ties by start */
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0; j--) {
            ref_span *a = &out[j - 1], *c = &out[j];
            if (a->len > c->len || (a->len == c->len && a->start < c->start)) break;
            ref_span t = *a;
            *a = *c;
            *c = t;
        }
    return m;
}

/* K sources and M places per span (M <= 64: what the reference keeps) */
static void check_query_occ(const ax_memscan_index_t *idx, const int32_t *q, size_t len, size_t K,
                            uint64_t M, const char *what) {
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    size_t n = ax_memscan_index_info(idx)->n;
    ref_span *ref = malloc(sizeof *ref * (len + 1));
    size_t nr = brute_spans(ds, q, len, n, K, ref);
    ax_memscan_span *sp = NULL;
    size_t ns = 0;
    cr_assert_eq(ax_memscan_find_spans_occ(idx, q, len, K, M, &sp, &ns), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(ns, nr, "%s: %zu spans, reference %zu", what, ns, nr);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    for (size_t i = 0; i < ns; i++) {
        const ax_memscan_span *s = &sp[i];
        const ref_span *r = &ref[i];
        cr_assert(s->start == r->start && s->len == r->len,
                  "%s: span %zu is [%zu, +%zu), reference [%zu, +%zu)", what, i, s->start, s->len,
                  r->start, r->len);
        cr_assert_eq(s->pos, r->pos, "%s: span %zu first occurrence", what, i);
        cr_assert_eq(s->occurrences, r->occurrences, "%s: span %zu occurrences %llu, ref %llu",
                     what, i, (unsigned long long)s->occurrences,
                     (unsigned long long)r->occurrences);
        cr_assert_eq(s->docs, r->docs, "%s: span %zu documents %llu, reference %llu", what, i,
                     (unsigned long long)s->docs, (unsigned long long)r->docs);
        cr_assert_eq(s->n_sources, r->n_src, "%s: span %zu sources listed", what, i);
        for (size_t k = 0; k < s->n_sources; k++) {
            uint64_t p = r->src_pos[k], d = ax_axd_doc_of(ds, p);
            cr_assert(s->sources[k].pos == p && s->sources[k].doc == d &&
                          s->sources[k].doc_off == p - off[d],
                      "%s: span %zu source %zu", what, i, k);
        }
        /* places: exactly the first min(occurrences, M) of the reference, none beyond M */
        uint64_t want = r->occurrences < M ? r->occurrences : M;
        cr_assert_eq(s->n_occ, want, "%s: span %zu lists %zu places, want %llu (of %llu)", what, i,
                     s->n_occ, (unsigned long long)want, (unsigned long long)r->occurrences);
        for (size_t k = 0; k < s->n_occ; k++) {
            uint64_t p = r->occ_pos[k], d = ax_axd_doc_of(ds, p);
            cr_assert(s->occ[k].pos == p && s->occ[k].doc == d && s->occ[k].doc_off == p - off[d],
                      "%s: span %zu place %zu", what, i, k);
        }
        cr_assert(s->doc == ax_axd_doc_of(ds, s->pos) && s->doc_off == s->pos - off[s->doc]);
        cr_assert(s->count_min >= s->occurrences && s->count_min <= s->count_max);
    }
    free(sp);
    free(ref);
}

static void check_query(const ax_memscan_index_t *idx, const int32_t *q, size_t len, size_t K,
                        const char *what) {
    check_query_occ(idx, q, len, K, 0, what);
    check_query_occ(idx, q, len, K, 3, what); /* the bound cuts the lists */
    check_query_occ(idx, q, len, K, 64, what);
}

static void run_queries(const ax_memscan_index_t *idx, const int32_t *X, int alphabet,
                        const char *what) {
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    uint64_t T = ax_axd_n_tokens(ds);
    int32_t q[400];
    char name[96];
    /* 1: the passage inside fresh tokens: one span of all of X, from documents 40, 47, 52 */
    for (int i = 0; i < 400; i++) q[i] = 5900 + i % 50;
    memcpy(q + 17, X, sizeof *X * PLEN);
    snprintf(name, sizeof name, "%s: planted passage", what);
    check_query(idx, q, 140, 8, name);
    check_query(idx, q, 140, 2, name); /* fewer listed than there are */
    ax_memscan_span *sp;
    size_t ns;
    cr_assert_eq(ax_memscan_find_spans(idx, q, 140, 8, &sp, &ns), AX_OK);
    cr_assert(ns >= 1 && sp[0].len == PLEN && sp[0].start == 17, "%s: longest %zu", what,
              ns ? sp[0].len : 0);
    cr_assert(sp[0].docs == 3 && sp[0].occurrences == 4, "%s: %llu docs, %llu places", what,
              (unsigned long long)sp[0].docs, (unsigned long long)sp[0].occurrences);
    free(sp);
    /* 2: slices of the dataset, stitched from two places */
    for (int t = 0; t < 6; t++) {
        uint64_t a = ax_rng_below(77, 1, (uint64_t)t, T - 150),
                 b = ax_rng_below(77, 2, (uint64_t)t, T - 150);
        ax_axd_tokens(ds, a, 120, q);
        ax_axd_tokens(ds, b, 150, q + 120);
        snprintf(name, sizeof name, "%s: slices %d", what, t);
        check_query(idx, q, 270, 3, name);
    }
    /* 3: random tokens of the corpus alphabet with pieces of X: short matches everywhere */
    for (int i = 0; i < 200; i++) q[i] = 100 + (int32_t)ax_rng_below(78, 1, (uint64_t)i, alphabet);
    memcpy(q + 30, X + 20, sizeof *X * 40);
    memcpy(q + 100, X, sizeof *X * 60);
    snprintf(name, sizeof name, "%s: noise", what);
    check_query(idx, q, 200, 5, name);
}

static ax_memscan_index_t *build(const ax_axd_t *ds, int n, int bits) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = n;
    o.hash_bits = bits;
    o.round_windows = 500; /* several rounds and chunk flushes */
    ax_memscan_index_t *idx = NULL;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    return idx;
}

static void check_corpus(int alphabet, int n, int bits) {
    char path[128], ipath[140];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_spans_%d.axd", (int)getpid(), alphabet);
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    int32_t X[PLEN];
    write_corpus(path, alphabet, (uint64_t)alphabet, X);
    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_t *idx = build(ds, n, bits);
    char what[64];
    snprintf(what, sizeof what, "alphabet %d, n %d, bits %d", alphabet, n, bits);
    run_queries(idx, X, alphabet, what);
    cr_assert_eq(ax_memscan_index_save(idx, ipath, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    cr_assert_eq(ax_memscan_index_load(ipath, ds, &idx), AX_OK, "%s", ax_error_msg());
    strcat(what, ", loaded");
    run_queries(idx, X, alphabet, what);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* a large alphabet: only the planted copies repeat */
Test(index_spans, planted_duplicates_equal_brute_force) {
    check_corpus(800, 8, 64);
}

/* three letters: most short windows repeat, spans overlap with many sources */
Test(index_spans, small_alphabet_equal_brute_force) {
    check_corpus(3, 6, 64);
}

/* hashes masked to 4 bits: every lookup meets colliding windows */
Test(index_spans, colliding_hashes_equal_brute_force) {
    check_corpus(5, 7, 4);
}

/* Every place of every distinct window of the corpus (planted copies included), through the
 * index as built, loaded and opened (version 3) and loaded from version 2: the first min(total,
 * M) of the brute-force list, in order, and the exact total. */
static void check_window_sources(const ax_memscan_index_t *idx, const ax_memscan_brute *b,
                                 const char *what) {
    const ax_axd_t *ds = ax_memscan_index_dataset(idx);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int n = b->n;
    int32_t w[16];
    ax_memscan_source got[8];
    uint64_t checked = 0, multi = 0;
    for (uint64_t p = 0; p < b->n_tokens; p++) {
        if (!b->count[p] || b->first[p] != p) continue; /* each distinct window once */
        ax_axd_tokens(ds, p, (size_t)n, w);
        uint32_t c;
        uint64_t f;
        cr_assert(ax_memscan_index_lookup(idx, w, &c, &f), "%s: window at %llu absent", what,
                  (unsigned long long)p);
        for (size_t M = 0; M <= 8; M += 3) {
            memset(got, 0xff, sizeof got);
            uint64_t total = ax_memscan_window_sources(idx, f, c, got, M);
            cr_assert_eq(total, b->count[p], "%s: window at %llu: %llu places, want %u", what,
                         (unsigned long long)p, (unsigned long long)total, b->count[p]);
            size_t listed = total < M ? (size_t)total : M;
            for (size_t k = 0; k < listed; k++) {
                uint64_t q = b->occ[b->at[p] + k], d = ax_axd_doc_of(ds, q);
                cr_assert(got[k].pos == q && got[k].doc == d && got[k].doc_off == q - off[d],
                          "%s: window at %llu place %zu", what, (unsigned long long)p, k);
            }
            if (listed < 8) cr_assert_eq(got[listed].pos, UINT64_MAX, "%s: bound %zu", what, M);
        }
        checked++;
        multi += b->count[p] > 8;
    }
    cr_assert(checked > 100 && multi > 0, "%s: %llu windows, %llu over the bound", what,
              (unsigned long long)checked, (unsigned long long)multi);
}

Test(index_spans, window_places_equal_brute_force) {
    char path[128], p3[140], p2[140];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_places.axd", (int)getpid());
    snprintf(p3, sizeof p3, "%s.idx", path);
    snprintf(p2, sizeof p2, "%s.v2.idx", path);
    int32_t X[PLEN];
    write_corpus(path, 3, 11, X); /* a small alphabet: windows repeat up to hundreds of times */
    ax_axd_t *ds = NULL;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    ax_memscan_brute b;
    cr_assert_eq(ax_memscan_brute_build(ds, 6, &b), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_t *idx = build(ds, 6, 64);
    check_window_sources(idx, &b, "built");
    cr_assert_eq(ax_memscan_index_save(idx, p3, NULL), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_save_v2(idx, p2, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    cr_assert_eq(ax_memscan_index_open(p3, ds, &idx), AX_OK, "%s", ax_error_msg());
    check_window_sources(idx, &b, "v3 opened");
    cr_assert_eq(ax_memscan_index_check(idx), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    cr_assert_eq(ax_memscan_index_load(p2, ds, &idx), AX_OK, "%s", ax_error_msg());
    check_window_sources(idx, &b, "v2 loaded");
    ax_memscan_index_free(idx);
    ax_memscan_brute_free(&b);
    ax_axd_free(ds);
}
