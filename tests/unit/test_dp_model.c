/* DP-SGD's model side on one rank: the per-example gradient norms of ax_model_dp_micro (ghost
 * norms, materialised chunks, the embedding's compacted rows, a tied head's cross term) against
 * a direct per-example backward (batch of one, ax_model_grad_sumsq), and the clipped sum
 * against sum_i min(1, C / n_i) g_i built from those per-example gradients, on the Llama,
 * GPT-NeoX and GPT-2 architectures, tied and untied, with goldfish-masked and all-padding rows;
 * the noise's values, mean and variance. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"
#include "lib/dist/grid.h"
#include "lib/model/model.h"
#include "tests/unit/test_model_fd.h"

static ax_model_config llama(int tied) {
    return (ax_model_config){.n_layers = 2,
                             .dim = 16,
                             .n_heads = 2,
                             .ffn = 24,
                             .vocab = 300,
                             .tie_embeddings = tied,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f};
}
static ax_model_config neox(int tied) {
    ax_model_config c = llama(tied);
    c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU, c.bias = 1, c.parallel_residual = 1;
    c.rotary_dim = 4;
    return c;
}
static ax_model_config gpt2(int tied) {
    ax_model_config c = llama(tied);
    c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU_TANH, c.bias = 1, c.pos = AX_POS_LEARNED;
    c.max_pos = 12;
    return c;
}

/* B = 4 rows: all supervised; goldfish-masked (every 3rd target dropped); all padding; a few
 * repeated tokens (the embedding's equal-token pairs) with a partial mask */
static void dp_batch(int T, int V, int32_t *in, int32_t *tg, uint8_t *mask) {
    make_batch(4 * T, V, in, tg, mask, 11);
    for (int t = 0; t < T; t++) {
        mask[t] = 1;
        mask[T + t] = (uint8_t)(t % 3 != 2);
        mask[2 * T + t] = 0;
        mask[3 * T + t] = (uint8_t)(t >= T / 2);
        if (t % 2) in[3 * T + t] = in[3 * T + t - 1]; /* pairs of equal tokens */
    }
    in[T + 1] = in[T + 4] = in[1]; /* shared with row 0: only equal tokens WITHIN a row pair up */
}

static double rel_diff(const float *a, const double *b, int64_t n) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += b[i] * b[i];
    }
    return sqrt(d / (s > 0 ? s : 1));
}

