/* .axd writer/reader: round trip, token widths, and rejection of damaged files. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/axd.h"
#include "data/input.h"
#include "data/tokenizer.h"
#include "data/verify_cache.h"
#include "lib/core/fsutil.h"
#include "lib/core/status.h"
#include "test_data_util.h"

TestSuite(axd, .init = td_quiet);

/* docs of lengths 0, 1, 2, ... (n_docs docs), token values derived from position */
static void write_dataset(const char *path, uint32_t vocab, int n_docs) {
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, vocab, &w), AX_OK, "%s", ax_error_msg());
    int32_t buf[64];
    for (int d = 0; d < n_docs; d++) {
        for (int i = 0; i < d; i++) buf[i] = (int32_t)((d * 31 + i * 7) % (int)vocab);
        for (int i = 0; i < d; i++)
            if (buf[i] == AX_TOK_EOT) buf[i] = 5;
        cr_assert_eq(ax_axd_writer_add_doc(w, buf, (size_t)d), AX_OK, "%s", ax_error_msg());
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

/* The bytes (*n of them) of a fresh 20-document dataset of vocabulary 4096 written at path */
static uint8_t *dataset_bytes(const char *path, size_t *n) {
    write_dataset(path, 4096, 20);
    return td_read(path, n);
}

static void check_dataset(const char *path, uint32_t vocab, int n_docs) {
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(path, 1, &d), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_axd_vocab_size(d), vocab);
    cr_assert_eq(ax_axd_n_docs(d), (uint64_t)n_docs);
    uint64_t total = (uint64_t)n_docs * (uint64_t)(n_docs + 1) / 2; /* d tokens + EOT each */
    cr_assert_eq(ax_axd_n_tokens(d), total);
    const uint64_t *off = ax_axd_doc_offsets(d);
    int32_t buf[64];
    for (int k = 0; k < n_docs; k++) {
        cr_assert_eq(off[k + 1] - off[k], (uint64_t)k + 1);
        ax_axd_tokens(d, off[k], (uint64_t)k + 1, buf);
        for (int i = 0; i < k; i++) {
            int32_t want = (int32_t)((k * 31 + i * 7) % (int)vocab);
            if (want == AX_TOK_EOT) want = 5;
            cr_assert_eq(buf[i], want);
            cr_assert_eq(ax_axd_token(d, off[k] + (uint64_t)i), (uint32_t)want);
        }
        cr_assert_eq(buf[k], AX_TOK_EOT);
        for (uint64_t i = off[k]; i < off[k + 1]; i++)
            cr_assert_eq(ax_axd_doc_of(d, i), (uint64_t)k);
    }
    ax_axd_free(d);
}

Test(axd, round_trip_width2) {
    char path[256];
    td_tmp(path, sizeof path, "w2.axd");
    write_dataset(path, 4096, 40);
    check_dataset(path, 4096, 40);
    size_t n;
    free(td_read(path, &n));
    cr_assert_eq(n, 64 + 8 * 41 + 2 * (40 * 41 / 2));
    char partial[300];
    snprintf(partial, sizeof partial, "%s.partial", path);
    cr_assert_neq(access(partial, F_OK), 0, "partial file left behind");
    unlink(path);
}

Test(axd, round_trip_width4) {
    char path[256];
    td_tmp(path, sizeof path, "w4.axd");
    write_dataset(path, 100000, 30);
    check_dataset(path, 100000, 30);
    size_t n;
    free(td_read(path, &n));
    cr_assert_eq(n, 64 + 8 * 31 + 4 * (30 * 31 / 2));
    unlink(path);
}

Test(axd, eot_not_doubled_and_bad_tokens_rejected) {
    char path[256];
    td_tmp(path, sizeof path, "eot.axd");
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK);
    int32_t a[] = {1, 2, AX_TOK_EOT};
    cr_assert_eq(ax_axd_writer_add_doc(w, a, 3), AX_OK);
    int32_t b[] = {1, 300};
    ax_error_clear();
    cr_assert_eq(ax_axd_writer_add_doc(w, b, 2), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), path));
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(path, 1, &d), AX_OK);
    cr_assert_eq(ax_axd_n_tokens(d), 3);
    cr_assert_eq(ax_axd_n_docs(d), 1);
    ax_axd_free(d);
    unlink(path);
}

