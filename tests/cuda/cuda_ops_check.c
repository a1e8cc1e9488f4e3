/* CUDA vs CPU: runs every op of lib/backend/ops.def on both backends with the same random
 * inputs (odd sizes, sharded variants, accumulating outputs pre-filled) and prints, per op
 * output, the relative error max|cpu - gpu| / max|cpu| and PASS/FAIL against the tolerance
 * (fp32: 1e-5; the CPU backend is the specification). Then the GEMM-using ops once more on a
 * --precision bf16 context: against the CPU in fp32 (< 2e-2, the bound) and against
 * the CPU given the same operands rounded to bf16 (< 1e-5: the rounding is round-to-nearest-
 * even of exactly the operands, accumulation is fp32), plus the reuse of staged operands, the
 * bf16 storage ops and ops that must stay fp32 on a bf16 context. Both contexts run on copies
 * of their backends' tables whose ops note that they ran: an op of ops.def the CUDA backend has
 * and this check never compared is a failure (a new op needs its comparison here).
 *
 * Exit: 0 every comparison passed; 1 a comparison failed; 77 with one line
 * "SKIP: no CUDA device: <reason>" when there is no GPU (a skip, never a pass).
 * Usage: cuda_ops_check [--quick]   (--quick: skips the largest shapes, for the emulator of
 *                                    tests/cuda/emu/, where a launch costs OS threads) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"
#include "lib/core/plugin.h"
#include "lib/core/status.h"

#define TOL 1e-5
#define TOL_BF16 2e-2 /* bf16 operands vs the CPU's fp32 */

static ax_ctx *C_, *G_; /* CPU and CUDA contexts (G_: the fp32 one, then the bf16 one) */
static int n_pass, n_fail;
static int bf16_; /* G_ computes GEMMs in bf16: compare with TOL_BF16 and the bf16 reference */

/* ---- inputs ---- */
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}
static float *host_rand(size_t n, float scale) {
    float *h = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) h[i] = urand() * scale;
    return h;
}

/* A tensor on both backends with the same contents. */
typedef struct {
    void *c, *g;
    size_t bytes;
} both;

static both put(const void *host, size_t bytes) {
    both b = {ax_dev_alloc(C_, bytes), ax_dev_alloc(G_, bytes), bytes};
    if (!b.c || !b.g) {
        fprintf(stderr, "cuda_ops_check: out of memory for %zu bytes\n", bytes);
        exit(1);
    }
    if (host) {
        memcpy(b.c, host, bytes);
        ax_copy(G_, b.g, host, bytes, AX_COPY_H2D);
    }
    return b;
}
static both put_rand(size_t n, float scale) {
    float *h = host_rand(n, scale);
    both b = put(h, sizeof(float) * n);
    free(h);
    return b;
}
static void drop(both *b) {
    ax_dev_free(C_, b->c);
    ax_dev_free(G_, b->g);
}

/* compares n floats of b (CPU copy vs GPU copy) and prints one line */
static void check(const char *op, const char *what, const both *b, size_t n, double tol) {
    float *g = malloc(sizeof(float) * (n ? n : 1));
    ax_copy(G_, g, b->g, sizeof(float) * n, AX_COPY_D2H);
    ax_sync(G_);
    const float *c = b->c;
    double mx = 0.0, diff = 0.0;
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        /* a NaN fails even where both backends agree on it: no op here should make one */
        if (isnan(c[i]) || isnan(g[i])) {
            nan = 1;
            continue;
        }
        mx = fmax(mx, fabs((double)c[i]));
        diff = fmax(diff, fabs((double)c[i] - (double)g[i]));
    }
    double err = nan ? INFINITY : mx > 0 ? diff / mx : diff;
    int ok = err < tol;
    ok ? n_pass++ : n_fail++;
    printf("%-34s %-10s n=%-8zu rel.err %.3e  %s\n", op, what, n, err, ok ? "PASS" : "FAIL");
    free(g);
}
static void check_scalar(const char *op, double cpu, double gpu, double tol) {
    double err = fabs(cpu - gpu) / fmax(fabs(cpu), 1e-30);
    if (isnan(cpu) || isnan(gpu)) err = INFINITY;
    int ok = err < tol;
    ok ? n_pass++ : n_fail++;
    printf("%-34s %-10s %.9g vs %.9g rel.err %.3e  %s\n", op, "return", cpu, gpu, err,
           ok ? "PASS" : "FAIL");
}

/* ---- the bf16 reference: the CPU backend given operands rounded to bf16 ---- */
static float bf16_round(float f) { /* round to nearest even (no NaNs in these inputs) */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}
/* a CPU copy of x's n floats (CPU side), rounded to bf16 when `round` */
static float *cpu_copy(const void *x, size_t n, int round) {
    float *r = malloc(sizeof(float) * (n ? n : 1));
    memcpy(r, x, sizeof(float) * n);
    for (size_t i = 0; round && i < n; i++) r[i] = bf16_round(r[i]);
    return r;
}
/* C = alpha op(bf16(A)) op(bf16(B)) + beta C on the CPU backend */
static void ref_gemm(char ta, char tb, long m, long n, long k, float alpha, const float *A,
                     long lda, const float *B, long ldb, float beta, float *C, long ldc) {
    float *a = cpu_copy(A, (size_t)((ta == 'N' ? m : k) * lda), 1);
    float *b = cpu_copy(B, (size_t)((tb == 'N' ? k : n) * ldb), 1);
    ax_gemm(C_, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, C, ldc);
    free(a), free(b);
}
/* compares the GPU side of b with a CPU reference buffer */
static void check_ref(const char *op, const char *what, float *ref, const both *b, size_t n) {
    both t = {ref, b->g, b->bytes};
    check(op, what, &t, n, TOL);
}

/* ---- the ops ---- */
static void t_gemm(char ta, char tb, long m, long n, long k, float alpha, float beta, int pad) {
    long ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m, br = tb == 'N' ? k : n,
         bc = tb == 'N' ? n : k;
    long lda = ac + pad, ldb = bc + pad, ldc = n + pad;
    both A = put_rand((size_t)(ar * lda), 1), B = put_rand((size_t)(br * ldb), 1);
    both Cm = put_rand((size_t)(m * ldc), 1);
    float *ref = cpu_copy(Cm.c, (size_t)(m * ldc), 0);
    ax_gemm(C_, ta, tb, m, n, k, alpha, A.c, lda, B.c, ldb, beta, Cm.c, ldc);
    ax_gemm(G_, ta, tb, m, n, k, alpha, A.g, lda, B.g, ldb, beta, Cm.g, ldc);
    char name[96];
    snprintf(name, sizeof name, "gemm %c%c %ldx%ldx%ld ld+%d", ta, tb, m, n, k, pad);
    check(name, "C", &Cm, (size_t)(m * ldc), bf16_ ? TOL_BF16 : TOL);
    if (bf16_) {
        ref_gemm(ta, tb, m, n, k, alpha, A.c, lda, B.c, ldb, beta, ref, ldc);
        check_ref(name, "C bf16 ref", ref, &Cm, (size_t)(m * ldc));
    }
    free(ref);
    drop(&A), drop(&B), drop(&Cm);
}

