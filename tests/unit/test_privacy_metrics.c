/* Privacy-attack metrics (memscan/privacy_metrics.h) against hand-worked examples and brute
 * force: AUC by an O(nm*nn) pair count, TPR at a fixed FPR by trying every threshold, the ROC
 * curve's area, the bootstrap interval, zlib lengths worked out from the deflate format and
 * equal to Python's zlib.compress, the FPRs a number of non-members resolves,
 * min-k% and min-k%++ on a logit table softmaxed by hand, exposure by enumeration. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"
#include "memscan/privacy_metrics.h"

/* ---- brute-force references ---- */

static double auc_pairs(const double *m, long nm, const double *n, long nn) {
    double c = 0;
    for (long i = 0; i < nm; i++)
        for (long j = 0; j < nn; j++) c += m[i] > n[j] ? 1 : m[i] == n[j] ? 0.5 : 0;
    return c / ((double)nm * (double)nn);
}

/* every candidate threshold (each score, and +inf): the largest TPR whose FPR <= target */
static double tpr_brute(const double *m, long nm, const double *n, long nn, double target) {
    double best = 0;
    for (long t = 0; t < nm + nn; t++) {
        double th = t < nm ? m[t] : n[t - nm];
        long fp = 0, tp = 0;
        for (long j = 0; j < nn; j++) fp += n[j] >= th;
        for (long i = 0; i < nm; i++) tp += m[i] >= th;
        if ((double)fp <= target * (double)nn + 1e-9 && (double)tp / nm > best)
            best = (double)tp / nm;
    }
    return best;
}

/* scores on a coarse grid, so ties between and within the sides are common */
static void tie_scores(double *x, long n, uint64_t seed, uint64_t stream, int levels,
                       double shift) {
    for (long i = 0; i < n; i++)
        x[i] = (double)ax_rng_below(seed, stream, (uint64_t)i, (uint64_t)levels) + shift;
}

/* ---- ROC ---- */

Test(privacy_metrics, auc_hand_worked_with_a_tie) {
    double mem[] = {3, 2}, non[] = {1, 2};
    /* pairs: 3>1, 3>2, 2>1, 2=2 (half) -> 3.5 / 4 */
    cr_assert_float_eq(ax_roc_auc(mem, 2, non, 2), 0.875, 1e-15);
    cr_assert_float_eq(ax_roc_auc(non, 2, mem, 2), 0.125, 1e-15);
    double same[] = {5, 5, 5};
    cr_assert_float_eq(ax_roc_auc(same, 3, same, 2), 0.5, 1e-15);
    cr_assert(isnan(ax_roc_auc(mem, 0, non, 2)));
    cr_assert(isnan(ax_roc_auc(mem, 2, non, 0)));
}

Test(privacy_metrics, auc_equals_pair_count_on_tied_random_scores) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        long nm = 1 + (long)ax_rng_below(seed, 9, 0, 60),
             nn = 1 + (long)ax_rng_below(seed, 9, 1, 60);
        double m[60], n[60];
        tie_scores(m, nm, seed, 1, 7, 0.5 * (double)(seed % 3)); /* shifted: AUC away from 1/2 */
        tie_scores(n, nn, seed, 2, 7, 0);
        cr_assert_float_eq(ax_roc_auc(m, nm, n, nn), auc_pairs(m, nm, n, nn), 1e-12, "seed %lu",
                           (unsigned long)seed);
    }
}

Test(privacy_metrics, tpr_at_fpr_hand_worked) {
    /* non-members 0..9; members 8, 9, 9.5, 10 (two ties with non-members) */
    double non[10], mem[] = {8, 9, 9.5, 10};
    for (int i = 0; i < 10; i++) non[i] = i;
    /* FPR 0: the threshold must be above 9, so 9.5 and 10 only: TPR 1/2 */
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 4, non, 10, 0.0), 0.5, 1e-15);
    /* FPR 0.1 (1 false positive, the 9): threshold 9 -> 9, 9.5, 10; the member at 8 would
     * admit the non-member 8 too */
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 4, non, 10, 0.1), 0.75, 1e-15);
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 4, non, 10, 0.15), 0.75, 1e-15);
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 4, non, 10, 0.2), 1.0, 1e-15);
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 4, non, 10, 1.0), 1.0, 1e-15);
    cr_assert(isnan(ax_tpr_at_fpr(mem, 4, non, 10, -0.1)));
    cr_assert(isnan(ax_tpr_at_fpr(mem, 0, non, 10, 0.1)));
}

