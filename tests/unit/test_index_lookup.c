/* memscan lookups: maximal verbatim spans (planted passages found with the right source and
 * length, runs stitched from two documents, longest first) and `axmem memscan` end to end on
 * a text corpus: index, lookup --json, info, and the mismatch and usage errors. */
#include <criterion/criterion.h>
#include <glob.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "index/index.h"
#include "tests/support/synth.h"
#include "tests/unit/test_suite_files.h"

TestSuite(index_lookup, .init = ts_quiet, .fini = ts_cleanup);

static void tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/axmem_test_%d_%s", (int)getpid(), name);
}

static ax_memscan_index_t *build(const ax_axd_t *ds, int n) {
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = n;
    ax_memscan_index_t *idx;
    cr_assert_eq(ax_memscan_index_build(ds, &o, &idx), AX_OK, "%s", ax_error_msg());
    return idx;
}

/* a planted passage inside random text: one span, exactly the passage, at its first copy */
Test(index_lookup, planted_passage_span) {
    ax_memscan_synth_opts o = {.vocab = 8000,
                               .n_docs = 100,
                               .doc_len_min = 60,
                               .doc_len_max = 150,
                               .alphabet = 7000,
                               .n_passages = 2,
                               .passage_len = 50,
                               .copies = 3,
                               .seed = 4};
    char path[256];
    tmp(path, sizeof path, "span.axd");
    ax_memscan_plant *pl;
    size_t np;
    cr_assert_eq(ax_memscan_synth_write(path, &o, &pl, &np), AX_OK, "%s", ax_error_msg());
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK);
    int n = 16;
    ax_memscan_index_t *idx = build(ds, n);
    /* query: 20 tokens the corpus lacks, passage 1, 30 more such tokens */
    int32_t q[100];
    for (int i = 0; i < 100; i++) q[i] = 7500 + i;
    ax_memscan_synth_passage(&o, 1, q + 20);
    const ax_memscan_plant *first = NULL;
    for (size_t k = 0; k < np; k++)
        if (pl[k].passage == 1 && (!first || pl[k].pos < first->pos)) first = &pl[k];
    ax_memscan_span *sp;
    size_t ns;
    cr_assert_eq(ax_memscan_find_spans(idx, q, 100, 8, &sp, &ns), AX_OK);
    cr_assert_eq(ns, 1);
    cr_assert_eq(sp[0].start, 20);
    cr_assert_eq(sp[0].len, 50);
    cr_assert_eq(sp[0].doc, first->doc);
    cr_assert_eq(sp[0].doc_off, first->offset);
    cr_assert_eq(sp[0].pos, first->pos);
    cr_assert_eq(sp[0].count_min, 3);
    cr_assert_eq(sp[0].count_max, 3);
    /* every copy is a source, listed in position order */
    cr_assert_eq(sp[0].occurrences, 3);
    cr_assert_eq(sp[0].docs, 3);
    cr_assert_eq(sp[0].n_sources, 3);
    uint64_t prev_pos = 0;
    for (size_t k = 0; k < 3; k++) {
        const ax_memscan_source *s = &sp[0].sources[k];
        int planted = 0;
        for (size_t j = 0; j < np; j++)
            planted |= pl[j].passage == 1 && pl[j].pos == s->pos && pl[j].doc == s->doc &&
                       pl[j].offset == s->doc_off;
        cr_assert(planted, "source %zu at %llu is not a planted copy", k,
                  (unsigned long long)s->pos);
        cr_assert(k == 0 || s->pos > prev_pos);
        prev_pos = s->pos;
    }
    free(sp);
    /* per-window answers agree with single lookups */
    uint32_t cnt[100];
    uint64_t fp[100];
    ax_memscan_index_lookup_all(idx, q, 100, cnt, fp);
    for (int i = 0; i + n <= 100; i++) {
        uint32_t c;
        uint64_t f;
        int found = ax_memscan_index_lookup(idx, q + i, &c, &f);
        cr_assert_eq(found, cnt[i] > 0);
        if (found) cr_assert(c == cnt[i] && f == fp[i]);
        cr_assert_eq(found, i >= 20 && i + n <= 70, "window %d", i);
    }
    /* shorter than a window: nothing */
    cr_assert_eq(ax_memscan_find_spans(idx, q + 20, (size_t)n - 1, 8, &sp, &ns), AX_OK);
    cr_assert_eq(ns, 0);
    cr_assert_null(sp);
    free(pl);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* doc0 = A B, doc1 = B C (10 tokens each), n = 8; query A B C. Every window matches but no
 * document holds A B C: two spans of 20, A B from doc0 and B C from doc1, overlapping on B. */
