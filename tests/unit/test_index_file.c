/* memscan index files: save/load round trip, the INDEX.json sidecar, and rejection (with the
 * file named) of truncated or corrupt indexes and of an index loaded against another dataset. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/axd.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "tests/support/brute.h"
#include "index/index.h"
#include "tests/support/synth.h"
#include "tests/unit/test_suite_files.h"

TestSuite(index_file, .init = ts_quiet, .fini = ts_cleanup);

static void tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/axmem_test_%d_%s", (int)getpid(), name);
}

static const ax_memscan_synth_opts CORPUS = {.vocab = 1000,
                                             .n_docs = 150,
                                             .doc_len_min = 20,
                                             .doc_len_max = 300,
                                             .alphabet = 20,
                                             .n_passages = 3,
                                             .passage_len = 30,
                                             .copies = 6,
                                             .seed = 21};

static ax_axd_t *make_ds(const char *name, ax_memscan_synth_opts o) {
    char path[256];
    tmp(path, sizeof path, name);
    cr_assert_eq(ax_memscan_synth_write(path, &o, NULL, NULL), AX_OK, "%s", ax_error_msg());
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK, "%s", ax_error_msg());
    return ds;
}

/* builds from ds with hash bits `bits` and window n, and saves to path */
static void build_save_bits_n(const ax_axd_t *ds, int bits, int n, const char *path) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = n;
    o.hash_bits = bits;
    o.round_windows = 500;
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_save(idx, path, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
}

static void build_save(const ax_axd_t *ds, int bits, const char *path) {
    build_save_bits_n(ds, bits, 6, path);
}

static void build_save_v2(const ax_axd_t *ds, int bits, const char *path) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 6;
    o.hash_bits = bits;
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_save_v2(idx, path, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
}

static uint8_t *slurp(const char *path, size_t *n) {
    char *d;
    cr_assert_eq(ax_read_file(path, &d, n), AX_OK);
    return (uint8_t *)d;
}

static void spit(const char *path, const uint8_t *d, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(d, 1, n, f), n);
    fclose(f);
}

