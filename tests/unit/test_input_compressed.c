/* Compressed corpus input (.jsonl.zst, .jsonl.gz, and .zst/.gz of plain text): the same corpus
 * encodes to the identical .axd from every form, multi-frame zstd and multi-member gzip are one
 * stream, and truncated or corrupted files fail naming the file, never crashing. The compressed
 * files are made here with libzstd and zlib, as the zstd and gzip tools would write them. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "data/axd.h"
#include "data/data_run.h"
#include "data/input.h"
#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "test_data_util.h"

static void quiet(void) {
    ax_log_set_level(AX_LOG_ERROR);
}

/* A JSONL corpus: varied documents, escapes, multi-byte UTF-8, a blank line, one line longer
 * than the reader's first line buffer (256 KiB) and the whole bigger than one compressed read
 * (128 KiB). Deterministic. */
static char *make_corpus(size_t *n) {
    size_t cap = 1u << 21, len = 0;
    char *b = malloc(cap);
    uint64_t x = 88172645463325252ull;
    static const char *words[] = {"the",
                                  "memor\\u00e9",
                                  "token",
                                  "caf\xc3\xa9",
                                  "\\\"q\\\"",
                                  "\xe6\xbc\xa2\xe5\xad\x97",
                                  "data",
                                  "zstd",
                                  "line\\nbreak",
                                  "  spaces",
                                  "42"};
    for (int d = 0; d < 400; d++) {
        len += (size_t)snprintf(b + len, cap - len, "{\"id\": %d, \"text\": \"", d);
        int nw = d == 123 ? 60000 : 5 + d % 37;
        for (int i = 0; i < nw; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const char *w = words[x % (sizeof words / sizeof *words)];
            len += (size_t)snprintf(b + len, cap - len, "%s%s", i ? " " : "", w);
        }
        len += (size_t)snprintf(b + len, cap - len, "\"}\n");
        if (d == 50) len += (size_t)snprintf(b + len, cap - len, "   \n");
    }
    cr_assert_lt(len, cap);
    *n = len;
    return b;
}

/* zstd frames (with the content checksum, as the zstd tool writes) of the pieces of data cut
 * at the given byte positions: several frames when cuts are given */
static uint8_t *zstd_frames(const char *data, size_t n, const size_t *cuts, int n_cuts,
                            size_t *out_n) {
    uint8_t *out = malloc(ZSTD_compressBound(n) + 64 * (size_t)(n_cuts + 1));
    size_t at = 0, o = 0;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    for (int k = 0; k <= n_cuts; k++) {
        size_t end = k < n_cuts ? cuts[k] : n;
        size_t r = ZSTD_compress2(c, out + o, ZSTD_compressBound(end - at), data + at, end - at);
        cr_assert(!ZSTD_isError(r), "%s", ZSTD_getErrorName(r));
        o += r;
        at = end;
    }
    ZSTD_freeCCtx(c);
    *out_n = o;
    return out;
}

/* gzip members (as `gzip` writes, `cat a.gz b.gz` concatenates) of the pieces cut at cuts */
static void write_gzip(const char *path, const char *data, size_t n, const size_t *cuts,
                       int n_cuts) {
    unlink(path);
    size_t at = 0;
    for (int k = 0; k <= n_cuts; k++) {
        size_t end = k < n_cuts ? cuts[k] : n;
        gzFile g = gzopen(path, "ab");
        cr_assert(g);
        if (end > at) cr_assert_eq(gzwrite(g, data + at, (unsigned)(end - at)), (int)(end - at));
        cr_assert_eq(gzclose(g), Z_OK);
        at = end;
    }
}

static void write_zstd(const char *path, const char *data, size_t n, const size_t *cuts,
                       int n_cuts) {
    size_t zn;
    uint8_t *z = zstd_frames(data, n, cuts, n_cuts, &zn);
    cr_assert(td_write(path, z, zn));
    free(z);
}