Test(index_lookup, run_stitched_from_two_documents) {
    char path[256];
    tmp(path, sizeof path, "stitch.axd");
    int32_t A[10], B[10], C[10], d[20], q[30];
    for (int i = 0; i < 10; i++) A[i] = 300 + i, B[i] = 400 + i, C[i] = 500 + i;
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 1000, &w), AX_OK);
    int32_t filler[5] = {1, 2, 3, 4, 5};
    cr_assert_eq(ax_axd_writer_add_doc(w, filler, 5), AX_OK);
    memcpy(d, A, sizeof A);
    memcpy(d + 10, B, sizeof B);
    cr_assert_eq(ax_axd_writer_add_doc(w, d, 20), AX_OK);
    memcpy(d, B, sizeof B);
    memcpy(d + 10, C, sizeof C);
    cr_assert_eq(ax_axd_writer_add_doc(w, d, 20), AX_OK);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK);
    ax_memscan_index_t *idx = build(ds, 8);
    memcpy(q, A, sizeof A);
    memcpy(q + 10, B, sizeof B);
    memcpy(q + 20, C, sizeof C);
    ax_memscan_span *sp;
    size_t ns;
    cr_assert_eq(ax_memscan_find_spans(idx, q, 30, 8, &sp, &ns), AX_OK);
    cr_assert_eq(ns, 2);
    cr_assert(sp[0].start == 0 && sp[0].len == 20 && sp[0].doc == 1 && sp[0].doc_off == 0);
    cr_assert(sp[1].start == 10 && sp[1].len == 20 && sp[1].doc == 2 && sp[1].doc_off == 0,
              "%zu %zu %llu", sp[1].start, sp[1].len, (unsigned long long)sp[1].doc);
    cr_assert(sp[0].count_min == 1 && sp[0].count_max == 2); /* windows inside B occur twice */
    cr_assert(sp[1].count_min == 1 && sp[1].count_max == 2);
    free(sp);
    /* a longer and a shorter span come out longest first */
    int32_t q2[40];
    memcpy(q2, B, sizeof B); /* 10 tokens of B: a span of 10 (doc0 or doc1) */
    for (int i = 0; i < 5; i++) q2[10 + i] = 900 + i; /* a gap */
    memcpy(q2 + 15, A, sizeof A);                     /* A B: 20 */
    memcpy(q2 + 25, B, sizeof B);
    cr_assert_eq(ax_memscan_find_spans(idx, q2, 35, 8, &sp, &ns), AX_OK);
    cr_assert_eq(ns, 2);
    cr_assert(sp[0].start == 15 && sp[0].len == 20);
    cr_assert(sp[1].start == 0 && sp[1].len == 10);
    cr_assert_eq(sp[1].pos, 5 + 1 + 10); /* first occurrence of B: doc1 offset 10 */
    free(sp);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* ---- the CLI, end to end on text ---- */

static const char *WORDS[] = {"river",  "stone",  "light",   "garden",  "window",
                              "quiet",  "north",  "silver",  "morning", "letter",
                              "bridge", "forest", "candle",  "harbor",  "yellow",
                              "winter", "market", "feather", "copper"};
static const char *SECRET = "the copper harbor keeps a silver candle for every winter morning "
                            "and the north bridge remembers each yellow feather";

/* 40 docs of random words, the secret sentence in docs 7, 19 and 33 */
static char *doc_text(int d, unsigned *seed) {
    char *b = malloc(4096);
    size_t len = 0;
    int words = 30 + (int)(rand_r(seed) % 40);
    for (int i = 0; i < words; i++) {
        if (i == words / 2 && (d == 7 || d == 19 || d == 33))
            len += (size_t)sprintf(b + len, "%s ", SECRET);
        len += (size_t)sprintf(b + len, "%s ", WORDS[rand_r(seed) % 19]);
    }
    b[len] = 0;
    return b;
}

typedef struct {
    char axd[256], tok[256], idx[256], out[256], other_tok[256];
} cli_env;

