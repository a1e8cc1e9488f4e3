/* The ops GPT-NeoX and GPT-2 add (lib/backend/ops.h "architectures beyond Llama"): forward values
 * against float64 references, backward against central finite differences of those references,
 * the "backward accumulates" contract, the sharded LayerNorm against the unsharded one, and
 * partial rotary against a reference that rotates only the first rd dims of each head. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"
#include "tests/unit/test_ops_util.h"

static void twice(double *g, long n) {
    for (long i = 0; i < n; i++) g[i] *= 2;
}

#define TOL_FWD 2e-6
#define TOL_GRAD 3e-6

TestSuite(arch_ops);

/* ---------------------------------------------------------------- LayerNorm */

struct ln_ctx {
    double *inp, *w, *b, *G, *out;
    int N, C;
    double eps;
};
static void ln_ref(struct ln_ctx *c, double *mean, double *rstd) {
    for (int i = 0; i < c->N; i++) {
        const double *x = c->inp + (long)i * c->C;
        double mu = 0, var = 0;
        for (int j = 0; j < c->C; j++) mu += x[j];
        mu /= c->C;
        for (int j = 0; j < c->C; j++) var += (x[j] - mu) * (x[j] - mu);
        double r = 1.0 / sqrt(var / c->C + c->eps);
        if (mean) mean[i] = mu, rstd[i] = r;
        for (int j = 0; j < c->C; j++)
            c->out[(long)i * c->C + j] = (x[j] - mu) * r * c->w[j] + c->b[j];
    }
}
static double ln_loss(void *p) {
    struct ln_ctx *c = p;
    ln_ref(c, NULL, NULL);
    double L = 0;
    for (long i = 0; i < (long)c->N * c->C; i++) L += c->G[i] * c->out[i];
    return L;
}

Test(arch_ops, layernorm_forward_backward_fd) {
    seed(21);
    int N = 5, C = 37;
    float eps = 1e-5f;
    float *inp = frand(N * C, 2), *w = frand(C, 1), *b = frand(C, 1), *G = frand(N * C, 1);
    for (int j = 0; j < C; j++) inp[j] = 3.0f + 0.01f * inp[j]; /* large mean, tiny spread */
    float *out = fzeros(N * C), *mean = fzeros(N), *rstd = fzeros(N), *st = fzeros(2 * N);
    ax_layernorm_forward(CTX, out, mean, rstd, inp, w, b, st, N, C, eps);
    struct ln_ctx c = {todbl(inp, N * C), todbl(w, C), todbl(b, C), todbl(G, N * C),
                       dzeros(N * C),     N,           C,           eps};
    double *mref = dzeros(N), *rref = dzeros(N);
    ln_ref(&c, mref, rref);
    expect_close("layernorm out", out, c.out, N * C, 1e-4); /* row 0: float (x - mean) */
    expect_close("layernorm mean", mean, mref, N, TOL_FWD);
    expect_close("layernorm rstd", rstd, rref, N, 1e-4); /* row 0: var from 1e-4 spread */

    float *dinp = fzeros(N * C), *dw = fzeros(C), *db = fzeros(C);
    ax_layernorm_backward(CTX, dinp, dw, db, G, inp, w, mean, rstd, st, N, C);
    double *gi = fd_grad(ln_loss, &c, c.inp, N * C), *gw = fd_grad(ln_loss, &c, c.w, C),
           *gb = fd_grad(ln_loss, &c, c.b, C);
    /* row 0's rstd is ~100: its input gradient is large and the reference FD noisier */
    expect_close("layernorm dinp", dinp, gi, N * C, 1e-4);
    expect_close("layernorm dweight", dw, gw, C, 1e-4);
    expect_close("layernorm dbias", db, gb, C, TOL_GRAD);
    ax_layernorm_backward(CTX, dinp, dw, db, G, inp, w, mean, rstd, st, N, C);
    twice(gi, N * C), twice(gw, C), twice(gb, C);
    expect_close("layernorm dinp x2", dinp, gi, N * C, 1e-4);
    expect_close("layernorm dweight x2", dw, gw, C, 1e-4);
    expect_close("layernorm dbias x2", db, gb, C, TOL_GRAD);
    free(inp), free(w), free(b), free(G), free(out), free(mean), free(rstd), free(st);
    free(dinp), free(dw), free(db), free(gi), free(gw), free(gb), free(mref), free(rref);
    free(c.inp), free(c.w), free(c.b), free(c.G), free(c.out);
}

/* Split the columns over S "ranks" and sum the row statistics between the passes, as the
 * model does over X: the result equals the unsharded LayerNorm, forward and backward. */
