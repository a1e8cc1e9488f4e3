/* Tokenizer: pre-tokenisation, training, encoding, round trips, file format. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/pretok.h"
#include "data/tok_internal.h"
#include "data/tokenizer.h"
#include "lib/core/rng.h"
#include "lib/core/status.h"
#include "test_data_util.h"

TestSuite(tokenizer, .init = td_quiet);

static ax_tokenizer_t *train_on(const uint8_t *text, size_t n, int vocab) {
    ax_bpe_trainer_t *tr;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr, text, n), AX_OK);
    ax_tokenizer_t *t;
    cr_assert_eq(ax_bpe_trainer_train(tr, vocab, NULL, &t), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr);
    return t;
}

static ax_tokenizer_t *kjv_tokenizer(int vocab) {
    size_t n;
    uint8_t *text = td_kjv_text(0, &n);
    cr_assert(text && n > 1000000, "cannot read data/corpus/kjv.jsonl");
    ax_tokenizer_t *t = train_on(text, n, vocab);
    free(text);
    return t;
}

static void assert_round_trip(const ax_tokenizer_t *t, const uint8_t *x, size_t n) {
    int32_t *ids;
    size_t m;
    cr_assert_eq(ax_tokenizer_encode(t, x, n, &ids, &m), AX_OK);
    cr_assert(m <= n);
    uint8_t *back;
    size_t nb;
    cr_assert_eq(ax_tokenizer_decode(t, ids, m, &back, &nb), AX_OK);
    cr_assert_eq(nb, n);
    cr_assert(n == 0 || memcmp(back, x, n) == 0, "round trip differs");
    free(ids);
    free(back);
}

/* random text over an alphabet that exercises every pre-tokeniser rule */
static void random_text(uint8_t *b, size_t n, uint64_t seed) {
    static const char alpha[] = "aab Zs't1 2.,\n\n  \t're'll!?\r";
    for (size_t i = 0; i < n; i++) {
        uint64_t r = ax_rng_below(seed, 1, i, 40);
        b[i] = r < sizeof alpha - 1 ? (uint8_t)alpha[r] : (uint8_t)(0xc3 + (r & 1));
    }
}

Test(tokenizer, pretok_partitions_and_examples) {
    const char *s = "Hello world's  end\n\n123 ...ok";
    size_t n = strlen(s);
    /* like GPT-2, a whitespace run before a word leaves its last byte: "\n\n1" -> "\n", "\n" */
    const char *want[] = {"Hello", " world", "'s", " ", " end", "\n", "\n", "123", " ...", "ok"};
    size_t i = 0, k = 0;
    while (i < n) {
        size_t j = ax_pretok_next((const uint8_t *)s, n, i);
        cr_assert(k < sizeof want / sizeof *want);
        cr_assert_eq(j - i, strlen(want[k]), "chunk %zu: got '%.*s'", k, (int)(j - i), s + i);
        cr_assert(!memcmp(s + i, want[k], j - i));
        i = j;
        k++;
    }
    cr_assert_eq(k, sizeof want / sizeof *want);
    /* UTF-8 stays inside a word */
    const char *u = "caf\xc3\xa9 na\xc3\xafve";
    cr_assert_eq(ax_pretok_next((const uint8_t *)u, strlen(u), 0), 5);
}

Test(tokenizer, safe_splits_preserve_chunks) {
    uint8_t b[400];
    for (uint64_t seed = 0; seed < 20; seed++) {
        random_text(b, sizeof b, seed);
        size_t n = sizeof b;
        for (size_t k = 1; k < n; k++) {
            if (!ax_pretok_safe_split(b, n, k)) continue;
            /* k must be a chunk boundary of the whole, and the prefix must chunk the same */
            size_t i = 0, ip = 0;
            while (i < k) i = ax_pretok_next(b, n, i);
            cr_assert_eq(i, k, "seed %llu: split %zu is inside a chunk", (unsigned long long)seed,
                         k);
            i = 0;
            while (i < k) {
                size_t a = ax_pretok_next(b, n, i), c = ax_pretok_next(b, k, ip);
                cr_assert_eq(a, c, "seed %llu split %zu: prefix chunks differ at %zu",
                             (unsigned long long)seed, k, i);
                i = a;
                ip = c;
            }
        }
    }
}

