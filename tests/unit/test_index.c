/* memscan index build (serial path): exact counts, first occurrences and histogram against a
 * brute-force reference, planted duplicates, document boundaries, and no false positives when
 * hashes are masked to a few bits. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/log.h"
#include "tests/support/brute.h"
#include "index/hash.h"
#include "index/index.h"
#include "tests/support/synth.h"
#include "tests/unit/test_suite_files.h"

TestSuite(index, .init = ts_quiet, .fini = ts_cleanup);

static void tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/axmem_test_%d_%s", (int)getpid(), name);
}

static ax_axd_t *synth(const char *name, const ax_memscan_synth_opts *o, ax_memscan_plant **pl,
                       size_t *np) {
    char path[256];
    tmp(path, sizeof path, name);
    cr_assert_eq(ax_memscan_synth_write(path, o, pl, np), AX_OK, "%s", ax_error_msg());
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    return ds;
}

static ax_memscan_index_t *build(const ax_axd_t *ds, int n, uint64_t round, int bits) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = n;
    o.round_windows = round;
    o.hash_bits = bits;
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    return idx;
}

static void check_vs_brute(const ax_memscan_index_t *idx, const ax_axd_t *ds, int n) {
    ax_memscan_brute b;
    cr_assert_eq(ax_memscan_brute_build(ds, n, &b), AX_OK);
    char why[256];
    uint64_t bad = ax_memscan_brute_check(idx, &b, why, sizeof why);
    cr_assert_eq(bad, 0, "%llu mismatches, first: %s", (unsigned long long)bad, why);
    ax_memscan_brute_free(&b);
}

/* a 3-letter alphabet and n = 6: windows repeat at every rate and the min-position rule is
 * exercised everywhere; tiny rounds cross document edges mid-round */
