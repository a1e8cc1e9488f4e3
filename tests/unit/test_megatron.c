/* Megatron / GPT-NeoX indexed datasets -> .axd: the committed fixtures (written by
 * scripts/make_megatron_fixture.py from the format's description) convert to the token ids and
 * document boundaries in their expected.json, and damaged copies are rejected naming the file
 * and the fault, with nothing written. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/megatron.h"
#include "data/split.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "test_data_util.h"

static void quiet(void) {
    ax_log_set_level(AX_LOG_ERROR);
}

/* the fixture folder, found from the working directory or from this file's location */
static const char *fixture_dir(void) {
    static char buf[4096];
    const char *cands[] = {"tests/fixtures/megatron", "../tests/fixtures/megatron",
                           "../../tests/fixtures/megatron"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
        snprintf(buf, sizeof buf, "%s/expected.json", cands[i]);
        if (access(buf, R_OK) == 0) return cands[i];
    }
    snprintf(buf, sizeof buf, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    cr_assert(slash, "cannot locate tests/fixtures/megatron");
    snprintf(slash, sizeof buf - (size_t)(slash - buf), "/../fixtures/megatron");
    return buf;
}

/* the entry `name` of expected.json; *all is the whole document (the caller frees it) */
static const ax_json *expected(const char *name, ax_json **all) {
    char path[4200];
    snprintf(path, sizeof path, "%s/expected.json", fixture_dir());
    char *text;
    size_t n;
    cr_assert_eq(ax_read_file(path, &text, &n), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_json_parse(text, n, path, all), AX_OK, "%s", ax_error_msg());
    free(text);
    const ax_json *one = ax_json_get(*all, name);
    cr_assert(one, "expected.json has no %s", name);
    return one;
}

/* the .axd at path holds exactly the expected documents, end-of-text and vocabulary */
static void check_axd(const char *path, const ax_json *want) {
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
    const ax_json *docs = ax_json_get(want, "axd_docs");
    int64_t eot, vocab;
    cr_assert_eq(ax_json_get_i64(want, "eot", "expected", &eot), AX_OK);
    cr_assert_eq(ax_json_get_i64(want, "vocab", "expected", &vocab), AX_OK);
    cr_assert_eq(ax_axd_eot(d), (uint32_t)eot);
    cr_assert_eq(ax_axd_vocab_size(d), (uint32_t)vocab);
    cr_assert_eq(ax_axd_tokenizer_checksum(d), 0, "an imported dataset has no axmem tokenizer");
    cr_assert_eq(ax_axd_n_docs(d), docs->n);
    const uint64_t *off = ax_axd_doc_offsets(d);
    uint64_t total = 0;
    for (size_t k = 0; k < docs->n; k++) {
        const ax_json *doc = docs->items[k];
        cr_assert_eq(off[k + 1] - off[k], doc->n, "document %zu length", k);
        for (size_t i = 0; i < doc->n; i++)
            cr_assert_eq(ax_axd_token(d, off[k] + i), (uint32_t)doc->items[i]->num,
                         "document %zu token %zu", k, i);
        cr_assert_eq(ax_axd_token(d, off[k + 1] - 1), (uint32_t)eot, "doc %zu ends with EOT", k);
        total += doc->n;
    }
    cr_assert_eq(ax_axd_n_tokens(d), total);
    ax_axd_free(d);
}

static void prefix_of(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", fixture_dir(), name);
}

Test(megatron, pythia_fixture_converts_with_inferred_eot, .init = quiet) {
    char prefix[4200], out[256];
    prefix_of(prefix, sizeof prefix, "pythia_u16");
    td_tmp(out, sizeof out, "pythia.axd");
    ax_megatron_options o = {0, -1};
    ax_megatron_result r;
    cr_assert_eq(ax_megatron_import(prefix, out, &o, &r), AX_OK, "%s", ax_error_msg());
    ax_json *all;
    const ax_json *want = expected("pythia_u16", &all);
    cr_assert(r.eot_inferred);
    cr_assert_eq(r.eot, 0);
    cr_assert_eq(r.eot_added, 0, "every source document already ends with 0: nothing doubled");
    check_axd(out, want);
    /* the source documents are the .axd's, token for token (they carry their EOT) */
    const ax_json *src = ax_json_get(want, "source_docs"), *axd = ax_json_get(want, "axd_docs");
    for (size_t k = 0; k < src->n; k++) cr_assert_eq(src->items[k]->n, axd->items[k]->n);
    ax_json_free(all);
    unlink(out);
}

Test(megatron, gpt2_fixture_gets_eot_appended, .init = quiet) {
    char prefix[4200], out[256];
    prefix_of(prefix, sizeof prefix, "gpt2_i32");
    td_tmp(out, sizeof out, "gpt2.axd");
    ax_megatron_result r;
    /* its documents end with different ids: end-of-text cannot be inferred */
    ax_megatron_options o = {0, -1};
    cr_assert_eq(ax_megatron_import(prefix, out, &o, &r), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "gpt2_i32.idx") && strstr(ax_error_msg(), "--eot"), "%s",
              ax_error_msg());
    cr_assert(!ax_path_exists(out));
    ax_error_clear();
    o = (ax_megatron_options){50257, 50256};
    cr_assert_eq(ax_megatron_import(prefix, out, &o, &r), AX_OK, "%s", ax_error_msg());
    ax_json *all;
    const ax_json *want = expected("gpt2_i32", &all);
    cr_assert_eq(r.eot_added, ax_json_get(want, "axd_docs")->n, "appended to every document");
    cr_assert_eq(r.docs, ax_json_get(want, "axd_docs")->n);
    check_axd(out, want);
    ax_json_free(all);
    /* a token at or above --vocab-size is named with its document */
    o = (ax_megatron_options){300, 256};
    cr_assert_eq(ax_megatron_import(prefix, out, &o, &r), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "gpt2_i32.bin") && strstr(ax_error_msg(), "[0, 299]"), "%s",
              ax_error_msg());
    unlink(out);
}