static void t_matmul(int N, int C, int OC) {
    both inp = put_rand((size_t)N * C, 1), w = put_rand((size_t)OC * C, 0.2f);
    both out = put(NULL, sizeof(float) * N * OC), dout = put_rand((size_t)N * OC, 1);
    both dinp = put_rand((size_t)N * C, 1), dw = put_rand((size_t)OC * C, 1);
    char name[64];
    snprintf(name, sizeof name, "matmul N=%d C=%d OC=%d", N, C, OC);
    double tol = bf16_ ? TOL_BF16 : TOL;
    /* the bf16 reference: the same ops on the CPU with inputs rounded to bf16 */
    float *ri = cpu_copy(inp.c, (size_t)N * C, 1), *rw = cpu_copy(w.c, (size_t)OC * C, 1);
    float *rdo = cpu_copy(dout.c, (size_t)N * OC, 1), *ro = cpu_copy(out.c, (size_t)N * OC, 0);
    float *rdi = cpu_copy(dinp.c, (size_t)N * C, 0), *rdw = cpu_copy(dw.c, (size_t)OC * C, 0);
    ax_matmul_forward(C_, out.c, inp.c, w.c, N, C, OC);
    ax_matmul_forward(G_, out.g, inp.g, w.g, N, C, OC);
    check(name, "out", &out, (size_t)N * OC, tol);
    if (bf16_) {
        ax_matmul_forward(C_, ro, ri, rw, N, C, OC);
        check_ref(name, "out bf16 ref", ro, &out, (size_t)N * OC);
    }
    ax_matmul_backward(C_, dinp.c, dw.c, dout.c, inp.c, w.c, N, C, OC);
    ax_matmul_backward(G_, dinp.g, dw.g, dout.g, inp.g, w.g, N, C, OC);
    check(name, "dinp+=", &dinp, (size_t)N * C, tol);
    check(name, "dw+=", &dw, (size_t)OC * C, tol);
    if (bf16_) {
        ax_matmul_backward(C_, rdi, rdw, rdo, ri, rw, N, C, OC);
        check_ref(name, "dinp+= bf16 ref", rdi, &dinp, (size_t)N * C);
        check_ref(name, "dw+= bf16 ref", rdw, &dw, (size_t)OC * C);
    }
    ax_matmul_backward(C_, NULL, dw.c, dout.c, inp.c, w.c, N, C, OC); /* one output NULL */
    ax_matmul_backward(G_, NULL, dw.g, dout.g, inp.g, w.g, N, C, OC);
    check(name, "dw only", &dw, (size_t)OC * C, tol);
    if (bf16_) {
        ax_matmul_backward(C_, NULL, rdw, rdo, ri, rw, N, C, OC);
        check_ref(name, "dw only bf16 ref", rdw, &dw, (size_t)OC * C);
    }
    free(ri), free(rw), free(rdo), free(ro), free(rdi), free(rdw);
    drop(&inp), drop(&w), drop(&out), drop(&dout), drop(&dinp), drop(&dw);
}

/* bf16 staging reuse (lib/backend/cuda/gemm.c): a staged operand must not outlive a write to
 * its source. Z = X Y stages X and Y; X = Y Y (both operands hit Y's slot, X's stays) writes X
 * through a GEMM's output; then W = X Y must see the new X. A kernel's write (accumulate) and
 * a copy into X must be seen too; and dW in row chunks (the model's overlap schedule: every
 * chunk reads the same input, which stays staged) must equal one GEMM. n x n, row-major. */
static void t_bf16_reuse(long n) {
    size_t nn = (size_t)(n * n);
    both X = put_rand(nn, 1), Y = put_rand(nn, 1), Z = put(NULL, sizeof(float) * nn);
    both W = put(NULL, sizeof(float) * nn);
    float *rx = cpu_copy(X.c, nn, 0), *ry = cpu_copy(Y.c, nn, 0);
    float *rz = cpu_copy(Z.c, nn, 0), *rwm = cpu_copy(W.c, nn, 0);
    char name[64];
    snprintf(name, sizeof name, "bf16 staging reuse n=%ld", n);
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, X.g, n, Y.g, n, 0.0f, Z.g, n);
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, Y.g, n, Y.g, n, 0.0f, X.g, n);
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, X.g, n, Y.g, n, 0.0f, W.g, n);
    ref_gemm('N', 'N', n, n, n, 1.0f, rx, n, ry, n, 0.0f, rz, n);
    ref_gemm('N', 'N', n, n, n, 1.0f, ry, n, ry, n, 0.0f, rx, n);
    ref_gemm('N', 'N', n, n, n, 1.0f, rx, n, ry, n, 0.0f, rwm, n);
    check_ref(name, "after C=X", rwm, &W, nn);
    ax_accumulate(G_, X.g, Y.g, (long)nn); /* a kernel writes X */
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, X.g, n, Y.g, n, 0.0f, W.g, n);
    ax_accumulate(C_, rx, ry, (long)nn);
    ref_gemm('N', 'N', n, n, n, 1.0f, rx, n, ry, n, 0.0f, rwm, n);
    check_ref(name, "after kernel", rwm, &W, nn);
    float *h = host_rand(nn, 1);
    ax_copy(G_, X.g, h, sizeof(float) * nn, AX_COPY_H2D); /* a copy writes X */
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, X.g, n, Y.g, n, 0.0f, W.g, n);
    memcpy(rx, h, sizeof(float) * nn);
    ref_gemm('N', 'N', n, n, n, 1.0f, rx, n, ry, n, 0.0f, rwm, n);
    check_ref(name, "after copy", rwm, &W, nn);
    /* as tp_linear.c's backward: dX = Z Y stages Z (the dout), then dW[n, n] += Z^T X in
     * chunks of 7 rows of dW, which read column blocks of the staged Z (and all of X each) */
    both V = put(NULL, sizeof(float) * nn);
    float *rv = cpu_copy(V.c, nn, 0);
    ax_gemm(G_, 'N', 'N', n, n, n, 1.0f, Z.g, n, Y.g, n, 0.0f, V.g, n);
    ref_gemm('N', 'N', n, n, n, 1.0f, rz, n, ry, n, 0.0f, rv, n);
    for (long r0 = 0; r0 < n; r0 += 7) {
        long r1 = r0 + 7 < n ? r0 + 7 : n;
        ax_gemm(G_, 'T', 'N', r1 - r0, n, n, 1.0f, (float *)Z.g + r0, n, X.g, n, 1.0f,
                (float *)W.g + r0 * n, n);
    }
    ref_gemm('T', 'N', n, n, n, 1.0f, rz, n, rx, n, 1.0f, rwm, n);
    check_ref(name, "dX", rv, &V, nn); /* after the chunks: a check's copy ends the reuse */
    check_ref(name, "dW in chunks", rwm, &W, nn);
    free(h), free(rx), free(ry), free(rz), free(rwm), free(rv);
    drop(&X), drop(&Y), drop(&Z), drop(&W), drop(&V);
}

/* ---- bf16 storage of the GEMM-only activations (backend.h: the _bf16 producers, gemm_mixed) ----
 * Each producer must store exactly the bf16 rounding of what its fp32 op computes on the same
 * context (bit for bit: the model's results do not change with them), in rows ax_bf16_ld(cols)
 * apart; a GEMM reading that storage must give what it gives from the fp32 output. */