Test(arch_ops, layernorm_sharded_equals_unsharded) {
    seed(22);
    enum { N = 7, C = 48, S = 3, CS = C / S };
    float *inp = frand(N * C, 1.5), *w = frand(C, 1), *b = frand(C, 1), *G = frand(N * C, 1);
    float out[N * C], mean[N], rstd[N], st[2 * N], dinp[N * C] = {0}, dw[C] = {0}, db[C] = {0};
    ax_layernorm_forward(CTX, out, mean, rstd, inp, w, b, st, N, C, 1e-5f);
    ax_layernorm_backward(CTX, dinp, dw, db, G, inp, w, mean, rstd, st, N, C);
    float xs[S][N * CS], gs[S][N * CS], os[S][N * CS], ds[S][N * CS], part[N], sum[N] = {0},
                                                                               sq[N] = {0};
    for (int s = 0; s < S; s++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < CS; j++) {
                xs[s][i * CS + j] = inp[i * C + s * CS + j];
                gs[s][i * CS + j] = G[i * C + s * CS + j];
                ds[s][i * CS + j] = 0;
            }
    for (int s = 0; s < S; s++) {
        ax_layernorm_rowsum(CTX, part, xs[s], N, CS);
        for (int i = 0; i < N; i++) sum[i] += part[i];
    }
    for (int s = 0; s < S; s++) {
        ax_layernorm_sqdev(CTX, part, xs[s], sum, N, CS, C);
        for (int i = 0; i < N; i++) sq[i] += part[i];
    }
    float m2[N], r2[N], dots[2 * N] = {0}, pd[2 * N], dws[C] = {0}, dbs[C] = {0};
    for (int s = 0; s < S; s++)
        ax_layernorm_apply(CTX, os[s], m2, r2, xs[s], w + s * CS, b + s * CS, sum, sq, N, CS, C,
                           1e-5f);
    for (int s = 0; s < S; s++) {
        ax_layernorm_backward_dot(CTX, pd, gs[s], xs[s], w + s * CS, m2, r2, N, CS);
        for (int i = 0; i < 2 * N; i++) dots[i] += pd[i];
    }
    for (int s = 0; s < S; s++)
        ax_layernorm_backward_apply(CTX, ds[s], dws + s * CS, dbs + s * CS, gs[s], xs[s],
                                    w + s * CS, m2, r2, dots, N, CS, C);
    double *o = dzeros(N * C), *d = dzeros(N * C);
    for (int s = 0; s < S; s++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < CS; j++) {
                o[i * C + s * CS + j] = os[s][i * CS + j];
                d[i * C + s * CS + j] = ds[s][i * CS + j];
            }
    double *ow = todbl(dws, C), *ob = todbl(dbs, C);
    expect_close("sharded out", out, o, N * C, 1e-5);
    expect_close("sharded dinp", dinp, d, N * C, 1e-5);
    expect_close("sharded dweight", dw, ow, C, 1e-6);
    expect_close("sharded dbias", db, ob, C, 1e-6);
    free(inp), free(w), free(b), free(G), free(o), free(d), free(ow), free(ob);
}

/* ---------------------------------------------------------------- GELU */

struct gelu_ctx {
    double *h, *G;
    long n;
    int approx;
};
static double gelu_ref(double x, int approx) {
    if (approx) return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}
static double gelu_loss(void *p) {
    struct gelu_ctx *c = p;
    double L = 0;
    for (long i = 0; i < c->n; i++) L += c->G[i] * gelu_ref(c->h[i], c->approx);
    return L;
}

static void check_gelu(int approx) {
    seed(23 + (uint64_t)approx);
    int N = 3, F = 29;
    long n = (long)N * F;
    float *h = frand(n, 4), *G = frand(n, 1), *out = fzeros(n), *dh = fzeros(n);
    h[0] = 30.0f, h[1] = -30.0f, h[2] = 0.0f; /* saturated tails and the origin stay finite */
    ax_gelu_forward(CTX, out, h, N, F, approx);
    double *want = dzeros(n);
    for (long i = 0; i < n; i++) want[i] = gelu_ref(h[i], approx);
    expect_close(approx ? "gelu_tanh out" : "gelu out", out, want, n, TOL_FWD);
    ax_gelu_backward(CTX, dh, G, h, N, F, approx);
    struct gelu_ctx c = {todbl(h, n), todbl(G, n), n, approx};
    double *g = fd_grad(gelu_loss, &c, c.h, n);
    expect_close(approx ? "gelu_tanh dh" : "gelu dh", dh, g, n, TOL_GRAD);
    ax_gelu_backward(CTX, dh, G, h, N, F, approx);
    twice(g, n);
    expect_close("gelu dh x2", dh, g, n, TOL_GRAD);
    /* the two forms are different functions: about 1e-4 apart at x = 2 */
    float a, b2, x = 2.0f;
    ax_gelu_forward(CTX, &a, &x, 1, 1, approx);
    ax_gelu_forward(CTX, &b2, &x, 1, 1, !approx);
    cr_expect(fabsf(a - b2) > 2e-5f, "gelu and gelu_tanh agree at 2: %g vs %g", a, b2);
    free(h), free(G), free(out), free(dh), free(want), free(g), free(c.h), free(c.G);
}

