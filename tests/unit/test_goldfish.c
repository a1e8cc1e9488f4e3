/* Goldfish masks: spec parsing, the static and hash rules, invariance of the hash mask to
 * offsets, documents, buffers and packing, and `axmem goldfish` in-process. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cli/commands.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "goldfish/goldfish_run.h"
#include "lib/core/json.h"
#include "lib/core/rng.h"
#include "lib/core/status.h"
#include "test_data_util.h"

TestSuite(goldfish, .init = td_quiet);

static const char *GRAMMAR = "none | static:k=K | hash:k=K,h=H[,seed=S]";

static ax_goldfish parse_ok(const char *spec) {
    ax_goldfish g;
    ax_error_clear();
    cr_assert_eq(ax_goldfish_parse(spec, &g), AX_OK, "'%s': %s", spec, ax_error_msg());
    return g;
}

static ax_goldfish hash_spec(int k, int h, uint64_t seed) {
    ax_goldfish g = {AX_GOLDFISH_HASH, k, h, seed};
    return g;
}

/* the definition, written independently of goldfish.c: library XXH3, 128-bit threshold */
static int ref_drop(const int32_t *tokens, long i, int k, int h, uint64_t seed) {
    uint8_t le[4 * AX_GOLDFISH_H_MAX];
    for (int j = 0; j < h; j++) {
        uint32_t v = (uint32_t)tokens[i - h + j];
        for (int b = 0; b < 4; b++) le[4 * j + b] = (uint8_t)(v >> (8 * b));
    }
    unsigned __int128 t = ((unsigned __int128)1 << 64) / (unsigned)k;
    return (unsigned __int128)XXH3_64bits_withSeed(le, (size_t)h * 4, seed) < t;
}

static int32_t *random_tokens(long n, uint64_t seed, int vocab) {
    int32_t *t = malloc((size_t)n * sizeof *t);
    for (long i = 0; i < n; i++)
        t[i] = (int32_t)ax_rng_below(seed, 7, (uint64_t)i, (uint64_t)vocab);
    return t;
}

/* ---------------------------------------------------------------- parsing */

Test(goldfish, parse_defaults_and_forms) {
    ax_goldfish g = parse_ok("none");
    cr_assert_eq(g.strategy, AX_GOLDFISH_NONE);
    cr_assert_eq(g.k, 0);
    g = parse_ok("static");
    cr_assert(g.strategy == AX_GOLDFISH_STATIC && g.k == 4 && g.h == 0 && g.seed == 0);
    g = parse_ok("static:k=7");
    cr_assert(g.strategy == AX_GOLDFISH_STATIC && g.k == 7);
    g = parse_ok("hash");
    cr_assert(g.strategy == AX_GOLDFISH_HASH && g.k == 4 && g.h == 13 && g.seed == 0);
    g = parse_ok("hash:k=3");
    cr_assert(g.k == 3 && g.h == 13 && g.seed == 0);
    g = parse_ok("hash:h=7");
    cr_assert(g.k == 4 && g.h == 7);
    g = parse_ok("hash:seed=42");
    cr_assert(g.k == 4 && g.h == 13 && g.seed == 42);
    g = parse_ok("hash:seed=0xFFffFFffFFffFFff,h=1,k=2");
    cr_assert(g.k == 2 && g.h == 1 && g.seed == UINT64_MAX);
    g = parse_ok("hash:k=65536,h=1024,seed=18446744073709551615");
    cr_assert(g.k == 65536 && g.h == 1024 && g.seed == UINT64_MAX);
    ax_goldfish a = parse_ok("hash"), b = parse_ok("hash:k=4,h=13,seed=0");
    cr_assert(!memcmp(&a, &b, sizeof a), "defaults equal the explicit spec");
    cr_assert_eq(ax_goldfish_context(&a), 13);
    ax_goldfish s = parse_ok("static:k=2");
    cr_assert_eq(ax_goldfish_context(&s), 0);
}