Test(index_file, round_trip) {
    ax_axd_t *ds = make_ds("rt.axd", CORPUS);
    char path[256], json[300];
    tmp(path, sizeof path, "rt.idx");
    for (int bits = 64; bits >= 5; bits -= 59) { /* full hash, then a tiny one */
        build_save(ds, bits, path);
        ax_memscan_index_t *idx;
        cr_assert_eq(ax_memscan_index_load(path, ds, &idx), AX_OK, "%s", ax_error_msg());
        const ax_memscan_info *in = ax_memscan_index_info(idx);
        cr_assert_eq(in->hash_bits, (uint32_t)bits);
        cr_assert_eq(in->n, 6);
        cr_assert_eq(in->ds_checksum, ax_axd_checksum(ds));
        cr_assert(strstr(in->ds_path, "rt.axd") != NULL, "%s", in->ds_path);
        ax_memscan_brute b;
        cr_assert_eq(ax_memscan_brute_build(ds, 6, &b), AX_OK);
        char why[256];
        uint64_t bad = ax_memscan_brute_check(idx, &b, why, sizeof why);
        cr_assert_eq(bad, 0, "bits %d: %s", bits, why);
        /* header-only read and a full verification agree */
        ax_memscan_info hi;
        cr_assert_eq(ax_memscan_index_read_info(path, 1, &hi), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(hi.n_distinct, b.n_distinct);
        cr_assert_eq(memcmp(hi.hist, b.hist, sizeof hi.hist), 0);
        /* the sidecar carries the histogram */
        snprintf(json, sizeof json, "%s.json", path);
        size_t n;
        char *text = (char *)slurp(json, &n);
        ax_json *j;
        cr_assert_eq(ax_json_parse(text, n, json, &j), AX_OK, "%s", ax_error_msg());
        int64_t v;
        cr_assert_eq(ax_json_get_i64(j, "distinct_windows", json, &v), AX_OK);
        cr_assert_eq((uint64_t)v, b.n_distinct);
        const ax_json *h = ax_json_get(j, "duplication_histogram");
        cr_assert_not_null(h);
        cr_assert_eq(ax_json_get_i64(h, "1", json, &v), AX_OK);
        cr_assert_eq((uint64_t)v, b.hist[0]);
        cr_assert_eq(ax_json_get_i64(h, "64+", json, &v), AX_OK);
        cr_assert_eq((uint64_t)v, b.hist[4]);
        ax_json_free(j);
        free(text);
        ax_memscan_brute_free(&b);
        ax_memscan_index_free(idx);
    }
    char partial[300];
    snprintf(partial, sizeof partial, "%s.partial", path);
    cr_assert_not(ax_path_exists(partial));
    ax_axd_free(ds);
}

/* truncation anywhere, a flipped byte anywhere, a bad magic: each is refused with the path */
Test(index_file, corrupt_and_truncated_rejected) {
    ax_axd_t *ds = make_ds("bad.axd", CORPUS);
    char path[256], bad[256];
    tmp(path, sizeof path, "good.idx");
    tmp(bad, sizeof bad, "bad.idx");
    build_save(ds, 64, path);
    size_t n;
    uint8_t *d = slurp(path, &n);
    cr_assert_gt(n, 300);
    ax_memscan_index_t *idx;
    size_t cuts[] = {0, 4, 60, 127, 200, n / 2, n - 33, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        spit(bad, d, cuts[i]);
        ax_error_clear();
        ax_status st = ax_memscan_index_load(bad, ds, &idx);
        cr_assert_eq(st, AX_ERR_CORRUPT, "cut at %zu: status %d", cuts[i], st);
        cr_assert(strstr(ax_error_msg(), bad) != NULL, "cut at %zu: %s", cuts[i], ax_error_msg());
    }
    /* trailing garbage */
    uint8_t *longer = malloc(n + 5);
    memcpy(longer, d, n);
    memset(longer + n, 'x', 5);
    spit(bad, longer, n + 5);
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(bad, ds, &idx), AX_ERR_CORRUPT);
    free(longer);
    /* every 97th byte flipped in turn: never accepted */
    for (size_t off = 0; off < n; off += 97) {
        d[off] ^= 0x20;
        spit(bad, d, n);
        ax_error_clear();
        ax_status st = ax_memscan_index_load(bad, ds, &idx);
        cr_assert_neq(st, AX_OK, "flip at %zu accepted", off);
        cr_assert(strstr(ax_error_msg(), bad) != NULL, "flip at %zu: %s", off, ax_error_msg());
        d[off] ^= 0x20;
    }
    spit(bad, (const uint8_t *)"not an index at all", 19);
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(bad, ds, &idx), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "not a memscan index") != NULL, "%s", ax_error_msg());
    ax_error_clear();
    tmp(bad, sizeof bad, "missing.idx");
    cr_assert_eq(ax_memscan_index_load(bad, ds, &idx), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), bad) != NULL, "%s", ax_error_msg());
    free(d);
    ax_axd_free(ds);
}

/* an index meets a dataset it was not built from: the message names both files */
Test(index_file, dataset_mismatch) {
    ax_axd_t *a = make_ds("mis_a.axd", CORPUS);
    ax_memscan_synth_opts o = CORPUS;
    o.seed = 99;
    ax_axd_t *b = make_ds("mis_b.axd", o);
    char path[256];
    tmp(path, sizeof path, "mis.idx");
    build_save(a, 64, path);
    ax_memscan_index_t *idx = NULL;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(path, b, &idx), AX_ERR_MISMATCH);
    cr_assert_null(idx);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, path) && strstr(m, ax_axd_path(b)) && strstr(m, "mis_a.axd"), "%s", m);
    ax_axd_free(a);
    ax_axd_free(b);
}