Test(privacy_metrics, tpr_at_low_fpr_on_constructed_scores) {
    /* 1000 non-members at 0..999; members: 3 above every non-member, 7 between the 2nd and
     * 10th largest non-member, the rest low. 0.1% FPR allows 1 false positive (998 is the
     * 2nd largest: members > 998 count); 1% allows 10 (members > 989). */
    static double non[1000], mem[100];
    for (int i = 0; i < 1000; i++) non[i] = i;
    for (int i = 0; i < 100; i++) mem[i] = i < 3 ? 1000 + i : i < 10 ? 990.5 + (i - 3) : i;
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 100, non, 1000, 0.001), 0.03, 1e-15);
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 100, non, 1000, 0.01), 0.10, 1e-15);
    /* a member tied with the 2nd largest non-member cannot be taken at 0.1% */
    mem[3] = 998;
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 100, non, 1000, 0.001), 0.03, 1e-15);
    mem[3] = 998.5;
    cr_assert_float_eq(ax_tpr_at_fpr(mem, 100, non, 1000, 0.001), 0.04, 1e-15);
}

Test(privacy_metrics, tpr_at_fpr_equals_every_threshold_tried) {
    const double fprs[] = {0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.99, 1};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        long nm = 1 + (long)ax_rng_below(seed, 9, 0, 80),
             nn = 1 + (long)ax_rng_below(seed, 9, 1, 80);
        double m[80], n[80];
        tie_scores(m, nm, seed, 3, 9, 1);
        tie_scores(n, nn, seed, 4, 9, 0);
        for (size_t f = 0; f < sizeof fprs / sizeof fprs[0]; f++)
            cr_assert_float_eq(ax_tpr_at_fpr(m, nm, n, nn, fprs[f]),
                               tpr_brute(m, nm, n, nn, fprs[f]), 1e-12, "seed %lu fpr %g",
                               (unsigned long)seed, fprs[f]);
    }
}

/* The fewest non-members with a threshold whose FPR is nonzero and <= the target: the smallest
 * n with floor(target n) >= 1, found by counting up; one fewer leaves ax_tpr_at_fpr only the
 * threshold above every non-member (its TPR at FPR 0). */
Test(privacy_metrics, fpr_resolution_needs_one_over_fpr_nonmembers) {
    cr_assert_eq(ax_fpr_min_nonmembers(0.001), 1000);
    cr_assert_eq(ax_fpr_min_nonmembers(0.01), 100);
    cr_assert_eq(ax_fpr_min_nonmembers(0.05), 20);
    cr_assert_eq(ax_fpr_min_nonmembers(0.3), 4); /* 3 x 0.3 < 1 <= 4 x 0.3 */
    cr_assert_eq(ax_fpr_min_nonmembers(1), 1);
    cr_assert_eq(ax_fpr_min_nonmembers(0), 0);
    cr_assert_eq(ax_fpr_min_nonmembers(1.5), 0);
    const double fprs[] = {0.001, 0.01, 0.02, 0.07, 0.1, 0.25, 0.3, 0.5};
    for (size_t f = 0; f < sizeof fprs / sizeof fprs[0]; f++) {
        long n = 1;
        while (floor(fprs[f] * (double)n + 1e-9) < 1) n++;
        cr_expect_eq(ax_fpr_min_nonmembers(fprs[f]), n, "fpr %g", fprs[f]);
        /* below it: members above every non-member, the same as at FPR 0 */
        double non[1000], mem[3] = {0.5, 2, 3};
        for (long j = 0; j < n - 1; j++) non[j] = (double)j / (double)n;
        if (n > 1)
            cr_expect_eq(ax_tpr_at_fpr(mem, 3, non, n - 1, fprs[f]),
                         ax_tpr_at_fpr(mem, 3, non, n - 1, 0), "fpr %g", fprs[f]);
    }
}

