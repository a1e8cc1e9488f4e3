/* Privacy accountant: RDP of the Poisson-subsampled Gaussian mechanism, its composition and
 * conversion to (epsilon, delta); see dp_accountant.h. */
#include "train/dp_accountant.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const double ax_dp_orders[AX_DP_N_ORDERS] = {
    1.1,  1.2,  1.3,  1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0,  2.1,  2.2,  2.3,  2.4,  2.5,  2.6,
    2.7,  2.8,  2.9,  3.0, 3.1, 3.2, 3.3, 3.4, 3.5, 3.6,  3.7,  3.8,  3.9,  4.0,  4.1,  4.2,
    4.3,  4.4,  4.5,  4.6, 4.7, 4.8, 4.9, 5.0, 5.1, 5.2,  5.3,  5.4,  5.5,  5.6,  5.7,  5.8,
    5.9,  6.0,  6.1,  6.2, 6.3, 6.4, 6.5, 6.6, 6.7, 6.8,  6.9,  7.0,  7.1,  7.2,  7.3,  7.4,
    7.5,  7.6,  7.7,  7.8, 7.9, 8.0, 8.1, 8.2, 8.3, 8.4,  8.5,  8.6,  8.7,  8.8,  8.9,  9.0,
    9.1,  9.2,  9.3,  9.4, 9.5, 9.6, 9.7, 9.8, 9.9, 10.0, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6,
    10.7, 10.8, 10.9, 11,  12,  13,  14,  15,  16,  17,   18,   19,   20,   21,   22,   23,
    24,   25,   26,   27,  28,  29,  30,  31,  32,  33,   34,   35,   36,   37,   38,   39,
    40,   41,   42,   43,  44,  45,  46,  47,  48,  49,   50,   51,   52,   53,   54,   55,
    56,   57,   58,   59,  60,  61,  62,  63,  128, 256,  512,  1024};

#define MAX_ORDER 65536.0 /* the sums take O(alpha) terms; larger orders give no bound */
#define LOG_SQRT_2PI 0.91893853320467274178

/* log(e^a + e^b) */
static double log_add(double a, double b) {
    if (a < b) {
        double t = a;
        a = b, b = t;
    }
    return b == -INFINITY ? a : a + log1p(exp(b - a));
}