Test(tokenizer, golden_merges) {
    /* classic example: aa (count 4), then ab beats (aa)a on the tie (smaller ids), then (aa)(ab) */
    const char *s = "aaabdaaabac";
    ax_tokenizer_t *t = train_on((const uint8_t *)s, strlen(s), 260);
    cr_assert_eq(ax_tokenizer_vocab_size(t), 260);
    uint32_t want[3][2] = {{'a', 'a'}, {'a', 'b'}, {257, 258}};
    for (int i = 0; i < 3; i++) {
        uint32_t a, b;
        ax_tokenizer_merge(t, i, &a, &b);
        cr_assert(a == want[i][0] && b == want[i][1], "merge %d is (%u, %u)", i, a, b);
    }
    int32_t *ids;
    size_t m;
    cr_assert_eq(ax_tokenizer_encode(t, (const uint8_t *)s, strlen(s), &ids, &m), AX_OK);
    int32_t want_ids[] = {259, 'd', 259, 'a', 'c'};
    cr_assert_eq(m, 5);
    cr_assert(!memcmp(ids, want_ids, sizeof want_ids));
    free(ids);
    ax_tokenizer_free(t);
}

Test(tokenizer, training_is_deterministic_and_sized) {
    size_t n;
    uint8_t *text = td_kjv_text(200000, &n);
    cr_assert(text);
    ax_tokenizer_t *a = train_on(text, n, 1000), *b = train_on(text, n, 1000);
    cr_assert_eq(ax_tokenizer_vocab_size(a), 1000);
    cr_assert_eq(ax_tokenizer_n_merges(a), 1000 - 257);
    cr_assert_eq(ax_tokenizer_checksum(a), ax_tokenizer_checksum(b));
    for (int i = 0; i < ax_tokenizer_n_merges(a); i++) {
        uint32_t x1, y1, x2, y2;
        ax_tokenizer_merge(a, i, &x1, &y1);
        ax_tokenizer_merge(b, i, &x2, &y2);
        cr_assert(x1 == x2 && y1 == y2);
    }
    /* the most frequent English pairs come first */
    size_t len;
    const uint8_t *first = ax_tokenizer_token_bytes(a, AX_TOK_FIRST_MERGE, &len);
    cr_assert_eq(len, 2);
    cr_assert(first);
    ax_tokenizer_free(a);
    ax_tokenizer_free(b);
    free(text);
}

Test(tokenizer, training_stops_when_pairs_run_out) {
    const char *s = "ab ab";
    ax_tokenizer_t *t = train_on((const uint8_t *)s, strlen(s), 300);
    cr_assert_lt(ax_tokenizer_vocab_size(t), 300);
    assert_round_trip(t, (const uint8_t *)s, strlen(s));
    ax_tokenizer_free(t);
}

Test(tokenizer, round_trip_any_bytes) {
    ax_tokenizer_t *t = kjv_tokenizer(2000);
    /* empty */
    int32_t *ids;
    size_t m;
    cr_assert_eq(ax_tokenizer_encode(t, (const uint8_t *)"", 0, &ids, &m), AX_OK);
    cr_assert_eq(m, 0);
    free(ids);
    assert_round_trip(t, (const uint8_t *)"", 0);
    /* random binary, including NULs and every byte value */
    size_t n = 1 << 18;
    uint8_t *x = malloc(n);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)ax_rng_u64(7, 0, i);
    assert_round_trip(t, x, n);
    /* invalid UTF-8: lone continuation bytes, truncated sequences, overlongs, NULs */
    const uint8_t bad[] = {0x80, 'a',  0xc3, ' ',  0xe2, 0x82, 0x00, 0xff, 0xfe, 'x', 0xc0,
                           0xaf, '\'', 's',  0xed, 0xa0, 0x80, '\n', ' ',  0xf4, 0x90};
    assert_round_trip(t, bad, sizeof bad);
    /* long single chunks take the heap path */
    memset(x, 'a', n);
    assert_round_trip(t, x, n);
    memset(x, ' ', n);
    assert_round_trip(t, x, n);
    random_text(x, n, 3);
    assert_round_trip(t, x, n);
    free(x);
    ax_tokenizer_free(t);
}

Test(tokenizer, round_trip_kjv) {
    size_t n;
    uint8_t *text = td_kjv_text(0, &n);
    ax_tokenizer_t *t = train_on(text, n, 4096);
    int32_t *ids;
    size_t m;
    cr_assert_eq(ax_tokenizer_encode(t, text, n, &ids, &m), AX_OK);
    cr_assert_lt(m, n / 3, "expected > 3 bytes/token on English with 4096 merges, got %zu/%zu", n,
                 m);
    uint8_t *back;
    size_t nb;
    cr_assert_eq(ax_tokenizer_decode(t, ids, m, &back, &nb), AX_OK);
    cr_assert_eq(nb, n);
    cr_assert(!memcmp(back, text, n));
    free(ids);
    free(back);
    free(text);
    ax_tokenizer_free(t);
}