Test(privacy_metrics, roc_curve_hand_worked_and_area_is_auc) {
    double mem[] = {3, 2}, non[] = {1, 2};
    ax_roc_point *p;
    long np;
    cr_assert_eq(ax_roc_curve(mem, 2, non, 2, &p, &np), AX_OK);
    /* thresholds 3, 2 (a member and a non-member tied: one diagonal step), 1 */
    const ax_roc_point want[] = {{0, 0}, {0, 0.5}, {0.5, 1}, {1, 1}};
    cr_assert_eq(np, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(p[i].fpr == want[i].fpr && p[i].tpr == want[i].tpr, "point %d (%g, %g)", i,
                  p[i].fpr, p[i].tpr);
    free(p);
    for (uint64_t seed = 1; seed <= 10; seed++) {
        double m[50], n[40];
        tie_scores(m, 50, seed, 5, 11, 1.5);
        tie_scores(n, 40, seed, 6, 11, 0);
        cr_assert_eq(ax_roc_curve(m, 50, n, 40, &p, &np), AX_OK);
        cr_assert(p[0].fpr == 0 && p[0].tpr == 0 && p[np - 1].fpr == 1 && p[np - 1].tpr == 1);
        double area = 0;
        for (long i = 1; i < np; i++) {
            cr_assert(p[i].fpr >= p[i - 1].fpr && p[i].tpr >= p[i - 1].tpr, "not monotone");
            area += (p[i].fpr - p[i - 1].fpr) * (p[i].tpr + p[i - 1].tpr) / 2;
        }
        cr_assert_float_eq(area, auc_pairs(m, 50, n, 40), 1e-12);
        free(p);
    }
    cr_assert_eq(ax_roc_curve(mem, 0, non, 2, &p, &np), AX_ERR_ARG);
}

Test(privacy_metrics, auc_bootstrap_interval) {
    /* members ~ N(1, 1), non-members ~ N(0, 1): AUC = Phi(1/sqrt 2) = 0.76 */
    static double m[300], n[300];
    for (int i = 0; i < 300; i++) {
        m[i] = 1 + ax_rng_normal(11, 1, (uint64_t)i);
        n[i] = ax_rng_normal(11, 2, (uint64_t)i);
    }
    double auc = ax_roc_auc(m, 300, n, 300), lo, hi, lo2, hi2;
    cr_assert(auc > 0.68 && auc < 0.84, "auc %g", auc);
    cr_assert_eq(ax_roc_auc_bootstrap(m, 300, n, 300, 1000, 5, &lo, &hi), AX_OK);
    cr_assert(lo < auc && auc < hi, "[%g, %g] around %g", lo, hi, auc);
    /* standard error ~0.02 at 300 + 300: the interval is about +-0.04 */
    cr_assert(hi - lo > 0.04 && hi - lo < 0.12, "width %g", hi - lo);
    cr_assert_eq(ax_roc_auc_bootstrap(m, 300, n, 300, 1000, 5, &lo2, &hi2), AX_OK);
    cr_assert(lo == lo2 && hi == hi2, "same seed, another interval");
    cr_assert_eq(ax_roc_auc_bootstrap(m, 300, n, 300, 1000, 6, &lo2, &hi2), AX_OK);
    cr_assert(lo != lo2 || hi != hi2, "another seed, the same interval");
    /* degenerate: perfect separation, all tied, one score per side, no scores */
    double top[] = {5, 6}, bottom[] = {1, 2, 3}, same[] = {4, 4};
    cr_assert_eq(ax_roc_auc_bootstrap(top, 2, bottom, 3, 200, 1, &lo, &hi), AX_OK);
    cr_assert(lo == 1 && hi == 1);
    cr_assert_eq(ax_roc_auc_bootstrap(same, 2, same, 1, 200, 1, &lo, &hi), AX_OK);
    cr_assert(lo == 0.5 && hi == 0.5);
    cr_assert_eq(ax_roc_auc_bootstrap(top, 1, bottom, 1, 1, 1, &lo, &hi), AX_OK);
    cr_assert(lo == 1 && hi == 1);
    cr_assert_eq(ax_roc_auc_bootstrap(top, 0, bottom, 3, 200, 1, &lo, &hi), AX_ERR_ARG);
    cr_assert_eq(ax_roc_auc_bootstrap(top, 2, bottom, 3, 0, 1, &lo, &hi), AX_ERR_ARG);
}

/* ---- per-document scores ---- */

/* bytes drawn from alphabet by a 64-bit LCG, as scripts/make_zlib_lengths.py draws them */
static void lcg_text(unsigned char *out, size_t n, uint64_t seed, const char *alphabet) {
    uint64_t x = seed, k = strlen(alphabet);
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        out[i] = (unsigned char)alphabet[(x >> 33) % k];
    }
}