Test(index, counts_exact_small_alphabet) {
    ax_memscan_synth_opts o = {.vocab = 300,
                               .n_docs = 300,
                               .doc_len_min = 0,
                               .doc_len_max = 70,
                               .alphabet = 3,
                               .n_passages = 4,
                               .passage_len = 20,
                               .copies = 5,
                               .seed = 11};
    ax_axd_t *ds = synth("small.axd", &o, NULL, NULL);
    ax_memscan_index_t *idx = build(ds, 6, 97, 64);
    check_vs_brute(idx, ds, 6);
    ax_memscan_index_free(idx);
    /* the same with one big round */
    idx = build(ds, 6, 1 << 20, 64);
    check_vs_brute(idx, ds, 6);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* passages copied 2, 8, 32 and 128 times fill every duplication bucket */
Test(index, histogram_buckets) {
    ax_memscan_synth_opts o = {.vocab = 300,
                               .n_docs = 400,
                               .doc_len_min = 30,
                               .doc_len_max = 60,
                               .alphabet = 4,
                               .n_passages = 4,
                               .passage_len = 25,
                               .copies = 2,
                               .copies_growth = 4,
                               .seed = 12};
    ax_memscan_plant *pl;
    size_t np;
    ax_axd_t *ds = synth("hist.axd", &o, &pl, &np);
    cr_assert_eq(np, 2 + 8 + 32 + 128);
    ax_memscan_index_t *idx = build(ds, 12, 1000, 64);
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    for (int i = 0; i < AX_MEMSCAN_HIST; i++)
        cr_assert_gt(in->hist[i], 0, "bucket %s empty", ax_memscan_hist_labels[i]);
    check_vs_brute(idx, ds, 12);
    free(pl);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* passages copied into several documents: every window inside a copy occurs `copies` times
 * and its first occurrence is in the earliest copy */
Test(index, planted_passages) {
    ax_memscan_synth_opts o = {.vocab = 4096,
                               .n_docs = 120,
                               .doc_len_min = 50,
                               .doc_len_max = 200,
                               .alphabet = 4000,
                               .n_passages = 3,
                               .passage_len = 40,
                               .copies = 4,
                               .seed = 5};
    ax_memscan_plant *pl;
    size_t np;
    ax_axd_t *ds = synth("planted.axd", &o, &pl, &np);
    cr_assert_eq(np, 12);
    int n = 8;
    ax_memscan_index_t *idx = build(ds, n, 1000, 64);
    check_vs_brute(idx, ds, n);
    int32_t pas[40];
    for (uint32_t j = 0; j < 3; j++) {
        ax_memscan_synth_passage(&o, j, pas);
        uint64_t first = UINT64_MAX;
        for (size_t k = 0; k < np; k++)
            if (pl[k].passage == j && pl[k].pos < first) first = pl[k].pos;
        for (int s = 0; s + n <= 40; s++) {
            uint32_t c;
            uint64_t f;
            cr_assert(ax_memscan_index_lookup(idx, pas + s, &c, &f));
            cr_assert_eq(c, 4, "passage %u window %d: %u times", j, s, c);
            cr_assert_eq(f, first + (uint64_t)s);
        }
    }
    free(pl);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* Only 4 hash bits: 16 possible hashes for thousands of distinct windows. Counts must stay
 * exact and lookups of absent windows must never match. */
Test(index, tiny_hash_no_false_positives) {
    ax_memscan_synth_opts o = {.vocab = 512,
                               .n_docs = 60,
                               .doc_len_min = 10,
                               .doc_len_max = 80,
                               .alphabet = 6,
                               .n_passages = 2,
                               .passage_len = 15,
                               .copies = 3,
                               .seed = 3};
    ax_axd_t *ds = synth("tiny.axd", &o, NULL, NULL);
    int n = 5;
    ax_memscan_index_t *idx = build(ds, n, 64, 4);
    cr_assert_eq(ax_memscan_index_info(idx)->hash_bits, 4);
    check_vs_brute(idx, ds, n);
    /* absent windows: tokens outside the corpus alphabet, and corpus windows with one token
     * changed to a value the corpus never uses */
    ax_memscan_brute b;
    cr_assert_eq(ax_memscan_brute_build(ds, n, &b), AX_OK);
    int32_t w[5];
    uint32_t c;
    uint64_t f;
    int tried = 0;
    for (uint64_t p = 0; p < b.n_tokens && tried < 500; p++) {
        if (!b.count[p]) continue;
        ax_axd_tokens(ds, p, (uint64_t)n, w);
        w[p % (uint64_t)n] = 7 + (int32_t)(p % 5); /* alphabet is 0..5 */
        cr_assert_not(ax_memscan_index_lookup(idx, w, &c, &f), "false positive at %llu",
                      (unsigned long long)p);
        tried++;
    }
    cr_assert_gt(tried, 100);
    ax_memscan_brute_free(&b);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* windows stay inside one document's text: no window crosses a boundary or includes the
 * end-of-text token; documents shorter than n give none */
Test(index, document_boundaries) {
    char path[256];
    tmp(path, sizeof path, "bounds.axd");
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK);
    int32_t d0[] = {1, 2, 3, 4, 5}, d1[] = {6, 7, 8, 9, 10}, d2[] = {1, 2, 3}, d3[] = {2, 3, 4, 5};
    cr_assert_eq(ax_axd_writer_add_doc(w, d0, 5), AX_OK);
    cr_assert_eq(ax_axd_writer_add_doc(w, d1, 5), AX_OK);
    cr_assert_eq(ax_axd_writer_add_doc(w, d2, 3), AX_OK);
    cr_assert_eq(ax_axd_writer_add_doc(w, NULL, 0), AX_OK);
    cr_assert_eq(ax_axd_writer_add_doc(w, d3, 4), AX_OK);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK);
    ax_memscan_index_t *idx = build(ds, 4, 3, 64);
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    /* d0: 2 windows, d1: 2, d2: none (3 < 4), empty doc: none, d3: 1 = d0's second */
    cr_assert_eq(in->n_windows, 5);
    cr_assert_eq(in->n_distinct, 4);
    uint32_t c;
    uint64_t f;
    int32_t q1[] = {2, 3, 4, 5}, q2[] = {4, 5, 6, 7}, q3[] = {3, 4, 5, AX_TOK_EOT},
            q4[] = {7, 8, 9, 10};
    cr_assert(ax_memscan_index_lookup(idx, q1, &c, &f));
    cr_assert_eq(c, 2);
    cr_assert_eq(f, 1);
    cr_assert_not(ax_memscan_index_lookup(idx, q2, &c, &f));
    cr_assert_not(ax_memscan_index_lookup(idx, q3, &c, &f));
    cr_assert(ax_memscan_index_lookup(idx, q4, &c, &f));
    cr_assert_eq(f, 7); /* d1 starts at 6 (d0 is 5 tokens + end-of-text) */
    check_vs_brute(idx, ds, 4);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* a window longer than every document, an empty dataset, and bad options */
Test(index, edge_cases_and_bad_options) {
    ax_memscan_synth_opts o = {
        .vocab = 300, .n_docs = 10, .doc_len_min = 1, .doc_len_max = 9, .alphabet = 50, .seed = 1};
    ax_axd_t *ds = synth("edge.axd", &o, NULL, NULL);
    ax_memscan_index_t *idx = build(ds, 10, 4, 64);
    cr_assert_eq(ax_memscan_index_info(idx)->n_windows, 0);
    cr_assert_eq(ax_memscan_index_info(idx)->n_distinct, 0);
    ax_memscan_index_free(idx);
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = 0;
    cr_assert_eq(ax_memscan_index_build(ds, &bo, &idx), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--n") != NULL, "%s", ax_error_msg());
    ax_axd_free(ds);
}

/* the stop flag (Ctrl-C) ends the build with AX_ERR_INTERRUPTED */
Test(index, build_interrupted) {
    ax_memscan_synth_opts o = {.vocab = 300,
                               .n_docs = 20,
                               .doc_len_min = 10,
                               .doc_len_max = 40,
                               .alphabet = 50,
                               .seed = 2};
    ax_axd_t *ds = synth("stop.axd", &o, NULL, NULL);
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    volatile int stop = 1;
    bo.stop = &stop;
    ax_memscan_index_t *idx = NULL;
    cr_assert_eq(ax_memscan_index_build(ds, &bo, &idx), AX_ERR_INTERRUPTED);
    cr_assert_null(idx);
    ax_axd_free(ds);
}

/* the table stays near its target size: at most 16 bytes per distinct window; a table this
 * large also takes the grouped-by-region insert path, checked against the reference */
Test(index, bytes_per_window) {
    ax_memscan_synth_opts o = {.vocab = 65536,
                               .n_docs = 200,
                               .doc_len_min = 400,
                               .doc_len_max = 600,
                               .alphabet = 60000,
                               .n_passages = 10,
                               .passage_len = 100,
                               .copies = 5,
                               .seed = 9};
    ax_axd_t *ds = synth("bytes.axd", &o, NULL, NULL);
    ax_memscan_index_t *idx = build(ds, 32, 1 << 20, 64);
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    double per = (double)ax_memscan_index_table_bytes(idx) / (double)in->n_distinct;
    cr_assert_leq(per, 16.0, "%.2f bytes per distinct window", per);
    cr_assert_eq(in->n_distinct, ax_memscan_index_local_entries(idx));
    check_vs_brute(idx, ds, 32);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}