Test(goldfish, format_is_canonical_and_round_trips) {
    struct {
        const char *in, *out;
    } cases[] = {
        {"none", "none"},
        {"static", "static:k=4"},
        {"static:k=9", "static:k=9"},
        {"hash", "hash:k=4,h=13,seed=0"},
        {"hash:seed=0x10,k=3", "hash:k=3,h=13,seed=16"},
        {"hash:k=2,h=1,seed=18446744073709551615", "hash:k=2,h=1,seed=18446744073709551615"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ax_goldfish g = parse_ok(cases[c].in), back;
        char buf[AX_GOLDFISH_SPEC_MAX];
        ax_goldfish_format(&g, buf, sizeof buf);
        cr_assert_str_eq(buf, cases[c].out);
        back = parse_ok(buf);
        cr_assert(!memcmp(&g, &back, sizeof g), "'%s' round trip", buf);
    }
    char tiny[5];
    ax_goldfish g = parse_ok("hash");
    ax_goldfish_format(&g, tiny, sizeof tiny);
    cr_assert_str_eq(tiny, "hash");
}

Test(goldfish, parse_errors_name_flag_text_and_grammar) {
    struct {
        const char *spec, *why;
    } bad[] = {
        {"", "empty spec"},
        {"foo", "unknown strategy 'foo'"},
        {"HASH", "unknown strategy"},
        {" hash", "unknown strategy"},
        {"hashes:k=4", "unknown strategy 'hashes'"},
        {"none:k=2", "'none' takes no parameters"},
        {"static:k=1", "k must be an integer in 2..65536"},
        {"hash:k=1", "k must be"},
        {"hash:k=0", "k must be"},
        {"hash:k=-3", "k must be"},
        {"hash:k=65537", "k must be"},
        {"hash:k=4x", "k must be"},
        {"hash:k=", "k must be"},
        {"hash:k= 4", "k must be"},
        {"hash:h=0", "h must be an integer in 1..1024"},
        {"hash:h=1025", "h must be"},
        {"hash:h=99999999999999999999999", "h must be"},
        {"hash:seed=-1", "seed must be"},
        {"hash:seed=0x", "seed must be"},
        {"hash:seed=0x1g", "seed must be"},
        {"hash:seed=0x10000000000000000", "seed must be"},
        {"hash:seed=18446744073709551616", "seed must be"},
        {"hash:k=4,k=5", "duplicate key k"},
        {"hash:h=4,k=3,h=5", "duplicate key h"},
        {"hash:seed=1,seed=1", "duplicate key seed"},
        {"static:k=3,k=3", "duplicate key k"},
        {"static:h=3", "static takes only k, not h"},
        {"static:seed=3", "static takes only k, not seed"},
        {"hash:x=1", "hash takes k, h and seed, not x"},
        {"hash:=1", "not (empty key)"},
        {"hash:", "empty parameter"},
        {"hash:k=4,", "empty parameter"},
        {"hash:,k=4", "empty parameter"},
        {"hash:k", "parameter without '='"},
        {"hash:k=4;h=3", "k must be"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        ax_goldfish g = hash_spec(9, 9, 9);
        ax_error_clear();
        cr_assert_eq(ax_goldfish_parse(bad[c].spec, &g), AX_ERR_ARG, "'%s' accepted", bad[c].spec);
        cr_assert_eq(g.strategy, AX_GOLDFISH_NONE, "'%s': out reset", bad[c].spec);
        const char *m = ax_error_msg();
        char quoted[128];
        snprintf(quoted, sizeof quoted, "'%s'", bad[c].spec);
        cr_assert(strstr(m, "--goldfish"), "'%s': %s", bad[c].spec, m);
        cr_assert(strstr(m, quoted), "'%s' not quoted: %s", bad[c].spec, m);
        cr_assert(strstr(m, bad[c].why), "'%s': expected '%s' in: %s", bad[c].spec, bad[c].why, m);
        cr_assert(strstr(m, GRAMMAR), "'%s': no grammar in: %s", bad[c].spec, m);
    }
    ax_goldfish g;
    ax_error_clear();
    cr_assert_eq(ax_goldfish_parse(NULL, &g), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--goldfish"));
}

/* ---------------------------------------------------------------- static and none */

Test(goldfish, static_drops_exactly_every_kth_position) {
    const long n = 1000;
    int32_t *t = random_tokens(n, 1, 500);
    uint8_t *keep = malloc(n);
    for (int k = 2; k <= 9; k++) {
        ax_goldfish g = {AX_GOLDFISH_STATIC, k, 0, 0};
        for (long len = 1; len <= n; len += 137) {
            memset(keep, 7, (size_t)len);
            ax_goldfish_mask(&g, t, NULL, len, keep);
            for (long i = 0; i < len; i++)
                cr_assert_eq(keep[i], (i + 1) % k != 0, "k=%d i=%ld", k, i);
            cr_assert_eq(ax_goldfish_count_dropped(keep, len), len / k);
        }
    }
    /* positions, not tokens or documents: doc_pos is ignored */
    uint32_t *pos = calloc((size_t)n, sizeof *pos);
    ax_goldfish g = {AX_GOLDFISH_STATIC, 4, 0, 0};
    ax_goldfish_mask(&g, t, pos, n, keep);
    cr_assert_eq(keep[2], 1);
    cr_assert_eq(keep[3], 0);
    cr_assert_eq(keep[7], 0);
    free(pos);
    free(keep);
    free(t);
}

Test(goldfish, none_keeps_everything) {
    const long n = 333;
    int32_t *t = random_tokens(n, 2, 100);
    uint8_t keep[333];
    memset(keep, 0, sizeof keep);
    ax_goldfish g = parse_ok("none");
    ax_goldfish_mask(&g, t, NULL, n, keep);
    cr_assert_eq(ax_goldfish_count_dropped(keep, n), 0);
    ax_goldfish_mask(&g, t, NULL, 0, keep); /* n = 0 is a no-op */
    free(t);
}

/* ---------------------------------------------------------------- hash */

Test(goldfish, hash_matches_the_definition) {
    const long n = 20000;
    int32_t *t = random_tokens(n, 3, 50000);
    t[100] = -5; /* ids hashed as raw int32 bits */
    uint32_t *pos = malloc((size_t)n * sizeof *pos);
    uint8_t *keep = malloc(n);
    int ks[] = {2, 3, 4, 7, 100}, hs[] = {1, 4, 13, 32, 33, 60, 200};
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
        for (size_t b = 0; b < sizeof hs / sizeof *hs; b++) {
            int k = ks[a], h = hs[b];
            uint64_t seed = a * 31 + b;
            for (long i = 0; i < n; i++) pos[i] = (uint32_t)(i % 5000); /* docs of 5000 */
            ax_goldfish g = hash_spec(k, h, seed);
            ax_goldfish_mask(&g, t, pos, n, keep);
            for (long i = 0; i < n; i++) {
                int want = pos[i] < (uint32_t)h ? 1 : !ref_drop(t, i, k, h, seed);
                cr_assert_eq(keep[i], want, "k=%d h=%d i=%ld", k, h, i);
            }
            /* doc_pos NULL: one document from tokens[0] */
            ax_goldfish_mask(&g, t, NULL, n, keep);
            for (long i = 0; i < n; i++) {
                int want = i < h ? 1 : !ref_drop(t, i, k, h, seed);
                cr_assert_eq(keep[i], want, "NULL doc_pos k=%d h=%d i=%ld", k, h, i);
            }
        }
    free(t);
    free(pos);
    free(keep);
}

/* Pinned: the mask decides what checkpoints were trained on, so it must never change. */
Test(goldfish, hash_golden) {
    int32_t t[64];
    for (int i = 0; i < 64; i++) t[i] = i * 37 + 11;
    uint8_t keep[64];
    ax_goldfish g = parse_ok("hash");
    ax_goldfish_mask(&g, t, NULL, 64, keep);
    char got[65];
    for (int i = 0; i < 64; i++) got[i] = keep[i] ? '.' : 'x';
    got[64] = 0;
    cr_assert_str_eq(got, ".............xx.x.....xxxx..x.x..x.xx.x.....x..x....x......x..x.");
}

Test(goldfish, first_h_targets_of_each_document_kept) {
    const long n = 50000;
    int32_t *t = random_tokens(n, 4, 1000);
    uint32_t *pos = malloc((size_t)n * sizeof *pos);
    uint8_t *keep = malloc(n);
    /* documents of varied lengths, some shorter than h */
    long start = 0;
    uint64_t d = 0;
    for (long i = 0; i < n; i++) {
        if (i - start >= (long)(1 + ax_rng_below(5, 0, d, 60))) {
            start = i;
            d++;
        }
        pos[i] = (uint32_t)(i - start);
    }
    ax_goldfish g = hash_spec(2, 13, 0); /* k=2: half of the other targets dropped */
    ax_goldfish_mask(&g, t, pos, n, keep);
    long dropped_after = 0, after = 0;
    for (long i = 0; i < n; i++) {
        if (pos[i] < 13)
            cr_assert_eq(keep[i], 1, "target %ld at doc_pos %u dropped", i, pos[i]);
        else {
            after++;
            dropped_after += !keep[i];
        }
    }
    cr_assert_gt(after, 1000);
    cr_assert_gt(dropped_after, after / 3, "k=2 drops about half of the rest");
    free(t);
    free(pos);
    free(keep);
}

/* A passage's mask after its first h tokens is the same wherever it appears: any offset, any
 * document, any window split of the stream. */
Test(goldfish, same_passage_same_mask_anywhere) {
    const int h = 13;
    const long plen = 400;
    int32_t *passage = random_tokens(plen, 6, 4096);
    /* stream: doc A = 37 noise + passage; doc B = passage; doc C = 5 noise + passage + noise */
    const long n = 37 + plen + plen + 5 + plen + 50;
    int32_t *s = malloc((size_t)n * sizeof *s);
    uint32_t *pos = malloc((size_t)n * sizeof *pos);
    int32_t *noise = random_tokens(200, 8, 4096);
    long w = 0, starts[3];
    long doc_start = 0;
#define PUT(tok, new_doc)                                                                          \
    do {                                                                                           \
        if (new_doc) doc_start = w;                                                                \
        s[w] = (tok);                                                                              \
        pos[w] = (uint32_t)(w - doc_start);                                                        \
        w++;                                                                                       \
    } while (0)
    for (long i = 0; i < 37; i++) PUT(noise[i], i == 0);
    starts[0] = w;
    for (long i = 0; i < plen; i++) PUT(passage[i], 0);
    starts[1] = w;
    for (long i = 0; i < plen; i++) PUT(passage[i], i == 0);
    for (long i = 0; i < 5; i++) PUT(noise[100 + i], i == 0);
    starts[2] = w;
    for (long i = 0; i < plen; i++) PUT(passage[i], 0);
    for (long i = 0; i < 50; i++) PUT(noise[150 + i], 0);
#undef PUT
    cr_assert_eq(w, n);
    uint8_t *whole = malloc(n), *split = malloc(n);
    for (int k = 3; k <= 4; k++) {
        ax_goldfish g = hash_spec(k, h, 99);
        ax_goldfish_mask(&g, s, pos, n, whole);
        for (int c = 1; c < 3; c++)
            for (long j = h; j < plen; j++)
                cr_assert_eq(whole[starts[0] + j], whole[starts[c] + j], "k=%d copy %d token %ld",
                             k, c, j);
        long diff = 0;
        for (long j = 0; j < h; j++) diff += whole[starts[1] + j] != 1;
        cr_assert_eq(diff, 0, "doc B's first h targets kept");
        /* the same stream masked in windows of every length, each given its left context */
        for (long wl = 1; wl <= 257; wl += 16) {
            memset(split, 9, (size_t)n);
            for (long a = 0; a < n; a += wl) {
                long cnt = n - a < wl ? n - a : wl;
                ax_goldfish_mask(&g, s + a, pos + a, cnt, split + a);
            }
            cr_assert(!memcmp(whole, split, (size_t)n), "windows of %ld differ", wl);
        }
    }
    free(whole);
    free(split);
    free(s);
    free(pos);
    free(noise);
    free(passage);
}

/* The mask reads only tokens[i-h..i-1] (and doc_pos): buffers that differ elsewhere, and
 * exactly-sized allocations (ASan checks the bounds), give the same answer. */
Test(goldfish, mask_reads_only_the_context) {
    const int h = 13;
    const long n = 3000;
    int32_t *t = random_tokens(n + h, 10, 30000);
    uint32_t *pos = malloc((size_t)n * sizeof *pos);
    for (long i = 0; i < n; i++) pos[i] = (uint32_t)(i + 500); /* mid-document */
    ax_goldfish g = hash_spec(4, h, 5);
    /* buffer 1: exactly context + window */
    int32_t *b1 = malloc((size_t)(n + h) * sizeof *b1);
    memcpy(b1, t, (size_t)(n + h) * sizeof *b1);
    /* buffer 2: same, inside a bigger buffer full of other tokens */
    long pad = 1000;
    int32_t *b2 = random_tokens(n + h + 2 * pad, 11, 30000);
    memcpy(b2 + pad, t, (size_t)(n + h) * sizeof *b2);
    uint8_t *k1 = malloc(n), *k2 = malloc(n);
    ax_goldfish_mask(&g, b1 + h, pos, n, k1);
    ax_goldfish_mask(&g, b2 + pad + h, pos, n, k2);
    cr_assert(!memcmp(k1, k2, (size_t)n));
    long d = ax_goldfish_count_dropped(k1, n);
    cr_assert(d > n / 5 && d < n / 3, "dropped %ld of %ld", d, n);
    /* start of a document: no left context exists, none is read */
    for (long i = 0; i < n; i++) pos[i] = (uint32_t)i;
    int32_t *b3 = malloc((size_t)n * sizeof *b3);
    memcpy(b3, t + h, (size_t)n * sizeof *b3);
    ax_goldfish_mask(&g, b3, pos, n, k1);
    ax_goldfish_mask(&g, b3, NULL, n, k2);
    cr_assert(!memcmp(k1, k2, (size_t)n));
    free(b1);
    free(b2);
    free(b3);
    free(k1);
    free(k2);
    free(pos);
    free(t);
}

Test(goldfish, seed_changes_the_mask) {
    const long n = 100000;
    int32_t *t = random_tokens(n, 12, 4096);
    uint8_t *a = malloc(n), *b = malloc(n);
    ax_goldfish ga = hash_spec(4, 13, 0), gb = hash_spec(4, 13, 1);
    ax_goldfish_mask(&ga, t, NULL, n, a);
    ax_goldfish_mask(&gb, t, NULL, n, b);
    long differ = 0;
    for (long i = 0; i < n; i++) differ += a[i] != b[i];
    /* independent masks with p = 1/4 disagree on 2 p (1 - p) = 37.5% of targets */
    cr_assert(differ > n * 35 / 100 && differ < n * 40 / 100, "%ld of %ld differ", differ, n);
    ax_goldfish_mask(&ga, t, NULL, n, b);
    cr_assert(!memcmp(a, b, (size_t)n), "same seed, same mask");
    free(a);
    free(b);
    free(t);
}

/* On real text (the bundled KJV corpus, BPE-encoded with a tokenizer trained here) the
 * dropped fraction is 1/k within 1% relative over > 1M targets. The binomial spread at
 * p = 1/4, n = 1M is 0.17% relative, so the bound leaves room for the corpus' repeats. */
static void check_fraction_on_kjv(int k) {
    size_t nb;
    uint8_t *text = td_kjv_text(0, &nb);
    cr_assert(text && nb > 1000000, "cannot read data/corpus/kjv.jsonl");
    ax_bpe_trainer_t *tr;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr, text, nb), AX_OK);
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_bpe_trainer_train(tr, 4096, NULL, &tok), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr);
    int32_t *ids;
    size_t n;
    cr_assert_eq(ax_tokenizer_encode(tok, text, nb, &ids, &n), AX_OK);
    cr_assert_geq(n, 1000000 + 13, "only %zu tokens", n);
    uint8_t *keep = malloc(n);
    ax_goldfish g = hash_spec(k, 13, 0);
    ax_goldfish_mask(&g, ids, NULL, (long)n, keep);
    long targets = (long)n - 13, dropped = ax_goldfish_count_dropped(keep, (long)n);
    double frac = (double)dropped / (double)targets, want = 1.0 / k;
    cr_log_info("k=%d: %ld of %ld targets dropped, %.5f vs %.5f (%.3f%% relative)", k, dropped,
                targets, frac, want, 100.0 * (frac - want) / want);
    cr_assert(frac > want * 0.99 && frac < want * 1.01, "k=%d: dropped %.5f, want %.5f +- 1%%", k,
              frac, want);
    free(keep);
    free(ids);
    free(text);
    ax_tokenizer_free(tok);
}

