/* Gradient bookkeeping of lib/model: lazy zeroing (ax_model_zero_grad leaves the matrices'
 * gradient blocks as they were and their first dW GEMM overwrites them) and the sums of squares
 * taken in the backward (tp_tensor.gss). Nothing from before a zero_grad may leak into the
 * gradients after it, whatever was there (old gradients, NaN), and whatever reads them; the
 * early sums give the global norm the same bits as a pass over the slab. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/model.h"
#include "lib/core/rng.h"

enum { B = 2, T = 8, N = B * T };

static ax_model_t *tiny(int tie) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = 300,
                         .tie_embeddings = tie,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    ax_model_init(m, 7);
    return m;
}

/* one forward + backward on batch `seed` (no zero_grad: the caller decides) */
static void fwd_bwd(ax_model_t *m, uint64_t seed) {
    int32_t in[N], tg[N];
    uint8_t mask[N];
    for (int i = 0; i < N; i++) {
        in[i] = (int32_t)ax_rng_below(seed, 0, (uint64_t)i, 300);
        tg[i] = (int32_t)ax_rng_below(seed, 1, (uint64_t)i, 300);
        mask[i] = 1;
    }
    ax_model_forward(m, in, tg, mask, B, 1.0f / N, 1);
    ax_model_backward(m);
}

static float *grads(ax_model_t *m) {
    int64_t n = ax_model_n_local(m);
    float *g = malloc((size_t)n * sizeof *g);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    return g;
}

/* the gradients of batch 2 alone, on a fresh model */
static float *reference(int tie) {
    ax_model_t *r = tiny(tie);
    ax_model_zero_grad(r);
    fwd_bwd(r, 2);
    float *g = grads(r);
    ax_model_free(r);
    return g;
}

static void same(const float *a, const float *b, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&a[i], &b[i], sizeof *a) == 0, "%s: gradient %lld is %g, expected %g",
                  what, (long long)i, a[i], b[i]);
}

static void old_gradients_do_not_leak(int tie) {
    float *want = reference(tie);
    ax_model_t *m = tiny(tie);
    int64_t n = ax_model_n_local(m);
    ax_model_zero_grad(m);
    fwd_bwd(m, 1); /* batch 1's gradients in every block */
    ax_model_zero_grad(m);
    fwd_bwd(m, 2);
    float *g = grads(m);
    same(g, want, n, tie ? "tied" : "untied");
    free(g), free(want);
    ax_model_free(m);
}

Test(grad_zero, old_gradients_do_not_leak_tied) {
    old_gradients_do_not_leak(1);
}
Test(grad_zero, old_gradients_do_not_leak_untied) {
    old_gradients_do_not_leak(0);
}

Test(grad_zero, nan_left_in_the_slab_is_overwritten) {
    float *want = reference(1);
    ax_model_t *m = tiny(1);
    int64_t n = ax_model_n_local(m);
    float *slab = (float *)ax_model_slab(m, AX_SLAB_GRADS); /* CPU: host memory */
    for (int64_t i = 0; i < n; i++) slab[i] = NAN;          /* a diverged step's gradients */
    ax_model_zero_grad(m);
    fwd_bwd(m, 2);
    float *g = grads(m);
    same(g, want, n, "after NaN");
    free(g), free(want);
    ax_model_free(m);
}

/* a second micro-batch accumulates onto the first (only the first GEMM overwrites) */
Test(grad_zero, micro_batches_accumulate) {
    ax_model_t *a = tiny(1), *b = tiny(1), *c = tiny(1);
    int64_t n = ax_model_n_local(a);
    ax_model_zero_grad(a), fwd_bwd(a, 1);
    ax_model_zero_grad(b), fwd_bwd(b, 2);
    ax_model_zero_grad(c), fwd_bwd(c, 3); /* stale values for c's next step */
    ax_model_zero_grad(c);
    fwd_bwd(c, 1);
    fwd_bwd(c, 2);
    float *ga = grads(a), *gb = grads(b), *gc = grads(c);
    /* not bit for bit: a GEMM adds into C in its own order */
    for (int64_t i = 0; i < n; i++) {
        double sum = (double)ga[i] + gb[i], tol = 1e-5 * (fabs(ga[i]) + fabs(gb[i])) + 1e-12;
        cr_assert(fabs(gc[i] - sum) <= tol, "gradient %lld: %g, expected %g + %g", (long long)i,
                  gc[i], ga[i], gb[i]);
    }
    free(ga), free(gb), free(gc);
    ax_model_free(a), ax_model_free(b), ax_model_free(c);
}

