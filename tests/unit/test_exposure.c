/* memscan exposure: the secrets file reader, and the driver on a tiny model against brute force:
 * every candidate's log-likelihood by full forwards, the exact rank and exposure of each canary,
 * the greedy continuation by full forwards, and the fitted estimate for a space above --exact-max.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/model/model.h"
#include "memscan/exposure.h"
#include "memscan/privacy_metrics.h"
#include "memscan/score.h"
#include "tests/unit/test_suite_files.h"
#include "tests/unit/test_tiny_model.h"

TestSuite(exposure, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

#define VOCAB 300

/* the last forward's logits [1, T, Vl] (a copy through the backend) */
static float logit_buf[64 * 512];
static const float *logits(ax_model_t *m) {
    cr_assert_eq(ax_model_read_logits(m, logit_buf), AX_OK, "%s", ax_error_msg());
    return logit_buf;
}

static ax_model_t *tiny(int B, int T) {
    return ts_tiny_model(B, T, VOCAB, 23);
}

static ax_tokenizer_t *byte_tokenizer(void) {
    ax_bpe_trainer_t *tr = NULL;
    ax_tokenizer_t *tok = NULL;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    cr_assert_eq(ax_bpe_trainer_add(tr, (const uint8_t *)"ab", 2), AX_OK);
    cr_assert_eq(ax_bpe_trainer_train(tr, 257, NULL, &tok), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr);
    return tok;
}

/* log p(prefix + s's bytes | end-of-text) by one full forward */
static double brute_loglik(ax_model_t *m1, int T, const char *prefix, const char *s) {
    int32_t in[64] = {0}, tg[64] = {0}, seq[64];
    uint8_t mask[64] = {0};
    int np = (int)strlen(prefix), n = 1 + np + (int)strlen(s);
    seq[0] = AX_TOK_EOT;
    for (int i = 0; i < np; i++) seq[1 + i] = (uint8_t)prefix[i];
    for (int i = 0; s[i]; i++) seq[1 + np + i] = (uint8_t)s[i];
    memcpy(in, seq, sizeof(int32_t) * (size_t)(n - 1));
    (void)T;
    ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m1, &v0, &valid, &Vl);
    double a = 0; /* every token of the canary text, the prefix's too */
    for (int t = 0; t < n - 1; t++) {
        double lp, mu, sd;
        ax_token_logp_stats(logits(m1) + (size_t)t * Vl, VOCAB, seq[t + 1], &lp, &mu, &sd);
        a += lp;
    }
    return a;
}

static void write_canaries(const char *path, const char *fmt, double space,
                           const char *const *secrets, int n, const char *prefix) {
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f,
            "{\"version\":1,\"format\":\"%s\",\"space\":%.0f,\"seed\":1,\"tokenizer\":\"\","
            "\"dataset\":\"\",\"canaries\":[",
            fmt, space);
    for (int k = 0; k < n; k++) {
        fprintf(f, "%s{\"id\":%d,\"prefix\":\"%s\",\"secret\":\"%s\",\"repeats\":%d,\"tokens\":[",
                k ? "," : "", k, prefix, secrets[k], 1 << k);
        int first = 1;
        for (const char *p = prefix; *p; p++) fprintf(f, "%s%d", first ? "" : ",", *p), first = 0;
        for (const char *p = secrets[k]; *p; p++) fprintf(f, ",%d", *p);
        fprintf(f, "],\"prefix_tokens\":%d,\"inserted\":[]}", (int)strlen(prefix));
    }
    fprintf(f, "],\"references\":[\"00\",\"11\",\"22\",\"33\",\"44\",\"55\"]}");
    fclose(f);
}