static uint16_t bf16_bits(float f) {
    float r = bf16_round(f);
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    return (uint16_t)(u >> 16);
}
/* out16 [rows, ax_bf16_ld(cols)] against the rounding of out32 [rows, cols], both on the GPU */
static void check_bf16_store(const char *op, const void *out16, const float *out32, long rows,
                             long cols) {
    long ld = ax_bf16_ld(cols), bad = 0;
    uint16_t *h16 = malloc(sizeof(uint16_t) * (size_t)(rows * ld + 1));
    float *h32 = malloc(sizeof(float) * (size_t)(rows * cols + 1));
    ax_copy(G_, h16, out16, sizeof(uint16_t) * (size_t)(rows * ld), AX_COPY_D2H);
    ax_copy(G_, h32, out32, sizeof(float) * (size_t)(rows * cols), AX_COPY_D2H);
    ax_sync(G_);
    for (long r = 0; r < rows; r++)
        for (long c = 0; c < cols; c++)
            bad += h16[r * ld + c] != bf16_bits(h32[r * cols + c]) || isnan(h32[r * cols + c]);
    bad ? n_fail++ : n_pass++;
    printf("%-34s %-10s n=%-8ld bf16 = rounded fp32 output: %ld differ  %s\n", op, "bf16 out",
           rows * cols, bad, bad ? "FAIL" : "PASS");
    free(h16), free(h32);
}
static void *dev16(long rows, long cols) {
    void *p = ax_dev_alloc(G_, sizeof(uint16_t) * (size_t)(rows * ax_bf16_ld(cols)));
    if (!p) {
        fprintf(stderr, "cuda_ops_check: out of memory\n");
        exit(1);
    }
    return p;
}
static void t_bf16_acts(int N, int C, int F) {
    char name[96];
    both inp = put_rand((size_t)N * C, 2), w = put_rand((size_t)C, 1), b = put_rand((size_t)C, 1);
    both o32 = put(NULL, sizeof(float) * N * C), r32 = put(NULL, sizeof(float) * N);
    both ss = put(NULL, sizeof(float) * N * 2), mean = put(NULL, sizeof(float) * N);
    float *rstd16 = ax_dev_alloc(G_, sizeof(float) * N),
          *mean16 = ax_dev_alloc(G_, sizeof(float) * N);
    void *o16 = dev16(N, C);
    snprintf(name, sizeof name, "rmsnorm_apply_bf16 N=%d C=%d", N, C);
    ax_rmsnorm_sumsq(G_, ss.g, inp.g, N, C);
    ax_rmsnorm_apply(G_, o32.g, r32.g, inp.g, w.g, ss.g, N, C, C, 1e-5f);
    ax_rmsnorm_apply_bf16(G_, o16, rstd16, inp.g, w.g, ss.g, N, C, C, 1e-5f);
    check_bf16_store(name, o16, o32.g, N, C);
    both rs = {r32.c, rstd16, r32.bytes}; /* rstd as the fp32 op's, on the GPU: copy it over */
    ax_copy(G_, r32.c, r32.g, sizeof(float) * N, AX_COPY_D2H);
    ax_sync(G_);
    check(name, "rstd", &rs, (size_t)N, 1e-30);

    /* a GEMM reading the bf16 storage = the same GEMM on the fp32 output (which the bf16
     * context rounds to the same operands): as the forward (A) and as the dW GEMM (B) */
    both wt = put_rand((size_t)F * C, 0.3f), y32 = put(NULL, sizeof(float) * N * F);
    both y16 = put(NULL, sizeof(float) * N * F);
    snprintf(name, sizeof name, "gemm_mixed NT %dx%dx%d A bf16", N, F, C);
    ax_gemm(G_, 'N', 'T', N, F, C, 1.0f, o32.g, C, wt.g, C, 0.0f, y32.g, F);
    ax_gemm_mixed(G_, 'N', 'T', N, F, C, 1.0f, o16, 1, ax_bf16_ld(C), wt.g, 0, C, 0.0f, y16.g, F);
    ax_copy(G_, y32.c, y32.g, sizeof(float) * N * F, AX_COPY_D2H);
    ax_sync(G_);
    both yy = {y32.c, y16.g, y16.bytes};
    check(name, "C", &yy, (size_t)N * F, TOL);
    /* ... and with the weight in bf16 as well (a bf16 model's forward: the weight's to_bf16
     * copy, rows C apart, unpadded) */
    uint16_t *wt16 = ax_dev_alloc(G_, sizeof(uint16_t) * (size_t)F * C);
    ax_to_bf16(G_, wt16, wt.g, (long)F * C);
    snprintf(name, sizeof name, "gemm_mixed NT %dx%dx%d A, B bf16", N, F, C);
    ax_gemm_mixed(G_, 'N', 'T', N, F, C, 1.0f, o16, 1, ax_bf16_ld(C), wt16, 1, C, 0.0f, y16.g, F);
    check(name, "C", &yy, (size_t)N * F, TOL);
    both d = put_rand((size_t)N * F, 1), g32 = put_rand((size_t)F * C, 1);
    both g16 = put(NULL, sizeof(float) * F * C);
    ax_copy(G_, g16.g, g32.g, sizeof(float) * F * C, AX_COPY_D2D);
    snprintf(name, sizeof name, "gemm_mixed TN %dx%dx%d B bf16", F, C, N);
    ax_gemm(G_, 'T', 'N', F, C, N, 1.0f, d.g, F, o32.g, C, 1.0f, g32.g, C);
    ax_gemm_mixed(G_, 'T', 'N', F, C, N, 1.0f, d.g, 0, F, o16, 1, ax_bf16_ld(C), 1.0f, g16.g, C);
    ax_copy(G_, g32.c, g32.g, sizeof(float) * F * C, AX_COPY_D2H);
    ax_sync(G_);
    both gg = {g32.c, g16.g, g16.bytes};
    check(name, "C+=", &gg, (size_t)F * C, TOL);

    snprintf(name, sizeof name, "layernorm_apply_bf16 N=%d C=%d", N, C);
    float *sum = ss.g, *sq = (float *)ss.g + N;
    ax_layernorm_rowsum(G_, sum, inp.g, N, C);
    ax_layernorm_sqdev(G_, sq, inp.g, sum, N, C, C);
    ax_layernorm_apply(G_, o32.g, mean.g, r32.g, inp.g, w.g, b.g, sum, sq, N, C, C, 1e-5f);
    ax_layernorm_apply_bf16(G_, o16, mean16, rstd16, inp.g, w.g, b.g, sum, sq, N, C, C, 1e-5f);
    check_bf16_store(name, o16, o32.g, N, C);

    both h = put_rand((size_t)N * 2 * F, 3), a32 = put(NULL, sizeof(float) * N * F);
    void *a16 = dev16(N, F);
    snprintf(name, sizeof name, "swiglu_forward_bf16 N=%d F=%d", N, F);
    ax_swiglu_forward(G_, a32.g, h.g, N, F);
    ax_swiglu_forward_bf16(G_, a16, h.g, N, F);
    check_bf16_store(name, a16, a32.g, N, F);
    /* the gradient: the fp32 op accumulates into a zeroed dh, the bf16 one writes */
    both dy = put_rand((size_t)N * F, 1), dh32 = put(NULL, sizeof(float) * N * 2 * F);
    void *dh16 = dev16(N, 2L * F);
    snprintf(name, sizeof name, "swiglu_backward_bf16 N=%d F=%d", N, F);
    ax_swiglu_backward(G_, dh32.g, dy.g, h.g, N, F);
    ax_swiglu_backward_bf16(G_, dh16, dy.g, h.g, N, F);
    check_bf16_store(name, dh16, dh32.g, N, 2L * F);
    /* ... and a GEMM reading it as dout (the up projection's dX: A bf16 again, another ld) */
    both wu = put_rand((size_t)2 * F * C, 0.3f), x32 = put(NULL, sizeof(float) * N * C);
    both x16 = put(NULL, sizeof(float) * N * C);
    snprintf(name, sizeof name, "gemm_mixed NN %dx%dx%d A bf16", N, C, 2 * F);
    ax_gemm(G_, 'N', 'N', N, C, 2 * F, 1.0f, dh32.g, 2 * F, wu.g, C, 0.0f, x32.g, C);
    ax_gemm_mixed(G_, 'N', 'N', N, C, 2 * F, 1.0f, dh16, 1, ax_bf16_ld(2L * F), wu.g, 0, C, 0.0f,
                  x16.g, C);
    ax_copy(G_, x32.c, x32.g, sizeof(float) * N * C, AX_COPY_D2H);
    ax_sync(G_);
    both xx = {x32.c, x16.g, x16.bytes};
    check(name, "C", &xx, (size_t)N * C, TOL);
    ax_dev_free(G_, dh16);
    drop(&dy), drop(&dh32), drop(&wu), drop(&x32), drop(&x16);
    for (int th = 0; th < 2; th++) {
        snprintf(name, sizeof name, "gelu_forward_bf16 N=%d F=%d%s", N, F, th ? " tanh" : "");
        ax_gelu_forward(G_, a32.g, h.g, N, F, th);
        ax_gelu_forward_bf16(G_, a16, h.g, N, F, th);
        check_bf16_store(name, a16, a32.g, N, F);
    }
    ax_dev_free(G_, o16), ax_dev_free(G_, a16), ax_dev_free(G_, rstd16), ax_dev_free(G_, mean16);
    ax_dev_free(G_, wt16);
    drop(&inp), drop(&w), drop(&b), drop(&o32), drop(&r32), drop(&ss), drop(&mean), drop(&wt);
    drop(&y32), drop(&y16), drop(&d), drop(&g32), drop(&g16), drop(&h), drop(&a32);
}

