/* `axmem data split` (data/split.h): the draw is seeded and respects the fraction, the two
 * sets partition the input, and held-out documents sharing an n-gram with the training set are
 * dropped (a planted 20-token copy), while disjoint ones (and a 12-token copy at N = 13) stay. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/axd.h"
#include "data/split.h"
#include "lib/core/fsutil.h"
#include "lib/core/rng.h"
#include "test_data_util.h"

enum { NDOCS = 40, DOCLEN = 60, VOCAB = 4096 };

static void quiet(void) {
    td_quiet();
}
TestSuite(data_split, .init = quiet);

/* random content ids in [AX_TOK_FIRST_MERGE, VOCAB): with 3839 values two random 13-grams
 * never meet by chance */
static void random_docs(int32_t docs[NDOCS][DOCLEN], uint64_t seed) {
    for (int d = 0; d < NDOCS; d++)
        for (int i = 0; i < DOCLEN; i++)
            docs[d][i] = AX_TOK_FIRST_MERGE + (int32_t)ax_rng_below(seed, (uint64_t)d, (uint64_t)i,
                                                                    VOCAB - AX_TOK_FIRST_MERGE);
}

static void write_axd(const char *path, int32_t docs[NDOCS][DOCLEN]) {
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, VOCAB, &w), AX_OK);
    for (int d = 0; d < NDOCS; d++) cr_assert_eq(ax_axd_writer_add_doc(w, docs[d], DOCLEN), AX_OK);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
}

/* which input document each output document is (by content); -1 if none */
static void match_docs(const char *path, int32_t docs[NDOCS][DOCLEN], int *which, int *n) {
    ax_axd_t *a;
    cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &a), AX_OK);
    *n = (int)ax_axd_n_docs(a);
    const uint64_t *off = ax_axd_doc_offsets(a);
    int32_t buf[DOCLEN + 1];
    for (int k = 0; k < *n; k++) {
        cr_assert_eq(off[k + 1] - off[k], DOCLEN + 1);
        ax_axd_tokens(a, off[k], DOCLEN + 1, buf);
        cr_assert_eq(buf[DOCLEN], AX_TOK_EOT);
        which[k] = -1;
        for (int d = 0; d < NDOCS; d++)
            if (!memcmp(buf, docs[d], sizeof docs[d])) which[k] = d;
    }
    ax_axd_free(a);
}

typedef struct {
    char in[256], tr[256], ho[256];
} paths;

static void mk_paths(paths *p, const char *tag) {
    char b[64];
    snprintf(b, sizeof b, "%s.in.axd", tag);
    td_tmp(p->in, sizeof p->in, b);
    snprintf(b, sizeof b, "%s.tr.axd", tag);
    td_tmp(p->tr, sizeof p->tr, b);
    snprintf(b, sizeof b, "%s.ho.axd", tag);
    td_tmp(p->ho, sizeof p->ho, b);
}

/* the paths of `tag` and its input: NDOCS random documents drawn with seed */
static void setup(paths *p, const char *tag, int32_t docs[NDOCS][DOCLEN], uint64_t seed) {
    random_docs(docs, seed);
    mk_paths(p, tag);
    write_axd(p->in, docs);
}

static void rm_paths(const paths *p) {
    remove(p->in);
    remove(p->tr);
    remove(p->ho);
}

static const ax_split_config CFG = {.holdout = 0.25, .seed = 7, .ngram = 13, .max_memory = 0};

