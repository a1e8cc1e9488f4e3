/* data dedup (index/dedup_run.h) against a brute-force reference: every window compared with
 * every earlier window (O(N^2)), every document with every earlier one, on planted duplicates
 * (exact copies, partial overlaps, runs of one token, spans n and n - 1 long, copies across
 * documents, duplicate and empty documents), with the index in memory and spilled, hashes full
 * and masked to 3 bits, and positions marked in chunks as small as one token. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/axd.h"
#include "index/dedup_run.h"
#include "lib/core/fsutil.h"
#include "lib/core/status.h"
#include "tests/support/synth.h"
#include "tests/unit/test_suite_files.h"

TestSuite(dedup, .init = ts_quiet, .fini = ts_cleanup);

#define EOT 256
#define MAXDOC 64
#define MAXTOK 300

typedef struct {
    int n_docs;
    int len[MAXDOC]; /* text tokens (end-of-text follows) */
    int32_t tok[MAXDOC][MAXTOK];
} corpus;

static void tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/axmem_test_%d_%s", (int)getpid(), name);
}

static uint64_t rng_state;
static int rnd(int k) {
    if (k <= 0) return 0;
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng_state >> 33) % (uint64_t)k);
}

static void add(corpus *c, const int32_t *t, int len) {
    cr_assert(c->n_docs < MAXDOC && len <= MAXTOK);
    memcpy(c->tok[c->n_docs], t, sizeof *t * (size_t)len);
    c->len[c->n_docs++] = len;
}

/* planted duplicates for window length n (6 for n = 0: documents alone) */
static void plant(corpus *c, int n, uint64_t seed) {
    rng_state = seed;
    if (n == 0) n = 6;
    int32_t p[120], t[MAXTOK];
    for (int i = 0; i < 120; i++) p[i] = rnd(200);
    c->n_docs = 0;
    for (int d = 0; d < 40; d++) {
        int len = rnd(60), kind = d % 10;
        for (int i = 0; i < len; i++) t[i] = rnd(kind == 9 ? 3 : 200);
        if (kind == 1) { /* the passage whole, at an offset */
            memcpy(t + len, p, sizeof p);
            len += 120;
        } else if (kind == 2) { /* a piece overlapping the passage's copies */
            int a = rnd(60), k = n + rnd(2 * n);
            memcpy(t + len, p + a, sizeof *p * (size_t)k);
            len += k;
        } else if (kind == 3 && d > 0 && c->len[d - 1] >= n) { /* n and n - 1 from before */
            const int32_t *s = c->tok[d - 1];
            memcpy(t + len, s, sizeof *s * (size_t)n);
            len += n;
            t[len++] = 201;
            memcpy(t + len, s + 1, sizeof *s * (size_t)(n - 1));
            len += n - 1;
        } else if (kind == 4) { /* a run of one token */
            int k = 2 * n + rnd(20);
            for (int i = 0; i < k; i++) t[len + i] = 7;
            len += k;
        } else if (kind == 5 && d > 0) { /* a duplicate document */
            int s = rnd(d);
            len = c->len[s];
            memcpy(t, c->tok[s], sizeof *t * (size_t)len);
        } else if (kind == 6) { /* an empty document */
            len = 0;
        } else if (kind == 7) { /* only earlier text */
            len = n + rnd(n);
            memcpy(t, p + 3, sizeof *t * (size_t)len);
        }
        add(c, t, len);
    }
}

