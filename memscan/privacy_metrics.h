/* Privacy-attack metrics: membership-inference ROC statistics, per-document MIA
 * scores (zlib, min-k%, min-k%++) and canary exposure (Carlini et al., "The Secret Sharer").
 * Pure math on numbers the caller computed with a model: no model, no MPI, no files.
 *
 * Conventions shared by every function here:
 *  - scores: HIGHER = MORE LIKELY A MEMBER. A member/non-member classifier predicts "member"
 *    for score >= threshold. (Negate a loss before passing it: -loss is a score.)
 *  - mem[nm] are the members' scores, non[nn] the non-members'; the arrays are not modified.
 *  - log-probabilities are natural logs (nats); exposure is in bits.
 *  - scores must not be NaN: a caller drops (and counts) documents it could not score.
 *  - functions returning double return NAN when the statistic is undefined (an empty side) or
 *    their scratch allocation fails. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"
#include "memscan/skewnorm.h"

/* ---- ROC statistics ---- */

typedef struct {
    double fpr, tpr;
} ax_roc_point;

/* Area under the ROC curve = P(member score > non-member score) + 1/2 P(equal), the
 * Mann-Whitney statistic, by mid-ranks in O((nm+nn) log(nm+nn)). NAN if nm or nn is 0. */
double ax_roc_auc(const double *mem, long nm, const double *non, long nn);

/* 95% percentile-bootstrap interval of the AUC: `reps` replicates, each resampling the members
 * and the non-members separately with replacement (the sizes stay nm and nn), seeded by
 * `seed` only (same inputs and seed -> same interval). lo/hi are the replicate AUCs at sorted
 * positions floor(0.025 (reps-1)) and floor(0.975 (reps-1)), as ax_bootstrap_ci.
 * AX_ERR_ARG (message) if nm or nn is 0 or reps < 1; AX_ERR_NOMEM. */
ax_status ax_roc_auc_bootstrap(const double *mem, long nm, const double *non, long nn, int reps,
                               uint64_t seed, double *lo, double *hi);

/* The largest TPR over all thresholds t whose FPR = #{non >= t}/nn is <= fpr (t = +inf,
 * TPR 0, always qualifies). With k = floor(fpr*nn + 1e-9) false positives allowed and v the
 * (k+1)-th largest non-member score, that is #{mem > v}/nm (1 if k >= nn): a tie with v
 * cannot be taken without taking v. NAN if nm or nn is 0 or fpr is not in [0, 1]. */
double ax_tpr_at_fpr(const double *mem, long nm, const double *non, long nn, double fpr);

/* The fewest non-members that resolve a false positive rate of fpr: with nn of them a
 * threshold's FPR is a multiple of 1/nn, and below 1/fpr every threshold under the target
 * admits no false positive at all, so "TPR at fpr" would be the TPR at FPR 0. That is the
 * smallest nn with floor(fpr * nn + 1e-9) >= 1 (the count ax_tpr_at_fpr allows): 1000 for
 * 0.1%, 100 for 1%. 0 if fpr is not in (0, 1]. */
long ax_fpr_min_nonmembers(double fpr);

/* The ROC curve: one point per distinct score (thresholds from high to low), starting at
 * (0,0) and ending at (1,1); tied members and non-members move diagonally in one step, so
 * the trapezoid area under the points equals ax_roc_auc. *pts is malloc'd (free it), *npts
 * <= nm + nn + 1. AX_ERR_ARG if nm or nn is 0; AX_ERR_NOMEM. */
ax_status ax_roc_curve(const double *mem, long nm, const double *non, long nn, ax_roc_point **pts,
                       long *npts);

/* ---- per-document membership scores ---- */

/* The zlib level of the zlib attack and of the model-free compressibility score: zlib's
 * default (Z_DEFAULT_COMPRESSION means 6), which Python's zlib.compress uses when no level is
 * given, as in Carlini et al. 2021 and the MIA benchmarks that followed. */
#define AX_ZLIB_LEVEL 6