/* Ctrl-C while saving: no index, no .partial, no sidecar */
Test(index_file, save_interrupted_leaves_nothing) {
    ax_axd_t *ds = make_ds("int.axd", CORPUS);
    char path[256], other[300];
    tmp(path, sizeof path, "int.idx");
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK);
    volatile int stop = 1;
    cr_assert_eq(ax_memscan_index_save(idx, path, &stop), AX_ERR_INTERRUPTED);
    cr_assert_not(ax_path_exists(path));
    snprintf(other, sizeof other, "%s.partial", path);
    cr_assert_not(ax_path_exists(other));
    snprintf(other, sizeof other, "%s.json", path);
    cr_assert_not(ax_path_exists(other));
    snprintf(other, sizeof other, "%s.json.partial", path);
    cr_assert_not(ax_path_exists(other));
    /* and an unwritable destination is an I/O error naming it */
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_save(idx, "/nonexistent-dir/x.idx", NULL), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "/nonexistent-dir/x.idx") != NULL, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* a version-1 index (no occurrence lists: spans would be lower bounds) is refused: rebuild */
Test(index_file, version_1_refused) {
    ax_axd_t *ds = make_ds("v1.axd", CORPUS);
    char path[256];
    tmp(path, sizeof path, "v1.idx");
    build_save(ds, 64, path);
    size_t n;
    uint8_t *d = slurp(path, &n);
    d[8] = 1, d[9] = d[10] = d[11] = 0;
    spit(path, d, n);
    ax_memscan_index_t *idx = NULL;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(path, ds, &idx), AX_ERR_MISMATCH);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, path) && strstr(m, "version 1") && strstr(m, "rebuild"), "%s", m);
    ax_memscan_info in;
    cr_assert_eq(ax_memscan_index_read_info(path, 0, &in), AX_ERR_MISMATCH);
    free(d);
    ax_axd_free(ds);
}

/* the header records the dataset's tokenizer identity; the same tokens recorded as encoded by
 * another tokenizer are not the index's dataset */
Test(index_file, tokenizer_identity) {
    char pa[256], pb[256], path[256];
    tmp(pa, sizeof pa, "tk_a.axd");
    tmp(pb, sizeof pb, "tk_b.axd");
    tmp(path, sizeof path, "tk.idx");
    int32_t doc[40];
    for (int k = 0; k < 2; k++) {
        ax_axd_writer_t *w;
        cr_assert_eq(ax_axd_writer_create(k ? pb : pa, 300, &w), AX_OK);
        ax_axd_writer_set_tokenizer(w, k ? 0x1234 : 0xabcdef);
        for (int d = 0; d < 5; d++) {
            for (int i = 0; i < 40; i++) doc[i] = (d * 7 + i * 3) % 11;
            cr_assert_eq(ax_axd_writer_add_doc(w, doc, 40), AX_OK);
        }
        cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    }
    ax_axd_t *a, *b;
    cr_assert_eq(ax_axd_open(pa, 1, &a), AX_OK);
    cr_assert_eq(ax_axd_open(pb, 1, &b), AX_OK);
    cr_assert_eq(ax_axd_checksum(a), ax_axd_checksum(b)); /* same tokens */
    build_save(a, 64, path);
    ax_memscan_info in;
    cr_assert_eq(ax_memscan_index_read_info(path, 1, &in), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(in.tok_checksum, 0xabcdef);
    ax_memscan_index_t *idx = NULL;
    cr_assert_eq(ax_memscan_index_load(path, a, &idx), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    idx = NULL;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(path, b, &idx), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "tokenizer"), "%s", ax_error_msg());
    ax_axd_free(a);
    ax_axd_free(b);
}

/* the header with field `off` (u64) set to v and its checksum made right again */
static void set_header_u64(uint8_t *d, size_t off, uint64_t v) {
    uint32_t L;
    memcpy(&L, d + 120, 4);
    memcpy(d + off, &v, 8);
    uint64_t h = XXH3_64bits(d, 136 + (size_t)L);
    memcpy(d + 136 + L, &h, 8);
}

