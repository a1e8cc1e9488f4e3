/* Per-token scores (memscan/score.h) against brute force: every target's log p, and the mean
 * and standard deviation of log p over the full next-token distribution, recomputed in float64
 * from the full logit row of a one-sequence forward; sequences of several lengths, batched
 * with padding (the reference, ax_token_logp_stats, is checked on hand-worked rows in
 * test_privacy_metrics.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "lib/core/rng.h"
#include "lib/model/model.h"
#include "memscan/privacy_metrics.h"
#include "memscan/score.h"
#include "tests/unit/test_suite_files.h"
#include "tests/unit/test_tiny_model.h"

TestSuite(memscan_score, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

/* the models' vocabulary: 300, or GPT-2's 50257 where the sums run over many chunks */
static int VOCAB = 300;

/* the last forward's logits [1, T, Vl] (a copy through the backend) */
static float logit_buf[16 * 50304];
static const float *logits(ax_model_t *m) {
    cr_assert_eq(ax_model_read_logits(m, logit_buf), AX_OK, "%s", ax_error_msg());
    return logit_buf;
}

static ax_model_t *tiny_model(int B, int T) {
    return ts_tiny_model(B, T, VOCAB, 11);
}

/* the largest |error| of logp, mu and sigma against the float64 reference */
static double check(int batch, int want_dist) {
    enum { T = 12, NS = 7 };
    ax_model_t *m = tiny_model(batch, T);
    int32_t seqs[NS][T + 1];
    int len[NS];
    const int32_t *ptr[NS];
    for (int i = 0; i < NS; i++) {
        len[i] = 2 + (i * 5) % (T);
        seqs[i][0] = AX_TOK_EOT;
        for (int t = 1; t < len[i]; t++)
            seqs[i][t] = (int32_t)ax_rng_below(3, (uint64_t)i, (uint64_t)t, VOCAB);
        ptr[i] = seqs[i];
    }
    ax_score_opts o = {.T = T, .batch = batch, .want_dist = want_dist};
    ax_score_result r;
    cr_assert_eq(ax_score_seqs(m, NS, ptr, len, &o, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.n, NS);
    cr_assert((r.mu != NULL) == (want_dist != 0));
    /* brute force: one sequence per forward, full rows in float64 */
    ax_model_t *m1 = tiny_model(1, T);
    int32_t in[T], tg[T];
    uint8_t mask[T];
    double worst = 0;
    for (int i = 0; i < NS; i++) {
        cr_assert_eq(r.off[i + 1] - r.off[i], len[i] - 1);
        memset(in, 0, sizeof in), memset(tg, 0, sizeof tg), memset(mask, 0, sizeof mask);
        memcpy(in, seqs[i], sizeof(int32_t) * (size_t)(len[i] - 1));
        ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
        int v0, valid, Vl;
        ax_model_vocab_slice(m1, &v0, &valid, &Vl);
        cr_assert_eq(valid, VOCAB);
        for (int t = 0; t < len[i] - 1; t++) {
            double lp, mu, sd;
            ax_token_logp_stats(logits(m1) + (size_t)t * Vl, VOCAB, seqs[i][t + 1], &lp, &mu, &sd);
            long at = r.off[i] + t;
            double e = fabs(lp - r.logp[at]);
            if (want_dist) {
                e = fmax(e, fabs(mu - r.mu[at]));
                e = fmax(e, fabs(sd - r.sigma[at]));
                cr_assert(sd > 0.05, "a flat distribution tests nothing (sigma %g)", sd);
            }
            worst = fmax(worst, e);
            cr_assert(e < 1e-4, "seq %d pos %d: logp %g vs %g (mu %g sigma %g)", i, t, r.logp[at],
                      lp, mu, sd);
        }
    }
    cr_expect(worst < 1e-4);
    ax_score_result_free(&r);
    ax_model_free(m);
    ax_model_free(m1);
    return worst;
}

Test(memscan_score, brute_force_one_per_forward) {
    check(1, 1);
}
Test(memscan_score, brute_force_batched_padded) {
    check(3, 1); /* 7 sequences in forwards of 3: the last one padded */
}
Test(memscan_score, logp_only) {
    check(4, 0);
}
/* 50257 columns: the sums run in float over chunks of 512 (a short last one) and add the chunks
 * in double; the float64 reference sums every column in double */
Test(memscan_score, gpt2_vocabulary_chunked_sums) {
    VOCAB = 50257;
    double worst = check(3, 1);
    VOCAB = 300;
    cr_assert(worst < 2e-5, "worst error %g", worst);
}

Test(memscan_score, rejects_bad_lengths) {
    enum { T = 8 };
    ax_model_t *m = tiny_model(1, T);
    int32_t s[T + 2] = {0};
    const int32_t *p = s;
    ax_score_opts o = {.T = T, .batch = 1, .want_dist = 1};
    ax_score_result r;
    int len = T + 2;
    cr_expect_eq(ax_score_seqs(m, 1, &p, &len, &o, &r), AX_ERR_ARG);
    cr_expect(strstr(ax_error_msg(), "does not fit") != NULL, "%s", ax_error_msg());
    len = 1;
    cr_expect_eq(ax_score_seqs(m, 1, &p, &len, &o, &r), AX_ERR_ARG);
    ax_model_free(m);
}
