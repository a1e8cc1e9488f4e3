#include "memscan/probe.h"
#include "lib/dist/comm.h"
#include "lib/core/rng.h"
#include "data/tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double ax_rouge_l(const int32_t *a, int na, const int32_t *b, int nb) {
    if (na == 0 || nb == 0) return 0.0;
    /* two rows of the LCS table; short suffixes (the usual 32-256) never touch the heap */
    int small[2][513];
    int *prev = small[0], *cur = small[1];
    if (nb > 512) {
        prev = calloc((size_t)nb + 1, sizeof(int));
        cur = calloc((size_t)nb + 1, sizeof(int));
        if (!prev || !cur) {
            free(prev), free(cur);
            return NAN;
        }
    } else {
        memset(small, 0, sizeof small);
    }
    for (int i = 1; i <= na; i++) {
        for (int j = 1; j <= nb; j++)
            cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1
                                          : (prev[j] > cur[j - 1] ? prev[j] : cur[j - 1]);
        int *t = prev;
        prev = cur;
        cur = t;
    }
    double lcs = prev[nb];
    if (nb > 512) free(prev), free(cur);
    if (lcs == 0) return 0.0;
    double p = lcs / na, r = lcs / nb;
    return 2 * p * r / (p + r);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* P(X <= k) for X ~ Binomial(n, p), 0 < p < 1: terms summed in log space from the mode-free
 * end, each term exact to rounding; n up to millions costs milliseconds. */
static double binom_cdf(long k, long n, double p) {
    if (k < 0) return 0.0;
    if (k >= n) return 1.0;
    double lp = log(p), lq = log1p(-p), s = 0;
    for (long i = 0; i <= k; i++)
        s += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) +
                 (double)i * lp + (double)(n - i) * lq);
    return s < 1.0 ? s : 1.0;
}

/* the x in (0, 1) where cdf(a, b, x) crosses target, by bisection; `falling`: the cdf falls
 * as x grows (a binomial's in p), else it rises (a beta's in x) */
static double bisect(double (*cdf)(double, double, double), double a, double b, double target,
                     int falling) {
    double lo = 0.0, hi = 1.0;
    for (int it = 0; it < 100; it++) {
        double m = 0.5 * (lo + hi), v = cdf(a, b, m);
        if (falling ? v > target : v < target)
            lo = m;
        else
            hi = m;
    }
    return 0.5 * (lo + hi);
}

static double binom_cdf_of(double k, double n, double p) {
    return binom_cdf((long)k, (long)n, p);
}

void ax_clopper_pearson(long k, long n, double *lo, double *hi) {
    if (n <= 0) {
        *lo = 0.0, *hi = 1.0;
        return;
    }
    /* lo: P(X >= k) = 0.025, i.e. P(X <= k - 1) = 0.975; hi: P(X <= k) = 0.025 */
    *lo = k <= 0 ? 0.0 : bisect(binom_cdf_of, (double)(k - 1), (double)n, 0.975, 1);
    *hi = k >= n ? 1.0 : bisect(binom_cdf_of, (double)k, (double)n, 0.025, 1);
}

void ax_bootstrap_ci(const double *x, int n, int resamples, uint64_t seed, double *mean, double *lo,
                     double *hi) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    *lo = *hi = *mean;
    double *means = n ? malloc(sizeof(double) * (size_t)resamples) : NULL;
    if (!means) return;
    for (int r = 0; r < resamples; r++) {
        double t = 0;
        for (int i = 0; i < n; i++)
            t += x[ax_rng_below(seed, (uint64_t)r, (uint64_t)i, (uint64_t)n)];
        means[r] = t / n;
    }
    qsort(means, (size_t)resamples, sizeof *means, cmp_double);
    *lo = means[(int)(0.025 * (resamples - 1))];
    *hi = means[(int)(0.975 * (resamples - 1))];
    free(means);
}

/* tokens a document needs (its end-of-text excluded) to be probed by c: deep probes start at
 * least P + S tokens in, so they need documents of >= 2 (P + S) tokens */
static uint64_t least_tokens(const ax_probe_config *c) {
    uint64_t need = (uint64_t)(c->prefix + c->suffix);
    return c->random_offset == AX_PROBE_DEEP ? 2 * need : need;
}

int ax_probe_eligible(const ax_axd_t *ds, const ax_probe_config *c) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t n_docs = ax_axd_n_docs(ds), least = least_tokens(c);
    int ne = 0;
    for (uint64_t d = 0; d < n_docs; d++) ne += off[d + 1] - off[d] >= least + 1;
    return ne;
}