/* read without a backward in between: every gradient is zero, by every way of reading it */
Test(grad_zero, zero_until_a_backward_writes) {
    ax_model_t *m = tiny(0);
    int64_t n = ax_model_n_local(m);
    ax_model_zero_grad(m);
    fwd_bwd(m, 1);
    ax_model_zero_grad(m);
    double ss = -1;
    cr_assert_eq(ax_model_grad_sumsq(m, &ss), AX_OK);
    cr_assert_eq(ss, 0.0, "sum of squares after zero_grad: %g", ss);

    fwd_bwd(m, 1);
    ax_model_zero_grad(m);
    float *g = grads(m);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(g[i], 0.0f, "read_grads: gradient %lld", i);
    free(g);

    fwd_bwd(m, 1);
    ax_model_zero_grad(m);
    const float *slab = (const float *)ax_model_slab(m, AX_SLAB_GRADS);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(slab[i], 0.0f, "slab: gradient %lld", i);

    /* a forward without want_grad, then backward: nothing to do, and still zero */
    fwd_bwd(m, 1);
    ax_model_zero_grad(m);
    int32_t in[N] = {0}, tg[N] = {0};
    uint8_t mask[N];
    memset(mask, 1, sizeof mask);
    ax_model_forward(m, in, tg, mask, B, 1.0f / N, 0);
    ax_model_backward(m);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(slab[i], 0.0f, "no-grad backward: %lld", i);
    ax_model_free(m);
}

/* the norm from the sums the backward took, against a pass over the slab (ax_model_slab drops
 * them: the caller may write through it) */
static void norm_both_ways(ax_model_t *m, const char *what) {
    double early = -1, pass = -2;
    cr_assert_eq(ax_model_grad_sumsq(m, &early), AX_OK);
    (void)ax_model_slab(m, AX_SLAB_GRADS);
    cr_assert_eq(ax_model_grad_sumsq(m, &pass), AX_OK);
    cr_assert(early > 0 && memcmp(&early, &pass, sizeof early) == 0,
              "%s: sum of squares %.17g from the backward, %.17g from the slab", what, early, pass);
}

Test(grad_zero, sums_of_squares_from_the_backward_match_the_slab) {
    for (int tie = 0; tie < 2; tie++) {
        ax_model_t *m = tiny(tie);
        ax_model_zero_grad(m);
        fwd_bwd(m, 1);
        norm_both_ways(m, tie ? "tied, one backward" : "untied, one backward");
        /* two micro-batches: the sums are taken in the last one, after it has added its part */
        ax_model_zero_grad(m);
        int32_t in[N], tg[N];
        uint8_t mask[N];
        for (int i = 0; i < N; i++) in[i] = tg[i] = (int32_t)(i * 7 % 300), mask[i] = 1;
        ax_model_forward(m, in, tg, mask, B, 1.0f / N, 1);
        ax_model_backward_ex(m, 0);
        fwd_bwd(m, 2);
        norm_both_ways(m, tie ? "tied, two micro-batches" : "untied, two micro-batches");
        /* a backward after the sums were taken, without zero_grad: they must not be reused */
        double before = 0, after = 0;
        cr_assert_eq(ax_model_grad_sumsq(m, &before), AX_OK);
        fwd_bwd(m, 3);
        cr_assert_eq(ax_model_grad_sumsq(m, &after), AX_OK);
        norm_both_ways(m, "a third backward");
        cr_assert(after != before, "the third backward left the norm at %g", before);
        ax_model_free(m);
    }
}
