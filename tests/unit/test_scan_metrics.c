/* The scan metrics against their definitions: RougeL (token LCS F1), bootstrap intervals, and
 * the sampler behind the regurgitation scan. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"

#include "memscan/generate.h"
#include "memscan/probe.h"

Test(scan_metrics, rouge_l_is_lcs_f1) {
    int32_t a[] = {1, 2, 3, 4, 5}, b[] = {1, 3, 5, 7};
    /* LCS = {1,3,5} = 3: P = 3/5, R = 3/4, F1 = 2PR/(P+R) = 2/3 */
    cr_assert_float_eq(ax_rouge_l(a, 5, b, 4), 2.0 * 0.6 * 0.75 / 1.35, 1e-12);
    cr_assert_float_eq(ax_rouge_l(a, 5, a, 5), 1.0, 1e-12);
    int32_t c[] = {9, 9};
    cr_assert_float_eq(ax_rouge_l(a, 5, c, 2), 0.0, 1e-12);
    cr_assert_float_eq(ax_rouge_l(a, 0, c, 2), 0.0, 1e-12);
}

Test(scan_metrics, bootstrap_interval_brackets_the_mean) {
    double x[200];
    for (int i = 0; i < 200; i++) x[i] = i % 4 == 0; /* rate 0.25 */
    double mean, lo, hi;
    ax_bootstrap_ci(x, 200, 2000, 7, &mean, &lo, &hi);
    cr_assert_float_eq(mean, 0.25, 1e-12);
    /* binomial standard error sqrt(.25*.75/200) = 0.031: the 95% interval is about +-0.06 */
    cr_assert(lo < 0.25 && hi > 0.25 && lo > 0.15 && hi < 0.35, "interval [%g, %g]", lo, hi);
    double same[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    ax_bootstrap_ci(same, 10, 100, 7, &mean, &lo, &hi);
    cr_assert(mean == 1 && lo == 1 && hi == 1);
}

Test(scan_metrics, sampler_greedy_topk_and_frequencies) {
    float logits[5] = {0.0f, 2.0f, 1.0f, -1.0f, 2.0f}, scratch[5];
    /* greedy: the first maximum */
    cr_assert_eq(ax_sample_token(logits, 5, 0.0, 0, 0.9, scratch), 1);
    /* top-1 at any temperature is the argmax set {1, 4}: never anything else */
    for (int i = 0; i < 100; i++) {
        int t = ax_sample_token(logits, 5, 1.0, 1, (i + 0.5) / 100.0, scratch);
        cr_assert(t == 1 || t == 4, "top-1 drew %d", t);
    }
    /* full softmax at T=1: the share of u mapped to token 2 is e^1 / sum */
    double z = exp(0) + 2 * exp(2) + exp(1) + exp(-1), hits = 0;
    int n = 100000;
    for (int i = 0; i < n; i++)
        hits += ax_sample_token(logits, 5, 1.0, 0, (i + 0.5) / n, scratch) == 2;
    cr_assert(fabs(hits / n - exp(1) / z) < 1e-3, "token 2 frequency %g vs %g", hits / n,
              exp(1) / z);
}

static int desc(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* the top-k cut is the value a descending sort puts at k - 1: rows with many ties (values drawn
 * from a few levels), distinct values, sorted and reversed input, every k at small n and
 * sampled k at GPT-2's vocabulary */
Test(scan_metrics, kth_largest_matches_a_sort) {
    enum { V = 50257 };
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V),
          *sorted = malloc(sizeof(float) * V);
    for (int kind = 0; kind < 4; kind++)
        for (int n = 1; n <= V; n = n < 40 ? n + 1 : n * 7 + 3) {
            if (n > V) n = V;
            for (int i = 0; i < n; i++) {
                uint64_t r = ax_rng_below(kind + 1, (uint64_t)n, (uint64_t)i, 1000000);
                a[i] = kind == 0   ? (float)(r % 5)         /* five levels: ties everywhere */
                       : kind == 1 ? (float)r * 1e-3f - 500 /* mostly distinct */
                       : kind == 2 ? (float)i               /* ascending */
                                   : (float)(n - i);        /* descending */
            }
            memcpy(sorted, a, sizeof(float) * (size_t)n);
            qsort(sorted, (size_t)n, sizeof(float), desc);
            int step = n < 64 ? 1 : n / 37 + 1;
            for (int k = 1; k <= n; k += step) {
                memcpy(b, a, sizeof(float) * (size_t)n);
                float got = ax_kth_largest(b, n, k);
                cr_assert_eq(got, sorted[k - 1], "kind %d n %d k %d: %g vs %g", kind, n, k, got,
                             sorted[k - 1]);
            }
            memcpy(b, a, sizeof(float) * (size_t)n);
            cr_assert_eq(ax_kth_largest(b, n, n), sorted[n - 1], "kind %d n %d k = n", kind, n);
            if (n == V) break;
        }
    free(a), free(b), free(sorted);
}

/* Clopper-Pearson against published values (and the closed forms at 0/n and n/n) */
Test(scan_metrics, clopper_pearson_exact_interval) {
    double lo, hi;
    ax_clopper_pearson(32, 32, &lo, &hi);
    cr_assert_float_eq(lo, pow(0.025, 1.0 / 32), 1e-9, "lo %g", lo);
    cr_assert_eq(hi, 1.0);
    ax_clopper_pearson(0, 32, &lo, &hi);
    cr_assert_eq(lo, 0.0);
    cr_assert_float_eq(hi, 1 - pow(0.025, 1.0 / 32), 1e-9, "hi %g", hi);
    ax_clopper_pearson(5, 10, &lo, &hi);
    cr_assert_float_eq(lo, 0.187086, 1e-6, "lo %g", lo);
    cr_assert_float_eq(hi, 0.812914, 1e-6, "hi %g", hi);
    ax_clopper_pearson(1, 10, &lo, &hi);
    cr_assert_float_eq(lo, 0.002529, 1e-6, "lo %g", lo);
    cr_assert_float_eq(hi, 0.445016, 1e-6, "hi %g", hi);
    ax_clopper_pearson(500, 1000, &lo, &hi); /* large n: symmetric, ~ +-3.15 points */
    cr_assert_float_eq(lo + hi, 1.0, 1e-9);
    cr_assert(lo > 0.468 && lo < 0.469, "lo %g", lo);
}

/* suffixes past 512 tokens take the heap path of the LCS rows */
Test(scan_metrics, rouge_l_long_sequences) {
    enum { N = 700 };
    static int32_t a[N], b[N];
    for (int i = 0; i < N; i++) a[i] = b[i] = i % 97;
    cr_assert_float_eq(ax_rouge_l(a, N, b, N), 1.0, 1e-12);
    b[N / 2] = -1; /* one substitution: LCS N - 1 */
    cr_assert_float_eq(ax_rouge_l(a, N, b, N), (N - 1.0) / N, 1e-12);
}
