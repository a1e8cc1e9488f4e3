/* Finite-difference checks of a whole model shared by the architecture and grouped-query
 * attention tests: a batch, weights roughened off their initial constants, and directional
 * derivatives of the loss against the backward's gradient. */
#pragma once
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "lib/core/rng.h"
#include "lib/model/model.h"

static void make_batch(int N, int V, int32_t *in, int32_t *tg, uint8_t *mask, uint64_t seed) {
    for (int i = 0; i < N; i++) {
        in[i] = (int32_t)ax_rng_below(seed, 0, (uint64_t)i, (uint64_t)V);
        tg[i] = (int32_t)ax_rng_below(seed, 1, (uint64_t)i, (uint64_t)V);
        mask[i] = (uint8_t)(i % 3 != 1);
    }
}

/* Weights scaled up and every value (biases, norm weights too) perturbed, so no parameter sits
 * at its initial constant and the function is not flat. */
static void roughen(ax_model_t *m) {
    int64_t n = ax_model_n_params(m);
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++) p[i] = 3.0f * p[i] + 0.2f * ax_rng_normal(77, 0, (uint64_t)i);
    cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
    free(p);
}

/* directional derivatives (L(p + e d) - L(p - e d)) / 2e against <grad, d> */
static void check_model_fd(const char *what, ax_model_config c) {
    int B = 2, T = 8, N = B * T;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK, "%s: %s", what, ax_error_msg());
    ax_model_init(m, 42);
    roughen(m);
    int64_t n = ax_model_n_params(m);
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(N, c.vocab, in, tg, mask, 5);
    int n_sup = 0;
    for (int i = 0; i < N; i++) n_sup += mask[i];
    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, B, 1.0f / (float)n_sup, 1);
    ax_model_backward(m);
    float *g = malloc((size_t)n * sizeof *g), *p0 = malloc((size_t)n * sizeof *p0),
          *p = malloc((size_t)n * sizeof *p);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    cr_assert_eq(ax_model_read_params(m, p0, 0, n), AX_OK);
    /* every tensor gets a gradient (a bias or norm left out of the backward would read 0) */
    const ax_tensor_info *ts = ax_model_tensors(m);
    for (int t = 0; t < ax_model_n_tensors(m); t++) {
        double s = 0;
        for (int64_t k = 0; k < ts[t].numel; k++) s += fabs(g[ts[t].offset + k]);
        cr_expect(s > 0, "%s: tensor %s has no gradient", what, ts[t].name);
    }
    for (int trial = 0; trial < 3; trial++) {
        double dot = 0, eps = 3e-4;
        float *d = malloc((size_t)n * sizeof *d);
        for (int64_t i = 0; i < n; i++) {
            d[i] = ax_rng_normal(99, (uint64_t)trial, (uint64_t)i);
            dot += (double)g[i] * d[i];
        }
        for (int64_t i = 0; i < n; i++) p[i] = p0[i] + (float)eps * d[i];
        cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
        double lp = ax_model_forward(m, in, tg, mask, B, 1.0f, 0) / n_sup;
        for (int64_t i = 0; i < n; i++) p[i] = p0[i] - (float)eps * d[i];
        cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
        double lm = ax_model_forward(m, in, tg, mask, B, 1.0f, 0) / n_sup;
        cr_assert_eq(ax_model_write_params(m, p0, 0, n), AX_OK);
        double fd = (lp - lm) / (2 * eps);
        cr_expect(fabs(fd - dot) <= 2e-2 * fabs(dot) + 1e-3,
                  "%s trial %d: finite difference %.6g vs backward %.6g", what, trial, fd, dot);
        free(d);
    }
    free(g), free(p0), free(p);
    ax_model_free(m);
}
