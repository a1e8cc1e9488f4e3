/* Privacy-attack metrics: see privacy_metrics.h for every definition. */
#include "memscan/privacy_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/core/rng.h"

/* one score with its side: the combined sorted list every ROC statistic sweeps */
typedef struct {
    double s;
    long idx; /* index into mem (member) or non */
    int member;
} item;

static int cmp_item(const void *a, const void *b) {
    double x = ((const item *)a)->s, y = ((const item *)b)->s;
    return x < y ? -1 : x > y;
}

static int cmp_double_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* mem and non into one array sorted ascending by score; NULL when out of memory */
static item *sorted_items(const double *mem, long nm, const double *non, long nn) {
    item *it = malloc(sizeof *it * (size_t)(nm + nn));
    if (!it) return NULL;
    for (long i = 0; i < nm; i++) it[i] = (item){mem[i], i, 1};
    for (long i = 0; i < nn; i++) it[nm + i] = (item){non[i], i, 0};
    qsort(it, (size_t)(nm + nn), sizeof *it, cmp_item);
    return it;
}

/* AUC from the sorted items with per-item multiplicities (wm for members, wn for non-members;
 * NULL = 1 each): each member counts the non-member weight strictly below it plus half the
 * weight tied with it. Totals tm, tn are the weight sums. O(n). */
static double auc_sorted(const item *it, long n, const uint32_t *wm, const uint32_t *wn, double tm,
                         double tn) {
    double below = 0, acc = 0;
    for (long g = 0; g < n;) {
        long e = g;
        double gm = 0, gn = 0;
        while (e < n && it[e].s == it[g].s) {
            if (it[e].member)
                gm += wm ? wm[it[e].idx] : 1;
            else
                gn += wn ? wn[it[e].idx] : 1;
            e++;
        }
        acc += gm * (below + 0.5 * gn);
        below += gn;
        g = e;
    }
    return acc / (tm * tn);
}

double ax_roc_auc(const double *mem, long nm, const double *non, long nn) {
    if (nm <= 0 || nn <= 0) return NAN;
    item *it = sorted_items(mem, nm, non, nn);
    if (!it) return NAN;
    double a = auc_sorted(it, nm + nn, NULL, NULL, (double)nm, (double)nn);
    free(it);
    return a;
}

ax_status ax_roc_auc_bootstrap(const double *mem, long nm, const double *non, long nn, int reps,
                               uint64_t seed, double *lo, double *hi) {
    if (nm <= 0 || nn <= 0)
        return ax_errorf(AX_ERR_ARG,
                         "AUC bootstrap needs members and non-members (got %ld and %ld); "
                         "score both sets",
                         nm, nn);
    if (reps < 1)
        return ax_errorf(AX_ERR_ARG, "AUC bootstrap needs at least 1 replicate (got %d)", reps);
    /* sort once; a replicate is a vector of multiplicities, so each costs O(nm + nn) */
    item *it = sorted_items(mem, nm, non, nn);
    uint32_t *wm = calloc((size_t)nm, sizeof *wm), *wn = calloc((size_t)nn, sizeof *wn);
    double *aucs = malloc(sizeof *aucs * (size_t)reps);
    ax_status st = AX_OK;
    if (!it || !wm || !wn || !aucs) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for an AUC bootstrap of %ld + %ld scores", nm,
                       nn);
        goto out;
    }
    for (int r = 0; r < reps; r++) {
        memset(wm, 0, sizeof *wm * (size_t)nm);
        memset(wn, 0, sizeof *wn * (size_t)nn);
        /* stream 2r draws the members, 2r+1 the non-members: replicate r is a function of
         * (seed, r) only */
        for (long i = 0; i < nm; i++)
            wm[ax_rng_below(seed, 2 * (uint64_t)r, (uint64_t)i, (uint64_t)nm)]++;
        for (long i = 0; i < nn; i++)
            wn[ax_rng_below(seed, 2 * (uint64_t)r + 1, (uint64_t)i, (uint64_t)nn)]++;
        aucs[r] = auc_sorted(it, nm + nn, wm, wn, (double)nm, (double)nn);
    }
    qsort(aucs, (size_t)reps, sizeof *aucs, cmp_double);
    *lo = aucs[(long)(0.025 * (reps - 1))];
    *hi = aucs[(long)(0.975 * (reps - 1))];