/* Header counts size the table and the occurrence lists, so they are bounded before anything
 * is allocated: distinct <= windows <= tokens, and tokens = the dataset's. A 265-byte index
 * claiming 1.4e9 distinct windows once made the load fault in ~20 GB (the fuzzer found it;
 * tests/fuzz/repro/index-n_distinct-table-20GB). */
Test(index_file, hostile_header_counts_refused_before_allocating, .timeout = 30) {
    ax_axd_t *ds = make_ds("hdr.axd", CORPUS);
    char path[256], bad[256];
    tmp(path, sizeof path, "hdr.idx");
    tmp(bad, sizeof bad, "hdr_bad.idx");
    build_save(ds, 64, path);
    size_t n;
    uint8_t *good = slurp(path, &n);
    uint8_t *d = malloc(n);
    const uint64_t big = 1400000000ull, tokens = ax_axd_n_tokens(ds);
    struct {
        uint64_t distinct, windows, ds_tokens, hist0;
        ax_status want;
        const char *msg;
    } cases[] = {
        {big, 240000000000000ull, tokens, 0, AX_ERR_CORRUPT, "inconsistent"}, /* the fuzzer's */
        {big, big, tokens, 0, AX_ERR_CORRUPT, "inconsistent"},                /* windows > tokens */
        {big, big, big, 0, AX_ERR_MISMATCH, "different dataset"}, /* tokens not the dataset's */
        {tokens, tokens - 1, tokens, 0, AX_ERR_CORRUPT, "inconsistent"}, /* distinct > windows */
        {10, tokens, tokens, 11, AX_ERR_CORRUPT, "inconsistent"},        /* hist[0] > distinct */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(d, good, n);
        set_header_u64(d, 56, cases[i].distinct);
        set_header_u64(d, 64, cases[i].windows);
        set_header_u64(d, 40, cases[i].ds_tokens);
        set_header_u64(d, 72, cases[i].hist0);
        spit(bad, d, n);
        ax_memscan_index_t *idx = NULL;
        ax_error_clear();
        cr_assert_eq(ax_memscan_index_load(bad, ds, &idx), cases[i].want, "case %zu: %s", i,
                     ax_error_msg());
        cr_assert_null(idx);
        cr_assert(strstr(ax_error_msg(), bad) && strstr(ax_error_msg(), cases[i].msg),
                  "case %zu: %s", i, ax_error_msg());
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cr_assert_lt(ru.ru_maxrss, 512 * 1024, "peak RSS %ld KiB", ru.ru_maxrss); /* not gigabytes */
    free(d);
    free(good);
    ax_axd_free(ds);
}

/* an index that is a FIFO (or any non-regular file) is refused at once, naming it */
Test(index_file, fifo_index_refused, .timeout = 20) {
    ax_axd_t *ds = make_ds("fifo.axd", CORPUS);
    char path[256];
    tmp(path, sizeof path, "fifo.idx");
    cr_assert_eq(mkfifo(path, 0600), 0);
    ax_memscan_index_t *idx = NULL;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load(path, ds, &idx), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    ax_memscan_info in;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_read_info(path, 0, &in), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_load("/tmp", ds, &idx), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "directory"), "%s", ax_error_msg());
    ax_axd_free(ds);
}

/* the same answers (brute force on planted duplicates, and every span of a passage) from a
 * version-3 file verified at load, read lazily in place, and a version-2 file loaded */