static void write_corpus(const corpus *c, const char *path) {
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK, "%s", ax_error_msg());
    for (int d = 0; d < c->n_docs; d++) {
        int32_t t[MAXTOK + 1];
        memcpy(t, c->tok[d], sizeof *t * (size_t)c->len[d]);
        t[c->len[d]] = EOT;
        cr_assert_eq(ax_axd_writer_add_doc(w, t, (size_t)c->len[d] + 1), AX_OK);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

/* the definition, by brute force: out gets the kept documents */
static void brute(const corpus *c, int n, int documents, corpus *out, uint64_t *span_tokens,
                  uint64_t *dup_docs, uint64_t *emptied) {
    static uint8_t rem[MAXDOC][MAXTOK];
    memset(rem, 0, sizeof rem);
    *span_tokens = *dup_docs = *emptied = 0;
    out->n_docs = 0;
    for (int d = 0; n > 0 && d < c->n_docs; d++)
        for (int p = 0; p + n <= c->len[d]; p++) {
            int earlier = 0;
            for (int e = 0; e <= d && !earlier; e++)
                for (int q = 0; q + n <= c->len[e] && (e < d || q < p) && !earlier; q++)
                    earlier = !memcmp(c->tok[d] + p, c->tok[e] + q, sizeof(int32_t) * (size_t)n);
            if (earlier) memset(rem[d] + p, 1, (size_t)n);
        }
    for (int d = 0; d < c->n_docs; d++) {
        int dup = 0;
        for (int e = 0; documents && e < d && !dup; e++)
            dup = c->len[e] == c->len[d] &&
                  !memcmp(c->tok[e], c->tok[d], sizeof(int32_t) * (size_t)c->len[d]);
        if (dup) {
            (*dup_docs)++;
            continue;
        }
        int32_t t[MAXTOK];
        int k = 0;
        for (int i = 0; i < c->len[d]; i++)
            if (rem[d][i])
                (*span_tokens)++;
            else
                t[k++] = c->tok[d][i];
        if (c->len[d] > 0 && k == 0) {
            (*emptied)++;
            continue;
        }
        add(out, t, k);
    }
}

static void expect_output(const char *path, const corpus *want) {
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_axd_n_docs(ds), (uint64_t)want->n_docs, "%llu documents, expected %d",
                 (unsigned long long)ax_axd_n_docs(ds), want->n_docs);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    for (int d = 0; d < want->n_docs; d++) {
        cr_assert_eq(off[d + 1] - off[d], (uint64_t)want->len[d] + 1, "document %d's length", d);
        for (int i = 0; i < want->len[d]; i++)
            cr_assert_eq((int32_t)ax_axd_token(ds, off[d] + (uint64_t)i), want->tok[d][i],
                         "document %d token %d", d, i);
        cr_assert_eq(ax_axd_token(ds, off[d + 1] - 1), (uint32_t)EOT);
    }
    ax_axd_free(ds);
}

static void run_case(int n, int documents, int bits, uint64_t chunk, uint64_t mem_limit,
                     uint64_t seed) {
    static corpus c, want;
    plant(&c, n, seed);
    char in[256], out[256];
    tmp(in, sizeof in, "in.axd");
    tmp(out, sizeof out, "out.axd");
    write_corpus(&c, in);
    ax_dedup_opts o;
    ax_dedup_opts_default(&o);
    o.input = in;
    o.out = out;
    o.n = n;
    o.documents = documents;
    o.hash_bits = bits;
    o.chunk_tokens = chunk;
    o.mem_limit = mem_limit;
    ax_dedup_result r;
    cr_assert_eq(ax_dedup_run(&o, &r), AX_OK, "%s", ax_error_msg());
    uint64_t span_tokens, dup_docs, emptied;
    brute(&c, n, documents, &want, &span_tokens, &dup_docs, &emptied);
    expect_output(out, &want);
    cr_assert_eq(r.span_tokens, span_tokens, "span tokens %llu, brute force %llu",
                 (unsigned long long)r.span_tokens, (unsigned long long)span_tokens);
    cr_assert_eq(r.dup_docs, dup_docs);
    cr_assert_eq(r.emptied_docs, emptied);
    cr_assert_eq(r.docs_after, (uint64_t)want.n_docs);
    cr_assert_eq(r.spilled, mem_limit > 0 && n > 0);
    cr_assert(r.n_spans > 0 || n == 0);
    for (size_t i = 1; i < r.n_spans; i++) /* most duplicated first */
        cr_assert(r.spans[i - 1].count >= r.spans[i].count);
    struct stat sb;
    cr_assert_eq(stat(r.summary, &sb), 0, "no summary at %s", r.summary);
    cr_assert_eq(sb.st_mode & 0777, 0600);
    char side[300];
    snprintf(side, sizeof side, "%s.dedup-index", out);
    cr_assert_neq(stat(side, &sb), 0, "the spilled index was left behind");
    unlink(r.summary);
}

Test(dedup, equals_brute_force_in_memory) {
    const int ns[] = {1, 4, 12};
    for (int i = 0; i < 3; i++)
        for (uint64_t seed = 1; seed <= 2; seed++) run_case(ns[i], 0, 64, 0, 0, seed);
}