static uint64_t encode_checksum(const char *tok, const char *input, const char *out,
                                uint64_t *docs) {
    ax_data_encode_result r;
    const char *in[1] = {input};
    cr_assert_eq(ax_data_encode(tok, in, 1, 0, 1, out, &r), AX_OK, "%s: %s", input, ax_error_msg());
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(out, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
    uint64_t h = ax_axd_checksum(d);
    *docs = ax_axd_n_docs(d);
    ax_axd_free(d);
    unlink(out);
    return h;
}

Test(input_compressed, same_axd_from_plain_zst_gz, .init = quiet, .timeout = 120) {
    size_t n;
    char *corpus = make_corpus(&n);
    char plain[256], zst[256], gz[256], zst3[256], gz3[256], tok[256], out[256];
    td_tmp(plain, sizeof plain, "c.jsonl");
    td_tmp(zst, sizeof zst, "c.jsonl.zst");
    td_tmp(gz, sizeof gz, "c.jsonl.gz");
    td_tmp(zst3, sizeof zst3, "multi.jsonl.zst");
    td_tmp(gz3, sizeof gz3, "multi.jsonl.gz");
    td_tmp(tok, sizeof tok, "tok");
    td_tmp(out, sizeof out, "out.axd");
    cr_assert(td_write(plain, corpus, n));
    write_zstd(zst, corpus, n, NULL, 0);
    write_gzip(gz, corpus, n, NULL, 0);
    /* frames and members cut mid-line and mid-UTF-8, plus an empty one */
    size_t cuts[] = {7, 7, n / 3 + 1, 2 * n / 3 + 2};
    write_zstd(zst3, corpus, n, cuts, 4);
    write_gzip(gz3, corpus, n, cuts, 4);
    const char *train_in[1] = {plain};
    ax_data_tokenizer_result tr;
    cr_assert_eq(ax_data_tokenizer_train(train_in, 1, 0, 300, 0, tok, &tr), AX_OK, "%s",
                 ax_error_msg());
    uint64_t d0, d1;
    uint64_t want = encode_checksum(tok, plain, out, &d0);
    cr_assert_eq(d0, 400, "400 documents (the blank line is no document)");
    const char *forms[] = {zst, gz, zst3, gz3};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(encode_checksum(tok, forms[i], out, &d1), want, "%s differs", forms[i]);
        cr_assert_eq(d1, d0);
    }
    /* several files of different kinds in one run: each decoder starts afresh per file */
    {
        const char *mixed[] = {zst3, gz, plain, zst, gz3},
                   *same[] = {plain, plain, plain, plain, plain};
        ax_data_encode_result r;
        uint64_t h[2];
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(ax_data_encode(tok, k ? same : mixed, 5, 0, 1, out, &r), AX_OK, "%s",
                         ax_error_msg());
            cr_assert_eq(r.docs, 5 * 400);
            ax_axd_t *d;
            cr_assert_eq(ax_axd_open(out, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
            h[k] = ax_axd_checksum(d);
            ax_axd_free(d);
        }
        cr_assert_eq(h[0], h[1]);
        unlink(out);
    }
    /* progress counts compressed bytes: all of them by the end */
    ax_input_t *in;
    cr_assert_eq(ax_input_open(&forms[0], 1, 0, &in), AX_OK);
    size_t zsize;
    free(td_read(zst, &zsize));
    cr_assert_eq(ax_input_bytes_total(in), zsize);
    for (;;) {
        const uint8_t *p;
        size_t k;
        int end, eof;
        cr_assert_eq(ax_input_next(in, &p, &k, &end, &eof), AX_OK, "%s", ax_error_msg());
        if (eof) break;
    }
    cr_assert_eq(ax_input_bytes_read(in), zsize);
    ax_input_free(in);
    /* a plain text file compressed is one document, as the plain file is */
    char txt[256], txtz[256];
    td_tmp(txt, sizeof txt, "book.txt");
    td_tmp(txtz, sizeof txtz, "book.txt.gz");
    cr_assert(td_write(txt, corpus, n));
    write_gzip(txtz, corpus, n, cuts, 4);
    want = encode_checksum(tok, txt, out, &d0);
    cr_assert_eq(encode_checksum(tok, txtz, out, &d1), want);
    cr_assert_eq(d0, 1);
    cr_assert_eq(d1, 1);
    const char *all[] = {plain, zst, gz, zst3, gz3, tok, txt, txtz};
    for (int i = 0; i < 8; i++) unlink(all[i]);
    free(corpus);
}

/* reads every piece of path; returns the status of the first failure (AX_OK if none) */
static ax_status read_all(const char *path) {
    ax_input_t *in;
    ax_error_clear();
    ax_status st = ax_input_open(&path, 1, 0, &in);
    if (st != AX_OK) return st;
    for (;;) {
        const uint8_t *p;
        size_t k;
        int end, eof;
        st = ax_input_next(in, &p, &k, &end, &eof);
        if (st != AX_OK || eof) break;
    }
    ax_input_free(in);
    return st;
}

static void expect_corrupt(const char *path, const char *what) {
    cr_assert_eq(read_all(path), AX_ERR_CORRUPT, "%s accepted", path);
    cr_assert(strstr(ax_error_msg(), path), "message does not name %s: %s", path, ax_error_msg());
    if (what)
        cr_assert(strstr(ax_error_msg(), what), "message lacks '%s': %s", what, ax_error_msg());
}

Test(input_compressed, truncated_and_corrupt_rejected, .init = quiet) {
    size_t n;
    char *corpus = make_corpus(&n);
    char zst[256], gz[256], bad[256];
    td_tmp(zst, sizeof zst, "t.jsonl.zst");
    td_tmp(gz, sizeof gz, "t.jsonl.gz");
    size_t zn, gn;
    uint8_t *z = zstd_frames(corpus, n, NULL, 0, &zn);
    write_gzip(gz, corpus, n, NULL, 0);
    uint8_t *g = td_read(gz, &gn);
    /* truncated anywhere inside: at a third, and one byte short */
    size_t cutz[] = {zn / 3, zn - 1}, cutg[] = {gn / 3, gn - 1};
    for (int i = 0; i < 2; i++) {
        cr_assert(td_write(zst, z, cutz[i]));
        expect_corrupt(zst, "truncated zstd stream");
        cr_assert(td_write(gz, g, cutg[i]));
        expect_corrupt(gz, "truncated gzip stream");
    }
    /* bytes overwritten in the middle: a decoder error, a checksum error, or (for data that
     * still inflates) a JSON error naming file:line; any of them names the file */
    memset(z + zn / 2, 0xA5, 16);
    cr_assert(td_write(zst, z, zn));
    expect_corrupt(zst, NULL);
    memset(g + gn / 2, 0xA5, 16);
    cr_assert(td_write(gz, g, gn));
    expect_corrupt(gz, NULL);
    /* not compressed at all, and garbage after a complete stream */
    td_tmp(bad, sizeof bad, "plain.jsonl.zst");
    cr_assert(td_write(bad, corpus, 1000));
    expect_corrupt(bad, "corrupt zstd data, detected at compressed byte 0");
    td_tmp(bad, sizeof bad, "plain.jsonl.gz");
    cr_assert(td_write(bad, corpus, 1000));
    expect_corrupt(bad, "corrupt gzip data");
    /* a JSON error inside a compressed file names file:line of the decompressed text */
    const char *txt = "{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": 3}\n";
    write_zstd(zst, txt, strlen(txt), NULL, 0);
    char want[300];
    snprintf(want, sizeof want, "%s:3", zst);
    expect_corrupt(zst, want);
    /* an empty file and an empty stream are no documents, not errors */
    cr_assert(td_write(zst, "", 0));
    cr_assert_eq(read_all(zst), AX_OK, "%s", ax_error_msg());
    write_gzip(gz, "", 0, NULL, 0);
    cr_assert_eq(read_all(gz), AX_OK, "%s", ax_error_msg());
    unlink(zst);
    unlink(gz);
    unlink(bad);
    td_tmp(bad, sizeof bad, "plain.jsonl.zst");
    unlink(bad);
    free(z);
    free(g);
    free(corpus);
}

