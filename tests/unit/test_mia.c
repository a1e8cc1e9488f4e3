/* memscan mia's driver on a tiny model: every document's loss, min-k% and min-k%++ recomputed
 * from the full logits of a one-document forward (float64), zlib bytes from the decoded text,
 * the reference score from a second model; documents the model itself continues greedily
 * ("members") separate from random ones (AUC near 1 with the scores oriented higher = member);
 * the ROC curve's ends, the interval around the AUC, and the seeded subset; the model-free
 * baselines (zlib bits per byte of the text, length) and their AUCs by pair counts; TPR only
 * at the FPRs the non-members resolve; a non-member set holding a member document refused. */
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
        /* model-free: the text's zlib bits per byte, the whole document's length */
        cr_expect_eq(d->text_bytes, (double)d->n_tokens);
        cr_expect_eq(d->free_score[AX_MIA_FREE_ZLIB_BPB], 8.0 * (double)zb / d->n_tokens);
        cr_expect_eq(d->doc_tokens, (uint64_t)have);
        cr_expect_eq(d->free_score[AX_MIA_FREE_LENGTH], (double)have);
    }
    cr_assert(r.has_free[AX_MIA_FREE_ZLIB_BPB] && r.has_free[AX_MIA_FREE_LENGTH]);
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
    /* 12 non-members resolve neither 0.1% nor 1% FPR */
    cr_expect(isnan(r.m[AX_MIA_LOSS].tpr_at_1) && isnan(r.m[AX_MIA_LOSS].tpr_at_0_1));
    /* the model-free AUCs: pair counts over the raw values (higher value = member) */
    for (int k = 0; k < AX_MIA_FREE_N; k++) {
        double c = 0;
        for (int i = 0; i < NDOC; i++)
            for (int j = NDOC; j < 2 * NDOC; j++) {
                double a = r.d[i].free_score[k], b = r.d[j].free_score[k];
                c += a > b ? 1 : a == b ? 0.5 : 0;
            }
        const ax_mia_metrics *mt = &r.free_m[k];
        cr_expect(fabs(mt->auc - c / (NDOC * NDOC)) < 1e-12, "%s: %g vs %g", ax_mia_free_names[k],
                  mt->auc, c / (NDOC * NDOC));
        cr_expect(mt->auc_lo <= mt->auc && mt->auc <= mt->auc_hi && mt->n_roc >= 2);
        cr_expect(mt->nm == NDOC && mt->nn == NDOC);
    }
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
    /* without a tokenizer: length is the one model-free score */
    cr_expect(!a.has_free[AX_MIA_FREE_ZLIB_BPB] && a.has_free[AX_MIA_FREE_LENGTH]);
    cr_expect(isnan(a.d[0].free_score[AX_MIA_FREE_ZLIB_BPB]));
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

/* A result built by hand: members score i, non-members score j / n_non (no model). */
static void hand_result(ax_mia_result *r, int n_mem, int n_non) {
    memset(r, 0, sizeof *r);
    r->n_mem = n_mem, r->n_non = n_non, r->n = n_mem + n_non;
    r->d = calloc((size_t)r->n, sizeof *r->d);
    cr_assert(r->d);
    for (int i = 0; i < r->n; i++) {
        ax_mia_doc *d = &r->d[i];
        d->member = i < n_mem;
        for (int k = 0; k < AX_MIA_N; k++) d->score[k] = NAN;
        d->score[AX_MIA_LOSS] = d->member ? 0.9 + 0.01 * i : (double)(i - n_mem) / n_non;
        d->free_score[AX_MIA_FREE_LENGTH] = d->member ? 10 + i : 20 + i;
        d->free_score[AX_MIA_FREE_ZLIB_BPB] = NAN;
    }
    r->has[AX_MIA_LOSS] = r->has_free[AX_MIA_FREE_LENGTH] = 1;
}

/* TPR at an FPR only where the non-members resolve it (>= 1/FPR of them); otherwise NaN, not
 * the TPR at FPR 0 under the target's name */
Test(mia, tpr_only_at_the_rates_the_nonmembers_resolve) {
    const int sizes[] = {38, 99, 100, 999, 1000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int nn = sizes[s];
        ax_mia_result r;
        hand_result(&r, 5, nn);
        cr_assert_eq(ax_mia_metrics_compute(&r, 20, 1, 50), AX_OK, "%s", ax_error_msg());
        double mem[5], *non = malloc(sizeof(double) * (size_t)nn);
        for (int i = 0; i < 5; i++) mem[i] = r.d[i].score[AX_MIA_LOSS];
        for (int j = 0; j < nn; j++) non[j] = r.d[5 + j].score[AX_MIA_LOSS];
        const ax_mia_metrics *m = &r.m[AX_MIA_LOSS];
        if (nn >= 100)
            cr_expect_eq(m->tpr_at_1, ax_tpr_at_fpr(mem, 5, non, nn, 0.01), "%d", nn);
        else
            cr_expect(isnan(m->tpr_at_1), "%d non-members: TPR@1%% %g", nn, m->tpr_at_1);
        if (nn >= 1000)
            cr_expect_eq(m->tpr_at_0_1, ax_tpr_at_fpr(mem, 5, non, nn, 0.001), "%d", nn);
        else
            cr_expect(isnan(m->tpr_at_0_1), "%d non-members: TPR@0.1%% %g", nn, m->tpr_at_0_1);
        /* the model-free score follows the same rule; a score never computed has no metrics */
        cr_expect_eq(isnan(r.free_m[AX_MIA_FREE_LENGTH].tpr_at_1), nn < 100);
        cr_expect(!r.has_free[AX_MIA_FREE_ZLIB_BPB] && r.free_m[AX_MIA_FREE_ZLIB_BPB].roc == NULL);
        free(non);
        ax_mia_result_free(&r);
    }
}