/* ---- the attention's alternatives (lib/backend/cuda/cuda.h ax_cuda_attention_set): linked
 * in on the emulator; in a CUDA build in the plugin, which the backend has already loaded ---- */
typedef void (*attention_set_fn)(int flash, int block_rows);
static attention_set_fn attention_set_;
static const char *attention_mode_ = "blocks";
#ifdef AX_HAVE_CUDA
void ax_cuda_attention_set(int flash, int block_rows);
static int hooks(void) {
    attention_set_ = ax_cuda_attention_set;
    return 1;
}
#else
static int hooks(void) {
    void *a = NULL;
    if (ax_cuda_plugin_sym("cuda_ops_check", "--device cpu", "ax_cuda_attention_set", &a) != AX_OK)
        return 0;
    attention_set_ = (attention_set_fn)a;
    return 1;
}
#endif
static void attention_mode(const char *label, int flash, int block_rows) {
    attention_set_(flash, block_rows);
    attention_mode_ = label;
}

/* ---- coverage: the contexts' tables with every op noting, per backend, that it ran ---- */
enum {
#define AX_OP(ret, name, params, args, group) OP_##name,
#include "lib/backend/ops.def"
    OP_COUNT
};
static const char *const op_name_[OP_COUNT] = {
#define AX_OP(ret, name, params, args, group) #name,
#include "lib/backend/ops.def"
};
static ax_backend real_[2], spy_[2]; /* [0] the CPU's, [1] the CUDA backend's */
static int seen_[2][OP_COUNT];
#define AX_OP(ret, name, params, args, group)                                                      \
    static ret spy_##name params {                                                                 \
        int be_ = ctx->be == &spy_[1];                                                             \
        seen_[be_][OP_##name] = 1;                                                                 \
        AX_RET_##ret real_[be_].name args;                                                         \
    }
#include "lib/backend/ops.def"
static const ax_backend *spy(int b, const ax_backend *real) {
    real_[b] = spy_[b] = *real;
#define AX_OP(ret, name, params, args, group) spy_[b].name = real->name ? spy_##name : NULL;
#include "lib/backend/ops.def"
    return &spy_[b];
}
static int has_op(const ax_backend *be, int op) {
    switch (op) {
#define AX_OP(ret, name, params, args, group)                                                      \
    case OP_##name:                                                                                \
        return be->name != NULL;
#include "lib/backend/ops.def"
    }
    return 0;
}
/* every op the CUDA backend has ran on it, and on the CPU too where the CPU has it */
static void check_coverage(void) {
    int missing = 0;
    for (int op = 0; op < OP_COUNT; op++)
        if (has_op(&real_[1], op) && (!seen_[1][op] || (has_op(&real_[0], op) && !seen_[0][op]))) {
            printf("FAIL: op %s (lib/backend/ops.def) was never compared: add its comparison "
                   "to tests/cuda/cuda_ops_check.c\n",
                   op_name_[op]);
            missing++;
        }
    missing ? n_fail++ : n_pass++;
    printf("%-34s %-10s %d ops of ops.def, %d never compared  %s\n", "coverage", "ops", OP_COUNT,
           missing, missing ? "FAIL" : "PASS");
}

static both put_tokens(int N, int V) {
    int32_t *t = malloc(sizeof(int32_t) * N);
    for (int i = 0; i < N; i++) {
        urand();
        t[i] = (int32_t)((rng >> 33) % (unsigned)V);
    }
    t[N - 1] = t[0]; /* a repeated token: the scatter-add must sum both */
    both b = put(t, sizeof(int32_t) * N);
    free(t);
    return b;
}

static void t_embedding(int N, int C, int V, int v0, int rows) {
    both tok = put_tokens(N, V);
    int r = rows < 0 ? V : rows;
    both wte = put_rand((size_t)r * C, 1), out = put(NULL, sizeof(float) * N * C);
    both dout = put_rand((size_t)N * C, 1), dwte = put_rand((size_t)r * C, 1);
    char name[64];
    snprintf(name, sizeof name, "embedding_shard N=%d C=%d v0=%d rows=%d", N, C, v0, r);
    ax_embedding_shard_forward(C_, out.c, tok.c, wte.c, N, C, v0, r);
    ax_embedding_shard_forward(G_, out.g, tok.g, wte.g, N, C, v0, r);
    ax_embedding_shard_backward(C_, dwte.c, dout.c, tok.c, N, C, v0, r);
    ax_embedding_shard_backward(G_, dwte.g, dout.g, tok.g, N, C, v0, r);
    check(name, "out", &out, (size_t)N * C, TOL);
    check(name, "dwte+=", &dwte, (size_t)r * C, TOL);
    drop(&tok), drop(&wte), drop(&out), drop(&dout), drop(&dwte);
}

static void t_rmsnorm(int N, int C) {
    both inp = put_rand((size_t)N * C, 2), w = put_rand((size_t)C, 1);
    both out = put(NULL, sizeof(float) * N * C), rstd = put(NULL, sizeof(float) * N);
    both dout = put_rand((size_t)N * C, 1), dinp = put_rand((size_t)N * C, 1);
    both dw = put_rand((size_t)C, 1);
    char name[64];
    /* hidden-sharded: this rank holds C of C_total = 3C columns; the all-reduced sums are
     * stood in for by the local ones times 3 (the same input on both backends) */
    snprintf(name, sizeof name, "rmsnorm_shard N=%d C=%d/%d", N, C, 3 * C);
    both ss = put(NULL, sizeof(float) * N), dot = put(NULL, sizeof(float) * N);
    ax_rmsnorm_sumsq(C_, ss.c, inp.c, N, C);
    ax_rmsnorm_sumsq(G_, ss.g, inp.g, N, C);
    check(name, "sumsq", &ss, (size_t)N, TOL);
    float *h = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) h[i] = 3.0f * ((float *)ss.c)[i];
    both ss3 = put(h, sizeof(float) * N);
    ax_rmsnorm_apply(C_, out.c, rstd.c, inp.c, w.c, ss3.c, N, C, 3 * C, 1e-5f);
    ax_rmsnorm_apply(G_, out.g, rstd.g, inp.g, w.g, ss3.g, N, C, 3 * C, 1e-5f);
    check(name, "apply out", &out, (size_t)N * C, TOL);
    check(name, "apply rstd", &rstd, (size_t)N, TOL);
    ax_rmsnorm_backward_dot(C_, dot.c, dout.c, inp.c, w.c, N, C);
    ax_rmsnorm_backward_dot(G_, dot.g, dout.g, inp.g, w.g, N, C);
    check(name, "dot", &dot, (size_t)N, TOL);
    for (int i = 0; i < N; i++) h[i] = 2.0f * ((float *)dot.c)[i];
    both dot2 = put(h, sizeof(float) * N);
    /* rstd from the CPU on both, so only backward_apply is compared */
    ax_copy(G_, rstd.g, rstd.c, sizeof(float) * N, AX_COPY_H2D);
    ax_rmsnorm_backward_apply(C_, dinp.c, dw.c, dout.c, inp.c, w.c, rstd.c, dot2.c, N, C, 3 * C);
    ax_rmsnorm_backward_apply(G_, dinp.g, dw.g, dout.g, inp.g, w.g, rstd.g, dot2.g, N, C, 3 * C);
    check(name, "bwd dinp+=", &dinp, (size_t)N * C, TOL);
    check(name, "bwd dw+=", &dw, (size_t)C, TOL);
    ax_rmsnorm_backward_apply(C_, NULL, dw.c, dout.c, inp.c, w.c, rstd.c, dot2.c, N, C, 3 * C);
    ax_rmsnorm_backward_apply(G_, NULL, dw.g, dout.g, inp.g, w.g, rstd.g, dot2.g, N, C, 3 * C);
    check(name, "bwd dw only", &dw, (size_t)C, TOL);
    free(h);
    drop(&inp), drop(&w), drop(&out), drop(&rstd), drop(&dout), drop(&dinp), drop(&dw);
    drop(&ss), drop(&dot), drop(&ss3), drop(&dot2);
}