Test(index_file, v3_in_place_and_v2_loaded_agree) {
    ax_axd_t *ds = make_ds("v3.axd", CORPUS);
    char p3[256], p2[256];
    tmp(p3, sizeof p3, "v3.idx");
    tmp(p2, sizeof p2, "v2.idx");
    ax_memscan_brute b;
    cr_assert_eq(ax_memscan_brute_build(ds, 6, &b), AX_OK);
    /* a passage: 120 training tokens from the middle, then unseen ones */
    int32_t q[160];
    ax_axd_tokens(ds, ax_axd_n_tokens(ds) / 2, 120, q);
    for (int i = 120; i < 160; i++) q[i] = 999 - i;
    for (int bits = 64; bits >= 5; bits -= 59) {
        ax_memscan_build_opts o;
        ax_memscan_build_opts_default(&o);
        o.n = 6;
        o.hash_bits = bits;
        ax_memscan_index_t *built;
        cr_assert_eq(ax_memscan_index_build(ds, &o, &built), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ax_memscan_index_save(built, p3, NULL), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ax_memscan_index_save_v2(built, p2, NULL), AX_OK, "%s", ax_error_msg());
        size_t n3, n2;
        uint8_t *d3 = slurp(p3, &n3), *d2 = slurp(p2, &n2);
        cr_assert_eq(d3[8], 3);
        cr_assert_eq(d2[8], 2);
        free(d3);
        free(d2);
        ax_memscan_span *ref = NULL;
        size_t n_ref = 0;
        cr_assert_eq(ax_memscan_find_spans(built, q, 160, 4, &ref, &n_ref), AX_OK);
        cr_assert_gt(n_ref, 0);
        for (int mode = 0; mode < 3; mode++) {
            ax_memscan_index_t *idx;
            ax_status st = mode == 0   ? ax_memscan_index_load(p3, ds, &idx)
                           : mode == 1 ? ax_memscan_index_open(p3, ds, &idx)
                                       : ax_memscan_index_load(p2, ds, &idx);
            cr_assert_eq(st, AX_OK, "mode %d: %s", mode, ax_error_msg());
            char why[256];
            uint64_t bad = ax_memscan_brute_check(idx, &b, why, sizeof why);
            cr_assert_eq(bad, 0, "bits %d mode %d: %s", bits, mode, why);
            ax_memscan_span *sp;
            size_t ns;
            cr_assert_eq(ax_memscan_find_spans(idx, q, 160, 4, &sp, &ns), AX_OK);
            cr_assert_eq(ns, n_ref, "mode %d", mode);
            for (size_t k = 0; k < ns; k++) {
                cr_assert(sp[k].start == ref[k].start && sp[k].len == ref[k].len &&
                              sp[k].pos == ref[k].pos && sp[k].occurrences == ref[k].occurrences &&
                              sp[k].docs == ref[k].docs && sp[k].count_min == ref[k].count_min &&
                              sp[k].count_max == ref[k].count_max &&
                              sp[k].n_sources == ref[k].n_sources,
                          "mode %d span %zu", mode, k);
                for (size_t j = 0; j < sp[k].n_sources; j++)
                    cr_assert_eq(sp[k].sources[j].pos, ref[k].sources[j].pos);
            }
            free(sp);
            cr_assert_eq(ax_memscan_index_check(idx), AX_OK);
            ax_memscan_index_free(idx);
        }
        free(ref);
        ax_memscan_index_free(built);
    }
    ax_memscan_brute_free(&b);
    ax_axd_free(ds);
}

/* field i (u64) of a v3 file's section table: 0 groups, 1 positions, 2 directory, 3 tags,
 * 4 exts, 5 vals, 6 firsts, 7 list starts, 8 positions, 9 page checksums, 10 size */
static uint64_t v3_field(const uint8_t *d, int i) {
    uint32_t L;
    memcpy(&L, d + 120, 4);
    uint64_t v;
    memcpy(&v, d + 136 + L + 8 + 8 + 8 * i, 8);
    return v;
}

/* Damage anywhere in a v3 file is refused by a verified load, naming the file and what is
 * wrong; damage to a table or list page passes a lazy open and is reported (by
 * ax_memscan_index_check, and answered as absent) once a lookup touches it. */
