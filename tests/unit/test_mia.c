/* memscan mia's driver on a tiny model: every document's loss, min-k% and min-k%++ recomputed
 * from the full logits of a one-document forward (float64), zlib bytes from the decoded text,
 * the reference score from a second model; documents the model itself continues greedily
 * ("members") separate from random ones (AUC near 1 with the scores oriented higher = member);
 * the ROC curve's ends, the interval around the AUC, and the seeded subset. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/rng.h"
#include "lib/model/model.h"
#include "memscan/mia.h"
#include "memscan/privacy_metrics.h"
#include "memscan/score.h"
#include "tests/unit/test_suite_files.h"
#include "tests/unit/test_tiny_model.h"

TestSuite(mia, .init = ts_quiet, .fini = ts_cleanup, .timeout = 120);

#define VOCAB 300

/* the last forward's logits [1, T, Vl] (a copy through the backend) */
static float logit_buf[64 * 512];
static const float *logits(ax_model_t *m) {
    cr_assert_eq(ax_model_read_logits(m, logit_buf), AX_OK, "%s", ax_error_msg());
    return logit_buf;
}
enum { T = 16, NDOC = 12 };

static ax_model_t *tiny(int B, uint64_t seed) {
    return ts_tiny_model(B, T, VOCAB, seed);
}

/* log p of seq[1..len) after seq[0..t] by one full forward per sequence: lp[len - 1] */
static void brute_logp(ax_model_t *m1, const int32_t *seq, int len, double *lp, double *mu,
                       double *sd) {
    int32_t in[T] = {0}, tg[T] = {0};
    uint8_t mask[T] = {0};
    memcpy(in, seq, sizeof(int32_t) * (size_t)(len - 1));
    ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m1, &v0, &valid, &Vl);
    for (int t = 0; t < len - 1; t++)
        ax_token_logp_stats(logits(m1) + (size_t)t * Vl, VOCAB, seq[t + 1], &lp[t], &mu[t], &sd[t]);
}

/* greedy continuation by full forwards: seq[1..n) after seq[0] (end-of-text), bytes only */
static void greedy_doc(ax_model_t *m1, int32_t *seq, int n) {
    for (int k = 1; k < n; k++) {
        int32_t in[T] = {0}, tg[T] = {0};
        uint8_t mask[T] = {0};
        memcpy(in, seq, sizeof(int32_t) * (size_t)k);
        ax_model_forward(m1, in, tg, mask, 1, 1.0f, 0);
        int v0, valid, Vl;
        ax_model_vocab_slice(m1, &v0, &valid, &Vl);
        const float *l = logits(m1) + (size_t)(k - 1) * Vl;
        int best = 0;
        for (int v = 1; v < 256; v++) best = l[v] > l[best] ? v : best;
        seq[k] = best;
    }
}

/* members: the model's own greedy byte continuations (k = 0..3: start byte); non-members:
 * random bytes. Lengths 6..T+3 (some longer than T: cut). */
static void write_sets(const char *mem, const char *non, ax_model_t *m1) {
    for (int set = 0; set < 2; set++) {
        ax_axd_writer_t *w = NULL;
        cr_assert_eq(ax_axd_writer_create(set ? non : mem, VOCAB, &w), AX_OK);
        for (int d = 0; d < NDOC; d++) {
            int n = 6 + (d * 5) % (T - 2);
            int32_t seq[T + 8];
            seq[0] = AX_TOK_EOT;
            for (int k = 1; k < n + 1; k++)
                seq[k] = (int32_t)ax_rng_below(7 + (uint64_t)set, (uint64_t)d, (uint64_t)k, 256);
            if (!set) greedy_doc(m1, seq, n + 1 < T ? n + 1 : T);
            cr_assert_eq(ax_axd_writer_add_doc(w, seq + 1, (size_t)n), AX_OK);
        }
        cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    }
}

static ax_tokenizer_t *byte_tokenizer(void) {
    ax_bpe_trainer_t *tr = NULL;
    ax_tokenizer_t *tok = NULL;
    cr_assert_eq(ax_bpe_trainer_create(&tr), AX_OK);
    const char *txt = "some text";
    cr_assert_eq(ax_bpe_trainer_add(tr, (const uint8_t *)txt, strlen(txt)), AX_OK);
    cr_assert_eq(ax_bpe_trainer_train(tr, 257, NULL, &tok), AX_OK, "%s", ax_error_msg());
    ax_bpe_trainer_free(tr);
    return tok;
}