Test(axd, abort_leaves_nothing) {
    char path[256], p2[300];
    td_tmp(path, sizeof path, "abort.axd");
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK);
    int32_t a[] = {1, 2};
    cr_assert_eq(ax_axd_writer_add_doc(w, a, 2), AX_OK);
    ax_axd_writer_abort(w);
    cr_assert_neq(access(path, F_OK), 0);
    snprintf(p2, sizeof p2, "%s.partial", path);
    cr_assert_neq(access(p2, F_OK), 0);
    snprintf(p2, sizeof p2, "%s.partial.tokens", path);
    cr_assert_neq(access(p2, F_OK), 0);
}

static unsigned mode_of(const char *path) {
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0, "%s missing", path);
    return (unsigned)(sb.st_mode & 07777);
}

/* A dataset holds training text: it and its token spill are owner-only under the usual umask
 * 022 (they were 0644), also when an older world-readable file is in the way. */
Test(axd, datasets_are_private_under_umask_022) {
    umask(022);
    char path[256], side[300], partial[300];
    td_tmp(path, sizeof path, "private.axd");
    snprintf(side, sizeof side, "%s.partial.tokens", path);
    snprintf(partial, sizeof partial, "%s.partial", path);
    for (int round = 0; round < 2; round++) { /* round 1: files of mode 0644 are in the way */
        if (round) {
            cr_assert(td_write(side, "x", 1) && td_write(partial, "x", 1));
            cr_assert_eq(chmod(side, 0644), 0);
            cr_assert_eq(chmod(partial, 0644), 0);
            cr_assert_eq(chmod(path, 0644), 0);
        }
        ax_axd_writer_t *w;
        cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(mode_of(side), 0600, "spill mode %o", mode_of(side));
        int32_t a[] = {1, 2, 3};
        cr_assert_eq(ax_axd_writer_add_doc(w, a, 3), AX_OK);
        cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(mode_of(path), 0600, "round %d: dataset mode %o", round, mode_of(path));
        cr_assert_neq(access(side, F_OK), 0);
        cr_assert_neq(access(partial, F_OK), 0);
        ax_axd_t *d;
        cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ax_axd_n_tokens(d), 4); /* the three tokens and the end-of-text */
        ax_axd_free(d);
    }
    unlink(path);
}