/* the probe positions: documents long enough for prefix + suffix (their end-of-text excluded) */
static ax_status pick(const ax_axd_t *ds, const ax_probe_config *c, ax_probe_result *out) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t n_docs = ax_axd_n_docs(ds), need = (uint64_t)(c->prefix + c->suffix);
    uint64_t *elig = malloc(sizeof(uint64_t) * (size_t)(n_docs ? n_docs : 1));
    if (!elig) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    int ne = 0;
    uint64_t least = least_tokens(c);
    for (uint64_t d = 0; d < n_docs; d++)
        if (off[d + 1] - off[d] >= least + 1) elig[ne++] = d;
    out->eligible_docs = ne;
    if (!ne) {
        free(elig);
        return ax_errorf(AX_ERR_ARG,
                         "no document of %s holds %s%d + %d tokens; use a shorter "
                         "--prefix/--suffix%s",
                         ax_axd_path(ds), c->random_offset == AX_PROBE_DEEP ? "2 x " : "",
                         c->prefix, c->suffix,
                         c->random_offset == AX_PROBE_DEEP ? " or --offset random" : "");
    }
    if (out->n > ne && !c->repeat) { /* a repeated document is not an independent sample */
        free(elig);
        return ax_errorf(AX_ERR_ARG,
                         "%d samples but only %d documents of %s hold %s%d + %d tokens; ask for "
                         "at most %d samples, or allow repeats (--repeat-docs)",
                         out->n, ne, ax_axd_path(ds),
                         c->random_offset == AX_PROBE_DEEP ? "2 x " : "", c->prefix, c->suffix, ne);
    }
    for (int i = 0; i < out->n; i++) {
        /* without replacement while samples <= eligible docs: a seeded shuffle's prefix */
        uint64_t pick_i = (uint64_t)i % (uint64_t)ne,
                 j = pick_i + ax_rng_below(c->seed, 1, (uint64_t)i, (uint64_t)(ne - pick_i));
        uint64_t t = elig[pick_i];
        elig[pick_i] = elig[j], elig[j] = t;
        uint64_t d = elig[pick_i], room = off[d + 1] - off[d] - 1 - need;
        out->s[i].doc = d;
        out->s[i].offset = c->random_offset == AX_PROBE_RANDOM
                               ? ax_rng_below(c->seed, 2, (uint64_t)i, room + 1)
                           : c->random_offset == AX_PROBE_DEEP
                               ? need + ax_rng_below(c->seed, 3, (uint64_t)i, room - need + 1)
                               : 0;
    }
    free(elig);
    return AX_OK;
}

/* ---- intervals for probes clustered by document (--repeat-docs) ---- */

/* The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated by
 * the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 10000; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)); /* even step */
        d = 1.0 + num * d, c = 1.0 + num / c;
        d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d, c = fabs(c) < tiny ? tiny : c;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)); /* odd step */
        d = 1.0 + num * d, c = 1.0 + num / c;
        d = fabs(d) < tiny ? 1.0 / tiny : 1.0 / d, c = fabs(c) < tiny ? tiny : c;
        double step = d * c;
        h *= step;
        if (fabs(step - 1.0) < eps) break;
    }
    return h;
}