/* ---- binary input is refused: encoding it as one document would make a dataset of junk ---- */

/* reads the whole input, returning the status of the first failure (or AX_OK) */
static ax_status read_input(const char *path) {
    ax_input_t *in;
    ax_status st = ax_input_open(&path, 1, 0, &in);
    for (int eof = 0; st == AX_OK && !eof;) {
        const uint8_t *p;
        size_t k;
        int end;
        st = ax_input_next(in, &p, &k, &end, &eof);
    }
    ax_input_free(in);
    return st;
}

/* path is refused (AX_ERR_CORRUPT) with a message naming it and holding want */
static void refused(const char *path, const char *want) {
    ax_error_clear();
    cr_assert_eq(read_input(path), AX_ERR_CORRUPT, "%s was read as text", path);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), want), "%s: %s", path,
              ax_error_msg());
    ax_error_clear();
}

Test(input_compressed, binary_input_refused, .init = quiet, .timeout = 120) {
    size_t n;
    char *corpus = make_corpus(&n);
    char plain[256], tok[256], axd[256], axd_txt[256], axd_zst[256], raw[256], nul[256], latin[256],
        latin_gz[256], zst_bare[256], out[256];
    td_tmp(plain, sizeof plain, "b.jsonl");
    td_tmp(tok, sizeof tok, "b.tok");
    td_tmp(axd, sizeof axd, "b.axd");
    td_tmp(axd_txt, sizeof axd_txt, "b_axd.txt");
    td_tmp(axd_zst, sizeof axd_zst, "b_axd.txt.zst");
    td_tmp(raw, sizeof raw, "raw.bin");
    td_tmp(nul, sizeof nul, "nul.txt");
    td_tmp(latin, sizeof latin, "latin1.txt");
    td_tmp(latin_gz, sizeof latin_gz, "latin1.txt.gz");
    td_tmp(zst_bare, sizeof zst_bare, "c.jsonl.compressed");
    td_tmp(out, sizeof out, "b_out.axd");
    cr_assert(td_write(plain, corpus, n));
    const char *in[1] = {plain};
    ax_data_tokenizer_result tr;
    cr_assert_eq(ax_data_tokenizer_train(in, 1, 0, 300, 0, tok, &tr), AX_OK, "%s", ax_error_msg());
    ax_data_encode_result r;
    cr_assert_eq(ax_data_encode(tok, in, 1, 0, 1, axd, &r), AX_OK, "%s", ax_error_msg());
    /* a dataset, under any name and compressed too: named as such, with what to do */
    size_t an;
    uint8_t *a = td_read(axd, &an);
    cr_assert(td_write(axd_txt, a, an));
    write_zstd(axd_zst, (const char *)a, an, NULL, 0);
    refused(axd, "axmem dataset (.axd)");
    refused(axd_txt, "axmem dataset (.axd)");
    refused(axd_zst, "axmem dataset (.axd)");
    refused(tok, "axmem tokenizer");
    /* a compressed file without its suffix */
    write_zstd(zst_bare, corpus, n, NULL, 0);
    refused(zst_bare, "name it with a .zst suffix");
    /* NUL bytes: where the first one is */
    memcpy(a, "hello, world", 12), a[12] = 0;
    cr_assert(td_write(nul, a, an));
    refused(nul, "byte 12 is a NUL");
    free(a);
    /* random bytes without a NUL: not UTF-8 */
    uint8_t junk[5000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(1 + (i * 2654435761u >> 11) % 255);
    cr_assert(td_write(raw, junk, sizeof junk));
    refused(raw, "not UTF-8 text");
    /* Latin-1 text, plain and gzipped (its decompressed bytes are judged) */
    char lat[3000];
    size_t ln = 0;
    while (ln + 11 < sizeof lat) memcpy(lat + ln, "caf\xe9 na\xefve ", 11), ln += 11;
    cr_assert(td_write(latin, lat, ln));
    write_gzip(latin_gz, lat, ln, NULL, 0);
    refused(latin, "iconv");
    refused(latin_gz, "not UTF-8 text");
    /* ... and the commands refuse them too, naming the file */
    const char *bad[1] = {axd_txt};
    cr_assert_eq(ax_data_encode(tok, bad, 1, 0, 1, out, &r), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), axd_txt), "%s", ax_error_msg());
    cr_assert(!ax_path_exists(out), "a refused encode leaves no dataset");
    ax_error_clear();
    cr_assert_eq(ax_data_tokenizer_train(bad, 1, 0, 300, 0, out, &tr), AX_ERR_CORRUPT);
    cr_assert(!ax_path_exists(out));
    ax_error_clear();
    unlink(plain), unlink(tok), unlink(axd), unlink(axd_txt), unlink(axd_zst), unlink(raw);
    unlink(nul), unlink(latin), unlink(latin_gz), unlink(zst_bare);
    free(corpus);
}