Test(goldfish, hash_fraction_converges_k4, .timeout = 120) {
    check_fraction_on_kjv(4);
}

Test(goldfish, hash_fraction_converges_k3, .timeout = 120) {
    check_fraction_on_kjv(3);
}

/* ---------------------------------------------------------------- CLI */

static int run_gf(const char *line, const char *out_path, const char *err_path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", line);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    FILE *so = stdout, *se = stderr, *fo = NULL, *fe = NULL;
    if (out_path) {
        fo = fopen(out_path, "wb");
        cr_assert(fo);
        stdout = fo;
    }
    if (err_path) {
        fe = fopen(err_path, "wb");
        cr_assert(fe);
        stderr = fe;
    }
    int rc = ax_cmd_goldfish(argc, argv);
    if (fo) {
        fflush(fo);
        stdout = so;
        fclose(fo);
    }
    if (fe) {
        fflush(fe);
        stderr = se;
        fclose(fe);
    }
    return rc;
}

static char *slurp(const char *path) {
    size_t n;
    uint8_t *b = td_read(path, &n);
    cr_assert(b, "cannot read %s", path);
    b[n] = 0;
    return (char *)b;
}

/* a small tokenizer saved to a file */
static void make_tokenizer(const char *path) {
    const char *train = "the cat sat on the mat. the dog sat on the log. a cat and a dog.";
    ax_bpe_trainer_t *tr;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr, (const uint8_t *)train, strlen(train)), AX_OK);
    ax_tokenizer_t *tok;
    cr_assert_eq(ax_bpe_trainer_train(tr, 270, NULL, &tok), AX_OK);
    cr_assert_eq(ax_tokenizer_save(tok, path), AX_OK, "%s", ax_error_msg());
    ax_tokenizer_free(tok);
    ax_bpe_trainer_free(tr);
}