Test(mia, scores_match_brute_force_and_separate) {
    char mem[128], non[128];
    snprintf(mem, sizeof mem, "/tmp/axmem_test_%d_mem.axd", (int)getpid());
    snprintf(non, sizeof non, "/tmp/axmem_test_%d_non.axd", (int)getpid());
    ax_model_t *m = tiny(3, 11), *m1 = tiny(1, 11), *ref = tiny(3, 99), *ref1 = tiny(1, 99);
    write_sets(mem, non, m1);
    ax_axd_t *dm = NULL, *dn = NULL;
    cr_assert_eq(ax_axd_open(mem, 1, &dm), AX_OK);
    cr_assert_eq(ax_axd_open(non, 1, &dn), AX_OK);
    ax_tokenizer_t *tok = byte_tokenizer();
    ax_mia_config c = {.max_docs = 0, .T = T, .k_frac = 0.25, .batch = 3, .seed = 1};
    ax_mia_result r;
    cr_assert_eq(ax_mia_score(m, ref, dm, dn, tok, &c, &r), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(r.n_mem, NDOC);
    cr_assert_eq(r.n_non, NDOC);
    for (int k = 0; k < AX_MIA_N; k++) cr_assert(r.has[k], "%s", ax_mia_names[k]);
    for (int i = 0; i < r.n; i++) {
        const ax_mia_doc *d = &r.d[i];
        const ax_axd_t *ds = d->member ? dm : dn;
        cr_assert_eq(d->member, i < NDOC);
        const uint64_t *off = ax_axd_doc_offsets(ds);
        int have = (int)(off[d->doc + 1] - off[d->doc] - 1);
        cr_assert_eq(d->n_tokens, have < T ? have : T);
        int32_t seq[T + 1];
        seq[0] = AX_TOK_EOT;
        ax_axd_tokens(ds, off[d->doc], (uint64_t)d->n_tokens, seq + 1);
        double lp[T], mu[T], sd[T], rlp[T], x[T], y[T];
        brute_logp(m1, seq, d->n_tokens + 1, lp, mu, sd);
        brute_logp(ref1, seq, d->n_tokens + 1, rlp, x, y);
        double loss = 0, rloss = 0;
        for (int t = 0; t < d->n_tokens; t++) loss -= lp[t], rloss -= rlp[t];
        loss /= d->n_tokens, rloss /= d->n_tokens;
        cr_expect(fabs(d->loss - loss) < 1e-4, "doc %d: loss %g vs %g", i, d->loss, loss);
        cr_expect(fabs(d->score[AX_MIA_LOSS] + loss) < 1e-4);
        cr_expect(fabs(d->score[AX_MIA_REF] - (rloss - loss)) < 1e-4);
        cr_expect(fabs(d->score[AX_MIA_REF_RATIO] + loss / rloss) < 1e-4);
        cr_expect(fabs(d->score[AX_MIA_MIN_K] - ax_min_k_prob(lp, d->n_tokens, 0.25)) < 1e-4);
        cr_expect(fabs(d->score[AX_MIA_MIN_K_PP] - ax_min_k_pp(lp, mu, sd, d->n_tokens, 0.25)) <
                  1e-3);
        /* the byte tokenizer decodes to the token values themselves */
        uint8_t bytes[T];
        for (int t = 0; t < d->n_tokens; t++) bytes[t] = (uint8_t)seq[t + 1];
        size_t zb;
        cr_assert_eq(ax_zlib_bytes(bytes, (size_t)d->n_tokens, &zb), AX_OK);
        cr_expect_eq(d->zlib_bytes, (double)zb);
        cr_expect(fabs(d->score[AX_MIA_ZLIB] - ax_zlib_score(loss, zb)) < 1e-6);
    }
    cr_assert_eq(ax_mia_metrics_compute(&r, 200, 5, 50), AX_OK, "%s", ax_error_msg());
    for (int k = 0; k < AX_MIA_N; k++) {
        const ax_mia_metrics *mt = &r.m[k];
        cr_expect(mt->auc_lo <= mt->auc + 1e-12 && mt->auc <= mt->auc_hi + 1e-12, "%s",
                  ax_mia_names[k]);
        cr_expect(mt->n_roc >= 2 && mt->roc[0].fpr == 0 && mt->roc[0].tpr == 0);
        cr_expect(mt->roc[mt->n_roc - 1].fpr == 1 && mt->roc[mt->n_roc - 1].tpr == 1);
        for (long i = 1; i < mt->n_roc; i++)
            cr_expect(mt->roc[i].fpr >= mt->roc[i - 1].fpr && mt->roc[i].tpr >= mt->roc[i - 1].tpr);
    }
    /* greedy continuations are far more likely than random bytes: oriented scores say member */
    cr_expect(r.m[AX_MIA_LOSS].auc > 0.9, "loss AUC %g", r.m[AX_MIA_LOSS].auc);
    cr_expect(r.m[AX_MIA_MIN_K].auc > 0.9, "min-k AUC %g", r.m[AX_MIA_MIN_K].auc);
    cr_expect(r.m[AX_MIA_LOSS].tpr_at_1 >= 0 && r.m[AX_MIA_LOSS].tpr_at_1 <= 1);
    ax_mia_result_free(&r);

    /* a seeded subset: 5 distinct documents per set, in order, the same for the same seed */
    c.max_docs = 5;
    ax_mia_result a, b;
    cr_assert_eq(ax_mia_score(m, NULL, dm, dn, NULL, &c, &a), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_mia_score(m, NULL, dm, dn, NULL, &c, &b), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(a.n_mem, 5);
    cr_assert_eq(a.n_non, 5);
    cr_expect(!a.has[AX_MIA_ZLIB] && !a.has[AX_MIA_REF] && isnan(a.d[0].score[AX_MIA_REF]) &&
              !a.has[AX_MIA_REF_RATIO]);
    for (int i = 0; i < a.n; i++) {
        cr_expect_eq(a.d[i].doc, b.d[i].doc);
        cr_expect_eq(a.d[i].score[AX_MIA_LOSS], b.d[i].score[AX_MIA_LOSS]);
        if (i % 5) cr_expect(a.d[i].doc > a.d[i - 1].doc);
    }
    ax_mia_result_free(&a), ax_mia_result_free(&b);
    ax_tokenizer_free(tok);
    ax_axd_free(dm), ax_axd_free(dn);
    ax_model_free(m), ax_model_free(m1), ax_model_free(ref), ax_model_free(ref1);
}
