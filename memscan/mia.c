#include "memscan/mia.h"
#include "memscan/score.h"
#include "lib/core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

const char *const ax_mia_names[AX_MIA_N] = {"loss",     "zlib", "min_k",
                                            "min_k_pp", "ref",  "ref_ratio"};
const char *const ax_mia_free_names[AX_MIA_FREE_N] = {"zlib_bpb", "length"};

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

/* a picked non-member: its length and token hash, to find a member document equal to it */
typedef struct {
    uint64_t len, hash, doc;
} doc_key;

static int cmp_key(const void *a, const void *b) {
    const doc_key *x = a, *y = b;
    if (x->len != y->len) return (x->len > y->len) - (x->len < y->len);
    return (x->hash > y->hash) - (x->hash < y->hash);
}

/* document d of ds (end-of-text excluded) into buf: its length; *hash = XXH3 of the ids */
static uint64_t read_doc(const ax_axd_t *ds, uint64_t d, int32_t *buf, uint64_t *hash) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t len = off[d + 1] - off[d] - 1;
    ax_axd_tokens(ds, off[d], len, buf);
    *hash = XXH3_64bits(buf, sizeof(int32_t) * (size_t)len);
    return len;
}

/* Non-members that are documents of the member set (the same tokens) are training documents:
 * scoring them as non-members pulls every AUC toward 0.5, so they are refused. Only member
 * documents as long as a picked non-member are read, and a hash match is confirmed token by
 * token. */
static ax_status check_shared(const ax_axd_t *mem, const ax_axd_t *non, const uint64_t *dn,
                              int nn) {
    const uint64_t *noff = ax_axd_doc_offsets(non), *moff = ax_axd_doc_offsets(mem);
    uint64_t maxlen = 1, shared = 0, ex_mem = 0, ex_non = 0;
    for (int i = 0; i < nn; i++) {
        uint64_t len = noff[dn[i] + 1] - noff[dn[i]] - 1;
        maxlen = len > maxlen ? len : maxlen;
    }
    doc_key *keys = malloc(sizeof *keys * (size_t)nn);
    int32_t *a = malloc(sizeof(int32_t) * (size_t)maxlen), *b = malloc(sizeof(int32_t) * maxlen);
    uint8_t *hit = calloc((size_t)nn, 1);
    ax_status st = AX_OK;
    if (!keys || !a || !b || !hit) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory comparing the member and non-member sets");
        goto out;
    }
    for (int i = 0; i < nn; i++) {
        keys[i].doc = dn[i];
        keys[i].len = read_doc(non, dn[i], a, &keys[i].hash);
    }
    qsort(keys, (size_t)nn, sizeof *keys, cmp_key);
    for (uint64_t d = 0; d < ax_axd_n_docs(mem); d++) {
        doc_key k = {moff[d + 1] - moff[d] - 1, 0, d};
        long lo = 0, hi = nn; /* the first key of this length */
        while (lo < hi) {
            long m = (lo + hi) / 2;
            if (keys[m].len < k.len)
                lo = m + 1;
            else
                hi = m;
        }
        if (lo == nn || keys[lo].len != k.len) continue;
        read_doc(mem, d, a, &k.hash);
        for (long i = lo; i < nn && keys[i].len == k.len; i++) {
            if (hit[i] || keys[i].hash != k.hash) continue;
            uint64_t h;
            read_doc(non, keys[i].doc, b, &h);
            if (memcmp(a, b, sizeof(int32_t) * (size_t)k.len)) continue;
            if (!shared++) ex_mem = d, ex_non = keys[i].doc;
            hit[i] = 1;
        }
    }
    if (shared)
        st = ax_errorf(AX_ERR_ARG,
                       "%llu of the %d documents scored from --nonmembers %s are also documents "
                       "of --members %s (e.g. non-member document %llu = member document %llu): "
                       "they are training documents, and scoring them as non-members pulls every "
                       "AUC toward 0.5; pass a held-out set without them (axmem data split "
                       "drops held-out documents that share --ngram tokens with the training set)",
                       (unsigned long long)shared, nn, ax_axd_path(non), ax_axd_path(mem),
                       (unsigned long long)ex_non, (unsigned long long)ex_mem);