/* I_x(a, b) = P(Beta(a, b) <= x), a, b > 0 */
static double beta_cdf(double a, double b, double x) {
    if (x <= 0) return 0.0;
    if (x >= 1) return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

void ax_clopper_pearson_real(double k, double n, double *lo, double *hi) {
    if (n <= 0) {
        *lo = 0.0, *hi = 1.0;
        return;
    }
    /* P(X >= k | p) = I_p(k, n - k + 1): the lower end is where that is 2.5% */
    *lo = k <= 0 ? 0.0 : bisect(beta_cdf, k, n - k + 1.0, 0.025, 0);
    *hi = k >= n ? 1.0 : bisect(beta_cdf, k + 1.0, n - k, 0.975, 0);
}

typedef struct {
    uint64_t cluster;
    int i;
} cluster_of;

static int by_cluster(const void *a, const void *b) {
    const cluster_of *x = a, *y = b;
    if (x->cluster != y->cluster) return x->cluster < y->cluster ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Each observation's cluster as an index 0..C-1 (in order of cluster id); returns C, or -1
 * when out of memory. */
static int cluster_index(const uint64_t *cluster, int n, int *idx) {
    cluster_of *o = malloc(sizeof *o * (size_t)(n ? n : 1));
    if (!o) return -1;
    for (int i = 0; i < n; i++) o[i] = (cluster_of){cluster[i], i};
    qsort(o, (size_t)n, sizeof *o, by_cluster);
    int C = 0;
    for (int k = 0; k < n; k++) {
        if (k > 0 && o[k].cluster != o[k - 1].cluster) C++;
        idx[o[k].i] = C;
    }
    free(o);
    return n ? C + 1 : 0;
}

/* per cluster: the sum of x and the count; *C clusters. Both arrays malloc'd. */
static int cluster_sums(const double *x, const uint64_t *cluster, int n, double **sum,
                        double **cnt) {
    int *idx = malloc(sizeof *idx * (size_t)(n ? n : 1));
    *sum = calloc((size_t)(n ? n : 1), sizeof **sum);
    *cnt = calloc((size_t)(n ? n : 1), sizeof **cnt);
    if (!idx || !*sum || !*cnt) {
        free(idx), free(*sum), free(*cnt);
        *sum = *cnt = NULL;
        return -1;
    }
    int C = cluster_index(cluster, n, idx);
    for (int i = 0; C > 0 && i < n; i++) (*sum)[idx[i]] += x[i], (*cnt)[idx[i]] += 1;
    free(idx);
    return C;
}

void ax_bootstrap_ci_clustered(const double *x, const uint64_t *cluster, int n, int resamples,
                               uint64_t seed, double *mean, double *lo, double *hi) {
    double s = 0, *sum, *cnt;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : 0;
    *lo = *hi = *mean;
    int C = cluster_sums(x, cluster, n, &sum, &cnt);
    double *means = C > 0 ? malloc(sizeof(double) * (size_t)resamples) : NULL;
    if (!means) {
        free(sum), free(cnt);
        return;
    }
    for (int r = 0; r < resamples; r++) {
        double t = 0, m = 0;
        for (int i = 0; i < C; i++) {
            uint64_t j = ax_rng_below(seed, (uint64_t)r, (uint64_t)i, (uint64_t)C);
            t += sum[j], m += cnt[j];
        }
        means[r] = t / m;
    }
    qsort(means, (size_t)resamples, sizeof *means, cmp_double);
    *lo = means[(int)(0.025 * (resamples - 1))];
    *hi = means[(int)(0.975 * (resamples - 1))];
    free(means), free(sum), free(cnt);
}

void ax_clopper_pearson_clustered(const double *x, const uint64_t *cluster, int n, double *mean,
                                  double *lo, double *hi, double *n_eff) {
    double k = 0, *sum, *cnt;
    for (int i = 0; i < n; i++) k += x[i] != 0;
    double p = n ? k / n : 0.0, ne = n;
    *mean = p;
    int C = cluster_sums(x, cluster, n, &sum, &cnt);
    if (C <= 0) { /* no data, or no memory: the unclustered interval */
        ax_clopper_pearson((long)k, n, lo, hi);
    } else {
        if (p <= 0.0 || p >= 1.0 || C == 1) {
            ne = C; /* nothing to estimate the correlation from: one observation a cluster */
        } else {    /* the ratio estimator's between-cluster variance (with-replacement form) */
            double v = 0;
            for (int c = 0; c < C; c++) {
                double e = sum[c] - p * cnt[c];
                v += e * e;
            }
            v *= (double)C / (C - 1) / ((double)n * n);
            ne = v > 0 ? p * (1.0 - p) / v : n;
            if (ne > n) ne = n; /* a design effect below 1 is not credited */
        }
        ax_clopper_pearson_real(p * ne, ne, lo, hi);
        if (*lo > p) *lo = p; /* rounding in the quantiles: never exclude the estimate */
        if (*hi < p) *hi = p;
    }
    if (n_eff) *n_eff = ne;
    free(sum), free(cnt);
}

static ax_status score(ax_probe_sample *s, int S) {
    int k = 0, match = 0;
    while (k < S && s->generated[k] == s->truth[k]) k++;
    for (int i = 0; i < S; i++) match += s->generated[i] == s->truth[i];
    s->matched_prefix = k;
    s->exact = k == S;
    s->token_accuracy = (double)match / S;
    s->rouge_l = ax_rouge_l(s->generated, S, s->truth, S);
    if (isnan(s->rouge_l)) return ax_errorf(AX_ERR_NOMEM, "out of memory scoring RougeL");
    return AX_OK;
}

uint64_t ax_probe_draw_key(uint64_t seed, int P, int i, int j, int k) {
    return ax_rng_u64(seed ^ 0x5eedd4a3c0ffee11ULL, ((uint64_t)P << 40) | (uint64_t)i,
                      ((uint64_t)j << 32) | (uint64_t)k);
}

/* Decodes n rows of this rank, `batch` at a time, all at the same position: row r continues
 * probe probes[r / D] (D = draws, 1 for greedy), greedily when c is greedy-only or draw < 0,
 * else as draw r % D. gen[r * S + k] = its suffix token k. Prompt lengths may differ within a
 * batch (the end-of-text leads only prefixes at a document start): a sequence with the shorter
 * prompt finishes a step earlier. Every batch rank decodes the same number of rows. */
static ax_status decode(ax_model_t *m, const ax_axd_t *ds, const ax_probe_config *c,
                        const ax_probe_sample *smp, const int *probes, int n, int sampled,
                        int32_t *gen) {
    int P = c->prefix, S = c->suffix, W = 1 + P + S, D = sampled ? c->draws : 1;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int32_t *win = calloc((size_t)c->batch * W, sizeof(int32_t)),
            *tok = calloc((size_t)c->batch, sizeof(int32_t));
    int *lead = calloc((size_t)c->batch, sizeof(int));
    uint64_t *keys = calloc((size_t)c->batch, sizeof(uint64_t));
    int cap = c->batch; /* entries of tok and keys */
    ax_status st = AX_OK;
    ax_sample_params sp = c->sampling;
    sp.seed = c->seed;
    if (!win || !tok || !lead || !keys) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %d probes", c->samples);
        goto done;
    }
    for (int b0 = 0; b0 < n; b0 += c->batch) {
        int B = n - b0 < c->batch ? n - b0 : c->batch;
        for (int j = 0; j < B; j++) {
            const ax_probe_sample *s = &smp[probes[(b0 + j) / D]];
            int32_t *row = win + (size_t)j * W;
            lead[j] = c->lead_eot && s->offset == 0;
            if (lead[j]) row[0] = (int32_t)ax_axd_eot(ds);
            ax_axd_tokens(ds, off[s->doc] + s->offset, (uint64_t)(P + S), row + lead[j]);
        }
        AX_CHECK_GOTO(ax_model_decode_begin(m, B), done);
        int nb = ax_model_decode_batch(m); /* >= B: the model decodes nb rows */
        if (nb > cap) {                    /* a model that decoded a larger batch before */
            int32_t *t2 = realloc(tok, sizeof(int32_t) * (size_t)nb);
            if (t2) tok = t2;
            uint64_t *k2 = t2 ? realloc(keys, sizeof(uint64_t) * (size_t)nb) : NULL;
            if (k2) keys = k2;
            if (!t2 || !k2) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory for %d probes", c->samples);
                goto done;
            }
            memset(tok + cap, 0, sizeof(int32_t) * (size_t)(nb - cap));
            memset(keys + cap, 0, sizeof(uint64_t) * (size_t)(nb - cap));
            cap = nb;
        }
        for (int pos = 0; pos < W - 1; pos++) {
            int act = 0, choose = 0; /* any sequence reads pos / chooses after it */
            for (int j = 0; j < B; j++) {
                int Lp = lead[j] + P; /* prompt length of sequence j */
                act |= pos < Lp + S - 1;
                choose |= pos >= Lp - 1;
                tok[j] = pos < Lp           ? win[(size_t)j * W + pos]
                         : pos < Lp + S - 1 ? gen[(size_t)(b0 + j) * S + pos - Lp]
                                            : 0; /* past its end: ignored */
            }
            if (!act) break;
            if (!choose) { /* every sequence still reads its prompt: no logits wanted */
                ax_model_decode_feed(m, tok, pos);
                continue;
            }
            ax_model_decode_step(m, tok, pos);
            if (sampled) {
                for (int j = 0; j < B; j++) {
                    int r = b0 + j, k = pos - (lead[j] + P) + 1;
                    keys[j] = ax_probe_draw_key(c->seed, P, probes[r / D], r % D, k < 0 ? 0 : k);
                }
                AX_CHECK_GOTO(ax_model_decode_sample(m, &sp, keys, tok), done);
            } else {
                AX_CHECK_GOTO(ax_model_decode_argmax(m, tok), done);
            }
            for (int j = 0; j < B; j++) {
                int k = pos - (lead[j] + P) + 1; /* index of the suffix token just chosen */
                if (k >= 0 && k < S) gen[(size_t)(b0 + j) * S + k] = tok[j];
            }
        }
        AX_CHECK_GOTO(ax_model_status(m), done);
    }
done:
    free(win), free(tok), free(lead), free(keys);
    return st;
}