out:
    free(it);
    free(wm);
    free(wn);
    free(aucs);
    return st;
}

double ax_tpr_at_fpr(const double *mem, long nm, const double *non, long nn, double fpr) {
    if (nm <= 0 || nn <= 0 || !(fpr >= 0 && fpr <= 1)) return NAN;
    /* 1e-9 absorbs representation error: 0.001 * 1000 must allow 1 false positive */
    long k = (long)floor(fpr * (double)nn + 1e-9);
    if (k >= nn) return 1.0;
    double *s = malloc(sizeof *s * (size_t)nn);
    if (!s) return NAN;
    memcpy(s, non, sizeof *s * (size_t)nn);
    qsort(s, (size_t)nn, sizeof *s, cmp_double_desc);
    double v = s[k]; /* the (k+1)-th largest: any threshold <= v admits k+1 false positives */
    free(s);
    long tp = 0;
    for (long i = 0; i < nm; i++) tp += mem[i] > v;
    return (double)tp / (double)nm;
}

long ax_fpr_min_nonmembers(double fpr) {
    if (!(fpr > 0 && fpr <= 1)) return 0;
    long n = (long)ceil(1.0 / fpr - 1e-6);
    while (n > 1 && floor(fpr * (double)(n - 1) + 1e-9) >= 1) n--;
    while (floor(fpr * (double)n + 1e-9) < 1) n++;
    return n;
}

ax_status ax_roc_curve(const double *mem, long nm, const double *non, long nn, ax_roc_point **pts,
                       long *npts) {
    *pts = NULL;
    *npts = 0;
    if (nm <= 0 || nn <= 0)
        return ax_errorf(AX_ERR_ARG,
                         "ROC curve needs members and non-members (got %ld and %ld); score both "
                         "sets",
                         nm, nn);
    long n = nm + nn;
    item *it = sorted_items(mem, nm, non, nn);
    ax_roc_point *p = malloc(sizeof *p * (size_t)(n + 1));
    if (!it || !p) {
        free(it);
        free(p);
        return ax_errorf(AX_ERR_NOMEM, "out of memory for a ROC curve of %ld scores", n);
    }
    long np = 0, tp = 0, fp = 0;
    p[np++] = (ax_roc_point){0, 0};
    /* thresholds from the highest score down: each distinct score admits its whole tie group */
    for (long g = n - 1; g >= 0;) {
        long e = g;
        while (e >= 0 && it[e].s == it[g].s) {
            if (it[e].member)
                tp++;
            else
                fp++;
            e--;
        }
        p[np++] = (ax_roc_point){(double)fp / (double)nn, (double)tp / (double)nm};
        g = e;
    }
    free(it);
    *pts = p;
    *npts = np;
    return AX_OK;
}

ax_status ax_zlib_bytes(const void *text, size_t len, size_t *out) {
    uLongf cap = compressBound((uLong)len);
    Bytef *buf = malloc(cap ? cap : 1);
    if (!buf) return ax_errorf(AX_ERR_NOMEM, "out of memory compressing %zu bytes", len);
    int zr = compress2(buf, &cap, (const Bytef *)text, (uLong)len, AX_ZLIB_LEVEL);
    free(buf);
    if (zr != Z_OK) return ax_errorf(AX_ERR_INTERNAL, "zlib compress2 failed (%d)", zr);
    *out = (size_t)cap;
    return AX_OK;
}

double ax_zlib_score(double mean_loss, size_t zlib_bytes) {
    if (!zlib_bytes) return NAN;
    return -mean_loss / (double)zlib_bytes;
}

double ax_ref_ratio_score(double mean_loss, double ref_mean_loss) {
    if (!(ref_mean_loss > 0)) return NAN;
    return -mean_loss / ref_mean_loss;
}