static void t_rope(int B, int T, int H, int D) {
    int h2 = D / 2;
    long ld = 3L * H * D;
    both cs = put(NULL, sizeof(float) * T * h2), sn = put(NULL, sizeof(float) * T * h2);
    char name[64];
    snprintf(name, sizeof name, "rope B=%d T=%d H=%d D=%d", B, T, H, D);
    ax_rope_table(C_, cs.c, sn.c, T, D, 10000.0f);
    ax_rope_table(G_, cs.g, sn.g, T, D, 10000.0f);
    check(name, "table cos", &cs, (size_t)T * h2, TOL);
    check(name, "table sin", &sn, (size_t)T * h2, TOL);
    ax_copy(G_, cs.g, cs.c, sizeof(float) * T * h2, AX_COPY_H2D); /* same table below */
    ax_copy(G_, sn.g, sn.c, sizeof(float) * T * h2, AX_COPY_H2D);
    both x = put_rand((size_t)B * T * ld, 1);
    ax_rope_forward(C_, x.c, cs.c, sn.c, B, T, 2 * H, D, ld); /* q and k parts */
    ax_rope_forward(G_, x.g, cs.g, sn.g, B, T, 2 * H, D, ld);
    check(name, "forward", &x, (size_t)B * T * ld, TOL);
    ax_rope_backward(C_, x.c, cs.c, sn.c, B, T, H, D, ld);
    ax_rope_backward(G_, x.g, cs.g, sn.g, B, T, H, D, ld);
    check(name, "backward", &x, (size_t)B * T * ld, TOL);
    drop(&cs), drop(&sn), drop(&x);
}

/* Hkv K/V heads (grouped-query attention; H for multi-head): rows [q | k | v] of C + 2 Hkv D */
static void t_attention_gqa(int B, int T, int C, int H, int Hkv) {
    long n3 = (long)B * T * (C + 2L * Hkv * (C / H)), att = (long)B * H * T; /* [B,H,T] */
    both qkv = put_rand((size_t)n3, 1), out = put(NULL, sizeof(float) * B * T * C);
    both a = put(NULL, sizeof(float) * att), scratch = put(NULL, sizeof(float) * att);
    both dout = put_rand((size_t)B * T * C, 1), dqkv = put_rand((size_t)n3, 1);
    char name[96];
    snprintf(name, sizeof name, "attention %s B=%d T=%d C=%d H=%d Hkv=%d", attention_mode_, B, T, C,
             H, Hkv);
    ax_attention_forward_gqa(C_, out.c, a.c, qkv.c, B, T, C, H, Hkv);
    ax_attention_forward_gqa(G_, out.g, a.g, qkv.g, B, T, C, H, Hkv);
    check(name, "out", &out, (size_t)B * T * C, bf16_ ? TOL_BF16 : TOL);
    /* each backend's own saved `att` (both keep the row logsumexp, but only the backward that
     * reads it is the contract): the check compares out and the gradients, never att */
    ax_attention_backward_gqa(C_, dqkv.c, scratch.c, dout.c, qkv.c, a.c, out.c, B, T, C, H, Hkv);
    ax_attention_backward_gqa(G_, dqkv.g, scratch.g, dout.g, qkv.g, a.g, out.g, B, T, C, H, Hkv);
    check(name, "dqkv+=", &dqkv, (size_t)n3, bf16_ ? TOL_BF16 : TOL);
    drop(&qkv), drop(&out), drop(&a), drop(&scratch), drop(&dout), drop(&dqkv);
}
static void t_attention(int B, int T, int C, int H) {
    t_attention_gqa(B, T, C, H, H);
}
/* the attention shapes, on the path attention_mode picked (lib/backend/cuda/ops_attention.cu):
 * query blocks on cuBLAS as many rows as fit, or 16 rows (several blocks per sequence) */
static void t_attention_shapes(void) {
    t_attention(2, 37, 48, 3);  /* D = 16 */
    t_attention(1, 70, 128, 2); /* D = 64 */
    t_attention(2, 33, 45, 3);  /* D = 15: odd */
    t_attention(1, 65, 96, 1);  /* D = 96 */
    t_attention(1, 40, 256, 2); /* D = 128 */
    t_attention(1, 20, 512, 2); /* D = 256 */
    t_attention(3, 1, 32, 2);   /* T = 1 */
    /* grouped-query attention: groups of 2 and 3, multi-query (one K/V head) */
    t_attention_gqa(2, 37, 64, 4, 2);
    t_attention_gqa(1, 45, 96, 6, 2);
    t_attention_gqa(2, 33, 48, 3, 1);
}

static void t_swiglu(int N, int F) {
    both h = put_rand((size_t)N * 2 * F, 3), out = put(NULL, sizeof(float) * N * F);
    both dout = put_rand((size_t)N * F, 1), dh = put_rand((size_t)N * 2 * F, 1);
    char name[64];
    snprintf(name, sizeof name, "swiglu N=%d F=%d", N, F);
    ax_swiglu_forward(C_, out.c, h.c, N, F);
    ax_swiglu_forward(G_, out.g, h.g, N, F);
    check(name, "out", &out, (size_t)N * F, TOL);
    ax_swiglu_backward(C_, dh.c, dout.c, h.c, N, F);
    ax_swiglu_backward(G_, dh.g, dout.g, h.g, N, F);
    check(name, "dh+=", &dh, (size_t)N * 2 * F, TOL);
    drop(&h), drop(&out), drop(&dout), drop(&dh);
}

static void t_accumulate(long n) {
    both a = put_rand((size_t)n, 1), o = put_rand((size_t)n, 1);
    char name[64];
    snprintf(name, sizeof name, "accumulate n=%ld", n);
    ax_accumulate(C_, o.c, a.c, n);
    ax_accumulate(G_, o.g, a.g, n);
    check(name, "accumulate", &o, (size_t)n, TOL);
    drop(&a), drop(&o);
}

static both put_mask(int N) {
    uint8_t *m = malloc((size_t)N);
    for (int i = 0; i < N; i++) m[i] = (uint8_t)(i % 4 != 2); /* a goldfish-like drop pattern */
    both b = put(m, (size_t)N);
    free(m);
    return b;
}