/* Length in bytes of zlib's compress2(text, AX_ZLIB_LEVEL) output (zlib header and Adler-32
 * included): Python's len(zlib.compress(text)). AX_ERR_NOMEM or AX_ERR_INTERNAL. */
ax_status ax_zlib_bytes(const void *text, size_t len, size_t *out);

/* The zlib ratio of Carlini et al. 2021 (as used by the MIA benchmarks): the document's mean
 * token loss (nats) over its zlib length in bytes. Text the model finds easier than its
 * compressibility suggests has a low ratio, so the SCORE is its negation: -loss / zlib_bytes.
 * NAN if zlib_bytes is 0. */
double ax_zlib_score(double mean_loss, size_t zlib_bytes);

/* The reference-model attack (Carlini et al. 2021): the ratio of the target model's mean loss
 * to a reference model's on the same document; text the target finds much easier than the
 * reference does is likely a member, so the SCORE is -loss / ref_loss. NAN if ref_loss <= 0. */
double ax_ref_ratio_score(double mean_loss, double ref_mean_loss);

/* Per-position statistics of one next-token distribution, from a row of raw logits[V]
 * (log-softmax in double): logp = log p(target); mu = E_z[log p(z)], sigma = sqrt(Var_z[log
 * p(z)]) under z ~ p (min-k%++, Zhang et al. 2024). target must be in [0, V). */
void ax_token_logp_stats(const float *logits, long V, int32_t target, double *logp, double *mu,
                         double *sigma);

/* Min-k% prob (Shi et al. 2024): the mean of the lowest c = max(1, floor(k_frac*n + 1e-9))
 * values of logp[n] (the log-probabilities of the document's actual tokens). Higher =
 * member. NAN if n is 0 or k_frac is not in (0, 1]. */
double ax_min_k_prob(const double *logp, long n, double k_frac);

/* Min-k%++: the same mean over the lowest c of z_i = (logp_i - mu_i) / sigma_i (mu, sigma
 * from ax_token_logp_stats). A position whose distribution is a point mass (sigma = 0) has
 * z = 0. NAN as ax_min_k_prob. */
double ax_min_k_pp(const double *logp, const double *mu, const double *sigma, long n,
                   double k_frac);

/* ---- canary exposure ---- */

/* Rank of a secret among candidates by log-likelihood, 1 = most likely, as Carlini et al. 2019
 * define it (the secret's position when the candidates are sorted by log-perplexity, every
 * candidate at least as likely ahead of it): 1 + #{ref >= secret}. Ties count against the
 * secret: a model that cannot tell the secret from k others gives it rank k + 1. */
double ax_exposure_rank(const double *ref_loglik, long n, double secret_loglik);

/* Exposure = log2(n_space) - log2(rank), for rank in [1, n_space]; NAN otherwise. With the
 * exact rank (every other candidate of the space enumerated, n_space = n + 1) this is the
 * Secret Sharer's exposure. */
double ax_exposure_from_rank(double rank, double n_space);

/* The estimate when the space is too big to enumerate (Carlini et al. 2019, sec. 4.3): a
 * skew-normal fitted by maximum likelihood (memscan/skewnorm.h) to the n >= 3 sampled
 * candidates' log-perplexities (-ref_loglik). AX_ERR_ARG (message) if n < 3 or the values are
 * all equal. */
ax_status ax_exposure_fit(const double *ref_loglik, long n, ax_skewnorm *fit);

/* The secret's rank estimated as n_space P(X <= its log-perplexity) under the fit, clamped to
 * [1, n_space], and its exposure from that rank: -log2 P, clamped to [0, log2 n_space]. The
 * tail is computed in logs, so it stays exact far below 1 / n_space. NAN if n_space < 1. */
double ax_exposure_from_fit(const ax_skewnorm *fit, double secret_loglik, double n_space);

/* Both: fit the references, then ax_exposure_from_fit. AX_ERR_ARG as ax_exposure_fit, or if
 * n_space < 1. */
ax_status ax_exposure_estimate(const double *ref_loglik, long n, double secret_loglik,
                               double n_space, double *exposure);