static void check_dp(const char *what, ax_model_config c, int T, int recompute) {
    enum { B = 4 };
    ax_grid_t *g = NULL;
    ax_model_t *m = NULL;
    ax_model_opts o = {.device = "cpu", .recompute = recompute};
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    cr_assert_eq(ax_model_create_ex(g, &c, B, T, &o, &m), AX_OK, "%s: %s", what, ax_error_msg());
    ax_model_init(m, 42);
    roughen(m);
    int64_t n = ax_model_n_local(m);
    int32_t in[B * 12], tg[B * 12];
    uint8_t mask[B * 12];
    dp_batch(T, c.vocab, in, tg, mask);

    /* the reference: each row alone, its mean loss's gradient */
    float *gi = malloc(sizeof(float) * (size_t)(n * B));
    double ref[B], loss_ref = 0;
    for (int b = 0; b < B; b++) {
        int cnt = 0;
        for (int t = 0; t < T; t++) cnt += mask[b * T + t];
        ax_model_zero_grad(m);
        loss_ref += ax_model_forward(m, in + b * T, tg + b * T, mask + b * T, 1,
                                     cnt ? 1.0f / (float)cnt : 0.0f, 1);
        ax_model_backward(m);
        cr_assert_eq(ax_model_grad_sumsq(m, &ref[b]), AX_OK);
        ref[b] = sqrt(ref[b]);
        cr_assert_eq(ax_model_read_grads(m, gi + n * b, 0, n), AX_OK);
    }
    cr_assert(ref[0] > 0 && ref[1] > 0 && ref[3] > 0 && ref[2] == 0, "%s", what);
    /* a clip norm between the rows' norms: some clipped, some not */
    double lo = fmin(ref[0], fmin(ref[1], ref[3])), hi = fmax(ref[0], fmax(ref[1], ref[3]));
    cr_assert(hi > lo * 1.01, "%s: rows' norms too close to test clipping (%g, %g)", what, lo, hi);
    float clip = (float)sqrt(lo * hi), scale = 0.37f, norms[B];

    ax_model_zero_grad(m);
    double loss = ax_model_dp_micro(m, in, tg, mask, B, clip, scale, 1, norms);
    cr_assert_eq(ax_model_status(m), AX_OK, "%s: %s", what, ax_error_msg());
    cr_assert(fabs(loss - loss_ref) <= 1e-5 * fabs(loss_ref), "%s: loss %.9g vs %.9g", what, loss,
              loss_ref);
    for (int b = 0; b < B; b++)
        cr_assert(fabs(norms[b] - ref[b]) <= 1e-5 * ref[b] + (ref[b] == 0 ? 0 : 1e-30),
                  "%s T=%d: row %d norm %.9g, per-example backward %.9g (rel %.2g)", what, T, b,
                  (double)norms[b], ref[b], fabs(norms[b] - ref[b]) / (ref[b] > 0 ? ref[b] : 1));
    float *got = malloc(sizeof(float) * (size_t)n);
    double *want = calloc((size_t)n, sizeof(double));
    cr_assert_eq(ax_model_read_grads(m, got, 0, n), AX_OK);
    int clipped = 0;
    for (int b = 0; b < B; b++) {
        if (ref[b] == 0) continue;
        double f = scale * (ref[b] > clip ? clip / ref[b] : 1.0);
        clipped += ref[b] > clip;
        for (int64_t i = 0; i < n; i++) want[i] += f * gi[n * b + i];
    }
    cr_assert(clipped >= 1 && clipped <= 2, "%s", what);
    double r = rel_diff(got, want, n);
    cr_assert(r <= 1e-5, "%s T=%d: clipped sum differs by %.3g relative", what, T, r);
    free(gi), free(got), free(want);
    ax_model_free(m);
    ax_grid_free(g);
}

TestSuite(dp_model);

/* T = 8: every linear by Gram matrices; T = 12: the out-projection (16 x 16) and the MLP's
 * materialised in chunks (T (n + k) > n k) */
Test(dp_model, llama_norms_and_clipped_sum_match_per_example_backward) {
    check_dp("llama untied", llama(0), 8, 0);
    check_dp("llama tied", llama(1), 8, 0);
    check_dp("llama untied T=12", llama(0), 12, 0);
    check_dp("llama tied T=12", llama(1), 12, 0);
}
Test(dp_model, neox_norms_and_clipped_sum_match_per_example_backward) {
    check_dp("neox untied", neox(0), 8, 0);
    check_dp("neox tied", neox(1), 8, 0);
    check_dp("neox untied T=12", neox(0), 12, 0);
}
Test(dp_model, gpt2_norms_and_clipped_sum_match_per_example_backward) {
    check_dp("gpt2 tied", gpt2(1), 8, 0);
    check_dp("gpt2 untied", gpt2(0), 8, 0);
    check_dp("gpt2 tied T=12", gpt2(1), 12, 0);
}
Test(dp_model, recompute_gives_the_same_norms_and_sum) {
    check_dp("llama tied recompute", llama(1), 8, 1);
    check_dp("gpt2 tied recompute", gpt2(1), 12, 1);
    check_dp("neox recompute", neox(0), 8, 1);
}