static void expect_reject(const char *path, const uint8_t *data, size_t n, const char *expect) {
    cr_assert(td_write(path, data, n));
    ax_axd_t *d = NULL;
    ax_error_clear();
    ax_status st = ax_axd_open(path, 1, &d);
    cr_assert_neq(st, AX_OK, "accepted a file that should fail with '%s'", expect);
    cr_assert_null(d);
    cr_assert(strstr(ax_error_msg(), path), "message lacks the path: %s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), expect), "expected '%s' in: %s", expect, ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "axmem data encode"), "no advice: %s", ax_error_msg());
}

Test(axd, rejects_damaged_files) {
    char good[256], bad[256];
    td_tmp(good, sizeof good, "good.axd");
    td_tmp(bad, sizeof bad, "bad.axd");
    size_t n;
    uint8_t *b = dataset_bytes(good, &n);
    uint8_t *c = malloc(n + 16);

    expect_reject(bad, b, n - 3, "truncated"); /* truncated payload */
    expect_reject(bad, b, 30, "truncated");    /* truncated header */

    memcpy(c, b, n);
    c[n - 7] ^= 0x01; /* flipped payload byte */
    expect_reject(bad, c, n, "payload checksum");

    memcpy(c, b, n);
    memcpy(c, "NOTAXMEM", 8);
    expect_reject(bad, c, n, "bad magic");

    memcpy(c, b, n);
    c[8] = 9; /* version */
    expect_reject(bad, c, n, "version 9");

    memcpy(c, b, n);
    c[30] ^= 0x10; /* header byte without fixing its checksum */
    expect_reject(bad, c, n, "header checksum");

    /* header says more tokens than the file holds, with a valid header checksum */
    memcpy(c, b, n);
    uint64_t nt;
    memcpy(&nt, c + 32, 8);
    nt += 5;
    memcpy(c + 32, &nt, 8);
    uint64_t hh = XXH3_64bits(c, 56);
    memcpy(c + 56, &hh, 8);
    expect_reject(bad, c, n, "header");

    memcpy(c, b, n);
    memset(c + n, 0, 16); /* trailing bytes */
    expect_reject(bad, c, n + 16, "oversized");

    /* offsets not monotone (checked before the payload, in every verify mode) */
    memcpy(c, b, n);
    uint64_t o = 1000;
    memcpy(c + 64 + 8 * 3, &o, 8);
    cr_assert(td_write(bad, c, n));
    ax_axd_t *d = NULL;
    ax_error_clear();
    cr_assert_eq(ax_axd_open(bad, 0, &d), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "offsets"), "%s", ax_error_msg());

    ax_error_clear();
    cr_assert_eq(ax_axd_open("/nonexistent/x.axd", 1, &d), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "/nonexistent/x.axd"));
    expect_reject(bad, b, 0, "empty");
    free(b);
    free(c);
    unlink(good);
    unlink(bad);
}

/* A token id >= vocab in a file whose checksums are right (a buggy or hostile writer). */
Test(axd, rejects_token_outside_vocab) {
    char good[256], bad[256];
    td_tmp(good, sizeof good, "good.axd");
    td_tmp(bad, sizeof bad, "bad.axd");
    size_t n;
    uint8_t *c = dataset_bytes(good, &n);
    uint16_t big = 5000; /* vocab 4096, 2-byte tokens: the last token */
    memcpy(c + n - 2, &big, 2);
    uint64_t h = XXH3_64bits(c + 64, n - 64);
    memcpy(c + 40, &h, 8);
    h = XXH3_64bits(c, 56);
    memcpy(c + 56, &h, 8);
    expect_reject(bad, c, n, "token id 5000");
    free(c);
    unlink(good);
    unlink(bad);
}

/* Version 1 files (56-byte header, no tokenizer identity) still load, identity unknown. */
Test(axd, reads_version_1) {
    char v2[256], v1[256];
    td_tmp(v2, sizeof v2, "v2.axd");
    td_tmp(v1, sizeof v1, "v1.axd");
    size_t n;
    uint8_t *c = dataset_bytes(v2, &n);
    uint8_t *o = malloc(n);
    memcpy(o, c, 48);
    uint32_t one = 1;
    memcpy(o + 8, &one, 4);
    uint64_t h = XXH3_64bits(o, 48);
    memcpy(o + 48, &h, 8);
    memcpy(o + 56, c + 64, n - 64);
    cr_assert(td_write(v1, o, n - 8));
    ax_axd_t *a = NULL, *b = NULL;
    cr_assert_eq(ax_axd_open(v1, 1, &a), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_axd_open(v2, 1, &b), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_axd_tokenizer_checksum(a), 0);
    cr_assert_eq(ax_axd_checksum(a), ax_axd_checksum(b));
    cr_assert_eq(ax_axd_n_tokens(a), ax_axd_n_tokens(b));
    for (uint64_t i = 0; i < ax_axd_n_tokens(a); i++)
        cr_assert_eq(ax_axd_token(a, i), ax_axd_token(b, i));
    ax_axd_free(a);
    ax_axd_free(b);
    free(c);
    free(o);
    unlink(v1);
    unlink(v2);
}

/* ---- inputs ---- */