Test(tokenizer, encode_deterministic_across_threads) {
    size_t n;
    uint8_t *text = td_kjv_text(0, &n);
    ax_tokenizer_t *t = train_on(text, n, 1500);
    /* mix in binary so blocks are cut in odd places too */
    for (size_t i = 0; i < n; i += 997) text[i] = (uint8_t)ax_rng_u64(1, 2, i);
    int32_t *ref, *got;
    size_t nref, ngot;
    ax_tok_encoder_t *e1;
    cr_assert_eq(ax_tok_encoder_create(t, 1, &e1), AX_OK);
    ax_tok_encoder_set_block_bytes(e1, (size_t)1 << 30); /* one block: the serial reference */
    cr_assert_eq(ax_tok_encoder_encode(e1, text, n, &ref, &nref), AX_OK);
    int threads[] = {1, 2, 4, 7};
    size_t blocks[] = {97, 4096, 1 << 16};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++) {
            ax_tok_encoder_t *e;
            cr_assert_eq(ax_tok_encoder_create(t, threads[a], &e), AX_OK);
            ax_tok_encoder_set_block_bytes(e, blocks[b]);
            for (int rep = 0; rep < 2; rep++) { /* second pass runs on warm caches */
                cr_assert_eq(ax_tok_encoder_encode(e, text, n, &got, &ngot), AX_OK);
                cr_assert_eq(ngot, nref, "threads %d block %zu", threads[a], blocks[b]);
                cr_assert(!memcmp(got, ref, nref * sizeof *ref), "threads %d block %zu", threads[a],
                          blocks[b]);
                free(got);
            }
            ax_tok_encoder_free(e);
        }
    /* the convenience API agrees */
    cr_assert_eq(ax_tokenizer_encode(t, text, n, &got, &ngot), AX_OK);
    cr_assert(ngot == nref && !memcmp(got, ref, nref * sizeof *ref));
    free(got);
    free(ref);
    ax_tok_encoder_free(e1);
    ax_tokenizer_free(t);
    free(text);
}

Test(tokenizer, encode_many_matches_single) {
    ax_tokenizer_t *t = kjv_tokenizer(800);
    const char *docs[] = {"In the beginning", "", "God created\n\nthe heaven", "x"};
    const uint8_t *p[4];
    size_t lens[4], n_outs[4];
    int32_t *outs[4];
    for (int i = 0; i < 4; i++) {
        p[i] = (const uint8_t *)docs[i];
        lens[i] = strlen(docs[i]);
    }
    ax_tok_encoder_t *e;
    cr_assert_eq(ax_tok_encoder_create(t, 2, &e), AX_OK);
    cr_assert_eq(ax_tok_encoder_encode_many(e, 4, p, lens, outs, n_outs), AX_OK);
    for (int i = 0; i < 4; i++) {
        int32_t *one;
        size_t n1;
        cr_assert_eq(ax_tokenizer_encode(t, p[i], lens[i], &one, &n1), AX_OK);
        cr_assert_eq(n1, n_outs[i]);
        cr_assert(n1 == 0 || !memcmp(one, outs[i], n1 * sizeof *one));
        free(one);
        free(outs[i]);
    }
    ax_tok_encoder_free(e);
    ax_tokenizer_free(t);
}

Test(tokenizer, heap_and_scan_merges_agree) {
    ax_tokenizer_t *t = kjv_tokenizer(1200);
    int32_t a[300], b[300];
    for (uint64_t seed = 0; seed < 200; seed++) {
        size_t n = 2 + ax_rng_below(seed, 9, 0, 298);
        for (size_t i = 0; i < n; i++) {
            /* letters mostly, so many merges apply */
            uint64_t r = ax_rng_below(seed, 9, i + 1, 30);
            a[i] = b[i] = r < 26 ? (int32_t)('a' + r) : (r < 28 ? ' ' : 'e');
        }
        size_t na = ax_tok_apply_merges(t, a, n, 0), nb = ax_tok_apply_merges(t, b, n, 1);
        cr_assert_eq(na, nb, "seed %llu", (unsigned long long)seed);
        cr_assert(!memcmp(a, b, na * sizeof *a), "seed %llu", (unsigned long long)seed);
    }
    ax_tokenizer_free(t);
}