Test(exposure, exact_rank_and_greedy_against_brute_force) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_canaries.json", (int)getpid());
    const char *secrets[3] = {"42", "07", "99"};
    write_canaries(path, "pin {d2}", 100, secrets, 3, "pin ");
    ax_canary_set cs;
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(cs.n, 3);
    cr_assert_eq(cs.n_refs, 6);
    cr_expect_eq(cs.c[2].repeats, 4);
    cr_expect_eq(cs.c[1].prefix_tokens, 4);
    ax_tokenizer_t *tok = byte_tokenizer();
    ax_exposure_config c = {.exact_max = 1000, .batch = 7, .seed = 1};
    ax_exposure_plan *p = NULL;
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    cr_assert(ax_exposure_plan_exact(p));
    cr_expect_eq(ax_exposure_plan_candidates(p), 100);
    int T = ax_exposure_plan_T(p);
    cr_expect_eq(T, 6); /* "pin " + 2 digits */
    ax_model_t *m = tiny(c.batch, T), *m1 = tiny(1, T);
    ax_exposure_result r;
    cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &r), AX_OK, "%s", ax_error_msg());
    double all[100];
    char cand[16];
    for (int i = 0; i < 100; i++) {
        snprintf(cand, sizeof cand, "%02d", i);
        all[i] = brute_loglik(m1, T, "pin ", cand);
    }
    for (int k = 0; k < 3; k++) {
        int me = atoi(secrets[k]);
        cr_expect(fabs(r.r[k].loglik - all[me]) < 1e-4, "%g vs %g", r.r[k].loglik, all[me]);
        int above = 0;
        for (int i = 0; i < 100; i++) above += i != me && all[i] >= all[me];
        cr_expect_eq(r.r[k].rank, 1 + above, "canary %d rank %g vs %d", k, r.r[k].rank, 1 + above);
        cr_expect(fabs(r.r[k].exposure - (log2(100) - log2(1 + above))) < 1e-9);
        /* greedy by full forwards from end-of-text + prefix */
        int32_t seq[8] = {AX_TOK_EOT, 'p', 'i', 'n', ' '};
        for (int j = 0; j < 2; j++) {
            int32_t in[8] = {0}, tg[8] = {0};
            uint8_t mask[8] = {0};
            memcpy(in, seq, sizeof(int32_t) * (size_t)(5 + j));
            ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
            int v0, valid, Vl;
            ax_model_vocab_slice(m1, &v0, &valid, &Vl);
            const float *l = logits(m1) + (size_t)(4 + j) * Vl;
            int best = 0;
            for (int v = 1; v < VOCAB; v++) best = l[v] > l[best] ? v : best;
            seq[5 + j] = best;
        }
        cr_assert_eq(r.r[k].n_generated, 2);
        cr_expect(r.r[k].generated[0] == seq[5] && r.r[k].generated[1] == seq[6]);
        cr_expect_eq(r.r[k].extracted, seq[5] == secrets[k][0] && seq[6] == secrets[k][1]);
    }
    ax_exposure_result_free(&r);
    ax_exposure_plan_free(p);

    /* above --exact-max: the 6 references + 20 random candidates, a skew-normal fitted */
    c.exact_max = 10, c.candidates = 20;
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    cr_assert(!ax_exposure_plan_exact(p));
    long nc = ax_exposure_plan_candidates(p);
    cr_expect(nc >= 20 && nc <= 26, "%ld", nc);
    cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &r), AX_OK, "%s", ax_error_msg());
    for (int k = 0; k < 3; k++) {
        cr_expect(isfinite(r.r[k].exposure) && r.r[k].exposure >= 0 &&
                      r.r[k].exposure <= log2(100) + 1e-9,
                  "%g", r.r[k].exposure);
        cr_expect(fabs(r.r[k].loglik - all[atoi(secrets[k])]) < 1e-4);
    }
    ax_exposure_result_free(&r);
    ax_exposure_plan_free(p);
    ax_model_free(m), ax_model_free(m1);
    ax_tokenizer_free(tok);
    ax_canary_set_free(&cs);
}

Test(exposure, bad_files_are_named) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_bad.json", (int)getpid());
    ax_canary_set cs;
    cr_assert_eq(ax_write_file(path, "{\"format\":\"x {d2}\",\"space\":100}", 31), AX_OK);
    cr_expect_eq(ax_canary_set_load(path, &cs), AX_ERR_CORRUPT);
    cr_expect(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "canaries"), "%s",
              ax_error_msg());
    /* a secret that is not of the format, and the wrong space */
    ax_error_clear();
    const char *bad[1] = {"4x"};
    write_canaries(path, "pin {d2}", 100, bad, 1, "pin ");
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
    ax_tokenizer_t *tok = byte_tokenizer();
    ax_exposure_config c = {.exact_max = 1000, .batch = 2};
    ax_exposure_plan *p = NULL;
    cr_expect_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_ERR_CORRUPT);
    cr_expect(strstr(ax_error_msg(), "not of the format") != NULL, "%s", ax_error_msg());
    ax_canary_set_free(&cs);
    ax_error_clear();
    const char *ok[1] = {"42"};
    write_canaries(path, "pin {d2}", 1000, ok, 1, "pin ");
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK);
    cr_expect_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_ERR_CORRUPT);
    cr_expect(strstr(ax_error_msg(), "space") != NULL, "%s", ax_error_msg());
    ax_canary_set_free(&cs);
    ax_tokenizer_free(tok);
}

/* log p(tokens[from..n) | first, tokens[0..from)) by one full forward */
static double brute_tokens(ax_model_t *m1, int V, int32_t first, const int32_t *tokens, int n,
                           int from) {
    int32_t in[64] = {first}, tg[64] = {0};
    uint8_t mask[64] = {0};
    cr_assert(n < 64);
    memcpy(in + 1, tokens, sizeof(int32_t) * (size_t)(n - 1));
    ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m1, &v0, &valid, &Vl);
    double a = 0;
    for (int t = from; t < n; t++) {
        double lp, mu, sd;
        ax_token_logp_stats(logits(m1) + (size_t)t * Vl, V, tokens[t], &lp, &mu, &sd);
        a += lp;
    }
    return a;
}