static void read_all(const char *path, int split_lines, char docs[][64], int *n_docs) {
    ax_input_t *in;
    cr_assert_eq(ax_input_open(&path, 1, split_lines, &in), AX_OK, "%s", ax_error_msg());
    *n_docs = 0;
    size_t cur = 0;
    for (;;) {
        const uint8_t *p;
        size_t n;
        int end, eof;
        cr_assert_eq(ax_input_next(in, &p, &n, &end, &eof), AX_OK, "%s", ax_error_msg());
        if (eof) break;
        memcpy(docs[*n_docs] + cur, p, n);
        cur += n;
        if (end) {
            docs[*n_docs][cur] = 0;
            (*n_docs)++;
            cur = 0;
        }
    }
    ax_input_free(in);
}

Test(axd, inputs_jsonl_text_lines) {
    char path[256];
    char docs[8][64];
    int n;
    td_tmp(path, sizeof path, "in.jsonl");
    const char *jl = "{\"text\": \"a\\nb\", \"id\": 1}\n\n{\"text\": \"\\u00e9\\u0000x\"}\n";
    cr_assert(td_write(path, jl, strlen(jl)));
    read_all(path, 0, docs, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(docs[0], "a\nb");
    cr_assert(!memcmp(docs[1], "\xc3\xa9\0x", 4));
    unlink(path);

    td_tmp(path, sizeof path, "in.txt");
    cr_assert(td_write(path, "one\n\ntwo\nthree", 14));
    read_all(path, 1, docs, &n);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(docs[2], "three");
    read_all(path, 0, docs, &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(docs[0], "one\n\ntwo\nthree");
    unlink(path);
}

Test(axd, inputs_bad_jsonl_names_line) {
    char path[256];
    td_tmp(path, sizeof path, "bad.jsonl");
    const char *cases[] = {"{\"text\": \"ok\"}\n{\"text\": \"broken\n",
                           "{\"text\": \"ok\"}\n[1,2]\n",
                           "{\"text\": \"ok\"}\n{\"body\": \"x\"}\n"};
    for (int i = 0; i < 3; i++) {
        cr_assert(td_write(path, cases[i], strlen(cases[i])));
        ax_input_t *in;
        const char *pp = path;
        cr_assert_eq(ax_input_open(&pp, 1, 0, &in), AX_OK);
        const uint8_t *p;
        size_t n;
        int end, eof;
        cr_assert_eq(ax_input_next(in, &p, &n, &end, &eof), AX_OK);
        ax_error_clear();
        cr_assert_eq(ax_input_next(in, &p, &n, &end, &eof), AX_ERR_CORRUPT, "case %d", i);
        char want[300];
        snprintf(want, sizeof want, "%s:2", path);
        cr_assert(strstr(ax_error_msg(), want), "case %d: %s", i, ax_error_msg());
        ax_input_free(in);
    }
    unlink(path);
    ax_input_t *in;
    const char *missing = "/nonexistent/corpus.txt";
    ax_error_clear();
    cr_assert_eq(ax_input_open(&missing, 1, 0, &in), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), missing));
}