/* log(1 + e^x) */
static double softplus(double x) {
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* log Phi(x), Phi the standard normal CDF; below -37, where erfc underflows, the asymptotic
 * series phi(x)/(-x) (1 - 1/x^2 + 3/x^4 - ...), whose next term is below 1e-15 there */
static double log_ndtr(double x) {
    if (x > -37) return log(0.5 * erfc(-x / M_SQRT2));
    double r = 1 / (x * x), s = 1 - r * (1 - 3 * r * (1 - 5 * r * (1 - 7 * r * (1 - 9 * r))));
    return -0.5 * x * x - LOG_SQRT_2PI - log(-x) + log(s);
}

/* log(A - 1) for an integer order: the binomial weights C(a,i) q^i (1-q)^(a-i) sum to 1 and
 * E[L^i] = e^{c_i}, c_i = (i^2 - i) / (2 sigma^2), zero for i = 0, 1, so
 *   A - 1 = sum_{i=2}^{a} C(a,i) q^i (1-q)^(a-i) (e^{c_i} - 1),
 * every term positive: a log-sum-exp with no cancellation. */
static double log_am1_int(double q, double sigma, int a) {
    double lq = log(q), l1q = log1p(-q), s2 = 2 * sigma * sigma;
    double lb = log(a), acc = -INFINITY; /* lb = log C(a, i), from i = 1 */
    for (int i = 2; i <= a; i++) {
        lb += log((double)(a - i + 1) / i);
        double c = (double)i * (i - 1) / s2;
        acc = log_add(acc, lb + i * lq + (a - i) * l1q + c + log(-expm1(-c)));
    }
    return acc;
}

/* A sum of signed terms given as (log |t|, sign), kept as a multiple of e^scale so neither
 * e^700 terms nor 1e-300 ones leave the double range; with the last partial sums for the
 * Euler transform of an alternating tail. */
#define EULER_K 12
typedef struct {
    double scale, sum, abs_sum;
    double last[EULER_K + 1]; /* partial sums, newest last */
} scaled_sum;

static void ss_add(scaled_sum *s, double log_mag, int neg) {
    if (log_mag == -INFINITY) return;
    if (log_mag > s->scale) {
        double f = s->scale == -INFINITY ? 0 : exp(s->scale - log_mag);
        s->sum *= f, s->abs_sum *= f;
        for (int k = 0; k <= EULER_K; k++) s->last[k] *= f;
        s->scale = log_mag;
    }
    double v = exp(log_mag - s->scale);
    s->sum += neg ? -v : v;
    s->abs_sum += v;
}

static void ss_add_value(scaled_sum *s, double v) {
    if (v != 0) ss_add(s, log(fabs(v)), v < 0);
}

static void ss_push(scaled_sum *s) {
    memmove(s->last, s->last + 1, EULER_K * sizeof s->last[0]);
    s->last[EULER_K] = s->sum;
}

/* EULER_K rounds of averaging neighbouring partial sums: for an alternating series whose
 * terms shrink smoothly (here like i^-(a+2)) the error falls by a factor ~i per round */
static double ss_euler(const scaled_sum *s) {
    double e = 0, c = 1;
    for (int k = 0; k <= EULER_K; k++) {
        e += c * s->last[k];
        c = c * (EULER_K - k) / (k + 1);
    }
    return e / (double)(1 << EULER_K);
}

/* (1-q)^a - 1 + a q = sum_{k>=2} C(a,k) (-q)^k: the series while its terms stay below ~2
 * (a q <= 2), where the closed form would lose digits to the cancellation of its halves;
 * beyond, the result is at least a q - 1 and the closed form is accurate */
static double pow1mq_excess(double q, double a) {
    if (a * q > 2 || q > 0.75) return expm1(a * log1p(-q)) + a * q;
    double sum = 0, t = -a * q; /* t = C(a,k) (-q)^k, from k = 1 */
    for (int k = 2; k < 1000; k++) {
        t *= (a - k + 1) / k * -q;
        sum += t;
        if (fabs(t) <= 1e-18 * fabs(sum)) break;
    }
    return sum;
}

/* log(A - 1) for a fractional order (Mironov, Talwar, Zhang 2019, sec. 3.3). With
 * z0 = sigma^2 log(1/q - 1) + 1/2, where q L(z0) = 1 - q, expand (1 - q + qL)^a in powers of
 * qL / (1-q) below z0 and of (1-q) / (qL) above it; both converge:
 *   A = sum_i C(a,i) [(1-q)^(a-i) q^i e^{c(i)} Phi((z0-i)/s) + q^(a-i) (1-q)^i e^{c(a-i)}
 *                     Phi((a-i-z0)/s)],  c(j) = (j^2 - j) / (2 s^2), s = sigma.
 * A - 1 = E[(1+X)^a - 1 - aX] with X = q(L - 1) (E[X] = 0); subtracting 1 + aX's share from
 * each region leaves the i = 0, 1 terms of the first series as (1-q)^a - 1 + aq and
 * aq((1-q)^(a-1) - 1), each exact for small q, so A - 1 keeps its relative accuracy however
 * small it is. Past i = a + 1 the terms alternate in sign (C(a,i) does) and shrink only like
 * i^-(a+2): the sum is the Euler transform of the partial sums, run until it stops moving. */
static double log_am1_frac(double q, double sigma, double a) {
    double lq = log(q), l1q = log1p(-q), s2 = 2 * sigma * sigma;
    double z0 = sigma * sigma * (l1q - lq) + 0.5;
    scaled_sum s = {.scale = -INFINITY};
    ss_add_value(&s, pow1mq_excess(q, a) * exp(log_ndtr(z0 / sigma)));
    ss_add_value(&s, a * q * expm1((a - 1) * l1q) * exp(log_ndtr((z0 - 1) / sigma)));
    ss_add_value(&s, -(1 - a * q) * exp(log_ndtr(-z0 / sigma)));
    ss_add_value(&s, -a * q * exp(log_ndtr((1 - z0) / sigma)));
    double lb = 0, prev = NAN; /* lb = log |C(a, i)| */
    int neg = 0, alternating_from = (int)floor(a) + 2 + EULER_K;
    for (int i = 0; i < 100000; i++) {
        if (i > 0) {
            lb += log(fabs(a - i + 1) / i);
            neg ^= a - i + 1 < 0;
        }
        double j = a - i;
        if (i >= 2)
            ss_add(&s,
                   lb + i * lq + j * l1q + (i * (double)i - i) / s2 + log_ndtr((z0 - i) / sigma),
                   neg);
        ss_add(&s, lb + j * lq + i * l1q + (j * j - j) / s2 + log_ndtr((j - z0) / sigma), neg);
        ss_push(&s);
        if (i < alternating_from) continue;
        double e = ss_euler(&s);
        if (fabs(e - prev) <= 1e-17 * fabs(e) + 0.25 * DBL_EPSILON * s.abs_sum)
            /* A - 1 > 0; at or below the rounding noise, that noise bounds it */
            return s.scale + log(fmax(e, DBL_EPSILON * s.abs_sum));
        prev = e;
    }
    return INFINITY; /* not converged: no bound at this order */
}

double ax_dp_rdp(double q, double sigma, double alpha) {
    if (!(alpha > 1 && alpha <= MAX_ORDER)) return INFINITY;
    if (q <= 0) return 0;
    if (!(sigma > 0)) return INFINITY;
    if (q >= 1) return alpha / (2 * sigma * sigma);
    double l =
        alpha == floor(alpha) ? log_am1_int(q, sigma, (int)alpha) : log_am1_frac(q, sigma, alpha);
    return softplus(l) / (alpha - 1);
}

void ax_dp_rdp_orders(double q, double sigma, const double *orders, int n, double *rdp) {
    for (int i = 0; i < n; i++) rdp[i] = ax_dp_rdp(q, sigma, orders[i]);
}

double ax_dp_epsilon(const double *orders, const double *rdp, int n, double delta,
                     ax_dp_conversion conv, double *order) {
    double best = INFINITY, best_order = 0, ld = log(delta);
    for (int i = 0; i < n; i++) {
        double a = orders[i], r = rdp[i], e;
        if (!(r < INFINITY)) continue;
        if (conv == AX_DP_CLASSIC)
            e = r - ld / (a - 1);
        else if (delta * delta + expm1(-r) >= 0)
            e = 0;
        else
            e = r + log1p(-1 / a) - (ld + log(a)) / (a - 1);
        if (e < best) best = e, best_order = a;
    }
    if (order) *order = best_order;
    return fmax(best, 0);
}

double ax_dp_delta(const double *orders, const double *rdp, int n, double epsilon,
                   ax_dp_conversion conv, double *order) {
    double best = INFINITY, best_order = 0; /* log delta */
    for (int i = 0; i < n; i++) {
        double a = orders[i], r = rdp[i], l;
        if (!(r < INFINITY)) continue;
        if (conv == AX_DP_CLASSIC) {
            l = (a - 1) * (r - epsilon);
        } else {
            l = (a - 1) * (r - epsilon + log1p(-1 / a)) - log(a);
            l = fmin(l, r > 0 ? 0.5 * log(-expm1(-r)) : -INFINITY);
        }
        if (l < best) best = l, best_order = a;
    }
    if (order) *order = best_order;
    return fmin(exp(best), 1);
}

double ax_dp_epsilon_of(double q, double sigma, int64_t steps, double delta, ax_dp_conversion conv,
                        double *order) {
    double rdp[AX_DP_N_ORDERS];
    ax_dp_rdp_orders(q, sigma, ax_dp_orders, AX_DP_N_ORDERS, rdp);
    for (int i = 0; i < AX_DP_N_ORDERS; i++) rdp[i] *= (double)steps;
    return ax_dp_epsilon(ax_dp_orders, rdp, AX_DP_N_ORDERS, delta, conv, order);
}

ax_status ax_dp_noise_for(double q, int64_t steps, double epsilon, double delta,
                          ax_dp_conversion conv, double *sigma) {
    if (!(q > 0 && q <= 1) || steps < 1 || !(epsilon > 0) || !(delta > 0 && delta < 1))
        return ax_errorf(AX_ERR_ARG,
                         "the noise for a target needs 0 < q <= 1, steps >= 1, epsilon > 0 and "
                         "0 < delta < 1 (got q %g, %" PRId64 " steps, epsilon %g, delta %g)",
                         q, steps, epsilon, delta);
#define MEETS(s) (ax_dp_epsilon_of(q, (s), steps, delta, conv, NULL) <= epsilon)
    double lo, hi = 1;
    while (!MEETS(hi))
        if ((hi *= 2) > 1e6)
            return ax_errorf(AX_ERR_ARG,
                             "no noise multiplier up to 1e6 gives epsilon <= %g at delta %g after "
                             "%" PRId64 " steps at rate %g",
                             epsilon, delta, steps, q);
    for (lo = hi / 2; MEETS(lo); lo /= 2) {
        hi = lo;
        if (lo < 1e-6) break; /* any noise meets so loose a target */
    }
    while (hi - lo > AX_DP_SIGMA_RTOL * hi) {
        double mid = 0.5 * (lo + hi);
        if (MEETS(mid))
            hi = mid;
        else
            lo = mid;
    }
#undef MEETS
    *sigma = hi;
    return AX_OK;
}

/* ---------------------------------------------------------------- the run's accountant */

void ax_dp_acct_init(ax_dp_accountant *a) {
    memset(a, 0, sizeof *a);
}

void ax_dp_acct_free(ax_dp_accountant *a) {
    free(a->runs);
    memset(a, 0, sizeof *a);
}

ax_status ax_dp_acct_add(ax_dp_accountant *a, double q, double sigma, int64_t steps) {
    if (!(q >= 0 && q <= 1) || !(sigma >= 0 && sigma < INFINITY) || steps < 0 ||
        steps > INT64_MAX - a->steps)
        return ax_errorf(AX_ERR_ARG,
                         "privacy accountant: a step needs 0 <= q <= 1 and a finite sigma >= 0 "
                         "(got q %g, sigma %g, %" PRId64 " steps after %" PRId64 ")",
                         q, sigma, steps, a->steps);
    if (steps == 0) return AX_OK;
    ax_dp_run *last = a->n_runs ? &a->runs[a->n_runs - 1] : NULL;
    if (last && last->q == q && last->sigma == sigma) {
        last->steps += steps;
        a->steps += steps;
        return AX_OK;
    }
    if (a->n_runs == a->cap) {
        int cap = a->cap ? 2 * a->cap : 4;
        ax_dp_run *r = realloc(a->runs, (size_t)cap * sizeof *r);
        if (!r) return ax_errorf(AX_ERR_NOMEM, "privacy accountant: out of memory");
        a->runs = r, a->cap = cap;
        last = a->n_runs ? &a->runs[a->n_runs - 1] : NULL;
    }
    if (last)
        for (int k = 0; k < AX_DP_N_ORDERS; k++)
            a->closed[k] += (double)last->steps * a->per_step[k];
    ax_dp_rdp_orders(q, sigma, ax_dp_orders, AX_DP_N_ORDERS, a->per_step);
    a->runs[a->n_runs++] = (ax_dp_run){q, sigma, steps};
    a->steps += steps;
    return AX_OK;
}

void ax_dp_acct_rdp(const ax_dp_accountant *a, double rdp[AX_DP_N_ORDERS]) {
    double n = a->n_runs ? (double)a->runs[a->n_runs - 1].steps : 0; /* per_step is 0 then */
    for (int k = 0; k < AX_DP_N_ORDERS; k++) rdp[k] = a->closed[k] + n * a->per_step[k];
}

double ax_dp_acct_epsilon(const ax_dp_accountant *a, double delta, ax_dp_conversion conv,
                          double *order) {
    double rdp[AX_DP_N_ORDERS];
    ax_dp_acct_rdp(a, rdp);
    return ax_dp_epsilon(ax_dp_orders, rdp, AX_DP_N_ORDERS, delta, conv, order);
}

static void write_nums(ax_jw *w, const char *key, const double *v, int n) {
    ax_jw_key(w, key);
    ax_jw_arr_begin(w);
    for (int i = 0; i < n; i++) ax_jw_num(w, v[i]);
    ax_jw_arr_end(w);
}

void ax_dp_acct_write_json(const ax_dp_accountant *a, ax_jw *w) {
    double rdp[AX_DP_N_ORDERS];
    ax_dp_acct_rdp(a, rdp);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "steps");
    ax_jw_int(w, a->steps);
    ax_jw_key(w, "runs");
    ax_jw_arr_begin(w);
    for (int i = 0; i < a->n_runs; i++) {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "q");
        ax_jw_num(w, a->runs[i].q);
        ax_jw_key(w, "sigma");
        ax_jw_num(w, a->runs[i].sigma);
        ax_jw_key(w, "steps");
        ax_jw_int(w, a->runs[i].steps);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    write_nums(w, "orders", ax_dp_orders, AX_DP_N_ORDERS);
    write_nums(w, "rdp", rdp, AX_DP_N_ORDERS);
    ax_jw_obj_end(w);
}