/* one rank's slice [v0, v0 + Vl) of a padded vocabulary, `valid` real columns */
static void t_ce_shard(int N, int V, int Vl, int valid, int v0) {
    both logits = put_rand((size_t)N * Vl, 4), tok = put_tokens(N, V), mask = put_mask(N);
    both rowmax = put(NULL, sizeof(float) * N), stats = put(NULL, sizeof(float) * 2 * N);
    both losses = put(NULL, sizeof(float) * N), dl = put(NULL, sizeof(float) * N * Vl);
    char name[64];
    snprintf(name, sizeof name, "ce_shard N=%d Vl=%d valid=%d v0=%d", N, Vl, valid, v0);
    ax_ce_rowmax(C_, rowmax.c, logits.c, N, Vl, valid);
    ax_ce_rowmax(G_, rowmax.g, logits.g, N, Vl, valid);
    check(name, "rowmax", &rowmax, (size_t)N, TOL);
    ax_copy(G_, rowmax.g, rowmax.c, sizeof(float) * N, AX_COPY_H2D);
    ax_ce_partial(C_, stats.c, logits.c, rowmax.c, tok.c, mask.c, N, Vl, valid, v0);
    ax_ce_partial(G_, stats.g, logits.g, rowmax.g, tok.g, mask.g, N, Vl, valid, v0);
    check(name, "partial", &stats, (size_t)2 * N, TOL);
    ax_copy(G_, stats.g, stats.c, sizeof(float) * 2 * N, AX_COPY_H2D);
    float dscale = 0.5f / (float)N;
    double lc = ax_ce_finish(C_, losses.c, dl.c, logits.c, rowmax.c, stats.c, tok.c, mask.c, dscale,
                             N, Vl, valid, v0);
    double lg = ax_ce_finish(G_, losses.g, dl.g, logits.g, rowmax.g, stats.g, tok.g, mask.g, dscale,
                             N, Vl, valid, v0);
    check_scalar(name, lc, lg, TOL);
    check(name, "losses", &losses, (size_t)N, TOL);
    check(name, "dlogits", &dl, (size_t)N * Vl, TOL);
    /* in place (dlogits aliases logits) */
    lc = ax_ce_finish(C_, NULL, logits.c, logits.c, rowmax.c, stats.c, tok.c, mask.c, dscale, N, Vl,
                      valid, v0);
    lg = ax_ce_finish(G_, NULL, logits.g, logits.g, rowmax.g, stats.g, tok.g, mask.g, dscale, N, Vl,
                      valid, v0);
    check_scalar("ce_finish in-place", lc, lg, TOL);
    check("ce_finish in-place", "dlogits", &logits, (size_t)N * Vl, TOL);
    drop(&logits), drop(&tok), drop(&mask), drop(&rowmax), drop(&stats), drop(&losses), drop(&dl);
}

/* with_bf16: the update also writes the parameters' bf16 copy (a bf16 model's AdamW), which
 * must be the rounding of the GPU's own new parameters, bit for bit */
static void t_adamw(long n, int with_bf16) {
    both p = put_rand((size_t)n, 1), g = put_rand((size_t)n, 1), m = put_rand((size_t)n, 0.1f);
    both p16 = put(NULL, sizeof(uint16_t) * n);
    uint16_t *pc16 = with_bf16 ? p16.c : NULL, *pg16 = with_bf16 ? p16.g : NULL;
    float *hv = host_rand((size_t)n, 0.01f);
    for (long i = 0; i < n; i++) hv[i] = fabsf(hv[i]); /* a second moment is >= 0 */
    both v = put(hv, sizeof(float) * n);
    free(hv);
    char name[64];
    snprintf(name, sizeof name, "adamw n=%ld%s", n, with_bf16 ? " + bf16 copy" : "");
    for (long t = 1; t <= 3; t++) {
        ax_adamw_update(C_, p.c, pc16, g.c, m.c, v.c, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
        ax_adamw_update(G_, p.g, pg16, g.g, m.g, v.g, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
    }
    if (with_bf16) check_bf16_store(name, p16.g, p.g, 1, n);
    /* a slab part that does not start 16-byte aligned (the one-float-at-a-time kernel alone) */
    float *pc = p.c, *gc = g.c, *mc = m.c, *vc = v.c, *pg = p.g, *gg = g.g, *mg = m.g, *vg = v.g;
    ax_adamw_update(C_, pc + 1, pc16 ? pc16 + 1 : NULL, gc + 1, mc + 1, vc + 1, n - 1, 1e-3f, 0.9f,
                    0.95f, 1e-8f, 0.1f, 0.7f, 4);
    ax_adamw_update(G_, pg + 1, pg16 ? pg16 + 1 : NULL, gg + 1, mg + 1, vg + 1, n - 1, 1e-3f, 0.9f,
                    0.95f, 1e-8f, 0.1f, 0.7f, 4);
    if (with_bf16) check_bf16_store(name, p16.g, p.g, 1, n);
    check(name, "param", &p, (size_t)n, TOL);
    check(name, "m", &m, (size_t)n, TOL);
    check(name, "v", &v, (size_t)n, TOL);
    snprintf(name, sizeof name, "sum_squares n=%ld", n);
    check_scalar(name, ax_sum_squares(C_, p.c, n), ax_sum_squares(G_, p.g, n), TOL);
    drop(&p), drop(&p16), drop(&g), drop(&m), drop(&v);
}

/* the wire conversions of --grad-comm bf16, bit for bit: random values plus the cases rounding
 * gets wrong (ties both ways, the largest finite float, infinities, NaNs, subnormals, -0) */
static void t_wire_bf16(long n) {
    float *h = host_rand((size_t)n, 3.0f);
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                                0x7fc00001u, 0xffa00000u, 0x00000001u, 0x807fffffu, 0x80000000u};
    for (size_t i = 0; i < sizeof special / sizeof *special && (long)i < n; i++)
        memcpy(&h[i], &special[i], 4);
    both src = put(h, sizeof(float) * n), w = put(NULL, 2 * (size_t)n);
    both back = put(NULL, sizeof(float) * n);
    ax_to_bf16(C_, w.c, src.c, n), ax_to_bf16(G_, w.g, src.g, n);
    ax_from_bf16(C_, back.c, w.c, n), ax_from_bf16(G_, back.g, w.g, n);
    void *gw = malloc(2 * (size_t)n), *gb = malloc(sizeof(float) * n);
    ax_copy(G_, gw, w.g, 2 * (size_t)n, AX_COPY_D2H);
    ax_copy(G_, gb, back.g, sizeof(float) * n, AX_COPY_D2H);
    ax_sync(G_);
    int ok16 = !memcmp(gw, w.c, 2 * (size_t)n), ok32 = !memcmp(gb, back.c, sizeof(float) * n);
    /* and the CPU side against the format's definition (lib/dist's ax_f32_to_bf16, which the
     * collectives' combine rounds with, is the same expression) */
    const uint16_t *c16 = w.c;
    long bad = 0;
    for (long i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &h[i], 4);
        uint16_t want = (u & 0x7fffffffu) > 0x7f800000u
                            ? (uint16_t)((u >> 16) | 0x40u)
                            : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        bad += c16[i] != want;
    }
    ok16 = ok16 && !bad;
    ok16 ? n_pass++ : n_fail++;
    ok32 ? n_pass++ : n_fail++;
    printf("%-34s %-10s n=%-8ld %s (bits; %ld differ from the definition)\n", "to_bf16", "dst", n,
           ok16 ? "PASS" : "FAIL", bad);
    printf("%-34s %-10s n=%-8ld %s (bits)\n", "from_bf16", "dst", n, ok32 ? "PASS" : "FAIL");
    free(h), free(gw), free(gb);
    drop(&src), drop(&w), drop(&back);
}

/* Hkv K/V heads in the caches [B, Hkv, Tmax, D] (grouped-query attention; H for multi-head) */
static void t_decode_gqa(int B, int H, int Hkv, int D, int len, int Tmax) {
    long ld = (long)(H + 2 * Hkv) * D;
    both kc = put_rand((size_t)B * Hkv * Tmax * D, 1), vc = put_rand((size_t)B * Hkv * Tmax * D, 1);
    both row = put_rand((size_t)B * ld, 1), out = put(NULL, sizeof(float) * B * H * D);
    char name[64];
    snprintf(name, sizeof name, "kv_append B=%d H=%d Hkv=%d D=%d pos=%d", B, H, Hkv, D, len - 1);
    float *r = row.c, *rg = row.g;
    long k0 = (long)H * D, v0 = (long)(H + Hkv) * D;
    ax_kv_append(C_, kc.c, vc.c, r + k0, r + v0, ld, B, Hkv, D, Tmax, len - 1);
    ax_kv_append(G_, kc.g, vc.g, rg + k0, rg + v0, ld, B, Hkv, D, Tmax, len - 1);
    check(name, "k cache", &kc, (size_t)B * Hkv * Tmax * D, 1e-30);
    check(name, "v cache", &vc, (size_t)B * Hkv * Tmax * D, 1e-30);
    snprintf(name, sizeof name, "attention_decode len=%d Tmax=%d Hkv=%d", len, Tmax, Hkv);
    /* q: the first H*D floats of each packed row */
    both q = put(NULL, sizeof(float) * B * H * D);
    ax_copy_rows(C_, q.c, H * D, row.c, ld, B, H * D);
    ax_copy_rows(G_, q.g, H * D, row.g, ld, B, H * D);
    check("copy_rows", "dst", &q, (size_t)B * H * D, 1e-30);
    ax_attention_decode_gqa(C_, out.c, q.c, kc.c, vc.c, B, H, Hkv, D, len, Tmax);
    ax_attention_decode_gqa(G_, out.g, q.g, kc.g, vc.g, B, H, Hkv, D, len, Tmax);
    check(name, "out", &out, (size_t)B * H * D, TOL);
    drop(&kc), drop(&vc), drop(&row), drop(&out), drop(&q);
}
static void t_decode(int B, int H, int D, int len, int Tmax) {
    t_decode_gqa(B, H, H, D, len, Tmax);
}