Test(axd, inputs_big_file_pieces_encode_like_whole) {
    /* a whole-file document bigger than one read block arrives in pieces cut at safe chunk
     * boundaries: encoding the pieces must equal encoding the whole */
    size_t n = (9u << 20) + 12345;
    uint8_t *x = malloc(n);
    static const char words[][8] = {"the ", "LORD ", "said, ", "unto\n", "  ", "him: ", "42 "};
    size_t o = 0;
    for (uint64_t i = 0; o < n; i++) {
        const char *wd = words[(i * 2654435761u >> 7) % 7];
        size_t l = strlen(wd);
        if (o + l > n) l = n - o;
        memcpy(x + o, wd, l);
        o += l;
    }
    char path[256];
    td_tmp(path, sizeof path, "big.txt");
    cr_assert(td_write(path, x, n));
    ax_bpe_trainer_t *tr;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr, x, 100000), AX_OK);
    ax_tokenizer_t *t;
    cr_assert_eq(ax_bpe_trainer_train(tr, 300, NULL, &t), AX_OK);
    ax_bpe_trainer_free(tr);
    int32_t *whole;
    size_t nw;
    cr_assert_eq(ax_tokenizer_encode(t, x, n, &whole, &nw), AX_OK);

    ax_input_t *in;
    const char *pp = path;
    cr_assert_eq(ax_input_open(&pp, 1, 0, &in), AX_OK);
    size_t got_bytes = 0, got_toks = 0;
    int pieces = 0;
    for (;;) {
        const uint8_t *p;
        size_t k;
        int end, eof;
        cr_assert_eq(ax_input_next(in, &p, &k, &end, &eof), AX_OK);
        if (eof) break;
        pieces++;
        cr_assert(!memcmp(p, x + got_bytes, k));
        got_bytes += k;
        int32_t *ids;
        size_t m;
        cr_assert_eq(ax_tokenizer_encode(t, p, k, &ids, &m), AX_OK);
        cr_assert(got_toks + m <= nw);
        cr_assert(!memcmp(ids, whole + got_toks, m * sizeof *ids), "piece %d differs", pieces);
        got_toks += m;
        free(ids);
        cr_assert_eq(end, got_bytes == n);
    }
    cr_assert_gt(pieces, 1);
    cr_assert_eq(got_bytes, n);
    cr_assert_eq(got_toks, nw);
    ax_input_free(in);
    free(whole);
    free(x);
    ax_tokenizer_free(t);
    unlink(path);
}

/* good.axd with one payload byte flipped: valid header, wrong payload checksum */
static void write_flipped(const char *good, const char *bad) {
    size_t n;
    uint8_t *c = dataset_bytes(good, &n);
    c[n - 7] ^= 0x01;
    cr_assert(td_write(bad, c, n));
    free(c);
}

/* memscan lookup opened its dataset with verify 0 and answered from a changed token with exit
 * 0: every mode but AX_AXD_HEADER_ONLY now checks the payload. */
Test(axd, verify_zero_checks_the_payload_too) {
    setenv("AXMEM_CACHE_DIR", "off", 1);
    char good[256], bad[256];
    td_tmp(good, sizeof good, "good.axd");
    td_tmp(bad, sizeof bad, "bad.axd");
    write_flipped(good, bad);
    int modes[] = {0, AX_AXD_VERIFY, AX_AXD_VERIFY_REHASH};
    for (int i = 0; i < 3; i++) {
        ax_axd_t *d = NULL;
        ax_error_clear();
        cr_assert_eq(ax_axd_open(bad, modes[i], &d), AX_ERR_CORRUPT, "mode %d", modes[i]);
        cr_assert(strstr(ax_error_msg(), "payload checksum"), "%s", ax_error_msg());
    }
    ax_axd_t *d = NULL;
    cr_assert_eq(ax_axd_open(bad, AX_AXD_HEADER_ONLY, &d), AX_OK, "%s", ax_error_msg());
    ax_axd_free(d);
    unlink(good);
    unlink(bad);
}

static int count_entries(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A %s 2>/dev/null | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert(p && fscanf(p, "%d", &n) == 1);
    pclose(p);
    return n;
}

/* Verification is recorded per file version: a second open does not rehash, and any change to
 * the file (new ctime/inode) makes the next open hash again. */
