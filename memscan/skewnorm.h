/* The skew-normal distribution (Azzalini 1985) that Carlini et al. 2019 ("The Secret Sharer",
 * sec. 4.3) fit to the log-perplexities of a canary format's candidates to estimate a secret's
 * rank when the space is too large to enumerate. Pure math, no model.
 *
 * X = xi + omega Z, Z with density 2 phi(z) Phi(alpha z) (phi, Phi: the standard normal's
 * density and CDF); location xi, scale omega > 0, shape alpha (0: the normal). Everything is
 * computed in logs so that far tails (the ones exposure needs: a 10^12-string space asks for
 * probabilities near 1e-12) keep their relative accuracy. */
#pragma once
#include "lib/core/status.h"

/* The fit bounds |alpha| here: where a sample's skewness is at or past the family's maximum
 * (~0.995) the likelihood keeps rising as alpha grows without bound (Azzalini and Arellano-Valle
 * 2013), and at 50 the density is already within 1e-3 of the half-normal limit. */
#define AX_SKEWNORM_MAX_SHAPE 50.0

typedef struct {
    double xi, omega, alpha;
} ax_skewnorm;

/* log Phi(x) for every finite x: relative accuracy near 1e-15 for Phi(x) down to the smallest
 * x (an asymptotic series below x = -37, where erfc underflows). */
double ax_log_norm_cdf(double x);

/* log of the density at x. */
double ax_skewnorm_logpdf(const ax_skewnorm *s, double x);

/* log P(X <= x): the density integrated numerically away from the mode (adaptive
 * Gauss-Kronrod on the density scaled by its value at x), never as Phi(z) - 2 T(z, alpha),
 * whose difference loses every digit in the lower tail. Relative accuracy ~1e-12 for the
 * probability however small (tested down to 1e-300 against 50-digit quadrature). */
double ax_skewnorm_log_cdf(const ax_skewnorm *s, double x);

/* Negative log-likelihood of x[n] (nats). */
double ax_skewnorm_nll(const ax_skewnorm *s, const double *x, long n);

/* Maximum-likelihood fit to x[n]: the data are standardized (mean 0, sd 1), Nelder-Mead runs on
 * (xi, log omega, alpha) from the method-of-moments estimate (the sample skewness clamped to
 * +-0.99), |alpha| <= AX_SKEWNORM_MAX_SHAPE, restarted from its best point until a restart no
 * longer improves the likelihood, and the result mapped back. Deterministic. AX_ERR_ARG
 * (message) if n < 3 or the values are all equal or not finite. */
ax_status ax_skewnorm_fit(const double *x, long n, ax_skewnorm *out);