Test(tokenizer, file_round_trip_and_errors) {
    ax_tokenizer_t *t = kjv_tokenizer(600);
    char path[256], bad[256];
    td_tmp(path, sizeof path, "tok.bin");
    td_tmp(bad, sizeof bad, "tok_bad.bin");
    cr_assert_eq(ax_tokenizer_save(t, path), AX_OK, "%s", ax_error_msg());
    ax_tokenizer_t *u;
    cr_assert_eq(ax_tokenizer_load(path, &u), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_tokenizer_checksum(u), ax_tokenizer_checksum(t));
    cr_assert_eq(ax_tokenizer_vocab_size(u), 600);
    ax_tokenizer_free(u);

    size_t n;
    uint8_t *b = td_read(path, &n);
    struct {
        const char *what, *expect;
        size_t len;
        long flip; /* byte to corrupt, -1 none */
    } cases[] = {
        {"truncated", "truncated", n - 5, -1},         {"flipped merge", "checksum", n, 100},
        {"bad magic", "not an axmem tokenizer", n, 0}, {"bad version", "version", n, 8},
        {"empty", "not an axmem tokenizer", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t *c = malloc(n);
        memcpy(c, b, n);
        if (cases[i].flip >= 0) c[cases[i].flip] ^= 0x5a;
        cr_assert(td_write(bad, c, cases[i].len));
        ax_error_clear();
        cr_assert_neq(ax_tokenizer_load(bad, &u), AX_OK, "%s accepted", cases[i].what);
        cr_assert(strstr(ax_error_msg(), bad), "%s: message lacks path: %s", cases[i].what,
                  ax_error_msg());
        cr_assert(strstr(ax_error_msg(), cases[i].expect), "%s: %s", cases[i].what, ax_error_msg());
        free(c);
    }
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load("/nonexistent/tok", &u), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "/nonexistent/tok"));
    free(b);
    unlink(path);
    unlink(bad);
    ax_tokenizer_free(t);
}

/* A tokenizer file made by hand: merges[2 * n] written with a valid header and checksum. */
static void write_merges(const char *path, const uint32_t *merges, uint32_t n) {
    size_t len = 24 + 8 * (size_t)n + 8;
    uint8_t *b = calloc(1, len);
    memcpy(b, "AXMEMTOK", 8);
    uint32_t hdr[4] = {1, 257 + n, n, 0};
    memcpy(b + 8, hdr, 16);
    memcpy(b + 24, merges, 8 * (size_t)n);
    uint64_t h = XXH3_64bits(b, len - 8);
    memcpy(b + len - 8, &h, 8);
    cr_assert(td_write(path, b, len));
    free(b);
}

/* 31 merges that each double the last token: a 280-byte file whose tokens spell 4 GB. Sizes are
 * bounded before anything is allocated. */
Test(tokenizer, hostile_merge_lists_are_bounded) {
    char path[256];
    td_tmp(path, sizeof path, "tok_hostile.bin");
    uint32_t m[2 * 300];
    m[0] = m[1] = 'a';
    for (uint32_t i = 1; i < 31; i++) m[2 * i] = m[2 * i + 1] = 257 + i - 1;
    write_merges(path, m, 31);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_size, 280);
    ax_tokenizer_t *t = NULL;
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "longer than any trained"),
              "%s", ax_error_msg());

    /* the same chain up to 1 MiB (what training can produce from a run of one byte) loads */
    write_merges(path, m, 20);
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_OK, "%s", ax_error_msg());
    size_t len;
    ax_tokenizer_token_bytes(t, 257 + 19, &len);
    cr_assert_eq(len, (size_t)1 << 20);
    ax_tokenizer_free(t);

    /* 256 tokens of half a MiB each: each within the bound, together past the budget */
    for (uint32_t b = 0; b < 256; b++) {
        m[2 * (19 + b)] = 257 + 18;
        m[2 * (19 + b) + 1] = b == 256 - 1 ? 0 : b;
    }
    m[2 * (19 + 255)] = 'a'; /* keep every pair distinct */
    m[2 * (19 + 255) + 1] = 257 + 18;
    write_merges(path, m, 19 + 256);
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "bytes together"), "%s", ax_error_msg());

    /* merges must join earlier ids; the end-of-text token is never merged */
    uint32_t fwd[4] = {'a', 'b', 259, 'c'};
    write_merges(path, fwd, 2);
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "not earlier tokens"), "%s", ax_error_msg());
    uint32_t eot[2] = {'a', AX_TOK_EOT};
    write_merges(path, eot, 1);
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_CORRUPT);

    /* a huge file is refused from its size alone, before it is read */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)1 << 33), 0);
    fclose(f);
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "bigger than any tokenizer"), "%s", ax_error_msg());
    unlink(path);
}

Test(tokenizer, fifo_is_refused, .timeout = 20) {
    char path[256];
    td_tmp(path, sizeof path, "tok_fifo");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    ax_tokenizer_t *t = NULL;
    ax_error_clear();
    cr_assert_eq(ax_tokenizer_load(path, &t), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    unlink(path);
}