Test(dedup, equals_brute_force_with_documents) {
    run_case(6, 1, 64, 0, 0, 5);
    run_case(0, 1, 64, 0, 0, 6);
    run_case(0, 1, 2, 0, 0, 6); /* 4 hash values: every group confirmed by its tokens */
}

Test(dedup, chunks_as_small_as_one_token) {
    run_case(5, 1, 64, 1, 0, 7);
    run_case(5, 0, 64, 7, 0, 8);
    run_case(9, 0, 64, 64, 0, 9);
}

Test(dedup, hash_collisions_stay_exact) {
    run_case(5, 0, 3, 0, 0, 10);
    run_case(8, 1, 3, 13, 0, 11);
}

/* the same bytes with the index spilled (a corpus over what the 1M limit holds in memory) */
static void dedup_file(const char *in, const char *out, int n, int bits, uint64_t mem_limit,
                       uint64_t chunk, ax_dedup_result *r) {
    ax_dedup_opts o;
    ax_dedup_opts_default(&o);
    o.input = in;
    o.out = out;
    o.n = n;
    o.documents = 1;
    o.hash_bits = bits;
    o.mem_limit = mem_limit;
    o.chunk_tokens = chunk;
    cr_assert_eq(ax_dedup_run(&o, r), AX_OK, "%s", ax_error_msg());
}

static int same_bytes(const char *a, const char *b) {
    char *x, *y;
    size_t nx, ny;
    cr_assert_eq(ax_read_file(a, &x, &nx), AX_OK);
    cr_assert_eq(ax_read_file(b, &y, &ny), AX_OK);
    int same = nx == ny && !memcmp(x, y, nx);
    free(x), free(y);
    return same;
}

Test(dedup, spilled_index_writes_the_same_bytes) {
    static const ax_memscan_synth_opts so = {.vocab = 300,
                                             .n_docs = 400,
                                             .doc_len_min = 0,
                                             .doc_len_max = 150,
                                             .alphabet = 6,
                                             .n_passages = 4,
                                             .passage_len = 40,
                                             .copies = 5,
                                             .seed = 4};
    char in[256], a[256], b[256];
    tmp(in, sizeof in, "big.axd");
    tmp(a, sizeof a, "mem.axd");
    tmp(b, sizeof b, "lim.axd");
    cr_assert_eq(ax_memscan_synth_write(in, &so, NULL, NULL), AX_OK, "%s", ax_error_msg());
    for (int bits = 64; bits >= 3; bits -= 61) {
        ax_dedup_result rm, rl;
        dedup_file(in, a, 5, bits, 0, 0, &rm);
        dedup_file(in, b, 5, bits, 1 << 20, 1000, &rl);
        cr_assert(!rm.spilled && rl.spilled);
        cr_assert(rm.span_tokens > 1000, "few repeats planted: %llu",
                  (unsigned long long)rm.span_tokens);
        cr_assert(same_bytes(a, b), "spilled output differs (hash bits %d)", bits);
        cr_assert_eq(rl.n_spans, rm.n_spans);
        cr_assert(!memcmp(rl.spans, rm.spans, sizeof rm.spans[0] * rm.n_spans));
    }
}

Test(dedup, refuses_bad_settings) {
    static corpus c;
    plant(&c, 5, 1);
    char in[256];
    tmp(in, sizeof in, "in.axd");
    write_corpus(&c, in);
    ax_dedup_opts o;
    ax_dedup_opts_default(&o);
    o.input = in;
    o.out = in;
    o.n = 5;
    ax_dedup_result r;
    cr_assert_eq(ax_dedup_run(&o, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "is the input"), "%s", ax_error_msg());
    ax_error_clear();
    char out[256];
    tmp(out, sizeof out, "out.axd");
    o.out = out;
    o.n = 0;
    cr_assert_eq(ax_dedup_run(&o, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "nothing to do"), "%s", ax_error_msg());
    ax_error_clear();
    o.n = 5;
    o.summary = in;
    cr_assert_eq(ax_dedup_run(&o, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--summary"), "%s", ax_error_msg());
    struct stat sb;
    cr_assert_neq(stat(out, &sb), 0, "an output was written after a refusal");
}