Test(arch_ops, gelu_exact) {
    check_gelu(0);
}
Test(arch_ops, gelu_tanh) {
    check_gelu(1);
}

/* ---------------------------------------------------------------- bias */

Test(arch_ops, bias_add_and_gradient) {
    seed(25);
    int N = 300, OC = 131; /* several column blocks, a ragged tail, many rows */
    float *out = frand((long)N * OC, 1), *bias = frand(OC, 1), *G = frand((long)N * OC, 1);
    double *want = todbl(out, (long)N * OC);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < OC; c++) want[(long)i * OC + c] += bias[c];
    ax_bias_add(CTX, out, bias, N, OC);
    expect_close("bias add", out, want, (long)N * OC, TOL_FWD);
    /* the gradient of sum(G * (x + b)) wrt b: column sums; accumulates */
    float *db = frand(OC, 1);
    double *gw = todbl(db, OC);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < OC; c++) gw[c] += G[(long)i * OC + c];
    ax_bias_backward(CTX, db, G, N, OC);
    expect_close("bias grad (accumulated)", db, gw, OC, 1e-5);
    free(out), free(bias), free(G), free(want), free(db), free(gw);
}

/* ---------------------------------------------------------------- partial rotary */

struct prope_ctx {
    double *x, *G, *out;
    int B, T, H, D, rd;
    long ld;
    double theta;
};
static void prope_ref(struct prope_ctx *c) {
    int h2 = c->rd / 2;
    memcpy(c->out, c->x, sizeof(double) * (size_t)((long)c->B * c->T * c->ld));
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++)
            for (int h = 0; h < c->H; h++)
                for (int i = 0; i < h2; i++) {
                    long o = ((long)b * c->T + t) * c->ld + (long)h * c->D + i;
                    double a = t * pow(c->theta, -2.0 * i / c->rd), x1 = c->x[o], x2 = c->x[o + h2];
                    c->out[o] = x1 * cos(a) - x2 * sin(a);
                    c->out[o + h2] = x1 * sin(a) + x2 * cos(a);
                }
}
static double prope_loss(void *p) {
    struct prope_ctx *c = p;
    prope_ref(c);
    double L = 0;
    for (long i = 0; i < (long)c->B * c->T * c->ld; i++) L += c->G[i] * c->out[i];
    return L;
}

Test(arch_ops, partial_rotary) {
    seed(26);
    int B = 2, T = 7, H = 3, D = 12, rd = 4;
    long ld = 3L * H * D, n = (long)B * T * ld;
    float theta = 10000.0f, *ct = fzeros(T * rd / 2), *st = fzeros(T * rd / 2);
    ax_rope_table(CTX, ct, st, T, rd, theta);
    float *x = frand(n, 1), *y = malloc(sizeof(float) * (size_t)n);
    memcpy(y, x, sizeof(float) * (size_t)n);
    ax_rope_partial_forward(CTX, y, ct, st, B, T, H, D, rd, ld);
    struct prope_ctx c = {todbl(x, n), NULL, dzeros(n), B, T, H, D, rd, ld, theta};
    prope_ref(&c);
    expect_close("partial rope out", y, c.out, n, TOL_FWD);
    for (long r = 0; r < (long)B * T; r++) /* dims rd..D-1 of each head and the rest untouched */
        for (int h = 0; h < H; h++)
            cr_expect(!memcmp(y + r * ld + h * D + rd, x + r * ld + h * D + rd,
                              sizeof(float) * (size_t)(D - rd)));
    cr_expect(!memcmp(y + H * D, x + H * D, sizeof(float) * (size_t)(ld - H * D)));
    float *G = frand(n, 1), *dx = malloc(sizeof(float) * (size_t)n);
    memcpy(dx, G, sizeof(float) * (size_t)n);
    c.G = todbl(G, n);
    ax_rope_partial_backward(CTX, dx, ct, st, B, T, H, D, rd, ld);
    double *g = fd_grad(prope_loss, &c, c.x, n);
    expect_close("partial rope dx", dx, g, n, TOL_GRAD);
    free(ct), free(st), free(x), free(y), free(G), free(dx), free(g);
    free(c.x), free(c.G), free(c.out);
}