Test(index_file, v3_damage_named) {
    ax_axd_t *ds = make_ds("dmg.axd", CORPUS);
    char path[256], bad[256];
    tmp(path, sizeof path, "dmg_good.idx");
    tmp(bad, sizeof bad, "dmg_bad.idx");
    build_save(ds, 64, path);
    size_t n;
    uint8_t *d = slurp(path, &n);
    uint32_t L;
    memcpy(&L, d + 120, 4);
    uint64_t D, hdr = 136 + L + 8;
    ax_memscan_info in;
    cr_assert_eq(ax_memscan_index_read_info(path, 1, &in), AX_OK, "%s", ax_error_msg());
    D = in.n_distinct;
    cr_assert_eq(v3_field(d, 10), n);
    cr_assert_gt(v3_field(d, 5) + 8 * (D / 2), 70000, "the vals page must not hold the directory");
    struct {
        uint64_t off;
        const char *want;
        int lazy_ok; /* a lazy open succeeds; lookups meet the damage */
    } cases[] = {
        {20, "header checksum", 0},
        {hdr + 12, "section table", 0},
        {v3_field(d, 2) + 3, "partition directory", 0},
        {v3_field(d, 5) + 8 * (D / 2) + 2, "table) fails its checksum", 1},
        {v3_field(d, 8) + 8 * (in.n_dup_pos / 2), "occurrence lists", 1},
        {v3_field(d, 9) + 1, "page checksums", 0},
        {n - 3, "page checksums", 0},
    };
    ax_memscan_brute b;
    cr_assert_eq(ax_memscan_brute_build(ds, 6, &b), AX_OK);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        d[cases[i].off] ^= 0x11;
        spit(bad, d, n);
        d[cases[i].off] ^= 0x11;
        ax_memscan_index_t *idx = NULL;
        ax_error_clear();
        cr_assert_eq(ax_memscan_index_load(bad, ds, &idx), AX_ERR_CORRUPT, "case %zu", i);
        cr_assert(strstr(ax_error_msg(), bad) && strstr(ax_error_msg(), cases[i].want),
                  "case %zu: %s", i, ax_error_msg());
        cr_assert_null(idx);
        ax_error_clear();
        ax_memscan_info hi;
        cr_assert_eq(ax_memscan_index_read_info(bad, 1, &hi), AX_ERR_CORRUPT, "case %zu", i);
        cr_assert(strstr(ax_error_msg(), bad) && strstr(ax_error_msg(), cases[i].want),
                  "case %zu: %s", i, ax_error_msg());
        ax_error_clear();
        ax_status st = ax_memscan_index_open(bad, ds, &idx);
        if (!cases[i].lazy_ok) {
            cr_assert_eq(st, AX_ERR_CORRUPT, "case %zu", i);
            continue;
        }
        cr_assert_eq(st, AX_OK, "case %zu: %s", i, ax_error_msg());
        cr_assert_eq(ax_memscan_index_check(idx), AX_OK);
        cr_assert_eq(ax_memscan_index_damage_met(idx), 0);
        char why[256];
        cr_assert_gt(ax_memscan_brute_check(idx, &b, why, sizeof why), 0, "case %zu", i);
        /* every lookup refused for damage is counted, not only the first (so a caller can
         * fail each query that met it) */
        uint64_t met = ax_memscan_index_damage_met(idx);
        cr_assert_gt(met, 1, "case %zu", i);
        ax_memscan_brute_check(idx, &b, why, sizeof why);
        cr_assert_eq(ax_memscan_index_damage_met(idx), 2 * met, "case %zu", i);
        ax_error_clear();
        cr_assert_eq(ax_memscan_index_check(idx), AX_ERR_CORRUPT, "case %zu", i);
        cr_assert(strstr(ax_error_msg(), bad) && strstr(ax_error_msg(), cases[i].want),
                  "case %zu: %s", i, ax_error_msg());
        ax_memscan_index_free(idx);
    }
    ax_memscan_brute_free(&b);
    free(d);
    ax_axd_free(ds);
}