Test(goldfish, cli_usage_and_runtime_errors) {
    char tok[256], out[256], err[256], cmd[1024];
    td_tmp(tok, sizeof tok, "gf.tok");
    td_tmp(out, sizeof out, "gf.out");
    td_tmp(err, sizeof err, "gf.err");
    make_tokenizer(tok);
    struct {
        const char *args;
        int rc;
        const char *msg; /* in stderr */
    } cases[] = {
        {"goldfish", 2, "usage: axmem goldfish"},
        {"goldfish bogus", 2, "unknown subcommand 'bogus'"},
        {"goldfish show hello", 2, "--tokenizer TOK is required"},
        {"goldfish show --tokenizer", 2, "--tokenizer needs a value"},
        {"goldfish show --tokenizer TOK", 2, "no text"},
        {"goldfish show --tokenizer TOK --file /etc/hostname hello", 2, "not both"},
        {"goldfish show --tokenizer TOK --spec hash:k=1 hello", 2, "--spec 'hash:k=1': k must be"},
        {"goldfish show --tokenizer TOK --color sometimes hi", 2, "auto, always or never"},
        {"goldfish show --tokenizer TOK --frobnicate hi", 2, "unknown flag --frobnicate"},
        {"goldfish show --tokenizer /nonexistent/x.tok hello", 1, "/nonexistent/x.tok"},
        {"goldfish show --tokenizer TOK --file /nonexistent/t.txt", 1, "/nonexistent/t.txt"},
        {"goldfish stats", 2, "--data FILE.axd is required"},
        {"goldfish stats --data x.axd --seq-len 0", 2, "--seq-len=0 is out of range"},
        {"goldfish stats --data x.axd --spec static:k=2,h=3", 2, "static takes only k"},
        {"goldfish stats --data /nonexistent/d.axd", 1, "/nonexistent/d.axd"},
        {"goldfish stats --data TOK", 1, ""}, /* not a dataset */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char args[512];
        const char *at = strstr(cases[c].args, "TOK");
        if (at)
            snprintf(args, sizeof args, "%.*s%s%s", (int)(at - cases[c].args), cases[c].args, tok,
                     at + 3);
        else
            snprintf(args, sizeof args, "%s", cases[c].args);
        int rc = run_gf(args, out, err);
        char *e = slurp(err);
        cr_assert_eq(rc, cases[c].rc, "'%s' -> %d, stderr: %s", args, rc, e);
        cr_assert(strstr(e, cases[c].msg), "'%s': stderr lacks '%s': %s", args, cases[c].msg, e);
        cr_assert(e[0], "'%s': nothing on stderr", args);
        free(e);
    }
    /* help goes to stdout and succeeds */
    const char *helps[] = {"goldfish --help", "goldfish show --help", "goldfish stats -h"};
    for (size_t c = 0; c < 3; c++) {
        cr_assert_eq(run_gf(helps[c], out, err), 0);
        char *o = slurp(out);
        cr_assert(strstr(o, "usage: axmem goldfish"), "%s", o);
        free(o);
    }
    snprintf(cmd, sizeof cmd, "rm -f %s %s %s", tok, out, err);
    cr_assert_eq(system(cmd), 0);
}