/* 1 when the stored orders are this build's */
static int same_orders(const ax_json *v) {
    if (!v || v->type != AX_JSON_ARR || v->n != AX_DP_N_ORDERS) return 0;
    for (int k = 0; k < AX_DP_N_ORDERS; k++)
        if (v->items[k]->type != AX_JSON_NUM || v->items[k]->num != ax_dp_orders[k]) return 0;
    return 1;
}

ax_status ax_dp_acct_read_json(ax_dp_accountant *a, const ax_json *o, const char *what) {
    ax_dp_acct_init(a);
    const ax_json *runs = ax_json_get(o, "runs"), *stored = ax_json_get(o, "rdp");
    int64_t total;
    ax_status st = AX_OK;
    if (!runs || runs->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_CORRUPT, "%s: the privacy accountant has no \"runs\" list", what);
    AX_CHECK(ax_json_get_i64(o, "steps", what, &total));
    for (size_t i = 0; i < runs->n; i++) {
        double q, sigma;
        int64_t n;
        AX_CHECK_GOTO(ax_json_get_num(runs->items[i], "q", what, &q), fail);
        AX_CHECK_GOTO(ax_json_get_num(runs->items[i], "sigma", what, &sigma), fail);
        AX_CHECK_GOTO(ax_json_get_i64(runs->items[i], "steps", what, &n), fail);
        if (!(q >= 0 && q <= 1) || !(sigma >= 0 && sigma < INFINITY) || n < 1) {
            st = ax_errorf(AX_ERR_CORRUPT,
                           "%s: privacy accountant run %zu is not one (q %g, sigma %g, %" PRId64
                           " steps)",
                           what, i, q, sigma, n);
            goto fail;
        }
        AX_CHECK_GOTO(ax_dp_acct_add(a, q, sigma, n), fail);
    }
    if (a->steps != total) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: the privacy accountant counts %" PRId64 " steps, its runs %" PRId64,
                       what, total, a->steps);
        goto fail;
    }
    if (same_orders(ax_json_get(o, "orders")) && stored && stored->type == AX_JSON_ARR &&
        stored->n == AX_DP_N_ORDERS) {
        double rdp[AX_DP_N_ORDERS];
        ax_dp_acct_rdp(a, rdp);
        for (int k = 0; k < AX_DP_N_ORDERS; k++) {
            const ax_json *v = stored->items[k];
            if (v->type == AX_JSON_NULL
                    ? rdp[k] == INFINITY
                    : v->type == AX_JSON_NUM && fabs(v->num - rdp[k]) <= 1e-9 * fabs(rdp[k]))
                continue;
            st = ax_errorf(AX_ERR_CORRUPT,
                           "%s: the privacy accountant's RDP at order %g does not follow from its "
                           "runs",
                           what, ax_dp_orders[k]);
            goto fail;
        }
    }
    return AX_OK;
fail:
    ax_dp_acct_free(a);
    return st;
}
