/* Helpers of the CPU ops' tests (test_ops.c, test_arch_ops.c): a CPU context, seeded random
 * inputs, float64 references compared with a relative tolerance, and central finite
 * differences. */
#pragma once
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"

/* the CPU backend's context the kernels under test run on (scratch grows on demand) */
static inline ax_ctx *cpu_ctx(void) {
    static ax_ctx *ctx;
    if (!ctx) cr_assert_eq(ax_ctx_create(ax_backend_cpu(), 1 << 20, &ctx), AX_OK);
    return ctx;
}
#define CTX cpu_ctx()

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline void seed(uint64_t s) {
    g_rng = s * 0x9E3779B97F4A7C15ull + 1;
}
static inline double urand(void) { /* uniform [-1, 1) */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (double)((g_rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
static inline float *frand(long n, double scale) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (long i = 0; i < n; i++) x[i] = (float)(scale * urand());
    return x;
}
static inline float *fzeros(long n) {
    return calloc((size_t)(n ? n : 1), sizeof(float));
}
static inline double *dzeros(long n) {
    return calloc((size_t)(n ? n : 1), sizeof(double));
}
static inline float *fcopy(const float *x, long n) {
    float *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}
static inline double *todbl(const float *x, long n) {
    double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (long i = 0; i < n; i++) y[i] = x[i];
    return y;
}

/* |got - want| <= tol * (|want| + rms(want)) for every i: relative where values are large,
 * scaled by the typical magnitude where they are near 0. Reports the worst element. */
static inline void expect_close(const char *what, const float *got, const double *want, long n,
                                double tol) {
    double rms = 0, worst = 0;
    long wi = 0;
    for (long i = 0; i < n; i++) rms += want[i] * want[i];
    rms = sqrt(rms / (double)(n ? n : 1)) + 1e-30;
    for (long i = 0; i < n; i++) {
        double r = fabs((double)got[i] - want[i]) / (tol * (fabs(want[i]) + rms));
        if (!(r <= worst)) worst = r, wi = i; /* NaN counts as worst */
    }
    cr_expect(worst <= 1.0, "%s: element %ld got %.9g want %.9g (%.3g x the tolerance)", what, wi,
              n ? got[wi] : 0.0, n ? want[wi] : 0.0, worst);
}
static inline void expect_closef(const char *what, const float *got, const float *want, long n,
                                 double tol) {
    double *w = todbl(want, n);
    expect_close(what, got, w, n, tol);
    free(w);
}

/* Central differences of a double loss in every coordinate of x[n] (x restored afterwards). */
typedef double (*loss_fn)(void *ctx);
static inline double *fd_grad(loss_fn f, void *ctx, double *x, long n) {
    const double h = 1e-5;
    double *g = dzeros(n);
    for (long i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + h;
        double lp = f(ctx);
        x[i] = x0 - h;
        double lm = f(ctx);
        x[i] = x0;
        g[i] = (lp - lm) / (2 * h);
    }
    return g;
}
static inline double dot_fd(const double *G, const double *y, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += G[i] * y[i];
    return s;
}

/* The sharded ops over one shard (the whole hidden dimension or vocabulary): what one rank runs,
 * the reductions between the passes having nothing to add. */
static inline void rmsnorm_forward1(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                                    const float *w, int N, int C, float eps) {
    float *ss = fzeros(N);
    ax_rmsnorm_sumsq(ctx, ss, inp, N, C);
    ax_rmsnorm_apply(ctx, out, rstd, inp, w, ss, N, C, C, eps);
    free(ss);
}
static inline void rmsnorm_backward1(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                                     const float *inp, const float *w, const float *rstd, int N,
                                     int C) {
    float *dot = fzeros(N);
    ax_rmsnorm_backward_dot(ctx, dot, dout, inp, w, N, C);
    ax_rmsnorm_backward_apply(ctx, dinp, dw, dout, inp, w, rstd, dot, N, C, C);
    free(dot);
}
static inline double crossentropy1(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                                   const int32_t *targets, const uint8_t *mask, float dscale, int N,
                                   int V) {
    float *rowmax = fzeros(N), *stats = fzeros(2L * N);
    ax_ce_rowmax(ctx, rowmax, logits, N, V, V);
    ax_ce_partial(ctx, stats, logits, rowmax, targets, mask, N, V, V, 0);
    double total = ax_ce_finish(ctx, losses, dlogits, logits, rowmax, stats, targets, mask, dscale,
                                N, V, V, 0);
    free(rowmax), free(stats);
    return total;
}