static void t_argmax(int B, int Vl, int valid, int v0) {
    float *h = host_rand((size_t)B * Vl, 1);
    if (valid > 5) h[3] = h[5] = 2.0f; /* a tie in row 0: the lower id wins */
    both x = put(h, sizeof(float) * B * Vl);
    double *bc = calloc(2 * (size_t)B, sizeof(double)), *bg = calloc(2 * (size_t)B, sizeof(double));
    ax_argmax_rows(C_, bc, x.c, B, Vl, valid, v0);
    ax_argmax_rows(G_, bg, x.g, B, Vl, valid, v0); /* best is host memory */
    int same = 1;
    for (int i = 0; i < 2 * B; i++) same &= bc[i] == bg[i];
    same ? n_pass++ : n_fail++;
    printf("%-34s %-10s B=%d Vl=%d valid=%d v0=%d: %s\n", "argmax_rows", "exact", B, Vl, valid, v0,
           same ? "PASS" : "FAIL");
    free(h), free(bc), free(bg);
    drop(&x);
}

/* ---- the architectures beyond Llama (GPT-NeoX, GPT-2): lib/backend/cuda/ops_arch.cu ---- */
static void t_layernorm(int N, int C) {
    both inp = put_rand((size_t)N * C, 2), w = put_rand((size_t)C, 1), b = put_rand((size_t)C, 1);
    both out = put(NULL, sizeof(float) * N * C), mean = put(NULL, sizeof(float) * N);
    both rstd = put(NULL, sizeof(float) * N), st = put(NULL, sizeof(float) * 2 * N);
    both dout = put_rand((size_t)N * C, 1), dinp = put_rand((size_t)N * C, 1);
    both dw = put_rand((size_t)C, 1), db = put_rand((size_t)C, 1);
    char name[64];
    snprintf(name, sizeof name, "layernorm N=%d C=%d", N, C);
    ax_layernorm_forward(C_, out.c, mean.c, rstd.c, inp.c, w.c, b.c, st.c, N, C, 1e-5f);
    ax_layernorm_forward(G_, out.g, mean.g, rstd.g, inp.g, w.g, b.g, st.g, N, C, 1e-5f);
    check(name, "out", &out, (size_t)N * C, TOL);
    check(name, "mean", &mean, (size_t)N, TOL);
    check(name, "rstd", &rstd, (size_t)N, TOL);
    /* the saved statistics from the CPU on both, so only the backward is compared */
    ax_copy(G_, mean.g, mean.c, sizeof(float) * N, AX_COPY_H2D);
    ax_copy(G_, rstd.g, rstd.c, sizeof(float) * N, AX_COPY_H2D);
    ax_layernorm_backward(C_, dinp.c, dw.c, db.c, dout.c, inp.c, w.c, mean.c, rstd.c, st.c, N, C);
    ax_layernorm_backward(G_, dinp.g, dw.g, db.g, dout.g, inp.g, w.g, mean.g, rstd.g, st.g, N, C);
    check(name, "dots", &st, (size_t)2 * N, TOL);
    check(name, "dinp+=", &dinp, (size_t)N * C, TOL);
    check(name, "dweight+=", &dw, (size_t)C, TOL);
    check(name, "dbias+=", &db, (size_t)C, TOL);
    /* sharded: C of C_total = 2C columns, the reduced statistics stood in for by local ones */
    snprintf(name, sizeof name, "layernorm_shard N=%d C=%d/%d", N, C, 2 * C);
    ax_layernorm_rowsum(C_, st.c, inp.c, N, C);
    ax_layernorm_rowsum(G_, st.g, inp.g, N, C);
    check(name, "rowsum", &st, (size_t)N, TOL);
    ax_copy(G_, st.g, st.c, sizeof(float) * N, AX_COPY_H2D);
    ax_layernorm_sqdev(C_, (float *)st.c + N, inp.c, st.c, N, C, 2 * C);
    ax_layernorm_sqdev(G_, (float *)st.g + N, inp.g, st.g, N, C, 2 * C);
    check(name, "sqdev", &st, (size_t)2 * N, TOL);
    ax_copy(G_, st.g, st.c, sizeof(float) * 2 * N, AX_COPY_H2D);
    ax_layernorm_apply(C_, out.c, mean.c, rstd.c, inp.c, w.c, b.c, st.c, (float *)st.c + N, N, C,
                       2 * C, 1e-5f);
    ax_layernorm_apply(G_, out.g, mean.g, rstd.g, inp.g, w.g, b.g, st.g, (float *)st.g + N, N, C,
                       2 * C, 1e-5f);
    check(name, "apply out", &out, (size_t)N * C, TOL);
    ax_layernorm_backward_apply(C_, dinp.c, NULL, db.c, dout.c, inp.c, w.c, mean.c, rstd.c, st.c, N,
                                C, 2 * C); /* dweight NULL */
    ax_layernorm_backward_apply(G_, dinp.g, NULL, db.g, dout.g, inp.g, w.g, mean.g, rstd.g, st.g, N,
                                C, 2 * C);
    check(name, "dinp+=", &dinp, (size_t)N * C, TOL);
    check(name, "dbias+=", &db, (size_t)C, TOL);
    drop(&inp), drop(&w), drop(&b), drop(&out), drop(&mean), drop(&rstd), drop(&st);
    drop(&dout), drop(&dinp), drop(&dw), drop(&db);
}

static void t_gelu(int N, int F, int tanh_approx) {
    both h = put_rand((size_t)N * F, 4), out = put(NULL, sizeof(float) * N * F);
    both dout = put_rand((size_t)N * F, 1), dh = put_rand((size_t)N * F, 1);
    char name[64];
    snprintf(name, sizeof name, "gelu%s N=%d F=%d", tanh_approx ? "_tanh" : "", N, F);
    ax_gelu_forward(C_, out.c, h.c, N, F, tanh_approx);
    ax_gelu_forward(G_, out.g, h.g, N, F, tanh_approx);
    check(name, "out", &out, (size_t)N * F, TOL);
    ax_gelu_backward(C_, dh.c, dout.c, h.c, N, F, tanh_approx);
    ax_gelu_backward(G_, dh.g, dout.g, h.g, N, F, tanh_approx);
    check(name, "dh+=", &dh, (size_t)N * F, TOL);
    drop(&h), drop(&out), drop(&dout), drop(&dh);
}

static void t_bias(int N, int OC) {
    both out = put_rand((size_t)N * OC, 1), bias = put_rand((size_t)OC, 1);
    both dout = put_rand((size_t)N * OC, 1), db = put_rand((size_t)OC, 1);
    char name[64];
    snprintf(name, sizeof name, "bias N=%d OC=%d", N, OC);
    ax_bias_add(C_, out.c, bias.c, N, OC);
    ax_bias_add(G_, out.g, bias.g, N, OC);
    check(name, "out+=", &out, (size_t)N * OC, TOL);
    ax_bias_backward(C_, db.c, dout.c, N, OC);
    ax_bias_backward(G_, db.g, dout.g, N, OC);
    check(name, "dbias+=", &db, (size_t)OC, TOL);
    drop(&out), drop(&bias), drop(&dout), drop(&db);
}