/* ---- damaged copies ---- */

typedef struct {
    uint8_t *idx, *bin;
    size_t n_idx, n_bin;
} pair;

static pair load_pair(const char *name) {
    char path[4300];
    pair p;
    snprintf(path, sizeof path, "%s/%s.idx", fixture_dir(), name);
    p.idx = td_read(path, &p.n_idx);
    snprintf(path, sizeof path, "%s/%s.bin", fixture_dir(), name);
    p.bin = td_read(path, &p.n_bin);
    cr_assert(p.idx && p.bin && p.n_idx > 34, "fixture %s unreadable", name);
    return p;
}

/* writes the (damaged) pair under a temp prefix, imports it, expects failure naming `file`
 * (".idx" or ".bin") and containing `fault`, and no output */
static void expect_rejected(const pair *p, const char *file, const char *fault, int64_t eot) {
    char prefix[256], path[300], out[300];
    td_tmp(prefix, sizeof prefix, "damaged");
    snprintf(path, sizeof path, "%s.idx", prefix);
    cr_assert(td_write(path, p->idx, p->n_idx));
    snprintf(path, sizeof path, "%s.bin", prefix);
    cr_assert(td_write(path, p->bin, p->n_bin));
    snprintf(out, sizeof out, "%s.axd", prefix);
    ax_megatron_options o = {0, eot};
    ax_megatron_result r;
    ax_error_clear(); /* the first message wins: forget the previous case's */
    ax_status st = ax_megatron_import(prefix, out, &o, &r);
    cr_assert_neq(st, AX_OK, "damage '%s' was accepted", fault);
    char named[320];
    snprintf(named, sizeof named, "damaged%s", file);
    cr_assert(strstr(ax_error_msg(), named), "message does not name %s: %s", named, ax_error_msg());
    cr_assert(strstr(ax_error_msg(), fault), "message lacks '%s': %s", fault, ax_error_msg());
    cr_assert(!ax_path_exists(out), "nothing may be written");
}

static void put64le(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}