/* A tokenizer.json's end-of-text (GPT-NeoX's 0), not axmem's 256, starts every scored
 * sequence: each secret's log-likelihood is the brute force's after 0. */
Test(exposure, hf_tokenizer_end_of_text) {
    ax_tokenizer_t *tok = NULL;
    cr_assert_eq(ax_tokenizer_load("tests/fixtures/tokenizers/neox.json", &tok), AX_OK, "%s",
                 ax_error_msg());
    int32_t eot = ax_tokenizer_eot(tok);
    cr_assert_neq(eot, AX_TOK_EOT);
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_hfcanaries.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "{\"version\":1,\"format\":\"pin {d2}\",\"space\":100,\"seed\":1,\"tokenizer\":\"\","
               "\"dataset\":\"\",\"canaries\":[");
    const char *secrets[2] = {"42", "07"};
    int32_t *pt, *tk[2];
    size_t npt, nt[2], np[2];
    cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)"pin ", 4, &pt, &npt), AX_OK);
    for (int k = 0; k < 2; k++) {
        char text[16];
        snprintf(text, sizeof text, "pin %s", secrets[k]);
        cr_assert_eq(ax_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), &tk[k], &nt[k]),
                     AX_OK);
        for (np[k] = 0; np[k] < nt[k] && np[k] < npt && tk[k][np[k]] == pt[np[k]];) np[k]++;
        fprintf(f, "%s{\"id\":%d,\"prefix\":\"pin \",\"secret\":\"%s\",\"repeats\":1,\"tokens\":[",
                k ? "," : "", k, secrets[k]);
        for (size_t i = 0; i < nt[k]; i++) fprintf(f, "%s%d", i ? "," : "", tk[k][i]);
        fprintf(f, "],\"prefix_tokens\":%zu,\"inserted\":[]}", np[k]);
    }
    fprintf(f, "],\"references\":[\"00\",\"11\"]}");
    fclose(f);
    ax_canary_set cs;
    cr_assert_eq(ax_canary_set_load(path, &cs), AX_OK, "%s", ax_error_msg());
    ax_exposure_config c = {.exact_max = 1000, .batch = 4, .seed = 1};
    ax_exposure_plan *p = NULL;
    cr_assert_eq(ax_exposure_plan_build(&cs, tok, &c, &p), AX_OK, "%s", ax_error_msg());
    int T = ax_exposure_plan_T(p), V = 420;
    ax_model_config mc = {.n_layers = 1,
                          .dim = 16,
                          .n_heads = 2,
                          .ffn = 24,
                          .vocab = V,
                          .rope_theta = 10000.0f,
                          .norm_eps = 1e-5f};
    ax_model_t *m = NULL, *m1 = NULL;
    cr_assert_eq(ax_model_create(&mc, c.batch, T, &m), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_create(&mc, 1, T, &m1), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, 5), ax_model_init(m1, 5);
    ax_exposure_result r;
    cr_assert_eq(ax_exposure_run(m, &cs, p, &c, &r), AX_OK, "%s", ax_error_msg());
    for (int k = 0; k < 2; k++) {
        double want = brute_tokens(m1, V, eot, tk[k], (int)nt[k], 0),
               other = brute_tokens(m1, V, AX_TOK_EOT, tk[k], (int)nt[k], 0);
        cr_expect(fabs(r.r[k].loglik - want) < 1e-4, "canary %d: %g, after end-of-text %d %g", k,
                  r.r[k].loglik, eot, want);
        cr_expect(fabs(want - other) > 1e-4, "the first token does not change the likelihood");
        free(tk[k]);
    }
    free(pt);
    ax_exposure_result_free(&r);
    ax_exposure_plan_free(p);
    ax_model_free(m), ax_model_free(m1);
    ax_tokenizer_free(tok);
    ax_canary_set_free(&cs);
    remove(path);
}

/* Which planted copies training read: doc packing (a document's first seq-len tokens), packed
 * windows (stream positions 1 .. (n_tokens - 1) / seq-len x seq-len), and not known when the
 * checkpoint records no training config or was trained on another dataset. */
