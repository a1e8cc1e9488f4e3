/* The skew-normal distribution: see skewnorm.h. */
#include "memscan/skewnorm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_SQRT_2PI 0.91893853320467274178 /* log sqrt(2 pi) */

double ax_log_norm_cdf(double x) {
    if (x > 5) return log1p(-0.5 * erfc(x / M_SQRT2));
    if (x > -37) return log(0.5 * erfc(-x / M_SQRT2));
    /* Phi(x) = phi(x)/(-x) (1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8 - 945/x^10 ...): the next term
     * is below 1e-15 of the sum here */
    double r = 1 / (x * x), s = 1 - r * (1 - 3 * r * (1 - 5 * r * (1 - 7 * r * (1 - 9 * r))));
    return -0.5 * x * x - LOG_SQRT_2PI - log(-x) + log(s);
}

/* log of the standard density 2 phi(z) Phi(alpha z), and its derivative in z */
static double ell(double alpha, double z) {
    return M_LN2 - 0.5 * z * z - LOG_SQRT_2PI + ax_log_norm_cdf(alpha * z);
}

static double ell_slope(double alpha, double z) {
    double az = alpha * z; /* phi(az) / Phi(az), in logs so it stays finite far out */
    return -z + alpha * exp(-0.5 * az * az - LOG_SQRT_2PI - ax_log_norm_cdf(az));
}

double ax_skewnorm_logpdf(const ax_skewnorm *s, double x) {
    return ell(s->alpha, (x - s->xi) / s->omega) - log(s->omega);
}

double ax_skewnorm_nll(const ax_skewnorm *s, const double *x, long n) {
    double a = 0;
    for (long i = 0; i < n; i++) a += ell(s->alpha, (x[i] - s->xi) / s->omega);
    return (double)n * log(s->omega) - a;
}

/* ---------------------------------------------------------------- the tail integral */

/* Gauss-Kronrod 7/15 (the QUADPACK nodes): Kronrod nodes x[0..7] (x[7] = 0), their weights,
 * and the Gauss weights of the odd nodes x[1], x[3], x[5], x[7] */
static const double GK_X[8] = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0};
static const double GK_W[8] = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
static const double G_W[4] = {
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

/* exp(ell(z + dir u) - ell(z)): the density along one side of z, scaled by its value at z */
typedef struct {
    double alpha, z, ez;
    int dir;
} side;

static double side_log(const side *s, double u) {
    return ell(s->alpha, s->z + s->dir * u) - s->ez;
}

static void gk15(const side *s, double a, double b, double *res, double *err) {
    double c = 0.5 * (a + b), h = 0.5 * (b - a), k = 0, g = 0;
    for (int i = 0; i < 8; i++) {
        double f = exp(side_log(s, c - h * GK_X[i]));
        if (i < 7) f += exp(side_log(s, c + h * GK_X[i]));
        k += GK_W[i] * f;
        if (i % 2) g += G_W[i / 2] * f;
    }
    *res = k * h;
    *err = fabs(k - g) * h;
}

#define MAX_PIECES 400

/* log of the integral over u in [0, inf) of the scaled density: the integrand is log-concave
 * (so is the skew-normal density), so pieces [0, h], [h, 2h], [2h, 4h], ... out to where it has
 * fallen e^-60 below its largest value and is falling cover it; h is the scale of its decay at 0.
 * Then the piece with the largest error is halved until the total error is below 1e-14 of the
 * total. */
static double log_side_integral(const side *s) {
    double a[MAX_PIECES], b[MAX_PIECES], r[MAX_PIECES], e[MAX_PIECES];
    double slope = fabs(ell_slope(s->alpha, s->z)), h = 1 / (slope > 1 ? slope : 1);
    int n = 0;
    double lo = 0, hi = h, top = 0, prev = 0; /* the integrand is 1 (log 0) at u = 0 */
    while (n < MAX_PIECES / 2) {
        a[n] = lo, b[n] = hi;
        gk15(s, lo, hi, &r[n], &e[n]);
        n++;
        double v = side_log(s, hi);
        if (v > top) top = v;
        if (v < top - 60 && v < prev) break;
        prev = v, lo = hi, hi *= 2;
    }
    for (;;) {
        double tot = 0, err = 0;
        int worst = 0;
        for (int i = 0; i < n; i++) {
            tot += r[i], err += e[i];
            if (e[i] > e[worst]) worst = i;
        }
        if (err <= 1e-14 * tot || n == MAX_PIECES) return log(tot);
        double m = 0.5 * (a[worst] + b[worst]);
        a[n] = m, b[n] = b[worst], b[worst] = m;
        gk15(s, a[worst], b[worst], &r[worst], &e[worst]);
        gk15(s, a[n], b[n], &r[n], &e[n]);
        n++;
    }
}

double ax_skewnorm_log_cdf(const ax_skewnorm *s, double x) {
    double z = (x - s->xi) / s->omega;
    if (z == -INFINITY) return -INFINITY;
    if (z == INFINITY) return 0;
    side lower = {s->alpha, z, ell(s->alpha, z), -1};
    if (ell_slope(s->alpha, z) >= 0) /* left of the mode: the lower tail directly */
        return lower.ez + log_side_integral(&lower);
    side upper = lower;
    upper.dir = 1;
    double q = exp(upper.ez + log_side_integral(&upper)); /* P(Z > z) */
    if (q <= 0.75) return log1p(-q);
    /* right of the mode yet little mass below (a large shape): integrate the lower side too */
    return lower.ez + log_side_integral(&lower);
}

/* ---------------------------------------------------------------- the fit */

typedef struct {
    const double *y;
    long n;
} fit_data;

/* the negative log-likelihood of the standardized data at (xi, log omega, alpha) */
static double objective(const fit_data *d, const double p[3]) {
    if (!(fabs(p[2]) <= AX_SKEWNORM_MAX_SHAPE) || !(fabs(p[1]) < 50)) return INFINITY;
    ax_skewnorm s = {p[0], exp(p[1]), p[2]};
    double v = ax_skewnorm_nll(&s, d->y, d->n);
    return isfinite(v) ? v : INFINITY;
}

/* Nelder-Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2) from p with the given
 * step per coordinate, until the simplex's values agree to 1e-13 (relative) and its vertices to
 * 1e-10; p and *f are the best vertex */
static void nelder_mead(const fit_data *d, double p[3], const double step[3], double *f) {
    double v[4][3], fv[4];
    for (int i = 0; i < 4; i++) {
        memcpy(v[i], p, sizeof v[i]);
        if (i) v[i][i - 1] += step[i - 1];
        fv[i] = objective(d, v[i]);
    }
    for (int it = 0; it < 20000; it++) {
        for (int i = 1; i < 4; i++) /* sort: v[0] best, v[3] worst */
            for (int j = i; j > 0 && fv[j] < fv[j - 1]; j--) {
                double t[3], ft = fv[j];
                memcpy(t, v[j], sizeof t), memcpy(v[j], v[j - 1], sizeof t);
                memcpy(v[j - 1], t, sizeof t), fv[j] = fv[j - 1], fv[j - 1] = ft;
            }
        double spread = 0;
        for (int i = 1; i < 4; i++)
            for (int k = 0; k < 3; k++) spread = fmax(spread, fabs(v[i][k] - v[0][k]));
        if (fv[3] - fv[0] <= 1e-13 * (fabs(fv[0]) + 1) && spread <= 1e-10) break;
        double c[3] = {0}, r[3], e[3], k[3];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) c[j] += v[i][j] / 3;
        for (int j = 0; j < 3; j++) r[j] = c[j] + (c[j] - v[3][j]);
        double fr = objective(d, r);
        if (fr < fv[0]) {
            for (int j = 0; j < 3; j++) e[j] = c[j] + 2 * (c[j] - v[3][j]);
            double fe = objective(d, e);
            if (fe < fr)
                memcpy(v[3], e, sizeof e), fv[3] = fe;
            else
                memcpy(v[3], r, sizeof r), fv[3] = fr;
            continue;
        }
        if (fr < fv[2]) {
            memcpy(v[3], r, sizeof r), fv[3] = fr;
            continue;
        }
        int outside = fr < fv[3]; /* contract toward the better of r and the worst vertex */
        for (int j = 0; j < 3; j++) k[j] = c[j] + 0.5 * ((outside ? r[j] : v[3][j]) - c[j]);
        double fk = objective(d, k);
        if (fk < (outside ? fr : fv[3])) {
            memcpy(v[3], k, sizeof k), fv[3] = fk;
            continue;
        }
        for (int i = 1; i < 4; i++) {
            for (int j = 0; j < 3; j++) v[i][j] = v[0][j] + 0.5 * (v[i][j] - v[0][j]);
            fv[i] = objective(d, v[i]);
        }
    }
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (fv[i] < fv[best]) best = i;
    memcpy(p, v[best], sizeof v[best]);
    *f = fv[best];
}