Test(megatron, damaged_pairs_rejected_with_the_fault, .init = quiet) {
    pair p = load_pair("pythia_u16");
    uint64_t n_seq, n_di;
    memcpy(&n_seq, p.idx + 18, 8);
    memcpy(&n_di, p.idx + 26, 8);
    size_t ptrs = 34 + 4 * n_seq, docs = ptrs + 8 * n_seq;

    pair q = p;
    q.idx = malloc(p.n_idx + 16);
    q.bin = malloc(p.n_bin + 16);
#define RESET()                                                                                    \
    (memcpy(q.idx, p.idx, p.n_idx), memcpy(q.bin, p.bin, p.n_bin), q.n_idx = p.n_idx,              \
     q.n_bin = p.n_bin)
    RESET();
    q.idx[0] = 'X';
    expect_rejected(&q, ".idx", "bad magic", -1);
    RESET();
    q.idx[17] = 9;
    expect_rejected(&q, ".idx", "unknown dtype code 9", -1);
    RESET();
    q.idx[17] = 7;
    expect_rejected(&q, ".idx", "floating point", -1);
    RESET();
    put64le(q.idx + 9, 2);
    expect_rejected(&q, ".idx", "version 2", -1);
    RESET();
    q.n_idx -= 3; /* truncated index */
    expect_rejected(&q, ".idx", "truncated", -1);
    RESET();
    q.n_idx = 20; /* shorter than the header */
    expect_rejected(&q, ".idx", "truncated index", -1);
    RESET();
    q.n_bin -= 2; /* truncated .bin */
    expect_rejected(&q, ".idx", "does not match its .bin", -1);
    RESET();
    q.n_bin += 2; /* .bin with more tokens than the index knows */
    expect_rejected(&q, ".idx", "does not match its .bin", -1);
    RESET();
    put64le(q.idx + ptrs + 8 * (n_seq - 1), p.n_bin); /* last pointer past the end */
    expect_rejected(&q, ".idx", "outside", -1);
    RESET();
    put64le(q.idx + ptrs + 8, 1); /* odd byte offset for a 2-byte dtype */
    expect_rejected(&q, ".idx", "not aligned", -1);
    RESET();
    int32_t neg = -4;
    memcpy(q.idx + 34, &neg, 4);
    expect_rejected(&q, ".idx", "negative size", -1);
    RESET();
    put64le(q.idx + docs + 8 * 2, 0); /* doc_idx decreases */
    expect_rejected(&q, ".idx", "never decrease", -1);
    RESET();
    put64le(q.idx + docs, 1); /* doc_idx must start at 0 */
    expect_rejected(&q, ".idx", "start at 0", -1);
    RESET();
    put64le(q.idx + docs + 8 * (n_di - 1), n_seq - 1); /* the last sequences in no document */
    expect_rejected(&q, ".idx", "belong to no document", -1);
    RESET();
    put64le(q.idx + 18, n_seq + 1000); /* header counts disagree with the length */
    expect_rejected(&q, ".idx", "implies", -1);
    RESET();
    put64le(q.idx + 18, UINT64_MAX / 4); /* overflowing counts */
    expect_rejected(&q, ".idx", "implies", -1);
    free(q.idx);
    free(q.bin);
    free(p.idx);
    free(p.bin);
}

/* an int8 dataset whose ids are negative: rejected naming the .bin, the document and the id */
Test(megatron, negative_ids_rejected, .init = quiet) {
    int8_t toks[] = {5, 6, 0, -3, 0};
    uint8_t idx[34 + 12 * 2 + 8 * 3];
    memcpy(idx, "MMIDIDX\0\0", 9);
    put64le(idx + 9, 1);
    idx[17] = 2;
    put64le(idx + 18, 2);
    put64le(idx + 26, 3);
    int32_t sizes[2] = {3, 2};
    memcpy(idx + 34, sizes, 8);
    put64le(idx + 42, 0);
    put64le(idx + 50, 3);
    put64le(idx + 58, 0);
    put64le(idx + 66, 1);
    put64le(idx + 74, 2);
    pair p = {idx, (uint8_t *)toks, sizeof idx, sizeof toks};
    expect_rejected(&p, ".bin", "token -3 in document 1", 0);
}

