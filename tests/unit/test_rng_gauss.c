/* The ziggurat's standard normals (lib/core/rng.h) against the normal law: the
 * Kolmogorov-Smirnov distance on 2^21 draws, the moments, the share beyond the tail's start
 * 3.4426 and the tail's conditional mean (the tail is sampled by its own rule), and the keyed
 * stream's identities. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "lib/core/rng.h"

#define N (1 << 21)
#define R 3.442619855899

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double phi_cdf(double x) {
    return 0.5 * erfc(-x / sqrt(2.0));
}

Test(rng_gauss, ziggurat_draws_follow_the_normal_law) {
    const ax_rng_ziggurat *z = ax_rng_ziggurat_tables();
    float *x = malloc(N * sizeof *x);
    cr_assert(x);
    uint64_t key = ax_rng_key(2024, 17);
    double s1 = 0, s2 = 0, s4 = 0, tail_sum = 0;
    long tail = 0;
    for (long j = 0; j < N; j++) {
        double v = x[j] = ax_rng_gauss(z, key, (uint64_t)j);
        s1 += v, s2 += v * v, s4 += v * v * v * v;
        if (fabs(v) > R) tail++, tail_sum += fabs(v);
    }
    /* moments within 5 standard errors (var of x^2 is 2, of x^4 is 96) */
    cr_assert_lt(fabs(s1 / N), 5 * sqrt(1.0 / N), "mean %g", s1 / N);
    cr_assert_lt(fabs(s2 / N - 1), 5 * sqrt(2.0 / N), "variance %g", s2 / N);
    cr_assert_lt(fabs(s4 / N - 3), 5 * sqrt(96.0 / N), "fourth moment %g", s4 / N);
    /* the tail beyond R: its share (binomial) and its conditional mean phi(R) / (1 - Phi(R)) */
    double p = erfc(R / sqrt(2.0)), want_mean = exp(-0.5 * R * R) / sqrt(2 * M_PI) / (p / 2);
    cr_assert_lt(fabs((double)tail / N - p), 5 * sqrt(p * (1 - p) / N), "tail share %g vs %g",
                 (double)tail / N, p);
    cr_assert_lt(fabs(tail_sum / tail - want_mean), 0.02, "tail mean %g vs %g", tail_sum / tail,
                 want_mean);
    /* Kolmogorov-Smirnov: D below the 0.1% critical value 1.95 / sqrt(N) */
    qsort(x, N, sizeof *x, cmp_float);
    double d = 0;
    for (long j = 0; j < N; j++) {
        double c = phi_cdf(x[j]), lo = c - (double)j / N, hi = (double)(j + 1) / N - c;
        d = fmax(d, fmax(lo, hi));
    }
    cr_assert_lt(d, 1.95 / sqrt(N), "KS distance %g", d);
    free(x);
}

Test(rng_gauss, keyed_streams_are_the_three_argument_generator) {
    for (uint64_t s = 0; s < 4; s++)
        for (uint64_t i = 0; i < 100; i += 7)
            cr_assert_eq(ax_rng_at(ax_rng_key(99, s), i), ax_rng_u64(99, s, i));
    const ax_rng_ziggurat *z = ax_rng_ziggurat_tables();
    /* a pure function of (key, index): the same value again, another for another index */
    cr_assert_eq(ax_rng_gauss(z, 5, 123), ax_rng_gauss(z, 5, 123));
    cr_assert_neq(ax_rng_gauss(z, 5, 123), ax_rng_gauss(z, 5, 124));
}