/* an index with no windows (every document shorter than n) saves, verifies and answers */
Test(index_file, v3_empty_index) {
    ax_axd_t *ds = make_ds("empty.axd", CORPUS);
    char path[256];
    tmp(path, sizeof path, "empty.idx");
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 1000; /* documents are at most 300 tokens */
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_memscan_index_info(idx)->n_distinct, 0);
    cr_assert_eq(ax_memscan_index_save(idx, path, NULL), AX_OK, "%s", ax_error_msg());
    ax_memscan_index_free(idx);
    ax_memscan_info in;
    cr_assert_eq(ax_memscan_index_read_info(path, 1, &in), AX_OK, "%s", ax_error_msg());
    for (int lazy = 0; lazy < 2; lazy++) {
        ax_status st =
            lazy ? ax_memscan_index_open(path, ds, &idx) : ax_memscan_index_load(path, ds, &idx);
        cr_assert_eq(st, AX_OK, "%s", ax_error_msg());
        int32_t w[1000] = {0};
        uint32_t c;
        uint64_t f;
        cr_assert_eq(ax_memscan_index_lookup(idx, w, &c, &f), 0);
        cr_assert_eq(ax_memscan_index_check(idx), AX_OK);
        ax_memscan_index_free(idx);
    }
    ax_axd_free(ds);
}

/* the bounded-memory build (hash partitions spilled to disk, counted one at a time, lists
 * merged) writes the same file, byte for byte, as the in-memory build and save */