/* the per-example gradient norms' ops: a dot in double, rows scaled, columns gathered */
static void t_dp(int R, int cols, int n) {
    both a = put_rand((size_t)R * cols, 1), b = put_rand((size_t)R * cols, 1);
    both w = put_rand((size_t)R, 1), out = put_rand((size_t)R * n, 1);
    both idx = put_tokens(n, cols);
    char name[64];
    snprintf(name, sizeof name, "dp R=%d cols=%d n=%d", R, cols, n);
    check_scalar(name, ax_dot(C_, a.c, b.c, (long)R * cols), ax_dot(G_, a.g, b.g, (long)R * cols),
                 TOL);
    ax_scale_rows(C_, a.c, w.c, R, cols);
    ax_scale_rows(G_, a.g, w.g, R, cols);
    check(name, "scale_rows", &a, (size_t)R * cols, TOL);
    ax_gather_cols(C_, out.c, b.c, cols, idx.c, R, n);
    ax_gather_cols(G_, out.g, b.g, cols, idx.g, R, n);
    check(name, "gather_cols", &out, (size_t)R * n, TOL);
    drop(&a), drop(&b), drop(&w), drop(&out), drop(&idx);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const ax_backend *gpu = NULL;
    if (ax_backend_select("cuda", &gpu) != AX_OK) {
        /* a CUDA build whose plugin does not load is broken, not a machine without a GPU */
        if (strstr(ax_error_msg(), "cannot load the CUDA plugin")) {
            printf("FAIL: %s\n", ax_error_msg());
            return 1;
        }
        printf("SKIP: no CUDA device: %s\n", ax_error_msg());
        return 77;
    }
    if (!hooks()) {
        printf("FAIL: the CUDA backend's test hooks: %s\n", ax_error_msg());
        return 1;
    }
    gpu = spy(1, gpu);
    if (ax_ctx_create(spy(0, ax_backend_cpu()), 1 << 20, &C_) != AX_OK ||
        ax_ctx_create(gpu, 1 << 20, &G_) != AX_OK) {
        printf("SKIP: no CUDA device: cannot create a context: %s\n", ax_error_msg());
        return 77;
    }
    printf("CUDA vs CPU, fp32, tolerance %.0e on max|cpu-gpu|/max|cpu| per output\n", TOL);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            t_gemm("NT"[ta], "NT"[tb], 37, 53, 29, 0.7f, 0.3f, 0);
            t_gemm("NT"[ta], "NT"[tb], 64, 17, 130, 1.0f, 1.0f, 3);
        }
    t_gemm('N', 'N', 5, 7, 0, 1.0f, 0.0f, 1); /* k = 0: C = beta C */
    t_matmul(33, 48, 71);
    t_matmul(128, 256, 96);
    t_embedding(61, 70, 97, 0, -1);
    t_embedding(61, 70, 97, 30, 40);
    t_embedding(300, 33, 11, 5, 6);
    t_rmsnorm(19, 77);
    t_rmsnorm(64, 512);
    t_rmsnorm(600, 96); /* dweight in three row chunks, the last one partial */
    t_rope(2, 37, 3, 16);
    t_rope(1, 9, 2, 64);
    t_attention_shapes();
    attention_mode("blocks of 16", 0, 16);
    t_attention_shapes();
    attention_mode("blocks", 0, 0);
    t_swiglu(13, 67);
    if (!quick) t_swiglu(64, 1024);
    t_accumulate(10007);
    if (!quick) t_accumulate(1 << 20);
    t_ce_shard(29, 1003, 1003, 1003, 0); /* one rank: the whole vocabulary */
    if (!quick) t_ce_shard(7, 50257, 50257, 50257, 0);
    t_ce_shard(29, 2000, 1000, 1000, 1000);
    t_ce_shard(29, 1999, 1000, 999, 1000); /* the last shard: one padding column */
    t_ce_shard(17, 3000, 1000, 1000, 0);
    t_adamw(10007, 1);
    if (!quick) t_adamw(3000001, 1);
    t_wire_bf16(1001);
    if (!quick) t_wire_bf16(2000003);
    t_decode(2, 3, 16, 37, 50);
    t_decode(1, 4, 64, 1, 8);
    t_decode(3, 2, 128, 100, 128);
    t_decode(3, 3, 10, 40, 41);        /* D not a multiple of 4: one float at a time */
    t_decode_gqa(2, 6, 2, 16, 37, 50); /* grouped-query: K/V head h / 3 */
    t_decode_gqa(1, 4, 1, 32, 9, 16);  /* multi-query */
    t_argmax(4, 1003, 1003, 0);
    t_argmax(3, 1000, 999, 2000);
    t_argmax(2, 64, 0, 64);
    /* the architectures beyond Llama */
    t_layernorm(19, 77);
    t_layernorm(600, 96); /* column sums in three row chunks, the last one partial */
    t_gelu(13, 67, 0);
    t_gelu(13, 67, 1);
    t_bias(7, 131);
    t_bias(300, 40);
    t_dp(64, 97, 64);
    if (!quick) t_dp(300, 50257, 37);

    ax_sync(G_);
    if (ax_ctx_status(G_) != AX_OK) {
        printf("FAIL: the CUDA backend reported an error: %s\n", ax_error_msg());
        n_fail++;
    }
    ax_ctx_free(G_);

    /* --precision bf16: the GEMM-using ops, staging reuse, and ops that stay fp32 (the header
     * line first: bench/device_check.sh splits the output there) */
    printf("CUDA bf16 vs CPU: tolerance %.0e vs fp32, %.0e vs the CPU on bf16-rounded "
           "operands\n",
           TOL_BF16, TOL);
    if (ax_ctx_create_prec(gpu, AX_PREC_BF16, 1 << 20, &G_) != AX_OK) {
        printf("FAIL: cannot create a bf16 context: %s\n", ax_error_msg());
        return 1;
    }
    bf16_ = 1;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            t_gemm("NT"[ta], "NT"[tb], 37, 53, 29, 0.7f, 0.3f, 0);
            t_gemm("NT"[ta], "NT"[tb], 64, 17, 130, 1.0f, 1.0f, 3);
        }
    t_gemm('N', 'N', 5, 7, 0, 1.0f, 0.0f, 1); /* k = 0: C = beta C */
    t_matmul(33, 48, 71);
    t_matmul(128, 256, 96);
    t_bf16_reuse(29);
    t_bf16_acts(19, 77, 45); /* rows padded: 77 -> 80, 45 -> 48 bf16 columns */
    t_bf16_acts(64, 128, 96);
    t_accumulate(10007);       /* elementwise: fp32 on a bf16 context, 1e-5 */
    t_adamw(10007, 0);         /* fp32 master weights and moments */
    t_attention(2, 37, 48, 3); /* bf16 products on the tensor cores: 2e-2 */
    t_attention_gqa(2, 33, 48, 3, 1);
    attention_mode("blocks of 16", 0, 16);
    t_attention(1, 70, 128, 2);
    /* the fused bf16 tensor-core kernels (ops_flash.cu): head dims 16, 32, 64, 128, several
     * 64-row tiles with a partial last one, grouped-query, T = 1 */
    attention_mode("flash", 1, 0);
    t_attention(2, 37, 64, 4);         /* D = 16 */
    t_attention(1, 70, 128, 2);        /* D = 64 */
    t_attention(1, 130, 256, 2);       /* D = 128, three tiles */
    t_attention_gqa(2, 67, 128, 4, 2); /* D = 32, groups of 2 */
    t_attention(3, 1, 32, 2);          /* T = 1 */
    attention_mode("blocks", 0, 0);
    ax_sync(G_);
    if (ax_ctx_status(G_) != AX_OK) {
        printf("FAIL: the CUDA backend reported an error: %s\n", ax_error_msg());
        n_fail++;
    }
    check_coverage();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    ax_ctx_free(C_);
    ax_ctx_free(G_);
    return n_fail ? 1 : 0;
}