void ax_token_logp_stats(const float *logits, long V, int32_t target, double *logp, double *mu,
                         double *sigma) {
    double mx = -INFINITY;
    for (long v = 0; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    double z = 0;
    for (long v = 0; v < V; v++) z += exp((double)logits[v] - mx);
    double lse = mx + log(z); /* log sum exp: log p(v) = logit_v - lse */
    double m = 0, m2 = 0;
    for (long v = 0; v < V; v++) {
        double lp = (double)logits[v] - lse, p = exp(lp);
        if (p > 0) { /* p log p -> 0 as p -> 0: an underflowed term adds nothing */
            m += p * lp;
            m2 += p * lp * lp;
        }
    }
    double var = m2 - m * m;
    *logp = (double)logits[target] - lse;
    *mu = m;
    *sigma = var > 0 ? sqrt(var) : 0;
}

/* mean of the lowest c of x[n] (x is sorted in place) */
static double mean_lowest(double *x, long n, double k_frac) {
    long c = (long)floor(k_frac * (double)n + 1e-9);
    if (c < 1) c = 1;
    if (c > n) c = n;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double s = 0;
    for (long i = 0; i < c; i++) s += x[i];
    return s / (double)c;
}

double ax_min_k_prob(const double *logp, long n, double k_frac) {
    if (n <= 0 || !(k_frac > 0 && k_frac <= 1)) return NAN;
    double *x = malloc(sizeof *x * (size_t)n);
    if (!x) return NAN;
    memcpy(x, logp, sizeof *x * (size_t)n);
    double r = mean_lowest(x, n, k_frac);
    free(x);
    return r;
}

double ax_min_k_pp(const double *logp, const double *mu, const double *sigma, long n,
                   double k_frac) {
    if (n <= 0 || !(k_frac > 0 && k_frac <= 1)) return NAN;
    double *x = malloc(sizeof *x * (size_t)n);
    if (!x) return NAN;
    for (long i = 0; i < n; i++) x[i] = sigma[i] > 0 ? (logp[i] - mu[i]) / sigma[i] : 0;
    double r = mean_lowest(x, n, k_frac);
    free(x);
    return r;
}

double ax_exposure_rank(const double *ref_loglik, long n, double secret_loglik) {
    double r = 1;
    for (long i = 0; i < n; i++) r += ref_loglik[i] >= secret_loglik;
    return r;
}

double ax_exposure_from_rank(double rank, double n_space) {
    if (!(rank >= 1 && rank <= n_space)) return NAN;
    return log2(n_space) - log2(rank);
}

ax_status ax_exposure_fit(const double *ref_loglik, long n, ax_skewnorm *fit) {
    if (n < 3)
        return ax_errorf(AX_ERR_ARG,
                         "exposure estimate needs at least 3 reference secrets (got %ld); "
                         "generate more with --references or --candidates",
                         n);
    double *lp = malloc(sizeof *lp * (size_t)n); /* log-perplexities */
    if (!lp) return ax_errorf(AX_ERR_NOMEM, "out of memory fitting %ld candidates", n);
    for (long i = 0; i < n; i++) lp[i] = -ref_loglik[i];
    ax_status st = ax_skewnorm_fit(lp, n, fit);
    free(lp);
    if (st != AX_OK) {
        ax_error_clear(); /* say what the values are */
        return ax_errorf(AX_ERR_ARG,
                         "exposure estimate: the %ld candidates' log-likelihoods cannot be "
                         "fitted (all equal, or not finite)",
                         n);
    }
    return AX_OK;
}

double ax_exposure_from_fit(const ax_skewnorm *fit, double secret_loglik, double n_space) {
    if (!(n_space >= 1)) return NAN;
    /* rank = n_space P(X <= secret's log-perplexity), clamped to [1, n_space], in logs: the
     * tail may be far below the smallest double */
    double bits = -ax_skewnorm_log_cdf(fit, -secret_loglik) / M_LN2, top = log2(n_space);
    return bits < 0 ? 0 : bits > top ? top : bits;
}

ax_status ax_exposure_estimate(const double *ref_loglik, long n, double secret_loglik,
                               double n_space, double *exposure) {
    if (!(n_space >= 1))
        return ax_errorf(AX_ERR_ARG, "exposure estimate: the secret space must hold >= 1 string");
    ax_skewnorm fit;
    AX_CHECK(ax_exposure_fit(ref_loglik, n, &fit));
    *exposure = ax_exposure_from_fit(&fit, secret_loglik, n_space);
    return AX_OK;
}