Test(goldfish, cli_show_marks_dropped_tokens) {
    char tok[256], out[256], err[256], txt[256], cmd[2048];
    td_tmp(tok, sizeof tok, "gfs.tok");
    td_tmp(out, sizeof out, "gfs.out");
    td_tmp(err, sizeof err, "gfs.err");
    td_tmp(txt, sizeof txt, "gfs.txt");
    make_tokenizer(tok);
    /* a text with a multi-byte character that byte-level BPE splits */
    const char *text =
        "the cat sat on the mat and the dog sat on the log; caf\xc3\xa9 na\xc3\xafve "
        "the cat sat on the mat and the dog sat on the log again and again.";
    cr_assert(td_write(txt, text, strlen(text)));
    ax_tokenizer_t *t;
    cr_assert_eq(ax_tokenizer_load(tok, &t), AX_OK);
    int32_t *ids;
    size_t n;
    cr_assert_eq(ax_tokenizer_encode(t, (const uint8_t *)text, strlen(text), &ids, &n), AX_OK);
    uint8_t *keep = malloc(n);
    ax_goldfish g = hash_spec(3, 4, 0);
    ax_goldfish_mask(&g, ids, NULL, (long)n, keep);
    long dropped = ax_goldfish_count_dropped(keep, (long)n);
    cr_assert_gt(dropped, 0);

    /* JSON: exact per token, texts concatenate to the input */
    snprintf(cmd, sizeof cmd, "goldfish show --tokenizer %s --spec hash:k=3,h=4 --json --file %s",
             tok, txt);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    char *o = slurp(out);
    ax_json *j;
    cr_assert_eq(ax_json_parse(o, strlen(o), "show --json", &j), AX_OK, "%s", ax_error_msg());
    const char *spec;
    cr_assert_eq(ax_json_get_str(j, "spec", "x", &spec), AX_OK);
    cr_assert_str_eq(spec, "hash:k=3,h=4,seed=0");
    int64_t v;
    cr_assert_eq(ax_json_get_i64(j, "targets", "x", &v), AX_OK);
    cr_assert_eq(v, (int64_t)n);
    cr_assert_eq(ax_json_get_i64(j, "dropped", "x", &v), AX_OK);
    cr_assert_eq(v, dropped);
    const ax_json *toks = ax_json_get(j, "tokens");
    cr_assert(toks && toks->type == AX_JSON_ARR && toks->n == n);
    int lossy = 0;
    for (size_t i = 0; i < n; i++) {
        const ax_json *e = toks->items[i];
        cr_assert_eq(ax_json_get_i64(e, "id", "x", &v), AX_OK);
        cr_assert_eq(v, ids[i]);
        const ax_json *d = ax_json_get(e, "dropped");
        cr_assert(d && d->type == AX_JSON_BOOL);
        cr_assert_eq((int)d->num, !keep[i], "token %zu", i);
        lossy += ax_json_get(e, "hex") != NULL;
    }
    ax_json_free(j);
    free(o);
    cr_log_info("show: %zu tokens, %d split characters", n, lossy);

    /* plain text: marks, the text itself, the summary */
    snprintf(cmd, sizeof cmd,
             "goldfish show --tokenizer %s --spec hash:k=3,h=4 --color never --file %s", tok, txt);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    o = slurp(out);
    cr_assert(strstr(o, "[["), "%s", o);
    cr_assert(!strstr(o, "\033["), "no colour with --color never");
    char summary[256];
    snprintf(summary, sizeof summary, "goldfish hash:k=3,h=4,seed=0: %zu targets, %ld dropped", n,
             dropped);
    cr_assert(strstr(o, summary), "want '%s' in %s", summary, o);
    /* removing the marks gives back the text */
    char *plain = malloc(strlen(o) + 1), *p = plain;
    const char *end = strstr(o, "\ngoldfish hash");
    for (const char *q = o; q < end;) {
        if (!strncmp(q, "[[", 2) || !strncmp(q, "]]", 2))
            q += 2;
        else
            *p++ = *q++;
    }
    *p = 0;
    cr_assert_str_eq(plain, text);
    /* the number of [[ ]] groups: dropped tokens, merged only where a character is split */
    long groups = 0;
    for (const char *q = o; (q = strstr(q, "[[")); q += 2) groups++;
    cr_assert(groups > 0 && groups <= dropped, "%ld groups, %ld dropped", groups, dropped);
    free(plain);
    free(o);

    /* colour, and text from arguments (joined with spaces) */
    snprintf(cmd, sizeof cmd,
             "goldfish show --tokenizer %s --spec static:k=2 --color=always the cat sat on the mat",
             tok);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    o = slurp(out);
    cr_assert(strstr(o, "\033[9;31m"), "%s", o);
    cr_assert(strstr(o, "goldfish static:k=2: "), "%s", o);
    free(o);
    /* none drops nothing */
    snprintf(cmd, sizeof cmd,
             "goldfish show --tokenizer %s --spec none --color never -- --not-a-flag", tok);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    o = slurp(out);
    cr_assert(!strncmp(o, "--not-a-flag\n", 13), "%s", o);
    cr_assert(strstr(o, " 0 dropped (0.00%)"), "%s", o);
    free(o);

    free(keep);
    free(ids);
    ax_tokenizer_free(t);
    snprintf(cmd, sizeof cmd, "rm -f %s %s %s %s", tok, out, err, txt);
    cr_assert_eq(system(cmd), 0);
}