ax_status ax_skewnorm_fit(const double *x, long n, ax_skewnorm *out) {
    if (n < 3)
        return ax_errorf(AX_ERR_ARG, "a skew-normal fit needs at least 3 values (got %ld)", n);
    double m = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return ax_errorf(AX_ERR_ARG, "a skew-normal fit: value %ld is not finite", i);
        m += x[i];
    }
    m /= (double)n;
    double m2 = 0, m3 = 0;
    for (long i = 0; i < n; i++) {
        double t = x[i] - m;
        m2 += t * t, m3 += t * t * t;
    }
    m2 /= (double)n, m3 /= (double)n;
    double sd = sqrt(m2);
    if (!(sd > 1e-300 && sd > 1e-14 * fabs(m)))
        return ax_errorf(AX_ERR_ARG,
                         "a skew-normal fit: all %ld values are equal, so no distribution can "
                         "be fitted",
                         n);
    double *y = malloc(sizeof *y * (size_t)n);
    if (!y) return ax_errorf(AX_ERR_NOMEM, "out of memory fitting %ld values", n);
    for (long i = 0; i < n; i++) y[i] = (x[i] - m) / sd;
    /* method of moments on the standardized data: skewness -> delta -> alpha, omega, xi */
    double g = m3 / (m2 * sd), ag = fmin(fabs(g), 0.99), g23 = pow(ag, 2.0 / 3);
    double delta = copysign(sqrt(M_PI / 2 * g23 / (g23 + pow((4 - M_PI) / 2, 2.0 / 3))), g);
    double omega = 1 / sqrt(1 - 2 * delta * delta / M_PI);
    double p[3] = {-omega * delta * sqrt(2 / M_PI), log(omega), delta / sqrt(1 - delta * delta)};
    double step[3] = {0.2, 0.2, fmax(0.5, 0.2 * fabs(p[2]))}, f = INFINITY;
    fit_data d = {y, n};
    for (int restart = 0; restart < 10; restart++) { /* a collapsed simplex can stall early */
        double before = f;
        nelder_mead(&d, p, step, &f);
        if (restart && before - f <= 1e-12 * (fabs(f) + 1)) break;
        step[0] = step[1] = 0.05, step[2] = 0.1;
    }
    free(y);
    *out = (ax_skewnorm){m + sd * p[0], sd * exp(p[1]), p[2]};
    return AX_OK;
}