Test(index_file, bounded_build_equals_in_memory) {
    ax_axd_t *ds = make_ds("bnd.axd", CORPUS);
    char a[256], b[256], ja[300], jb[300];
    tmp(a, sizeof a, "bnd_mem.idx");
    tmp(b, sizeof b, "bnd_spill.idx");
    snprintf(ja, sizeof ja, "%s.json", a);
    snprintf(jb, sizeof jb, "%s.json", b);
    for (int bits = 64; bits >= 5; bits -= 59) {
        build_save_bits_n(ds, bits, 6, a);
        ax_memscan_build_opts o;
        ax_memscan_build_opts_default(&o);
        o.n = 6;
        o.hash_bits = bits;
        /* ~24k windows need ~1.5 MB at once: 1 MB makes several partitions */
        ax_memscan_info in;
        cr_assert_eq(ax_memscan_index_build_bounded(ds, &o, 1 << 20, b, &in), AX_OK, "%s",
                     ax_error_msg());
        size_t na, nb;
        uint8_t *da = slurp(a, &na), *db = slurp(b, &nb);
        cr_assert_eq(na, nb, "bits %d", bits);
        cr_assert_eq(memcmp(da, db, na), 0, "bits %d: the files differ", bits);
        free(da);
        free(db);
        da = slurp(ja, &na);
        db = slurp(jb, &nb);
        cr_assert(na == nb && memcmp(da, db, na) == 0, "bits %d: the sidecars differ", bits);
        free(da);
        free(db);
        cr_assert_eq(in.n_distinct, ax_memscan_windows_of(ds, 6) - (in.n_windows - in.n_distinct));
        /* and a version-2 file rewritten as version 3 in bounded memory: the same bytes */
        char v2[300];
        snprintf(v2, sizeof v2, "%s.v2", a);
        ax_memscan_index_t *idx;
        cr_assert_eq(ax_memscan_index_load(a, ds, &idx), AX_OK);
        ax_memscan_index_free(idx);
        build_save_v2(ds, bits, v2);
        cr_assert_eq(ax_memscan_index_upgrade(v2, b, 1 << 20, NULL), AX_OK, "%s", ax_error_msg());
        da = slurp(a, &na);
        db = slurp(b, &nb);
        cr_assert(na == nb && memcmp(da, db, na) == 0, "bits %d: the upgraded file differs", bits);
        free(da);
        free(db);
        char spill[300];
        snprintf(spill, sizeof spill, "%s.spill", b);
        cr_assert_not(ax_path_exists(spill));
    }
    /* a limit too small for the windows is refused with the size needed */
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = 6;
    ax_error_clear();
    cr_assert_eq(ax_memscan_index_build_bounded(ds, &o, 1000, b, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--mem-limit"), "%s", ax_error_msg());
    ax_axd_free(ds);
}

/* peak RSS of a child doing fn, above what it had at the fork (KiB) */
static long child_peak_kib(void (*fn)(const char *, const char *, uint64_t), const char *data,
                           const char *out, uint64_t limit) {
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        fn(data, out, limit);
        getrusage(RUSAGE_SELF, &r1);
        long d = r1.ru_maxrss - r0.ru_maxrss;
        _exit(write(fd[1], &d, sizeof d) == sizeof d ? 0 : 1);
    }
    close(fd[1]);
    long d = -1;
    cr_assert_eq(read(fd[0], &d, sizeof d), (ssize_t)sizeof d);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
    return d;
}

static void run_bounded(const char *data, const char *out, uint64_t limit) {
    ax_axd_t *ds;
    if (ax_axd_open(data, 0, &ds) != AX_OK) _exit(3);
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    if (ax_memscan_index_build_bounded(ds, &o, limit, out, NULL) != AX_OK) _exit(4);
    ax_axd_free(ds);
}

static void run_in_memory(const char *data, const char *out, uint64_t limit) {
    (void)limit;
    ax_axd_t *ds;
    if (ax_axd_open(data, 0, &ds) != AX_OK) _exit(3);
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    ax_memscan_index_t *idx;
    if (ax_memscan_index_build(ds, &o, &idx) != AX_OK ||
        ax_memscan_index_save(idx, out, NULL) != AX_OK)
        _exit(4);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* Peak RSS of the bounded build stays within the limit plus the stated overhead: the dataset's
 * mapped pages and 8 MB (stdio buffers, the page being hashed, allocator slack); the in-memory
 * build of the same data goes well over it, so the limit is what bounds it. */
Test(index_file, bounded_build_peak_rss, .timeout = 120) {
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("ASan's shadow memory and quarantine dominate RSS: measured in the release build");
#endif
    ax_memscan_synth_opts so = {.vocab = 50257,
                                .n_docs = 1500,
                                .doc_len_min = 500,
                                .doc_len_max = 1500,
                                .alphabet = 50000,
                                .n_passages = 3,
                                .passage_len = 200,
                                .copies = 2,
                                .copies_growth = 4,
                                .seed = 5};
    char data[256], a[256], b[256];
    tmp(data, sizeof data, "rss.axd");
    tmp(a, sizeof a, "rss_mem.idx");
    tmp(b, sizeof b, "rss_spill.idx");
    cr_assert_eq(ax_memscan_synth_write(data, &so, NULL, NULL), AX_OK, "%s", ax_error_msg());
    struct stat sb;
    cr_assert_eq(stat(data, &sb), 0);
    const uint64_t limit = 16u << 20;
    long kib_limit = (long)(limit >> 10), overhead = (long)(sb.st_size >> 10) + 8192;
    long mem = child_peak_kib(run_in_memory, data, a, 0);
    long spill = child_peak_kib(run_bounded, data, b, limit);
    cr_log_info("peak RSS above the fork: bounded build %ld KiB, in-memory %ld KiB (limit %ld + "
                "overhead %ld KiB)",
                spill, mem, kib_limit, overhead);
    cr_assert_leq(spill, kib_limit + overhead, "bounded build peak %ld KiB > %ld + %ld", spill,
                  kib_limit, overhead);
    cr_assert_gt(mem, kib_limit + overhead,
                 "the in-memory build (%ld KiB) fits the limit: the "
                 "test would prove nothing",
                 mem);
    size_t na, nb;
    uint8_t *da = slurp(a, &na), *db = slurp(b, &nb);
    cr_assert(na == nb && memcmp(da, db, na) == 0, "the files differ");
    free(da);
    free(db);
}