/* Carlini et al. 2021 compress with Python's zlib.compress at its default level (6): the
 * lengths below are Python's len(zlib.compress(b)) (zlib 1.2.13), printed by
 * scripts/make_zlib_lengths.py for the same texts; the random texts are ones where level 9
 * gives another length (213, 884, 6240), so the level is pinned. */
Test(privacy_metrics, zlib_lengths_equal_pythons_zlib_compress) {
    cr_assert_eq(AX_ZLIB_LEVEL, 6);
    static unsigned char buf[20000];
    static const struct {
        const char *alphabet;
        size_t n;
        size_t want;
    } cases[] = {{"ab", 1000, 214}, {"ab", 5000, 865}, {"abcd", 20000, 6166}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n;
        lcg_text(buf, cases[c].n, 1, cases[c].alphabet);
        cr_assert_eq(ax_zlib_bytes(buf, cases[c].n, &n), AX_OK);
        cr_expect_eq(n, cases[c].want, "lcg %s %zu: %zu bytes, Python %zu", cases[c].alphabet,
                     cases[c].n, n, cases[c].want);
    }
    const char *gen = "In the beginning God created the heaven and the earth. ";
    size_t len = strlen(gen), n;
    for (int i = 0; i < 20; i++) memcpy(buf + i * len, gen, len);
    cr_assert_eq(ax_zlib_bytes(buf, 20 * len, &n), AX_OK);
    cr_expect_eq(n, 67);
    for (int i = 0; i < 3000; i++) buf[i] = (unsigned char)"abc"[i % 3];
    cr_assert_eq(ax_zlib_bytes(buf, 3000, &n), AX_OK);
    cr_expect_eq(n, 29);
}

Test(privacy_metrics, zlib_lengths_from_the_deflate_format) {
    size_t n;
    /* zlib = 2-byte header + deflate + 4-byte Adler-32. Empty: one fixed-Huffman block holding
     * only end-of-block (3 + 7 bits -> 2 bytes): 8. "a": 3 + 8 (literal 0x61) + 7 bits -> 3
     * bytes: 9. Bytes 0..255, each once: fixed codes cost 144*8 + 112*9 + 10 bits = 272 bytes,
     * a stored block 1 + 4 + 256 = 261, so stored: 267. */
    cr_assert_eq(ax_zlib_bytes("", 0, &n), AX_OK);
    cr_assert_eq(n, 8);
    cr_assert_eq(ax_zlib_bytes("a", 1, &n), AX_OK);
    cr_assert_eq(n, 9);
    unsigned char all[256];
    for (int i = 0; i < 256; i++) all[i] = (unsigned char)i;
    cr_assert_eq(ax_zlib_bytes(all, 256, &n), AX_OK);
    cr_assert_eq(n, 267);
    /* repetitive text compresses to a small fraction */
    char rep[3000];
    for (int i = 0; i < 3000; i++) rep[i] = "abc"[i % 3];
    cr_assert_eq(ax_zlib_bytes(rep, 3000, &n), AX_OK);
    cr_assert(n < 40, "%zu", n);
    /* the score: -loss / bytes */
    cr_assert_float_eq(ax_zlib_score(2.0, 8), -0.25, 1e-15);
    cr_assert(isnan(ax_zlib_score(2.0, 0)));
    /* the reference ratio: -loss / ref_loss; lower target loss than reference -> higher */
    cr_assert_float_eq(ax_ref_ratio_score(1.0, 4.0), -0.25, 1e-15);
    cr_assert(ax_ref_ratio_score(1.0, 4.0) > ax_ref_ratio_score(3.0, 4.0));
    cr_assert(isnan(ax_ref_ratio_score(1.0, 0)));
}