Test(goldfish, cli_stats_over_a_dataset) {
    char axd[256], out[256], err[256], cmd[1024];
    td_tmp(axd, sizeof axd, "gft.axd");
    td_tmp(out, sizeof out, "gft.out");
    td_tmp(err, sizeof err, "gft.err");
    /* documents of varied lengths (each gets an EOT appended by the writer) */
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(axd, 5000, &w), AX_OK);
    int32_t *t = random_tokens(200000, 20, 5000);
    long off = 0;
    for (int d = 0; d < 300; d++) {
        long len = (long)ax_rng_below(21, 0, (uint64_t)d, 1200);
        cr_assert_eq(ax_axd_writer_add_doc(w, t + off, (size_t)len), AX_OK);
        off += len;
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    free(t);

    /* reference: the whole stream in one call, targets = tokens 1.. */
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(axd, 1, &d), AX_OK);
    uint64_t nt = ax_axd_n_tokens(d);
    int32_t *s = malloc(nt * sizeof *s);
    uint32_t *pos = malloc(nt * sizeof *pos);
    uint8_t *keep = malloc(nt);
    ax_axd_tokens(d, 0, nt, s);
    for (uint64_t i = 0; i < nt; i++)
        pos[i] = (uint32_t)(i - ax_axd_doc_offsets(d)[ax_axd_doc_of(d, i)]);
    ax_goldfish g = hash_spec(4, 13, 7);
    ax_goldfish_mask(&g, s + 1, pos + 1, (long)nt - 1, keep);
    long dropped = ax_goldfish_count_dropped(keep, (long)nt - 1);
    /* the library entry point (goldfish/goldfish_run.h), chunked, against the one-call reference */
    ax_goldfish_stats gs;
    cr_assert_eq(ax_goldfish_stats_compute(&g, d, 1024, &gs), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(gs.targets, nt - 1);
    cr_assert_eq(gs.dropped, (uint64_t)dropped);
    cr_assert_eq(gs.docs, 300);
    cr_assert_eq(gs.longest_run, ax_goldfish_longest_run(keep, pos + 1, (long)nt - 1));
    cr_assert(gs.run_located);
    uint64_t run_at = ax_axd_doc_offsets(d)[gs.longest_run_doc] + gs.longest_run_start;
    for (uint64_t i = run_at; i < run_at + gs.longest_run; i++)
        cr_assert(keep[i - 1], "target %llu inside the longest run is dropped",
                  (unsigned long long)i);
    ax_goldfish none = {0};
    cr_assert_eq(ax_goldfish_stats_compute(&none, d, 1024, &gs), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(gs.dropped, 0);
    cr_assert_eq(gs.expected_frac, 0.0);
    uint64_t longest_doc = 0;
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t len = ax_axd_doc_offsets(d)[i + 1] - ax_axd_doc_offsets(d)[i] - (i == 0);
        if (len > longest_doc) longest_doc = len;
    }
    cr_assert_eq(gs.longest_run, longest_doc);
    ax_error_clear();
    cr_assert_eq(ax_goldfish_stats_compute(&g, d, 0, &gs), AX_ERR_ARG);
    ax_error_clear();
    ax_axd_free(d);

    snprintf(cmd, sizeof cmd, "goldfish stats --data %s --spec hash:seed=7 --json", axd);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    char *o = slurp(out);
    ax_json *j;
    cr_assert_eq(ax_json_parse(o, strlen(o), "stats --json", &j), AX_OK, "%s", ax_error_msg());
    int64_t v;
    cr_assert_eq(ax_json_get_i64(j, "targets", "x", &v), AX_OK);
    cr_assert_eq(v, (int64_t)nt - 1);
    cr_assert_eq(ax_json_get_i64(j, "dropped", "x", &v), AX_OK);
    cr_assert_eq(v, dropped);
    cr_assert_eq(ax_json_get_i64(j, "docs", "x", &v), AX_OK);
    cr_assert_eq(v, 300);
    double frac;
    cr_assert_eq(ax_json_get_num(j, "dropped_frac", "x", &frac), AX_OK);
    cr_assert(frac > 0.2 && frac < 0.26, "%f", frac);
    cr_assert_eq(ax_json_get_i64(j, "longest_run", "x", &v), AX_OK);
    cr_assert(v >= 13 && v < 200, "longest run %lld", (long long)v);
    ax_json_free(j);
    free(o);

    /* static: analytic over windows of seq_len targets */
    snprintf(cmd, sizeof cmd, "goldfish stats --data %s --spec static:k=3 --seq-len 100 --json",
             axd);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    o = slurp(out);
    cr_assert_eq(ax_json_parse(o, strlen(o), "stats --json", &j), AX_OK);
    cr_assert_eq(ax_json_get_i64(j, "dropped", "x", &v), AX_OK);
    uint64_t tg = nt - 1;
    cr_assert_eq((uint64_t)v, tg / 100 * 33 + tg % 100 / 3);
    ax_json_free(j);
    free(o);

    /* text output */
    snprintf(cmd, sizeof cmd, "goldfish stats --data %s", axd);
    cr_assert_eq(run_gf(cmd, out, err), 0);
    o = slurp(out);
    cr_assert(strstr(o, "hash:k=4,h=13,seed=0"), "%s", o);
    cr_assert(strstr(o, "longest supervised run"), "%s", o);
    free(o);

    free(s);
    free(pos);
    free(keep);
    snprintf(cmd, sizeof cmd, "rm -f %s %s %s", axd, out, err);
    cr_assert_eq(system(cmd), 0);
}