static void make_cli_env(cli_env *e) {
    tmp(e->axd, sizeof e->axd, "cli.axd");
    tmp(e->tok, sizeof e->tok, "cli.tok");
    tmp(e->idx, sizeof e->idx, "cli.idx");
    tmp(e->out, sizeof e->out, "cli.out");
    tmp(e->other_tok, sizeof e->other_tok, "cli_other.tok");
    unsigned seed = 1;
    char *docs[40];
    ax_bpe_trainer_t *tr;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    for (int d = 0; d < 40; d++) {
        docs[d] = doc_text(d, &seed);
        cr_assert_eq(ax_bpe_trainer_add(tr, (const uint8_t *)docs[d], strlen(docs[d])), AX_OK);
    }
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_bpe_trainer_train(tr, 360, NULL, &tok), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_tokenizer_save(tok, e->tok), AX_OK);
    ax_bpe_trainer_t *tr2; /* a smaller vocabulary: the wrong tokenizer for this dataset */
    cr_assert_eq(ax_bpe_trainer_create(&tr2), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr2, (const uint8_t *)docs[0], strlen(docs[0])), AX_OK);
    ax_tokenizer_t *other;
    cr_assert_eq(ax_bpe_trainer_train(tr2, 300, NULL, &other), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr2);
    cr_assert_eq(ax_tokenizer_save(other, e->other_tok), AX_OK);
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(e->axd, (uint32_t)ax_tokenizer_vocab_size(tok), &w), AX_OK);
    for (int d = 0; d < 40; d++) {
        int32_t *t;
        size_t n;
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)docs[d], strlen(docs[d]), &t, &n),
                     AX_OK);
        cr_assert_eq(ax_axd_writer_add_doc(w, t, n), AX_OK);
        free(t);
        free(docs[d]);
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_tokenizer_free(tok);
    ax_tokenizer_free(other);
    ax_bpe_trainer_free(tr);
}

