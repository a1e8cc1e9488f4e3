#include "memscan/mia.h"
#include "memscan/score.h"
#include "lib/core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const ax_mia_names[AX_MIA_N] = {"loss",     "zlib", "min_k",
                                            "min_k_pp", "ref",  "ref_ratio"};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The documents of ds with at least one token: all, or a seeded random subset of max_docs
 * (the first max_docs of a seeded shuffle, listed in document order). */
static ax_status pick(const ax_axd_t *ds, const ax_mia_config *c, uint64_t stream, uint64_t **docs,
                      int *n) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t nd = ax_axd_n_docs(ds);
    uint64_t *e = malloc(sizeof(uint64_t) * (size_t)(nd ? nd : 1));
    if (!e)
        return ax_errorf(AX_ERR_NOMEM, "out of memory listing the documents of %s",
                         ax_axd_path(ds));
    uint64_t ne = 0;
    for (uint64_t d = 0; d < nd; d++)
        if (off[d + 1] - off[d] >= 2) e[ne++] = d; /* a token besides the end-of-text */
    uint64_t k = c->max_docs > 0 && (uint64_t)c->max_docs < ne ? (uint64_t)c->max_docs : ne;
    for (uint64_t i = 0; k < ne && i < k; i++) {
        uint64_t j = i + ax_rng_below(c->seed, stream, i, ne - i), t = e[i];
        e[i] = e[j], e[j] = t;
    }
    qsort(e, (size_t)k, sizeof *e, cmp_u64);
    if (!k) {
        free(e);
        return ax_errorf(AX_ERR_ARG, "%s has no document with a token; pass a non-empty dataset",
                         ax_axd_path(ds));
    }
    *docs = e, *n = (int)k;
    return AX_OK;
}

/* one document's scores from its per-token numbers (ref_logp NULL without a reference) */
static ax_status doc_scores(ax_mia_doc *d, const int32_t *toks, const float *lp, const float *mu,
                            const float *sd, const float *ref_lp, const ax_tokenizer_t *tok,
                            double k_frac, double *buf) {
    int n = d->n_tokens;
    double *l = buf, *m = buf + n, *s = buf + 2 * n, sum = 0;
    for (int t = 0; t < n; t++) l[t] = lp[t], m[t] = mu[t], s[t] = sd[t], sum += lp[t];
    d->loss = -sum / n;
    for (int k = 0; k < AX_MIA_N; k++) d->score[k] = NAN;
    d->score[AX_MIA_LOSS] = -d->loss;
    d->score[AX_MIA_MIN_K] = ax_min_k_prob(l, n, k_frac);
    d->score[AX_MIA_MIN_K_PP] = ax_min_k_pp(l, m, s, n, k_frac);
    d->ref_loss = d->zlib_bytes = NAN;
    if (ref_lp) {
        double r = 0;
        for (int t = 0; t < n; t++) r += ref_lp[t];
        d->ref_loss = -r / n;
        d->score[AX_MIA_REF] = d->ref_loss - d->loss;
        d->score[AX_MIA_REF_RATIO] = ax_ref_ratio_score(d->loss, d->ref_loss);
    }
    if (tok) {
        uint8_t *text = NULL;
        size_t len = 0, zb = 0;
        AX_CHECK(ax_tokenizer_decode(tok, toks, (size_t)n, &text, &len));
        ax_status st = ax_zlib_bytes(text, len, &zb);
        free(text);
        AX_CHECK(st);
        d->zlib_bytes = (double)zb;
        d->score[AX_MIA_ZLIB] = ax_zlib_score(d->loss, zb);
    }
    return AX_OK;
}