Test(megatron, missing_files_named, .init = quiet) {
    char prefix[256], out[300];
    td_tmp(prefix, sizeof prefix, "absent");
    snprintf(out, sizeof out, "%s.axd", prefix);
    ax_megatron_options o = {0, -1};
    ax_megatron_result r;
    cr_assert_neq(ax_megatron_import(prefix, out, &o, &r), AX_OK);
    cr_assert(strstr(ax_error_msg(), "absent.bin"), "%s", ax_error_msg());
    pair p = load_pair("pythia_u16");
    char path[320];
    snprintf(path, sizeof path, "%s.bin", prefix);
    cr_assert(td_write(path, p.bin, p.n_bin));
    ax_error_clear();
    cr_assert_neq(ax_megatron_import(prefix, out, &o, &r), AX_OK);
    cr_assert(strstr(ax_error_msg(), "absent.idx"), "%s", ax_error_msg());
    unlink(path);
    free(p.idx);
    free(p.bin);
}

/* .axd version 3 exists only for another end-of-text: default datasets stay version 2 (older
 * builds read them, checksums unchanged), and an id outside the vocabulary is refused */
Test(megatron, axd_records_a_foreign_eot, .init = quiet) {
    char path[256];
    td_tmp(path, sizeof path, "v.axd");
    int32_t doc[] = {5, 0, 7};
    for (int k = 0; k < 3; k++) {
        ax_axd_writer_t *w;
        cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK, "%s", ax_error_msg());
        if (k == 1) cr_assert_eq(ax_axd_writer_set_eot(w, 0), AX_OK);
        if (k == 2) {
            ax_error_clear();
            cr_assert_eq(ax_axd_writer_set_eot(w, 300), AX_ERR_ARG);
            cr_assert(strstr(ax_error_msg(), "outside the vocabulary"), "%s", ax_error_msg());
        }
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, 3), AX_OK);
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, 2), AX_OK); /* ends with 0 */
        cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
        size_t n;
        uint8_t *b = td_read(path, &n);
        uint32_t ver, eot_field;
        memcpy(&ver, b + 8, 4);
        memcpy(&eot_field, b + 20, 4);
        free(b);
        ax_axd_t *d;
        cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
        if (k == 1) {
            cr_assert_eq(ver, 3);
            cr_assert_eq(eot_field, 0);
            cr_assert_eq(ax_axd_eot(d), 0);
            /* 5 0 7 + EOT 0, then 5 0 (already ends with 0: not doubled) */
            cr_assert_eq(ax_axd_n_tokens(d), 6);
        } else {
            cr_assert_eq(ver, 2);
            cr_assert_eq(eot_field, 0);
            cr_assert_eq(ax_axd_eot(d), AX_TOK_EOT);
            cr_assert_eq(ax_axd_n_tokens(d), 7);
        }
        ax_axd_free(d);
    }
    unlink(path);
}

/* datasets derived from an imported one keep its end-of-text: a split adds no 256s */
Test(megatron, split_keeps_the_imported_eot, .init = quiet) {
    char prefix[4200], in[256], a[256], b[256];
    prefix_of(prefix, sizeof prefix, "pythia_u16");
    td_tmp(in, sizeof in, "imp.axd");
    td_tmp(a, sizeof a, "a.axd");
    td_tmp(b, sizeof b, "b.axd");
    ax_megatron_options o = {50304, 0};
    ax_megatron_result r;
    cr_assert_eq(ax_megatron_import(prefix, in, &o, &r), AX_OK, "%s", ax_error_msg());
    ax_split_config c = {.holdout = 0.3, .seed = 1, .ngram = 13};
    ax_split_result sr;
    cr_assert_eq(ax_data_split(in, a, b, &c, &sr), AX_OK, "%s", ax_error_msg());
    uint64_t tokens = 0;
    const char *outs[] = {a, b};
    for (int i = 0; i < 2; i++) {
        ax_axd_t *d;
        cr_assert_eq(ax_axd_open(outs[i], AX_AXD_VERIFY, &d), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ax_axd_eot(d), 0);
        cr_assert_eq(ax_axd_vocab_size(d), 50304);
        tokens += ax_axd_n_tokens(d);
        ax_axd_free(d);
    }
    cr_assert_eq(tokens + sr.dropped_tokens, r.tokens, "no end-of-text added or lost");
    unlink(in);
    unlink(a);
    unlink(b);
}