/* a second micro-batch adds its clipped sum to the first's */
Test(dp_model, micro_batches_accumulate) {
    ax_model_config c = llama(1);
    int T = 8;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 4, T, &m), AX_OK);
    ax_model_init(m, 3);
    roughen(m);
    int64_t n = ax_model_n_local(m);
    int32_t in[32], tg[32];
    uint8_t mask[32];
    dp_batch(T, c.vocab, in, tg, mask);
    float *one = malloc(sizeof(float) * (size_t)n), *two = malloc(sizeof(float) * (size_t)n);
    float *parts = malloc(sizeof(float) * (size_t)n);
    ax_model_zero_grad(m);
    ax_model_dp_micro(m, in, tg, mask, 4, 0.5f, 1.0f, 1, NULL);
    cr_assert_eq(ax_model_read_grads(m, one, 0, n), AX_OK);
    /* the same rows as two micro-batches of two (the first two rows, then the last two) */
    ax_model_zero_grad(m);
    ax_model_dp_micro(m, in, tg, mask, 2, 0.5f, 1.0f, 0, NULL);
    ax_model_dp_micro(m, in + 2 * T, tg + 2 * T, mask + 2 * T, 2, 0.5f, 1.0f, 1, NULL);
    cr_assert_eq(ax_model_read_grads(m, two, 0, n), AX_OK);
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++)
        d += (one[i] - two[i]) * (one[i] - two[i]), s += one[i] * one[i];
    cr_assert(s > 0 && sqrt(d / s) < 1e-5, "micro-batches differ by %g", sqrt(d / s));
    free(one), free(two), free(parts);
    ax_model_free(m);
}

Test(dp_model, bad_arguments_are_refused) {
    ax_model_config c = llama(0);
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 2, 8, &m), AX_OK);
    ax_model_init(m, 1);
    int32_t in[16] = {0}, tg[16] = {0};
    cr_assert(isnan(ax_model_dp_micro(m, in, tg, NULL, 3, 1.0f, 1.0f, 1, NULL)));
    cr_assert_eq(ax_model_status(m), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "batch 3"), "%s", ax_error_msg());
    ax_model_clear_status(m);
    cr_assert(isnan(ax_model_dp_micro(m, in, tg, NULL, 2, 0.0f, 1.0f, 1, NULL)));
    cr_assert_eq(ax_model_status(m), AX_ERR_ARG);
    cr_assert_neq(ax_model_dp_noise(m, -1.0, 1, 0), AX_OK);
    ax_model_free(m);
}

/* The noise: each element the keyed draw, the draws' mean and variance those of N(0, std^2)
 * within 4 standard errors over ~10^6 values, other steps and seeds other values. */
Test(dp_model, noise_is_the_keyed_gaussian) {
    ax_model_config c = llama(0);
    c.vocab = 4000, c.dim = 32, c.ffn = 48;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 1, 4, &m), AX_OK);
    int64_t n = ax_model_n_local(m);
    const ax_tensor_info *info = ax_model_tensors(m);
    float *g = malloc(sizeof(float) * (size_t)n);
    double std = 0.75, sum = 0, sum2 = 0;
    int64_t count = 0;
    for (int step = 0; step < 4; step++) {
        ax_model_zero_grad(m);
        cr_assert_eq(ax_model_dp_noise(m, std, 99, step), AX_OK);
        cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
        for (int i = 0; i < ax_model_n_tensors(m); i++) /* 1x1x1x1: the global layout */
            for (int64_t j = 0; j < info[i].numel; j += 997) {
                float want = (float)std * (float)ax_model_dp_noise_value(99, step, i, j);
                cr_assert_eq(g[info[i].offset + j], want, "step %d tensor %d element %lld", step, i,
                             (long long)j);
            }
        for (int64_t k = 0; k < n; k++) sum += g[k], sum2 += (double)g[k] * g[k];
        count += n;
    }
    double mean = sum / count, var = sum2 / count - mean * mean;
    double se_mean = std / sqrt((double)count), se_var = std * std * sqrt(2.0 / count);
    cr_assert(count > 1000000, "%lld draws", (long long)count);
    cr_assert(fabs(mean) < 4 * se_mean, "mean %g (se %g)", mean, se_mean);
    cr_assert(fabs(var - std * std) < 4 * se_var, "variance %g vs %g (se %g)", var, std * std,
              se_var);
    /* other steps and seeds draw other values; the noise adds to what is there */
    cr_assert_neq(ax_model_dp_noise_value(99, 0, 0, 5), ax_model_dp_noise_value(99, 1, 0, 5));
    cr_assert_neq(ax_model_dp_noise_value(99, 0, 0, 5), ax_model_dp_noise_value(98, 0, 0, 5));
    float before = g[7];
    cr_assert_eq(ax_model_dp_noise(m, std, 99, 3), AX_OK);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    cr_assert_float_eq(g[7], 2.0f * before, 1e-6f);
    free(g);
    ax_model_free(m);
}