/* lengths: members 10..14, non-members 25..: every non-member longer, AUC 0 (as informative as
 * 1: the sets differ), its interval excludes 0.5 */
Test(mia, model_free_far_from_chance) {
    ax_mia_result r;
    hand_result(&r, 5, 40);
    cr_assert_eq(ax_mia_metrics_compute(&r, 100, 1, 50), AX_OK, "%s", ax_error_msg());
    const ax_mia_metrics *m = &r.free_m[AX_MIA_FREE_LENGTH];
    cr_expect_eq(m->auc, 0.0);
    cr_expect_eq(ax_mia_far_from_chance(m), 2);
    ax_mia_result_free(&r);
    ax_mia_metrics x = {.auc = 0.5, .auc_lo = 0.4, .auc_hi = 0.6};
    cr_expect_eq(ax_mia_far_from_chance(&x), 0);
    x = (ax_mia_metrics){.auc = 0.39, .auc_lo = 0.2, .auc_hi = 0.55};
    cr_expect_eq(ax_mia_far_from_chance(&x), 1);
    x = (ax_mia_metrics){.auc = 0.61, .auc_lo = 0.45, .auc_hi = 0.8};
    cr_expect_eq(ax_mia_far_from_chance(&x), 1);
    x = (ax_mia_metrics){.auc = 0.45, .auc_lo = 0.41, .auc_hi = 0.49};
    cr_expect_eq(ax_mia_far_from_chance(&x), 2);
}

/* a non-member set holding a member document (the same tokens) is refused, naming both */
Test(mia, nonmembers_that_are_member_documents_are_refused) {
    char mem[128], non[128];
    snprintf(mem, sizeof mem, "/tmp/axmem_test_%d_smem.axd", (int)getpid());
    snprintf(non, sizeof non, "/tmp/axmem_test_%d_snon.axd", (int)getpid());
    const int32_t docs[4][6] = {{5, 6, 7, 8, 9, 10},
                                {11, 12, 13, 14, 15, 16},
                                {5, 6, 7, 8, 9, 11},
                                {11, 12, 13, 14, 15, 16}};
    for (int set = 0; set < 2; set++) {
        ax_axd_writer_t *w = NULL;
        cr_assert_eq(ax_axd_writer_create(set ? non : mem, VOCAB, &w), AX_OK);
        for (int d = 0; d < 2; d++)
            cr_assert_eq(ax_axd_writer_add_doc(w, docs[2 * set + d], 6), AX_OK);
        cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
    }
    ax_axd_t *dm = NULL, *dn = NULL;
    cr_assert_eq(ax_axd_open(mem, 1, &dm), AX_OK);
    cr_assert_eq(ax_axd_open(non, 1, &dn), AX_OK);
    ax_model_t *m = tiny(2, 11);
    ax_mia_config c = {.max_docs = 0, .T = T, .k_frac = 0.25, .batch = 2, .seed = 1};
    ax_mia_result r;
    cr_assert_eq(ax_mia_score(m, NULL, dm, dn, NULL, &c, &r), AX_ERR_ARG);
    cr_expect(strstr(ax_error_msg(), "1 of the 2 documents scored from --nonmembers") &&
                  strstr(ax_error_msg(), "non-member document 1 = member document 1"),
              "%s", ax_error_msg());
    /* the member set against itself: every document shared */
    ax_error_clear();
    cr_assert_eq(ax_mia_score(m, NULL, dm, dm, NULL, &c, &r), AX_ERR_ARG);
    cr_expect(strstr(ax_error_msg(), "2 of the 2 documents"), "%s", ax_error_msg());
    /* a document one token apart from a member is not a member */
    ax_axd_free(dn);
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(non, VOCAB, &w), AX_OK);
    cr_assert_eq(ax_axd_writer_add_doc(w, docs[2], 6), AX_OK);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    cr_assert_eq(ax_axd_open(non, 1, &dn), AX_OK);
    cr_assert_eq(ax_mia_score(m, NULL, dm, dn, NULL, &c, &r), AX_OK, "%s", ax_error_msg());
    ax_mia_result_free(&r);
    ax_axd_free(dm), ax_axd_free(dn);
    ax_model_free(m);
    unlink(mem), unlink(non);
}
