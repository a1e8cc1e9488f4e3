/* Privacy accountant for DP-SGD: Renyi differential privacy (RDP) of the Poisson-subsampled
 * Gaussian mechanism (Mironov, Talwar, Zhang 2019), composed over steps and converted to
 * (epsilon, delta).
 *
 * One step samples every example independently with probability q and adds N(0, sigma^2 C^2)
 * noise to the sum of gradients clipped to norm C; sigma is the noise multiplier. Neighbouring
 * datasets differ by adding or removing one example. The RDP of one step at order alpha > 1 is
 *   rdp(alpha) = log(A_alpha) / (alpha - 1),  A_alpha = E_{z ~ N(0, sigma^2)}[(1 - q + q
 * L(z))^alpha] with L(z) = exp((2z - 1) / (2 sigma^2)), the likelihood ratio of N(1, sigma^2) to
 * N(0, sigma^2). Composition adds RDP order by order; epsilon minimises a conversion over the
 * orders.
 *
 * Accuracy: rdp is log1p(A_alpha - 1) with A_alpha - 1 summed directly (never 1 + tiny - 1), so
 * it keeps ~1e-12 relative accuracy (against 30-digit quadrature of the definition, q 1e-5 to
 * 0.9, sigma 0.5 to 10, orders 1.1 to 1024: worst 5e-13) where the log-space sums of Opacus and
 * TF Privacy keep ~1e-5 at q = 1e-5 (harmless for epsilon, which such orders never set).
 * Integer orders: the finite binomial expansion; fractional ones: the two convergent series of
 * Mironov et al. sec. 3.3 summed to the end (their alternating tails accelerated by repeated
 * averaging), not truncated at e^-30. */
#pragma once
#include <stdint.h>

#include "lib/core/json.h"
#include "lib/core/status.h"

/* The default orders, those of Google's dp_accounting (its RdpAccountant): 1.1, 1.2, ...,
 * 10.9, then 11, 12, ..., 63, then 128, 256, 512, 1024. A superset of Opacus' and TF
 * Privacy's defaults (which lack 11 and the four large orders). */
#define AX_DP_N_ORDERS 156
extern const double ax_dp_orders[AX_DP_N_ORDERS];

/* RDP -> (epsilon, delta), per order alpha, the smallest over the orders:
 * TIGHT    eps = rdp + log((alpha-1)/alpha) - (log(delta) + log(alpha)) / (alpha-1)
 *          (Balle et al. 2020 Thm 21, Canonne-Kamath-Steinke 2020 Prop 12; what Opacus >= 1.0
 *          and dp_accounting use), and eps = 0 where delta >= sqrt(1 - exp(-rdp)) (the KL bound
 *          dp_accounting also applies, since KL <= rdp at every order above 1);
 * CLASSIC  eps = rdp - log(delta) / (alpha-1) (Mironov 2017 Prop 3; Abadi et al.'s moments
 *          accountant, TF Privacy before 2020, Opacus before 1.0): looser, for reproducing the
 *          figures published with it. */
typedef enum { AX_DP_TIGHT, AX_DP_CLASSIC } ax_dp_conversion;

/* RDP of one step at order alpha > 1: 0 when q = 0, alpha / (2 sigma^2) when q = 1, +inf
 * when sigma = 0 (and q > 0). Needs 0 <= q <= 1, sigma >= 0. */
double ax_dp_rdp(double q, double sigma, double alpha);
/* rdp[i] = ax_dp_rdp(q, sigma, orders[i]) */
void ax_dp_rdp_orders(double q, double sigma, const double *orders, int n, double *rdp);

/* The smallest epsilon over the n orders for this delta (0 < delta < 1), never negative, and
 * the order that gives it (*order may be NULL; 0 when every rdp is inf: epsilon +inf). */
double ax_dp_epsilon(const double *orders, const double *rdp, int n, double delta,
                     ax_dp_conversion conv, double *order);
/* The smallest delta over the orders for this epsilon >= 0 (the inverse of ax_dp_epsilon),
 * at most 1. */
double ax_dp_delta(const double *orders, const double *rdp, int n, double epsilon,
                   ax_dp_conversion conv, double *order);

/* Epsilon of `steps` steps at a constant (q, sigma), on the default orders. */
double ax_dp_epsilon_of(double q, double sigma, int64_t steps, double delta, ax_dp_conversion conv,
                        double *order);

/* The noise multiplier for a target (epsilon, delta) after `steps` steps at rate q, on the
 * default orders: bisection on sigma (epsilon falls as sigma grows) down to a relative width
 * of AX_DP_SIGMA_RTOL, returning the upper end, so the sigma returned always meets the
 * target (its epsilon <= the target) and exceeds the least sigma that does by at most that
 * fraction. Fails (AX_ERR_ARG) when no sigma up to 1e6 meets the target. */
#define AX_DP_SIGMA_RTOL 1e-10
ax_status ax_dp_noise_for(double q, int64_t steps, double epsilon, double delta,
                          ax_dp_conversion conv, double *sigma);

/* ---- the accountant a training run keeps ----
 * Its history is a list of runs of steps at a constant (q, sigma); its RDP is a function of
 * that list alone, computed the same way whether the list grew step by step or was read back
 * from a checkpoint, so a resumed run continues epsilon bit for bit. */
typedef struct {
    double q, sigma;
    int64_t steps;
} ax_dp_run;

typedef struct {
    ax_dp_run *runs; /* oldest first; consecutive runs differ in q or sigma */
    int n_runs, cap;
    int64_t steps;                   /* all runs */
    double closed[AX_DP_N_ORDERS];   /* RDP of every run but the last */
    double per_step[AX_DP_N_ORDERS]; /* RDP of one step of the last run */
} ax_dp_accountant;

void ax_dp_acct_init(ax_dp_accountant *a);
void ax_dp_acct_free(ax_dp_accountant *a);
/* Accounts `steps` more steps at (q, sigma) (extending the last run when they match it). */
ax_status ax_dp_acct_add(ax_dp_accountant *a, double q, double sigma, int64_t steps);
/* The composed RDP at the default orders. */
void ax_dp_acct_rdp(const ax_dp_accountant *a, double rdp[AX_DP_N_ORDERS]);
double ax_dp_acct_epsilon(const ax_dp_accountant *a, double delta, ax_dp_conversion conv,
                          double *order);
/* {"steps": N, "runs": [{"q", "sigma", "steps"}...], "orders": [...], "rdp": [...]}: the
 * history, and the composed RDP for readers without this code (numbers round-trip exactly;
 * an infinite rdp is null). */
void ax_dp_acct_write_json(const ax_dp_accountant *a, ax_jw *w);
/* Rebuilds *a (initialised by this call) from write_json's object by replaying its runs;
 * checks that the replayed RDP agrees with the stored one (to 1e-9 relative; exactly, on the
 * build that wrote it) when the orders match. Errors name `what`. */
ax_status ax_dp_acct_read_json(ax_dp_accountant *a, const ax_json *o, const char *what);