/* Logit table, vocab 3, softmax by hand:
 *   row 0: logits (0, ln 2, 0)     -> p = (1/4, 1/2, 1/4)
 *   row 1: logits (5, 5, 5)        -> p = (1/3, 1/3, 1/3): a point mass in log p, sigma 0
 *   row 2: logits (ln 8, 0, 0)     -> p = (0.8, 0.1, 0.1)
 *   row 3: logits (0, ln 2, 0)     -> as row 0
 * targets (1, 2, 1, 0). */
Test(privacy_metrics, min_k_and_min_k_pp_on_a_hand_softmaxed_table) {
    const double L2 = log(2.0);
    const float logits[4][3] = {
        {0, (float)L2, 0}, {5, 5, 5}, {(float)log(8.0), 0, 0}, {0, (float)L2, 0}};
    const int32_t target[4] = {1, 2, 1, 0};
    double lp[4], mu[4], sd[4];
    for (int i = 0; i < 4; i++)
        ax_token_logp_stats(logits[i], 3, target[i], &lp[i], &mu[i], &sd[i]);
    /* row 0: log p = (-2 ln2, -ln2, -2 ln2); mu = 1/2(-2ln2) + 1/2(-ln2) = -1.5 ln2;
     * E[(log p)^2] = 1/2 (4 ln2^2) + 1/2 ln2^2 = 2.5 ln2^2, var = 0.25 ln2^2, sigma = 0.5 ln2 */
    const double want_lp[4] = {-L2, -log(3.0), log(0.1), -2 * L2};
    const double m2 = 0.8 * log(0.8) + 0.2 * log(0.1),
                 v2 = 0.8 * log(0.8) * log(0.8) + 0.2 * log(0.1) * log(0.1) - m2 * m2;
    const double want_mu[4] = {-1.5 * L2, -log(3.0), m2, -1.5 * L2};
    const double want_sd[4] = {0.5 * L2, 0, sqrt(v2), 0.5 * L2};
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(lp[i], want_lp[i], 1e-6, "row %d logp %g", i, lp[i]);
        cr_assert_float_eq(mu[i], want_mu[i], 1e-6, "row %d mu %g", i, mu[i]);
        cr_assert_float_eq(sd[i], want_sd[i], 1e-6, "row %d sigma %g", i, sd[i]);
    }
    /* min-k%: log p sorted = (-2ln2 = -1.386, ln 0.1 = -2.303 ...): ascending
     * (ln .1, -2ln2, -ln3, -ln2); k = 50% of 4 -> the lowest 2 */
    cr_assert_float_eq(ax_min_k_prob(lp, 4, 0.5), (log(0.1) - 2 * L2) / 2, 1e-6);
    cr_assert_float_eq(ax_min_k_prob(lp, 4, 0.25), log(0.1), 1e-6);
    cr_assert_float_eq(ax_min_k_prob(lp, 4, 0.1), log(0.1), 1e-6); /* at least one token */
    cr_assert_float_eq(ax_min_k_prob(lp, 4, 1.0), (log(0.1) - 3 * L2 - log(3.0)) / 4, 1e-6);
    cr_assert(isnan(ax_min_k_prob(lp, 4, 0)) && isnan(ax_min_k_prob(lp, 0, 0.5)));
    /* min-k%++: z = (+1, 0 (sigma 0), z2, -1). Rows 0 and 2 put two values of log p with
     * weights (w, 1-w): sigma = |a - b| sqrt(w (1-w)) and the z of value b is
     * -w / sqrt(w (1-w)); row 2 (b = ln .1, w = .8): -0.8 / 0.4 = -2. */
    const double z2 = (log(0.1) - m2) / sqrt(v2);
    cr_assert_float_eq(z2, -2.0, 1e-9, "z2 %g", z2);
    cr_assert_float_eq(ax_min_k_pp(lp, mu, sd, 4, 0.5), (-2.0 - 1.0) / 2, 1e-6);
    cr_assert_float_eq(ax_min_k_pp(lp, mu, sd, 4, 0.75), (-2.0 - 1.0 + 0) / 3, 1e-6);
    cr_assert_float_eq(ax_min_k_pp(lp, mu, sd, 4, 1.0), (-2.0 - 1.0 + 0 + 1) / 4, 1e-6);
}