Test(data_split, fraction_partition_and_mode) {
    static int32_t docs[NDOCS][DOCLEN];
    paths p;
    setup(&p, "part", docs, 1);
    ax_split_result r;
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &CFG, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.drawn_docs, 10); /* round(0.25 * 40) */
    cr_assert_eq(r.dropped_docs, 0);
    cr_assert_eq(r.holdout_docs, 10);
    cr_assert_eq(r.train_docs, 30);
    cr_assert_eq(r.train_tokens, 30 * (DOCLEN + 1));
    cr_assert_eq(r.train_windows, 30 * (DOCLEN - 13 + 1));
    int wt[NDOCS], wh[NDOCS], nt, nh, seen[NDOCS] = {0};
    match_docs(p.tr, docs, wt, &nt);
    match_docs(p.ho, docs, wh, &nh);
    cr_assert_eq(nt, 30);
    cr_assert_eq(nh, 10);
    /* a partition of the input, each set in input order */
    for (int k = 0; k < nt; k++) {
        cr_assert(wt[k] >= 0 && (k == 0 || wt[k] > wt[k - 1]));
        seen[wt[k]]++;
    }
    for (int k = 0; k < nh; k++) {
        cr_assert(wh[k] >= 0 && (k == 0 || wh[k] > wh[k - 1]));
        seen[wh[k]]++;
    }
    for (int d = 0; d < NDOCS; d++) cr_assert_eq(seen[d], 1, "doc %d in %d sets", d, seen[d]);
    struct stat st;
    cr_assert_eq(stat(p.tr, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(stat(p.ho, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    /* the JSON summary carries the counts */
    ax_jw w;
    ax_jw_init(&w);
    ax_split_result_json(&r, &CFG, &w);
    ax_json *j;
    cr_assert_eq(ax_json_parse(ax_jw_text(&w), strlen(ax_jw_text(&w)), "summary", &j), AX_OK);
    cr_assert_eq(ax_json_get(ax_json_get(j, "holdout"), "docs")->num, 10);
    cr_assert_eq(ax_json_get(ax_json_get(j, "train"), "docs")->num, 30);
    cr_assert_eq(ax_json_get(ax_json_get(j, "dropped"), "docs")->num, 0);
    ax_json_free(j);
    ax_jw_free(&w);
    rm_paths(&p);
}

Test(data_split, same_seed_same_split_other_seed_other_split) {
    static int32_t docs[NDOCS][DOCLEN];
    paths p, q;
    setup(&p, "seedA", docs, 2);
    mk_paths(&q, "seedB");
    ax_split_result r;
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &CFG, &r), AX_OK);
    cr_assert_eq(ax_data_split(p.in, q.tr, q.ho, &CFG, &r), AX_OK);
    size_t n1, n2;
    uint8_t *a = td_read(p.ho, &n1), *b = td_read(q.ho, &n2);
    cr_assert(n1 == n2 && !memcmp(a, b, n1), "same seed, different held-out files");
    free(a);
    free(b);
    a = td_read(p.tr, &n1);
    b = td_read(q.tr, &n2);
    cr_assert(n1 == n2 && !memcmp(a, b, n1), "same seed, different training files");
    free(a);
    free(b);
    ax_split_config c2 = CFG;
    c2.seed = 8;
    cr_assert_eq(ax_data_split(p.in, q.tr, q.ho, &c2, &r), AX_OK);
    int w1[NDOCS], w2[NDOCS], n_1, n_2;
    match_docs(p.ho, docs, w1, &n_1);
    match_docs(q.ho, docs, w2, &n_2);
    cr_assert_eq(n_1, n_2);
    cr_assert(memcmp(w1, w2, sizeof(int) * (size_t)n_1) != 0, "seed 8 drew seed 7's documents");
    rm_paths(&p);
    remove(q.tr);
    remove(q.ho);
}

Test(data_split, planted_overlap_is_dropped_and_disjoint_kept) {
    static int32_t docs[NDOCS][DOCLEN];
    paths p;
    setup(&p, "plant", docs, 3);
    ax_split_result r;
    /* first learn which documents the seed holds out (the draw depends on the seed and the
     * document count only), then plant copies into them */
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &CFG, &r), AX_OK);
    int wh[NDOCS], nh, wt[NDOCS], nt;
    match_docs(p.ho, docs, wh, &nh);
    match_docs(p.tr, docs, wt, &nt);
    cr_assert(nh >= 4 && nt >= 2);
    int h0 = wh[0], h1 = wh[1], h2 = wh[2], h3 = wh[3], t0 = wt[0], t1 = wt[1];
    /* h0 copies 20 tokens of training doc t0 in its middle: dropped */
    memcpy(&docs[h0][25], &docs[t0][10], 20 * sizeof(int32_t));
    /* h1 copies 12 tokens (< 13) of t1: kept */
    memcpy(&docs[h1][5], &docs[t1][30], 12 * sizeof(int32_t));
    /* h2 copies exactly 13 tokens of t1, at its very end: dropped */
    memcpy(&docs[h2][DOCLEN - 13], &docs[t1][0], 13 * sizeof(int32_t));
    /* h3 shares 30 tokens with h1 only (both held out): the rule is about training; kept */
    memcpy(&docs[h3][0], &docs[h1][20], 30 * sizeof(int32_t));
    write_axd(p.in, docs);
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &CFG, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.drawn_docs, 10);
    cr_assert_eq(r.dropped_docs, 2);
    cr_assert_eq(r.dropped_tokens, 2 * (DOCLEN + 1));
    cr_assert_eq(r.holdout_docs, 8);
    cr_assert_eq(r.n_listed, 2);
    /* listed in input order, each with the offset of its first shared window */
    int first = h0 < h2 ? h0 : h2, second = h0 < h2 ? h2 : h0;
    cr_assert_eq(r.listed_doc[0], (uint64_t)first);
    cr_assert_eq(r.listed_doc[1], (uint64_t)second);
    cr_assert_eq(r.listed_pos[first == h0 ? 0 : 1], 25);
    cr_assert_eq(r.listed_pos[first == h2 ? 0 : 1], DOCLEN - 13);
    match_docs(p.ho, docs, wh, &nh);
    cr_assert_eq(nh, 8);
    int kept1 = 0, kept3 = 0;
    for (int k = 0; k < nh; k++) {
        cr_assert(wh[k] != h0 && wh[k] != h2, "overlapping doc %d kept", wh[k]);
        kept1 += wh[k] == h1;
        kept3 += wh[k] == h3;
    }
    cr_assert(kept1 && kept3);
    /* the training set is unchanged by the rule */
    match_docs(p.tr, docs, wt, &nt);
    cr_assert_eq(nt, 30);
    /* with N = 12 the 12-token copy is dropped too */
    ax_split_config c12 = CFG;
    c12.ngram = 12;
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &c12, &r), AX_OK);
    cr_assert_eq(r.dropped_docs, 3);
    rm_paths(&p);
}

Test(data_split, bad_requests_write_nothing) {
    static int32_t docs[NDOCS][DOCLEN];
    paths p;
    setup(&p, "bad", docs, 4);
    ax_split_result r;
    ax_split_config c = CFG;
    c.holdout = 0;
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--holdout"), "%s", ax_error_msg());
    ax_error_clear();
    c.holdout = 0.001; /* rounds to no document of 40 */
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--holdout"), "%s", ax_error_msg());
    ax_error_clear();
    c = CFG;
    cr_assert_eq(ax_data_split(p.in, p.in, p.ho, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "must not be the input"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_data_split(p.in, p.tr, p.tr, &c, &r), AX_ERR_ARG);
    ax_error_clear();
    c.max_memory = 1024; /* 30 docs x 48 windows need 4096 slots = 32 KiB */
    cr_assert_eq(ax_data_split(p.in, p.tr, p.ho, &c, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--max-memory"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert(!ax_path_exists(p.tr) && !ax_path_exists(p.ho), "a failed split left a file");
    remove(p.in);
}