/* runs `axmem memscan ARGS...` with stdout into e->out; returns the exit code */
static int run_cli(const cli_env *e, int argc, char **argv) {
    fflush(stdout);
    int saved = dup(1);
    int fd = open(e->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    dup2(fd, 1);
    close(fd);
    ax_error_clear();
    int rc = ax_cmd_memscan(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

Test(index_lookup, cli_index_lookup_info) {
    cli_env e;
    make_cli_env(&e);
    char *ix[] = {"memscan", "index", "--data", e.axd, "--out", e.idx, "--n", "8"};
    cr_assert_eq(run_cli(&e, 8, ix), 0, "%s", ax_error_msg());
    cr_assert(ax_path_exists(e.idx));
    char query[512];
    snprintf(query, sizeof query, "nothing like this appears: %s, zebra xylophone", SECRET);
    /* --data defaults to the path stored in the index */
    char *lk[] = {"memscan", "lookup", "--index", e.idx, "--tokenizer", e.tok, "--json", query};
    cr_assert_eq(run_cli(&e, 8, lk), 0, "%s", ax_error_msg());
    size_t n;
    char *text;
    cr_assert_eq(ax_read_file(e.out, &text, &n), AX_OK);
    ax_json *j;
    cr_assert_eq(ax_json_parse(text, n, e.out, &j), AX_OK, "%s\n%s", ax_error_msg(), text);
    const ax_json *L = ax_json_get(j, "longest");
    cr_assert(L && L->type == AX_JSON_OBJ, "%s", text);
    const char *span_text;
    cr_assert_eq(ax_json_get_str(L, "text", e.out, &span_text), AX_OK);
    cr_assert(strstr(span_text, "copper harbor keeps a silver candle") != NULL, "%s", span_text);
    int64_t doc, cmin;
    cr_assert_eq(ax_json_get_i64(L, "doc", e.out, &doc), AX_OK);
    cr_assert_eq(doc, 7, "%s", text); /* the first of docs 7, 19, 33 */
    cr_assert_eq(ax_json_get_i64(L, "count_min", e.out, &cmin), AX_OK);
    cr_assert_eq(cmin, 3);
    /* every source document: 7, 19 and 33 */
    int64_t nsrc;
    cr_assert_eq(ax_json_get_i64(L, "sources", e.out, &nsrc), AX_OK);
    cr_assert_eq(nsrc, 3, "%s", text);
    const ax_json *docs = ax_json_get(L, "docs");
    cr_assert(docs && docs->type == AX_JSON_ARR && docs->n == 3, "%s", text);
    for (int k = 0; k < 3; k++) {
        int64_t dk;
        cr_assert_eq(ax_json_get_i64(docs->items[k], "doc", e.out, &dk), AX_OK);
        cr_assert_eq(dk, k == 0 ? 7 : k == 1 ? 19 : 33, "%s", text);
    }
    const ax_json *mw = ax_json_get(j, "matching_windows");
    cr_assert(mw && mw->type == AX_JSON_ARR && mw->n > 5);
    ax_json_free(j);
    free(text);
    /* text output names the span and its source */
    char *lk2[] = {"memscan", "lookup",      "--index", e.idx, "--data",
                   e.axd,     "--tokenizer", e.tok,     query};
    cr_assert_eq(run_cli(&e, 9, lk2), 0, "%s", ax_error_msg());
    cr_assert_eq(ax_read_file(e.out, &text, &n), AX_OK);
    cr_assert(strstr(text, "longest verbatim span") && strstr(text, "in 3 documents") &&
                  strstr(text, "first in document 7") && strstr(text, " 19 +") &&
                  strstr(text, " 33 +"),
              "%s", text);
    free(text);
    /* a passage absent from the corpus */
    char *lk3[] = {"memscan",
                   "lookup",
                   "--index",
                   e.idx,
                   "--tokenizer",
                   e.tok,
                   "zebra xylophone quartz jukebox vortex"};
    cr_assert_eq(run_cli(&e, 7, lk3), 0);
    cr_assert_eq(ax_read_file(e.out, &text, &n), AX_OK);
    cr_assert(strstr(text, "no verbatim span") != NULL, "%s", text);
    free(text);
    char *inf[] = {"memscan", "info", e.idx, "--verify"};
    cr_assert_eq(run_cli(&e, 4, inf), 0, "%s", ax_error_msg());
    cr_assert_eq(ax_read_file(e.out, &text, &n), AX_OK);
    cr_assert(strstr(text, "2-3") && strstr(text, "all blocks verified"), "%s", text);
    free(text);
}

Test(index_lookup, cli_errors) {
    cli_env e;
    make_cli_env(&e);
    char *ix[] = {"memscan", "index", "--data", e.axd, "--out", e.idx, "--n", "8"};
    cr_assert_eq(run_cli(&e, 8, ix), 0, "%s", ax_error_msg());
    /* tokenizer with another vocabulary: both files named */
    char *lk[] = {"memscan", "lookup", "--index", e.idx, "--tokenizer", e.other_tok, "river"};
    cr_assert_eq(run_cli(&e, 7, lk), 1);
    cr_assert(strstr(ax_error_msg(), e.other_tok) && strstr(ax_error_msg(), e.axd), "%s",
              ax_error_msg());
    /* usage errors exit 2 */
    char *u1[] = {"memscan", "index", "--out", e.idx};
    cr_assert_eq(run_cli(&e, 4, u1), 2);
    char *u2[] = {"memscan", "index", "--data", e.axd, "--out", e.idx, "--n", "0"};
    cr_assert_eq(run_cli(&e, 8, u2), 2);
    char *u3[] = {"memscan", "lookup", "--index", e.idx, "--tokenizer", e.tok};
    cr_assert_eq(run_cli(&e, 6, u3), 2);
    char *u4[] = {"memscan", "bogus"};
    cr_assert_eq(run_cli(&e, 2, u4), 2);
    char *u5[] = {"memscan", "info"};
    cr_assert_eq(run_cli(&e, 2, u5), 2);
    /* runtime errors exit 1: missing dataset, missing index */
    char missing[300];
    snprintf(missing, sizeof missing, "%s.nope", e.axd);
    char *r1[] = {"memscan", "index", "--data", missing, "--out", e.idx};
    cr_assert_eq(run_cli(&e, 6, r1), 1);
    cr_assert(strstr(ax_error_msg(), missing) != NULL, "%s", ax_error_msg());
    char *r2[] = {"memscan", "info", missing};
    cr_assert_eq(run_cli(&e, 3, r2), 1);
    /* --help everywhere */
    char *h[][3] = {{"memscan", "--help", NULL},
                    {"memscan", "index", "--help"},
                    {"memscan", "lookup", "--help"},
                    {"memscan", "info", "--help"}};
    cr_assert_eq(run_cli(&e, 2, h[0]), 0);
    for (int i = 1; i < 4; i++) cr_assert_eq(run_cli(&e, 3, h[i]), 0);
}