ax_status ax_probe_run(ax_model_t *m, const ax_axd_t *ds, const ax_probe_config *c,
                       ax_probe_result *out) {
    memset(out, 0, sizeof *out);
    /* a sequence: [end-of-text when lead] prefix[P] suffix[S]; the model reads the first
     * L + P as the prompt and then its own S - 1 choices */
    int P = c->prefix, S = c->suffix, D = c->draws;
    ax_grid_t *g = ax_model_grid(m);
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), me = ax_grid_coord(g, AX_AXIS_BATCH);
    int per = (c->samples + parts - 1) / parts; /* samples per batch rank (padded) */
    if (D > 0) AX_CHECK(ax_sample_params_check(&c->sampling));
    out->n = c->samples;
    out->lead_eot = c->lead_eot;
    out->s = calloc((size_t)per * parts, sizeof *out->s);
    out->tokens = calloc((size_t)per * parts * 2 * S, sizeof(int32_t));
    int *mine_i = calloc((size_t)per, sizeof(int));
    int32_t *mine = calloc((size_t)per * S, sizeof(int32_t)),
            *all = calloc((size_t)per * parts * S, sizeof(int32_t)),
            *drawn = D > 0 ? calloc((size_t)per * D * S, sizeof(int32_t)) : NULL,
            *hits = calloc((size_t)per, sizeof(int32_t)),
            *all_hits = calloc((size_t)per * parts, sizeof(int32_t));
    ax_status st = AX_OK;
    if (!out->s || !out->tokens || !mine_i || !mine || !all || (D > 0 && !drawn) || !hits ||
        !all_hits) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for %d probes", c->samples);
        goto done;
    }
    AX_CHECK_GOTO(pick(ds, c, out), done);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    for (int i = 0; i < per * parts; i++) {
        out->s[i].generated = out->tokens + (size_t)i * 2 * S; /* filled after the gather */
        out->s[i].truth = out->tokens + (size_t)i * 2 * S + S;
    }
    /* my samples [me*per, me*per + per); padding slots repeat sample 0, then are dropped */
    for (int r = 0; r < per; r++) mine_i[r] = me * per + r < c->samples ? me * per + r : 0;
    AX_CHECK_GOTO(decode(m, ds, c, out->s, mine_i, per, 0, mine), done);
    if (D > 0) { /* the draws: count those reproducing the suffix exactly */
        AX_CHECK_GOTO(decode(m, ds, c, out->s, mine_i, per * D, 1, drawn), done);
        int32_t *truth = out->s[0].truth; /* scratch until the truths are filled below */
        for (int r = 0; r < per; r++) {
            const ax_probe_sample *s = &out->s[mine_i[r]];
            ax_axd_tokens(ds, off[s->doc] + s->offset + (uint64_t)P, (uint64_t)S, truth);
            for (int j = 0; j < D; j++)
                hits[r] +=
                    !memcmp(drawn + ((size_t)r * D + j) * S, truth, sizeof(int32_t) * (size_t)S);
        }
    }
    /* every batch rank's generations and hit counts (token ids travel as i32) */
    AX_CHECK_GOTO(ax_coll_allgather(g, AX_AXIS_BATCH, mine, (long)per * S, all, AX_DT_I32), done);
    AX_CHECK_GOTO(ax_coll_allgather(g, AX_AXIS_BATCH, hits, (long)per, all_hits, AX_DT_I32), done);
    for (int i = 0; i < c->samples; i++) {
        ax_probe_sample *s = &out->s[i];
        ax_axd_tokens(ds, off[s->doc] + s->offset + (uint64_t)P, (uint64_t)S, s->truth);
        memcpy(s->generated, all + (size_t)i * S, sizeof(int32_t) * (size_t)S);
        s->sampled_exact = all_hits[i];
        AX_CHECK_GOTO(score(s, S), done);
    }
done:
    free(mine_i), free(mine), free(all), free(drawn), free(hits), free(all_hits);
    if (st != AX_OK) ax_probe_result_free(out);
    return st;
}

void ax_probe_result_free(ax_probe_result *r) {
    free(r->s);
    free(r->tokens);
    memset(r, 0, sizeof *r);
}