out:
    free(keys), free(a), free(b), free(hit);
    return st;
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
    d->ref_loss = d->zlib_bytes = d->text_bytes = NAN;
    d->free_score[AX_MIA_FREE_ZLIB_BPB] = NAN;
    d->free_score[AX_MIA_FREE_LENGTH] = (double)d->doc_tokens;
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
        d->text_bytes = (double)len;
        d->score[AX_MIA_ZLIB] = ax_zlib_score(d->loss, zb);
        /* text that decodes to nothing has no compressibility: NaN, left out of its metrics */
        d->free_score[AX_MIA_FREE_ZLIB_BPB] = len ? 8.0 * (double)zb / (double)len : NAN;
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
    AX_CHECK_GOTO(check_shared(mem, non, dn, out->n_non), done);
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
        d->doc_tokens = have;
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
    out->has_free[AX_MIA_FREE_ZLIB_BPB] = tok != NULL;
    out->has_free[AX_MIA_FREE_LENGTH] = 1;
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

/* one score's metrics: column k of the model scores, or of the model-free ones (free); buf holds
 * r->n doubles */
static ax_status score_metrics(const ax_mia_result *r, int free_k, int k, int reps, uint64_t seed,
                               int max_points, double *buf, ax_mia_metrics *mt) {
    double *mem = buf, *non = buf + r->n_mem;
    long nm = 0, nn = 0;
    for (int i = 0; i < r->n; i++) { /* a NaN score takes no part */
        double s = free_k ? r->d[i].free_score[k] : r->d[i].score[k];
        if (isnan(s)) continue;
        if (r->d[i].member)
            mem[nm++] = s;
        else
            non[nn++] = s;
    }
    mt->nm = nm, mt->nn = nn;
    if (free_k && (!nm || !nn)) return AX_OK; /* e.g. every text decoded to nothing: none */
    mt->auc = ax_roc_auc(mem, nm, non, nn);
    /* a rate the non-members cannot resolve is not reported (the TPR at FPR 0 in its place
     * would read as the TPR at the target) */
    mt->tpr_at_0_1 =
        nn >= ax_fpr_min_nonmembers(0.001) ? ax_tpr_at_fpr(mem, nm, non, nn, 0.001) : NAN;
    mt->tpr_at_1 = nn >= ax_fpr_min_nonmembers(0.01) ? ax_tpr_at_fpr(mem, nm, non, nn, 0.01) : NAN;
    AX_CHECK(ax_roc_auc_bootstrap(mem, nm, non, nn, reps, seed, &mt->auc_lo, &mt->auc_hi));
    AX_CHECK(ax_roc_curve(mem, nm, non, nn, &mt->roc, &mt->n_roc));
    mt->n_roc = thin(mt->roc, mt->n_roc, max_points);
    return AX_OK;
}

ax_status ax_mia_metrics_compute(ax_mia_result *r, int reps, uint64_t seed, int max_points) {
    double *buf = malloc(sizeof(double) * (size_t)(r->n ? r->n : 1));
    if (!buf) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_status st = AX_OK;
    for (int k = 0; k < AX_MIA_N + AX_MIA_FREE_N; k++) {
        int fk = k >= AX_MIA_N, j = fk ? k - AX_MIA_N : k;
        ax_mia_metrics *mt = fk ? &r->free_m[j] : &r->m[j];
        free(mt->roc);
        memset(mt, 0, sizeof *mt);
        if (st != AX_OK || !(fk ? r->has_free[j] : r->has[j])) continue;
        /* model-free seeds follow the model scores' (seed + k as before for those) */
        st = score_metrics(r, fk, j, reps, seed + (uint64_t)k, max_points, buf, mt);
        if (st == AX_OK && fk && (!mt->nm || !mt->nn)) r->has_free[j] = 0;
    }
    free(buf);
    return st;
}

int ax_mia_far_from_chance(const ax_mia_metrics *m) {
    if (m->auc_lo > 0.5 || m->auc_hi < 0.5) return 2;
    return fabs(m->auc - 0.5) >= AX_MIA_FAR_AUC ? 1 : 0;
}

void ax_mia_result_free(ax_mia_result *r) {
    for (int k = 0; k < AX_MIA_N; k++) free(r->m[k].roc);
    for (int k = 0; k < AX_MIA_FREE_N; k++) free(r->free_m[k].roc);
    free(r->d);
    memset(r, 0, sizeof *r);
}