/* Unicode's well-formed UTF-8 (every length, the range ends) passes; ill-formed sequences
 * (overlong forms, surrogates, past U+10FFFF, lone or missing continuation bytes) are counted:
 * a few stray bytes in a big text are tolerated, nine in a short one are not */
Test(input_compressed, utf8_judged_by_the_standard, .init = quiet) {
    static const char *good[] = {"\x7f",         "\xc2\x80",         "\xdf\xbf",
                                 "\xe0\xa0\x80", "\xed\x9f\xbf",     "\xee\x80\x80",
                                 "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"};
    static const char *ill[] = {"\xc0\xaf",
                                "\xc1\xbf",
                                "\xe0\x9f\xbf",
                                "\xed\xa0\x80",
                                "\xf0\x8f\xbf\xbf",
                                "\xf4\x90\x80\x80",
                                "\xf5\x80\x80\x80",
                                "\x80",
                                "\xbf",
                                "\xe2\x82",
                                "\xfe",
                                "\xff"};
    char path[256], buf[4096];
    td_tmp(path, sizeof path, "utf8.txt");
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        size_t m = 0, k = strlen(good[i]);
        while (m + k + 1 < sizeof buf) memcpy(buf + m, good[i], k), buf[m + k] = ' ', m += k + 1;
        cr_assert(td_write(path, buf, m));
        cr_assert_eq(read_input(path), AX_OK, "good %zu: %s", i, ax_error_msg());
    }
    for (size_t i = 0; i < sizeof ill / sizeof *ill; i++) {
        size_t m = 0, k = strlen(ill[i]);
        for (int r = 0; r < 9; r++) memcpy(buf + m, ill[i], k), buf[m + k] = 'a', m += k + 1;
        cr_assert(td_write(path, buf, m));
        refused(path, "not UTF-8 text");
        /* the same nine (up to 27 bad bytes) in 40 KB of text: under one in a thousand */
        static char big[40000];
        memset(big, 'x', sizeof big);
        memcpy(big, buf, m);
        cr_assert(td_write(path, big, sizeof big));
        cr_assert_eq(read_input(path), AX_OK, "ill %zu in a big text: %s", i, ax_error_msg());
    }
    unlink(path);
}