/* ---- exposure ---- */

Test(privacy_metrics, exposure_rank_and_bits) {
    double ref[] = {1, 2, 3, 2.5};
    cr_assert_float_eq(ax_exposure_rank(ref, 4, 2.7), 2, 1e-15); /* only 3 is above */
    cr_assert_float_eq(ax_exposure_rank(ref, 4, 9), 1, 1e-15);
    /* 3 above, one tie: ties count against the secret (Carlini et al. 2019's rank) */
    cr_assert_float_eq(ax_exposure_rank(ref, 4, 2.5), 3, 1e-15);
    cr_assert_float_eq(ax_exposure_rank(ref, 4, 3), 2, 1e-15);
    cr_assert_float_eq(ax_exposure_rank(ref, 4, 0), 5, 1e-15);
    /* space of 5: the top secret has exposure log2 5, the bottom one 0 */
    cr_assert_float_eq(ax_exposure_from_rank(1, 5), log2(5.0), 1e-12);
    cr_assert_float_eq(ax_exposure_from_rank(5, 5), 0, 1e-12);
    cr_assert_float_eq(ax_exposure_from_rank(2, 1024), 9, 1e-12);
    cr_assert(isnan(ax_exposure_from_rank(0.5, 5)) && isnan(ax_exposure_from_rank(6, 5)));
}

Test(privacy_metrics, exposure_by_enumeration_of_a_small_format) {
    /* a 3-digit secret space: 1000 candidates, the model's log-likelihood a fixed function of
     * the string; the secret is "042". Enumerate every other candidate and rank it. */
    double ll[1000];
    for (int c = 0; c < 1000; c++) ll[c] = -(double)((c * 7919) % 1000) / 100.0;
    int secret = 42;
    double others[999];
    int k = 0, above = 0;
    for (int c = 0; c < 1000; c++)
        if (c != secret) {
            others[k++] = ll[c];
            above += ll[c] >= ll[secret]; /* ties (c = 542, 42 + 1000 k / 7919) count */
        }
    double rank = ax_exposure_rank(others, 999, ll[secret]);
    cr_assert_float_eq(rank, 1 + above, 1e-15);
    cr_assert_float_eq(ax_exposure_from_rank(rank, 1000), log2(1000.0) - log2(1.0 + above), 1e-12);
}

Test(privacy_metrics, exposure_estimate_matches_enumeration_on_a_normal_space) {
    /* a space of 200000 candidates whose log-likelihoods are N(-30, 4^2); the estimate sees
     * 5000 of them (the references) and must agree with the exact rank of secrets at several
     * depths. At z = 3 the exact count is ~270 +- 16: the estimate's error is dominated by the
     * fitted mean and sd (~0.06 sd each at 5000), ~0.3 bits at most. */
    enum { SPACE = 200000, NREF = 5000 };
    static double space[SPACE];
    for (long i = 0; i < SPACE; i++) space[i] = -30 + 4 * ax_rng_normal(3, 7, (uint64_t)i);
    const double zs[] = {0.5, 1.5, 2.5, 3.0};
    for (size_t t = 0; t < sizeof zs / sizeof zs[0]; t++) {
        double s = -30 + 4 * zs[t];
        double exact = ax_exposure_from_rank(ax_exposure_rank(space, SPACE, s), SPACE + 1.0);
        double est;
        cr_assert_eq(ax_exposure_estimate(space, NREF, s, SPACE + 1.0, &est), AX_OK);
        cr_assert(fabs(est - exact) < 0.3, "z %g: estimate %g, exact %g", zs[t], est, exact);
    }
    /* a secret far above every candidate: the estimate clamps at log2 of the space */
    double est;
    cr_assert_eq(ax_exposure_estimate(space, NREF, 100, SPACE + 1.0, &est), AX_OK);
    cr_assert_float_eq(est, log2(SPACE + 1.0), 1e-9);
    /* far below: rank = the whole space, exposure 0 */
    cr_assert_eq(ax_exposure_estimate(space, NREF, -1000, SPACE + 1.0, &est), AX_OK);
    cr_assert_float_eq(est, 0, 1e-9);
    double flat[] = {1, 1, 1};
    cr_assert_eq(ax_exposure_estimate(flat, 3, 1, 10, &est), AX_ERR_ARG);
    cr_assert_eq(ax_exposure_estimate(space, 2, 1, 10, &est), AX_ERR_ARG);
    ax_error_clear();
}