ax_status ax_mia_score(ax_model_t *m, ax_model_t *ref, const ax_axd_t *mem, const ax_axd_t *non,
                       const ax_tokenizer_t *tok, const ax_mia_config *c, ax_mia_result *out) {
    memset(out, 0, sizeof *out);
    uint64_t *dm = NULL, *dn = NULL;
    int32_t *buf = NULL;
    int *len = NULL;
    const int32_t **ptr = NULL;
    double *tmp = NULL;
    ax_score_result sr = {0}, rr = {0};
    ax_status st;
    if (c->T < 1 || c->batch < 1 || !(c->k_frac > 0 && c->k_frac <= 1))
        return ax_errorf(AX_ERR_ARG,
                         "memscan mia: tokens per document %d, batch %d and k %g "
                         "must be positive (k at most 1)",
                         c->T, c->batch, c->k_frac);
    AX_CHECK_GOTO(pick(mem, c, 1, &dm, &out->n_mem), done);
    AX_CHECK_GOTO(pick(non, c, 2, &dn, &out->n_non), done);
    int n = out->n = out->n_mem + out->n_non, W = c->T + 1;
    out->d = calloc((size_t)n, sizeof *out->d);
    buf = malloc(sizeof(int32_t) * (size_t)n * W);
    len = malloc(sizeof(int) * (size_t)n);
    ptr = malloc(sizeof *ptr * (size_t)n);
    tmp = malloc(sizeof(double) * 3 * (size_t)c->T);
    if (!out->d || !buf || !len || !ptr || !tmp) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %d documents", n);
        goto done;
    }
    /* sequence i: end-of-text, then the document's first n_tokens tokens */
    for (int i = 0; i < n; i++) {
        ax_mia_doc *d = &out->d[i];
        const ax_axd_t *ds = i < out->n_mem ? mem : non;
        d->member = i < out->n_mem;
        d->doc = d->member ? dm[i] : dn[i - out->n_mem];
        const uint64_t *off = ax_axd_doc_offsets(ds);
        uint64_t have = off[d->doc + 1] - off[d->doc] - 1;
        d->n_tokens = have < (uint64_t)c->T ? (int)have : c->T;
        int32_t *row = buf + (size_t)i * W;
        row[0] = (int32_t)ax_axd_eot(ds);
        ax_axd_tokens(ds, off[d->doc], (uint64_t)d->n_tokens, row + 1);
        ptr[i] = row, len[i] = d->n_tokens + 1;
    }
    ax_score_opts so = {.T = c->T,
                        .batch = c->batch,
                        .want_dist = 1,
                        .progress = c->progress ? "memscan mia" : NULL};
    AX_CHECK_GOTO(ax_score_seqs(m, n, ptr, len, &so, &sr), done);
    if (ref) {
        so.want_dist = 0;
        so.progress = c->progress ? "memscan mia (reference model)" : NULL;
        AX_CHECK_GOTO(ax_score_seqs(ref, n, ptr, len, &so, &rr), done);
    }
    for (int i = 0; i < n; i++) {
        long o = sr.off[i];
        AX_CHECK_GOTO(doc_scores(&out->d[i], ptr[i] + 1, sr.logp + o, sr.mu + o, sr.sigma + o,
                                 ref ? rr.logp + o : NULL, tok, c->k_frac, tmp),
                      done);
    }
    out->has[AX_MIA_LOSS] = out->has[AX_MIA_MIN_K] = out->has[AX_MIA_MIN_K_PP] = 1;
    out->has[AX_MIA_ZLIB] = tok != NULL;
    out->has[AX_MIA_REF] = out->has[AX_MIA_REF_RATIO] = ref != NULL;
done:
    free(dm), free(dn), free(buf), free(len), free(ptr), free(tmp);
    ax_score_result_free(&sr), ax_score_result_free(&rr);
    if (st != AX_OK) ax_mia_result_free(out);
    return st;
}

/* A bounded subset of the curve: (0,0), (1,1), and a point whenever the curve has moved by
 * 1/max_points (in FPR + TPR) or FPR has grown by 5% since the last kept point, so the low-FPR
 * end a log-log plot shows keeps its detail. */
static long thin(ax_roc_point *p, long n, int max_points) {
    if (n <= 2) return n;
    long k = 1;
    double step = 1.0 / max_points;
    for (long i = 1; i < n - 1; i++) {
        const ax_roc_point *a = &p[k - 1];
        double moved = fabs(p[i].fpr - a->fpr) + fabs(p[i].tpr - a->tpr);
        int low = p[i].fpr > 0 && (a->fpr == 0 ? 1 : p[i].fpr >= 1.05 * a->fpr);
        if (moved >= step || (low && p[i].fpr < 0.1)) p[k++] = p[i];
    }
    p[k++] = p[n - 1];
    return k;
}

ax_status ax_mia_metrics_compute(ax_mia_result *r, int reps, uint64_t seed, int max_points) {
    double *mem = malloc(sizeof(double) * (size_t)(r->n ? r->n : 1)), *non = mem + r->n_mem;
    if (!mem) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_status st = AX_OK;
    for (int k = 0; st == AX_OK && k < AX_MIA_N; k++) {
        ax_mia_metrics *mt = &r->m[k];
        free(mt->roc);
        memset(mt, 0, sizeof *mt);
        if (!r->has[k]) continue;
        long nm = 0, nn = 0;
        for (int i = 0; i < r->n; i++) { /* a NaN score (none expected) takes no part */
            double s = r->d[i].score[k];
            if (isnan(s)) continue;
            if (r->d[i].member)
                mem[nm++] = s;
            else
                non[nn++] = s;
        }
        mt->auc = ax_roc_auc(mem, nm, non, nn);
        mt->tpr_at_0_1 = ax_tpr_at_fpr(mem, nm, non, nn, 0.001);
        mt->tpr_at_1 = ax_tpr_at_fpr(mem, nm, non, nn, 0.01);
        st = ax_roc_auc_bootstrap(mem, nm, non, nn, reps, seed + (uint64_t)k, &mt->auc_lo,
                                  &mt->auc_hi);
        if (st == AX_OK) st = ax_roc_curve(mem, nm, non, nn, &mt->roc, &mt->n_roc);
        if (st == AX_OK) mt->n_roc = thin(mt->roc, mt->n_roc, max_points);
    }
    free(mem);
    return st;
}

void ax_mia_result_free(ax_mia_result *r) {
    for (int k = 0; k < AX_MIA_N; k++) free(r->m[k].roc);
    free(r->d);
    memset(r, 0, sizeof *r);
}