Test(exposure, training_reads_of_planted_copies) {
    ax_canary_site s0[] = {{0, 0}, {0, 5}, {2, 6}}, s1[] = {{1, 7}, {2, 8}};
    ax_canary c[2] = {{.id = 0, .repeats = 3, .n_tokens = 5, .sites = s0, .n_sites = 3},
                      {.id = 1, .repeats = 2, .n_tokens = 3, .sites = s1, .n_sites = 2}};
    ax_canary_set cs = {.n = 2, .c = c};
    ax_json *cfg, *state, *cfg_packed, *bare;
    const char *cj = "{\"packing\":\"doc\",\"seq-len\":10}",
               *sj = "{\"dataset_xxh3\":\"0x00000000000000ab\"}",
               *pj = "{\"packing\":\"packed\",\"seq-len\":4}", *bj = "{}";
    cr_assert_eq(ax_json_parse(cj, strlen(cj), "cfg", &cfg), AX_OK);
    cr_assert_eq(ax_json_parse(sj, strlen(sj), "state", &state), AX_OK);
    cr_assert_eq(ax_json_parse(pj, strlen(pj), "cfg", &cfg_packed), AX_OK);
    cr_assert_eq(ax_json_parse(bj, strlen(bj), "bare", &bare), AX_OK);
    ax_exposure_reads r;
    /* doc packing: pos + tokens <= 10 */
    cr_assert_eq(ax_exposure_reads_compute(&cs, cfg, state, NULL, 1, 0xab, &r), AX_OK);
    cr_assert(r.known, "%s", r.why);
    cr_expect_eq(r.read[0], 2); /* 0+5, 5+5 read; 6+5 not */
    cr_expect_eq(r.read[1], 1); /* 7+3 read; 8+3 not */
    cr_expect(r.copies == 5 && r.copies_read == 3 && r.canaries_short == 2);
    ax_exposure_reads_free(&r);
    /* not known: another dataset, no checksum to compare, no config */
    cr_assert_eq(ax_exposure_reads_compute(&cs, cfg, state, NULL, 1, 0xac, &r), AX_OK);
    cr_expect(!r.known && !r.read && strstr(r.why, "not the canaried"), "%s", r.why);
    cr_assert_eq(ax_exposure_reads_compute(&cs, cfg, state, NULL, 0, 0, &r), AX_OK);
    cr_expect(!r.known && strstr(r.why, "not found"), "%s", r.why);
    cr_assert_eq(ax_exposure_reads_compute(&cs, bare, state, NULL, 1, 0xab, &r), AX_OK);
    cr_expect(!r.known && strstr(r.why, "packing"), "%s", r.why);
    /* packed: documents of 9, 4 and 12 tokens (end-of-text last), 25 tokens, seq-len 4: windows
     * 0..5 read targets at stream positions 1..24 */
    char path[128];
    snprintf(path, sizeof path, "/tmp/axmem_test_%d_reads.axd", (int)getpid());
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK);
    int32_t doc[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const int len[3] = {9, 4, 12};
    for (int d = 0; d < 3; d++) {
        doc[len[d] - 1] = AX_TOK_EOT;
        cr_assert_eq(ax_axd_writer_add_doc(w, doc, (size_t)len[d]), AX_OK);
        doc[len[d] - 1] = len[d];
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, AX_AXD_VERIFY, &ds), AX_OK);
    cr_assert_eq(ax_axd_n_tokens(ds), 25);
    char st2[64];
    snprintf(st2, sizeof st2, "{\"dataset_xxh3\":\"0x%016llx\"}",
             (unsigned long long)ax_axd_checksum(ds));
    ax_json *state2;
    cr_assert_eq(ax_json_parse(st2, strlen(st2), "state", &state2), AX_OK);
    /* documents start at stream positions 0, 9, 13; canary 0 (5 tokens): (0,0) at 0, never a
     * target; (0,5) at 5..9, read; (2,8) at 21..25, past 24. Canary 1 (3 tokens): (1,0) at
     * 9..11 and (2,8) at 21..23, both read */
    s0[2] = (ax_canary_site){2, 8};
    s1[0] = (ax_canary_site){1, 0};
    cr_assert_eq(ax_exposure_reads_compute(&cs, cfg_packed, state2, ds, 1, ax_axd_checksum(ds), &r),
                 AX_OK);
    cr_assert(r.known, "%s", r.why);
    cr_expect_eq(r.read[0], 1);
    cr_expect_eq(r.read[1], 2);
    ax_exposure_reads_free(&r);
    /* packed without the dataset: not known; a copy past the dataset's documents: an error */
    cr_assert_eq(
        ax_exposure_reads_compute(&cs, cfg_packed, state2, NULL, 1, ax_axd_checksum(ds), &r),
        AX_OK);
    cr_expect(!r.known && strstr(r.why, "packed"), "%s", r.why);
    s1[1] = (ax_canary_site){3, 0};
    cr_expect_eq(ax_exposure_reads_compute(&cs, cfg_packed, state2, ds, 1, ax_axd_checksum(ds), &r),
                 AX_ERR_CORRUPT);
    ax_exposure_reads_free(&r);
    ax_error_clear();
    ax_axd_free(ds);
    ax_json_free(cfg), ax_json_free(state), ax_json_free(cfg_packed), ax_json_free(bare);
    ax_json_free(state2);
}