/* exposure from a normal fitted by sample mean and sd: what the estimate must beat */
static double normal_fit_exposure(const double *ll, long n, double s, double n_space) {
    double m = 0, ss = 0;
    for (long i = 0; i < n; i++) m += ll[i];
    m /= (double)n;
    for (long i = 0; i < n; i++) ss += (ll[i] - m) * (ll[i] - m);
    double tail = 0.5 * erfc((s - m) / (sqrt(ss / (double)(n - 1)) * sqrt(2.0)));
    double rank = fmin(fmax(n_space * tail, 1), n_space);
    return ax_exposure_from_rank(rank, n_space);
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

Test(privacy_metrics, exposure_estimate_follows_a_skewed_space) {
    /* log-perplexities of a million candidates skewed to the right (shape 4: a short tail on the
     * likely side, as sums of token log-probabilities bounded by 0 give): the estimate from 5000
     * of them against the exact rank of secrets at depths 10 .. 10^4. A normal fit puts too much
     * mass in the short tail and underestimates the deep exposures by bits; the skew-normal
     * follows it (its error here is the fit's sampling error, ~0.1-0.3 bits). */
    enum { SPACE = 1000000, NREF = 5000 };
    static double space[SPACE], sorted[SPACE];
    double delta = 4 / sqrt(17.0);
    for (long i = 0; i < SPACE; i++) {
        double n1 = ax_rng_normal(5, 1, (uint64_t)i), n2 = ax_rng_normal(5, 2, (uint64_t)i);
        space[i] = -(30 + 4 * (delta * fabs(n1) + sqrt(1 - delta * delta) * n2));
    }
    memcpy(sorted, space, sizeof space);
    qsort(sorted, SPACE, sizeof *sorted, cmp_desc);
    const long depth[] = {10, 100, 1000, 10000};
    double worst_normal = 0;
    for (size_t t = 0; t < sizeof depth / sizeof depth[0]; t++) {
        double s = sorted[depth[t] - 1]; /* the depth[t]-th most likely candidate */
        double exact = ax_exposure_from_rank(ax_exposure_rank(space, SPACE, s), SPACE);
        double est, normal = normal_fit_exposure(space, NREF, s, SPACE);
        cr_assert_eq(ax_exposure_estimate(space, NREF, s, SPACE, &est), AX_OK, "%s",
                     ax_error_msg());
        const ax_skewnorm truth = {30, 4, 4};
        double ideal = ax_exposure_from_fit(&truth, s, SPACE);
        cr_log_info("rank %ld: exact %.3f bits, skew-normal fit %.3f (error %+.3f), the true "
                    "distribution %.3f, normal fit %.3f (error %+.3f)",
                    depth[t], exact, est, est - exact, ideal, normal, normal - exact);
        /* the exact count itself scatters by ~sqrt(rank) around the true tail: 0.45 bits at 10 */
        double tol = depth[t] < 100 ? 1.0 : 0.5;
        cr_expect(fabs(est - exact) < tol, "rank %ld: estimate %g, exact %g", depth[t], est, exact);
        worst_normal = fmax(worst_normal, exact - normal);
    }
    cr_expect(worst_normal > 1, "the normal fit was not off here (%g bits): the test proves little",
              worst_normal);
}