Test(axd, verification_is_cached_per_file_version) {
    char dir[256], good[256], bad[256];
    td_tmp(dir, sizeof dir, "vcache");
    td_tmp(good, sizeof good, "good.axd");
    td_tmp(bad, sizeof bad, "bad.axd");
    ax_rm_rf(dir);
    setenv("AXMEM_CACHE_DIR", dir, 1);
    ax_verify_cache_set_min_bytes(0);
    write_flipped(good, bad);
    ax_axd_t *d = NULL;
    /* a file written this second is "racy": its times may not change on the next write yet */
    cr_assert_eq(ax_axd_open(good, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
    ax_axd_free(d);
    cr_assert_eq(count_entries(dir), 0, "a just-written file was recorded");
    usleep(1100 * 1000);
    cr_assert_eq(ax_axd_open(good, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
    ax_axd_free(d);
    cr_assert_eq(count_entries(dir), 1, "the verified open was not recorded");
    cr_assert_eq(ax_axd_open(good, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
    ax_axd_free(d);
    cr_assert_eq(count_entries(dir), 1);
    /* a failed verification is never recorded */
    ax_error_clear();
    cr_assert_eq(ax_axd_open(bad, AX_AXD_VERIFY, &d), AX_ERR_CORRUPT);
    cr_assert_eq(count_entries(dir), 1);

    /* Prove the cache is what skips the hash: record bad.axd's current version by hand (as if a
     * bit had rotted on disk after a verified open). VERIFY trusts the record; REHASH does not. */
    struct stat sb;
    cr_assert_eq(stat(bad, &sb), 0);
    size_t n;
    uint8_t *c = td_read(bad, &n);
    uint64_t key = ax_verify_cache_key(&sb, XXH3_64bits(c, 64));
    cr_assert_neq(key, 0);
    ax_verify_cache_put(key, bad);
    cr_assert_eq(ax_axd_open(bad, AX_AXD_VERIFY, &d), AX_OK, "the cache record was not used");
    ax_axd_free(d);
    ax_error_clear();
    cr_assert_eq(ax_axd_open(bad, AX_AXD_VERIFY_REHASH, &d), AX_ERR_CORRUPT);
    /* rewriting the file (same bytes even) is a new version: hashed again, and rejected */
    cr_assert(td_write(bad, c, n));
    ax_error_clear();
    cr_assert_eq(ax_axd_open(bad, AX_AXD_VERIFY, &d), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "payload checksum"), "%s", ax_error_msg());
    /* small files are not cached by default; AXMEM_CACHE_DIR=off turns the cache off */
    ax_verify_cache_set_min_bytes((uint64_t)64 << 20);
    cr_assert_eq(ax_verify_cache_key(&sb, 1), 0);
    ax_verify_cache_set_min_bytes(0);
    setenv("AXMEM_CACHE_DIR", "off", 1);
    cr_assert_eq(ax_verify_cache_key(&sb, 1), 0);
    ax_verify_cache_set_min_bytes((uint64_t)64 << 20);
    free(c);
    ax_rm_rf(dir);
    unlink(good);
    unlink(bad);
}

/* A FIFO given as a dataset or a text input blocked open() forever. */
Test(axd, fifo_and_directory_inputs_are_refused, .timeout = 20) {
    char fifo[256];
    td_tmp(fifo, sizeof fifo, "fifo");
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    ax_axd_t *d = NULL;
    ax_error_clear();
    cr_assert_eq(ax_axd_open(fifo, AX_AXD_VERIFY, &d), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), fifo) && strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_axd_open("/tmp", AX_AXD_VERIFY, &d), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "directory"), "%s", ax_error_msg());
    const char *paths[1] = {fifo};
    ax_input_t *in = NULL;
    ax_error_clear();
    cr_assert_eq(ax_input_open(paths, 1, 0, &in), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    char *text;
    size_t len;
    ax_error_clear();
    cr_assert_eq(ax_read_file(fifo, &text, &len), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), fifo), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_check_regular(fifo, NULL), AX_ERR_IO);
    int fd;
    cr_assert_eq(ax_open_regular("/dev/null", NULL, &fd), AX_ERR_IO);
    unlink(fifo);
    /* a regular file opens in blocking mode (the O_NONBLOCK of the check is cleared) */
    char good[256];
    td_tmp(good, sizeof good, "regular.txt");
    cr_assert(td_write(good, "hello", 5));
    cr_assert_eq(ax_open_regular(good, NULL, &fd), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    close(fd);
    unlink(good);
}
