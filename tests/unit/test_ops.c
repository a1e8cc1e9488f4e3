/* lib/backend/ops.h: forward values against float64 references, every backward against central
 * finite differences of a float64 reference forward, and the "backward accumulates" contract. Sizes
 * are small and deliberately not multiples of 16 (vector tails). */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"
#include "tests/unit/test_ops_util.h"
#include "lib/backend/cpu/cpu.h"

#define TOL_FWD 2e-6 /* float kernel vs float64 reference, relative to the largest value */
#define TOL_GRAD 2e-6

TestSuite(ops);

/* ---------------------------------------------------------------- expf */

Test(ops, expf_accuracy) {
    double worst = 0;
    for (float x = -87.0f; x < 88.5f; x += 0.00731f) {
        double ref = exp((double)x), rel = fabs(ax_expf(x) - ref) / ref;
        worst = fmax(worst, rel);
    }
    cr_expect(worst < 3e-7, "ax_expf max rel err %g", worst);
    cr_expect(ax_expf(-100.0f) == 0.0f && ax_expf(-INFINITY) == 0.0f);
    cr_expect(ax_expf(0.0f) == 1.0f);
    cr_expect(isfinite(ax_expf(1000.0f)) && ax_expf(1000.0f) > 1e38f);
}

/* ---------------------------------------------------------------- GEMM / linear */

static void ref_gemm(char ta, char tb, long m, long n, long k, double alpha, const float *A,
                     long lda, const float *B, long ldb, double beta, const double *C0, long ldc,
                     double *out) {
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++) {
            double s = 0;
            for (long p = 0; p < k; p++) {
                double a = ta == 'N' ? A[i * lda + p] : A[p * lda + i];
                double b = tb == 'N' ? B[p * ldb + j] : B[j * ldb + p];
                s += a * b;
            }
            out[i * ldc + j] = alpha * s + beta * C0[i * ldc + j];
        }
}

Test(ops, sgemm_all_transposes_strided) {
    seed(1);
    const long m = 13, n = 21, k = 35, pad = 3;
    const char tr[2] = {'N', 'T'};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            long lda = (tr[a] == 'N' ? k : m) + pad, ldb = (tr[b] == 'N' ? n : k) + pad,
                 ldc = n + pad;
            long ra = tr[a] == 'N' ? m : k, rb = tr[b] == 'N' ? k : n;
            float *A = frand(ra * lda, 1), *B = frand(rb * ldb, 1), *C = frand(m * ldc, 1);
            double *want = todbl(C, m * ldc);
            ref_gemm(tr[a], tr[b], m, n, k, 0.5, A, lda, B, ldb, -1.5, want, ldc, want);
            ax_gemm(CTX, tr[a], tr[b], m, n, k, 0.5f, A, lda, B, ldb, -1.5f, C, ldc);
            char what[32];
            snprintf(what, sizeof what, "sgemm %c%c", tr[a], tr[b]);
            expect_close(what, C, want, m * ldc, TOL_FWD * 4); /* padding columns: beta * C */
            free(A), free(B), free(C), free(want);
        }
}

Test(ops, sgemm_nt_wide_column_split) {
    /* wide NT products are split over threads by output columns: one block a thread, or (few
     * rows, n >= 512 a thread) chunks of about 256 columns with a short last one; 2-4 threads */
    seed(21);
    const long m = 19, k = 33, lda = k + 2, ldb = k + 5;
    const long ns[] = {1100, 1700};
    for (int q = 0; q < 2; q++) {
        long n = ns[q], ldc = n + 7;
        float *A = frand(m * lda, 1), *B = frand(n * ldb, 1), *C0 = frand(m * ldc, 1);
        double *want = todbl(C0, m * ldc);
        ref_gemm('N', 'T', m, n, k, 1.0, A, lda, B, ldb, 0.5, want, ldc, want);
        for (int nt = 2; nt <= 4; nt++) {
            omp_set_num_threads(nt);
            float *C = fcopy(C0, m * ldc);
            ax_gemm(CTX, 'N', 'T', m, n, k, 1.0f, A, lda, B, ldb, 0.5f, C, ldc);
            char what[48];
            snprintf(what, sizeof what, "sgemm NT split n=%ld, %d threads", n, nt);
            expect_close(what, C, want, m * ldc, TOL_FWD * 4);
            free(C);
        }
        free(A), free(B), free(C0), free(want);
    }
    omp_set_num_threads(1);
}

/* the forward's C = A B^T with a few hundred rows runs on a cached oneDNN matmul primitive
 * (gemm_primitive.c): strided operands, beta 0 and 1, 1 and 2 threads, the same shape twice
 * (the cached primitive), and beta = 0.5, which the primitive does not take (dnnl_sgemm) */
Test(ops, sgemm_nt_primitive_shapes) {
    seed(22);
    const long m = AX_CPU_PRIMITIVE_MIN_M + 7, n = 300, k = 260, lda = k + 3, ldb = k + 1,
               ldc = n + 5;
    const float betas[] = {0.0f, 1.0f, 1.0f, 0.5f};
    float *A = frand(m * lda, 1), *B = frand(n * ldb, 1), *C0 = frand(m * ldc, 1);
    int was = ax_sgemm_primitive_enable(1); /* off by default in non-AVX-512 builds */
    for (int q = 0; q < 4; q++) {
        double *want = todbl(C0, m * ldc);
        ref_gemm('N', 'T', m, n, k, 1.0, A, lda, B, ldb, betas[q], want, ldc, want);
        for (int nt = 1; nt <= 2; nt++) {
            omp_set_num_threads(nt);
            float *C = fcopy(C0, m * ldc);
            ax_gemm(CTX, 'N', 'T', m, n, k, 1.0f, A, lda, B, ldb, betas[q], C, ldc);
            char what[64];
            snprintf(what, sizeof what, "sgemm NT m=%ld beta=%g, %d threads", m, betas[q], nt);
            expect_close(what, C, want, m * ldc, TOL_FWD * 8); /* k = 260 terms */
            free(C);
        }
        free(want);
    }
    omp_set_num_threads(1);
    /* called directly: 0 when it ran (and then right), -1 for what it does not take */
    float *C = fcopy(C0, m * ldc);
    double *want = todbl(C0, m * ldc);
    ref_gemm('N', 'T', m, n, k, 1.0, A, lda, B, ldb, 0.0, want, ldc, want);
    cr_expect(ax_sgemm_primitive_nt(m, n, k, A, lda, B, ldb, 0.0f, C, ldc) == 0);
    expect_close("primitive direct", C, want, m * ldc, TOL_FWD * 8);
    cr_expect(ax_sgemm_primitive_nt(m, n, k, A, lda, B, ldb, 0.5f, C, ldc) == -1);
    cr_expect(ax_sgemm_primitive_nt(AX_CPU_PRIMITIVE_MIN_M - 1, n, k, A, lda, B, ldb, 0.0f, C,
                                    ldc) == -1);
    ax_sgemm_primitive_enable(0);
    cr_expect(ax_sgemm_primitive_nt(m, n, k, A, lda, B, ldb, 0.0f, C, ldc) == -1, "turned off");
    ax_sgemm_primitive_enable(was);
    free(A), free(B), free(C0), free(C), free(want);
}

/* C = A^T B with many rows (the LM head's dW) is split by rows of C in chunks: 2 and 3 threads,
 * a short last chunk, strided operands */
Test(ops, sgemm_tn_tall_row_split) {
    seed(23);
    const long m = 25000, n = 20, k = 9, lda = m + 3, ldb = n + 1, ldc = n + 2;
    float *A = frand(k * lda, 1), *B = frand(k * ldb, 1), *C0 = frand(m * ldc, 1);
    double *want = todbl(C0, m * ldc);
    ref_gemm('T', 'N', m, n, k, 0.5, A, lda, B, ldb, 1.0, want, ldc, want);
    for (int nt = 2; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        float *C = fcopy(C0, m * ldc);
        ax_gemm(CTX, 'T', 'N', m, n, k, 0.5f, A, lda, B, ldb, 1.0f, C, ldc);
        char what[48];
        snprintf(what, sizeof what, "sgemm TN row split, %d threads", nt);
        expect_close(what, C, want, m * ldc, TOL_FWD * 4);
        free(C);
    }
    omp_set_num_threads(1);
    free(A), free(B), free(C0), free(want);
}

/* an untransposed B whose rows lie a multiple of 512 floats apart, under a short A (32..384
 * rows), goes through a padded copy (gemm.c: the cache-set aliasing; not in -march=native builds
 * on AVX-512, which call dnnl directly, but in the others, ASan's included); k = 40000 with n =
 * 100 is past the 4M-float scratch, so k also goes in two slices (the first with beta, then 1) */
Test(ops, sgemm_nn_aliasing_ldb_padded_copy) {
    seed(29);
    const long m = 40, n = 100, lda_extra = 3, ldc = n + 5, ldb = 512;
    const long ks[] = {700, 40000};
    const char tr[2] = {'N', 'T'};
    for (int a = 0; a < 2; a++)
        for (int q = 0; q < 2; q++) {
            long k = ks[q], lda = (tr[a] == 'N' ? k : m) + lda_extra;
            long ra = tr[a] == 'N' ? m : k;
            float *A = frand(ra * lda, 1), *B = frand(k * ldb, 1), *C = frand(m * ldc, 1);
            double *want = todbl(C, m * ldc);
            ref_gemm(tr[a], 'N', m, n, k, 0.5, A, lda, B, ldb, -1.5, want, ldc, want);
            omp_set_num_threads(2);
            ax_gemm(CTX, tr[a], 'N', m, n, k, 0.5f, A, lda, B, ldb, -1.5f, C, ldc);
            omp_set_num_threads(1);
            char what[48];
            snprintf(what, sizeof what, "sgemm %cN ldb=512 k=%ld", tr[a], k);
            /* k = 40000 terms of size ~0.5: the float sum's error grows like sqrt(k) */
            expect_close(what, C, want, m * ldc, TOL_FWD * (k > 1000 ? 40 : 4));
            free(A), free(B), free(C), free(want);
        }
}

Test(ops, sgemm_k0_scales_c) {
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {0}, B[1] = {0};
    ax_gemm(CTX, 'N', 'N', 2, 3, 0, 1.0f, A, 1, B, 3, 2.0f, C, 3);
    cr_expect(C[0] == 2 && C[5] == 12);
}

struct mm_ctx {
    double *inp, *w, *G;
    int N, C, OC;
};
static double mm_loss(void *p) {
    struct mm_ctx *c = p;
    double L = 0;
    for (int i = 0; i < c->N; i++)
        for (int o = 0; o < c->OC; o++) {
            double s = 0;
            for (int j = 0; j < c->C; j++) s += c->inp[i * c->C + j] * c->w[o * c->C + j];
            L += c->G[i * c->OC + o] * s;
        }
    return L;
}

Test(ops, matmul_forward_backward) {
    seed(2);
    int N = 5, C = 19, OC = 23;
    float *inp = frand(N * C, 1), *w = frand(OC * C, 0.5), *G = frand(N * OC, 1);
    float *out = fzeros(N * OC), *dinp = fzeros(N * C), *dw = fzeros(OC * C);
    ax_matmul_forward(CTX, out, inp, w, N, C, OC);
    double *want = dzeros(N * OC);
    ref_gemm('N', 'T', N, OC, C, 1, inp, C, w, C, 0, want, OC, want);
    expect_close("matmul out", out, want, N * OC, TOL_FWD);

    ax_matmul_backward(CTX, dinp, dw, G, inp, w, N, C, OC);
    struct mm_ctx c = {todbl(inp, N * C), todbl(w, OC * C), todbl(G, N * OC), N, C, OC};
    double *gi = fd_grad(mm_loss, &c, c.inp, N * C), *gw = fd_grad(mm_loss, &c, c.w, OC * C);
    expect_close("matmul dinp", dinp, gi, N * C, TOL_GRAD);
    expect_close("matmul dw", dw, gw, OC * C, TOL_GRAD);

    /* accumulates: a second call adds the same again; NULL outputs are skipped */
    ax_matmul_backward(CTX, dinp, NULL, G, inp, w, N, C, OC);
    ax_matmul_backward(CTX, NULL, dw, G, inp, w, N, C, OC);
    for (long i = 0; i < N * C; i++) gi[i] *= 2;
    for (long i = 0; i < OC * C; i++) gw[i] *= 2;
    expect_close("matmul dinp x2", dinp, gi, N * C, TOL_GRAD);
    expect_close("matmul dw x2", dw, gw, OC * C, TOL_GRAD);
    free(inp), free(w), free(G), free(out), free(dinp), free(dw), free(want), free(gi), free(gw);
    free(c.inp), free(c.w), free(c.G);
}

Test(ops, matmul_larger_shapes) {
    seed(3);
    int N = 67, C = 130, OC = 97;
    float *inp = frand(N * C, 1), *w = frand(OC * C, 0.1), *out = fzeros(N * OC);
    ax_matmul_forward(CTX, out, inp, w, N, C, OC);
    double *want = dzeros(N * OC);
    ref_gemm('N', 'T', N, OC, C, 1, inp, C, w, C, 0, want, OC, want);
    expect_close("matmul out", out, want, N * OC, TOL_FWD * 2);
    free(inp), free(w), free(out), free(want);
}

/* a few-row product out[N, OC] (one thread) against itself on 2-4 threads (the same bits) and
 * against each row alone (the same bits: a sequence decodes the same at any --batch). run(arg,
 * out, inp, N) computes the product; rows run through `alone` when not NULL. */
typedef void (*few_rows_fn)(const void *arg, float *out, const float *inp, int N);
static void expect_invariant_bits(const char *what, few_rows_fn run, few_rows_fn alone,
                                  const void *arg, const float *inp, const float *out, int N, int C,
                                  int OC) {
    for (int nt = 2; nt <= 4; nt++) {
        float *o2 = fzeros((long)N * OC);
        omp_set_num_threads(nt);
        run(arg, o2, inp, N);
        cr_expect(!memcmp(o2, out, sizeof(float) * N * OC), "%s: %d threads change the bits", what,
                  nt);
        free(o2);
    }
    omp_set_num_threads(1);
    float *one = fzeros(OC);
    for (int r = 0; r<N; r += N - 1> 0 ? N - 1 : 1) {
        (alone ? alone : run)(arg, one, inp + (long)r * C, 1);
        cr_expect(!memcmp(one, out + (long)r * OC, sizeof(float) * OC),
                  "%s: row %d alone differs from the batch's", what, r);
    }
    free(one);
}
typedef struct {
    const float *w;
    int C, OC;
} few_rows_args;
static void run_gemv(const void *arg, float *out, const float *inp, int N) {
    const few_rows_args *a = arg;
    ax_cpu_gemv_forward(out, inp, a->w, N, a->C, a->OC);
}
static void run_matmul(const void *arg, float *out, const float *inp, int N) {
    const few_rows_args *a = arg;
    ax_matmul_forward(CTX, out, inp, a->w, N, a->C, a->OC);
}
static void run_packed(const void *arg, float *out, const float *inp, int N) {
    const few_rows_args *a = arg; /* w: the packed copy */
    ax_matmul_forward_packed(CTX, out, inp, a->w, N, a->C, a->OC);
}

/* matmul_forward for a few rows (decoding's batches: N <= AX_CPU_GEMV_MAX_N) runs gemv.c's
 * kernel: against the float64 reference and dnnl_sgemm for every tile tail (N % 4 = 1..3,
 * OC % 5 = 1..4, C % 16 and C < 16), the same bits on 1 to 4 threads (OC = 1000: threads take
 * ~8 chunks each from a shared counter, in an order that varies run to run), and a row's bits
 * whatever batch it is in (so a sequence decodes the same at any --batch) */
Test(ops, matmul_forward_few_rows_gemv) {
    seed(23);
    const int Ns[] = {1, 2, 3, 7, 16, 31, AX_CPU_GEMV_MAX_N};
    const int Cs[] = {5, 16, 67, 130}, OCs[] = {1, 7, 8, 9, 200, 1000};
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t b = 0; b < sizeof Cs / sizeof *Cs; b++)
            for (size_t c = 0; c < sizeof OCs / sizeof *OCs; c++) {
                int N = Ns[a], C = Cs[b], OC = OCs[c];
                float *inp = frand((long)N * C, 1), *w = frand((long)OC * C, 0.5);
                float *out = fzeros((long)N * OC), *blas = fzeros((long)N * OC);
                double *want = dzeros((long)N * OC);
                ref_gemm('N', 'T', N, OC, C, 1, inp, C, w, C, 0, want, OC, want);
                char what[64];
                snprintf(what, sizeof what, "gemv N=%d C=%d OC=%d", N, C, OC);
                omp_set_num_threads(1);
                ax_matmul_forward(CTX, out, inp, w, N, C, OC);
                expect_close(what, out, want, (long)N * OC, TOL_FWD * 2);
                ax_sgemm('N', 'T', N, OC, C, 1.0f, inp, C, w, C, 0.0f, blas, OC);
                double *bd = todbl(blas, (long)N * OC);
                expect_close(what, out, bd, (long)N * OC, TOL_FWD * 4);
                few_rows_args args = {w, C, OC};
                expect_invariant_bits(what, run_gemv, run_matmul, &args, inp, out, N, C, OC);
                free(inp), free(w), free(out), free(blas), free(want), free(bd);
            }
}

/* decoding's packed weights (gemv_packed.c): against the float64 reference for every tail (N %
 * 8 and % 4, OC % 48 and % 24, C below and above the k block), the same bits on 1 to 4 threads,
 * and a row's bits whatever batch it is in */
Test(ops, matmul_forward_packed) {
    seed(29);
    cr_assert(ax_matmul_packs(CTX), "the CPU backend packs");
    const int Ns[] = {1, 2, 5, 8, 13, 32, 40};
    const int Cs[] = {1, 7, 33, 2100}, OCs[] = {1, 23, 48, 49, 97, 300};
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t b = 0; b < sizeof Cs / sizeof *Cs; b++)
            for (size_t c = 0; c < sizeof OCs / sizeof *OCs; c++) {
                int N = Ns[a], C = Cs[b], OC = OCs[c];
                float *inp = frand((long)N * C, 1), *w = frand((long)OC * C, 0.5);
                size_t bytes = ax_matmul_pack_bytes(CTX, C, OC);
                cr_assert(bytes >= sizeof(float) * (size_t)OC * C, "pack bytes %zu", bytes);
                float *pk = fzeros((long)(bytes / sizeof(float)));
                ax_matmul_pack(CTX, pk, w, C, OC);
                float *out = fzeros((long)N * OC);
                double *want = dzeros((long)N * OC);
                ref_gemm('N', 'T', N, OC, C, 1, inp, C, w, C, 0, want, OC, want);
                char what[64];
                snprintf(what, sizeof what, "packed N=%d C=%d OC=%d", N, C, OC);
                omp_set_num_threads(1);
                ax_matmul_forward_packed(CTX, out, inp, pk, N, C, OC);
                expect_close(what, out, want, (long)N * OC, TOL_FWD * 2);
                few_rows_args args = {pk, C, OC};
                expect_invariant_bits(what, run_packed, NULL, &args, inp, out, N, C, OC);
                free(inp), free(w), free(pk), free(out), free(want);
            }
}

/* ---------------------------------------------------------------- embedding */

Test(ops, embedding) {
    seed(4);
    int V = 11, C = 70, N = 9;
    int32_t tokens[9] = {3, 7, 3, 0, 10, 3, 7, 5, 0}; /* repeats: scatter must add them */
    float *wte = frand(V * C, 1), *out = fzeros(N * C), *dout = frand(N * C, 1);
    ax_embedding_shard_forward(CTX, out, tokens, wte, N, C, 0, V);
    for (int i = 0; i < N; i++)
        cr_expect(memcmp(out + i * C, wte + tokens[i] * C, sizeof(float) * C) == 0, "row %d", i);

    float *dwte = frand(V * C, 1), *dwte0 = fcopy(dwte, V * C);
    double *want = todbl(dwte, V * C);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) want[tokens[i] * C + c] += dout[i * C + c];
    ax_embedding_shard_backward(CTX, dwte, dout, tokens, N, C, 0, V);
    expect_close("dwte", dwte, want, V * C, TOL_FWD);
    int used[11] = {0};
    for (int i = 0; i < N; i++) used[tokens[i]] = 1;
    for (int v = 0; v < V; v++)
        if (!used[v])
            cr_expect(memcmp(dwte + v * C, dwte0 + v * C, sizeof(float) * C) == 0,
                      "row %d not in tokens was modified", v);
    /* accumulates */
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) want[tokens[i] * C + c] += dout[i * C + c];
    ax_embedding_shard_backward(CTX, dwte, dout, tokens, N, C, 0, V);
    expect_close("dwte x2", dwte, want, V * C, TOL_FWD);
    free(wte), free(out), free(dout), free(dwte), free(dwte0), free(want);
}

/* ---------------------------------------------------------------- RMSNorm */

struct rms_ctx {
    double *inp, *w, *G, *out;
    int N, C;
    double eps;
};
static void rms_ref(struct rms_ctx *c, double *rstd) {
    for (int i = 0; i < c->N; i++) {
        double ss = 0;
        for (int j = 0; j < c->C; j++) ss += c->inp[i * c->C + j] * c->inp[i * c->C + j];
        double r = 1.0 / sqrt(ss / c->C + c->eps);
        if (rstd) rstd[i] = r;
        for (int j = 0; j < c->C; j++) c->out[i * c->C + j] = c->inp[i * c->C + j] * r * c->w[j];
    }
}
static double rms_loss(void *p) {
    struct rms_ctx *c = p;
    rms_ref(c, NULL);
    return dot_fd(c->G, c->out, (long)c->N * c->C);
}

Test(ops, rmsnorm) {
    seed(5);
    int N = 6, C = 37;
    float eps = 1e-5f;
    float *inp = frand(N * C, 2), *w = frand(C, 1), *G = frand(N * C, 1);
    for (int j = 0; j < C; j++) inp[j] *= 0.01f; /* a small-norm row: eps matters */
    float *out = fzeros(N * C), *rstd = fzeros(N), *dinp = fzeros(N * C), *dw = fzeros(C);
    rmsnorm_forward1(CTX, out, rstd, inp, w, N, C, eps);
    struct rms_ctx c = {todbl(inp, N * C), todbl(w, C), todbl(G, N * C), dzeros(N * C), N, C, eps};
    double *rref = dzeros(N);
    rms_ref(&c, rref);
    expect_close("rmsnorm out", out, c.out, N * C, TOL_FWD);
    expect_close("rmsnorm rstd", rstd, rref, N, TOL_FWD);

    rmsnorm_backward1(CTX, dinp, dw, G, inp, w, rstd, N, C);
    double *gi = fd_grad(rms_loss, &c, c.inp, N * C), *gw = fd_grad(rms_loss, &c, c.w, C);
    expect_close("rmsnorm dinp", dinp, gi, N * C, TOL_GRAD);
    expect_close("rmsnorm dweight", dw, gw, C, TOL_GRAD);
    rmsnorm_backward1(CTX, dinp, dw, G, inp, w, rstd, N, C);
    for (int i = 0; i < N * C; i++) gi[i] *= 2;
    for (int i = 0; i < C; i++) gw[i] *= 2;
    expect_close("rmsnorm dinp x2", dinp, gi, N * C, TOL_GRAD);
    expect_close("rmsnorm dweight x2", dw, gw, C, TOL_GRAD);
    free(inp), free(w), free(G), free(out), free(rstd), free(dinp), free(dw), free(rref);
    free(gi), free(gw), free(c.inp), free(c.w), free(c.G), free(c.out);
}

Test(ops, rmsnorm_dweight_many_rows) {
    /* more rows than one thread's share and a column count spanning several blocks */
    seed(6);
    int N = 300, C = 200;
    float *inp = frand(N * C, 1), *w = frand(C, 1), *G = frand(N * C, 1);
    float *out = fzeros(N * C), *rstd = fzeros(N), *dw = fzeros(C);
    rmsnorm_forward1(CTX, out, rstd, inp, w, N, C, 1e-5f);
    rmsnorm_backward1(CTX, NULL, dw, G, inp, w, rstd, N, C);
    double *want = dzeros(C);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < C; j++) want[j] += (double)G[i * C + j] * inp[i * C + j] * rstd[i];
    expect_close("dweight", dw, want, C, 1e-5);
    free(inp), free(w), free(G), free(out), free(rstd), free(dw), free(want);
}

/* ---------------------------------------------------------------- RoPE */

struct rope_ctx {
    double *x, *G, *out;
    int B, T, H, D;
    long ld;
    double theta;
};
static void rope_ref(struct rope_ctx *c) {
    int h2 = c->D / 2;
    memcpy(c->out, c->x, sizeof(double) * c->B * c->T * c->ld);
    for (int b = 0; b < c->B; b++)
        for (int t = 0; t < c->T; t++)
            for (int h = 0; h < c->H; h++)
                for (int i = 0; i < h2; i++) {
                    long o = ((long)b * c->T + t) * c->ld + h * c->D + i;
                    double a = t * pow(c->theta, -2.0 * i / c->D), x1 = c->x[o], x2 = c->x[o + h2];
                    c->out[o] = x1 * cos(a) - x2 * sin(a);
                    c->out[o + h2] = x1 * sin(a) + x2 * cos(a);
                }
}
static double rope_loss(void *p) {
    struct rope_ctx *c = p;
    rope_ref(c);
    return dot_fd(c->G, c->out, (long)c->B * c->T * c->ld);
}

Test(ops, rope) {
    seed(7);
    int B = 2, T = 9, H = 3, D = 10;
    long ld = 3L * H * D + 5; /* q/k heads inside a wider row; the rest must stay untouched */
    long n = B * T * ld;
    float theta = 10000.0f;
    int h2 = D / 2;
    float *ct = fzeros(T * h2), *st = fzeros(T * h2);
    ax_rope_table(CTX, ct, st, T, D, theta);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            double a = t * pow(theta, -2.0 * i / D);
            cr_expect(fabs(ct[t * h2 + i] - cos(a)) < 1e-7 && fabs(st[t * h2 + i] - sin(a)) < 1e-7);
        }
    float *x = frand(n, 1), *y = fcopy(x, n);
    ax_rope_forward(CTX, y, ct, st, B, T, H, D, ld);
    struct rope_ctx c = {todbl(x, n), NULL, dzeros(n), B, T, H, D, ld, theta};
    rope_ref(&c);
    expect_close("rope out", y, c.out, n, TOL_FWD);
    for (long r = 0; r < B * T; r++) /* columns past the heads untouched */
        cr_expect(memcmp(y + r * ld + H * D, x + r * ld + H * D, sizeof(float) * (ld - H * D)) ==
                  0);
    /* norm preserved per rotated pair */
    double worst = 0;
    for (long r = 0; r < B * T; r++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < h2; i++) {
                long o = r * ld + h * D + i;
                double n0 = hypot(x[o], x[o + h2]), n1 = hypot(y[o], y[o + h2]);
                worst = fmax(worst, fabs(n0 - n1));
            }
    cr_expect(worst < 1e-6, "rope changed a norm by %g", worst);
    /* backward o forward = identity */
    float *z = fcopy(y, n);
    ax_rope_backward(CTX, z, ct, st, B, T, H, D, ld);
    expect_closef("rope^T rope x", z, x, n, 1e-6);
    /* backward = gradient of sum(G * rope(x)), and it overwrites (not accumulates) */
    float *G = frand(n, 1), *dx = fcopy(G, n);
    c.G = todbl(G, n);
    ax_rope_backward(CTX, dx, ct, st, B, T, H, D, ld);
    double *g = fd_grad(rope_loss, &c, c.x, n);
    expect_close("rope dx", dx, g, n, TOL_GRAD);
    free(ct), free(st), free(x), free(y), free(z), free(G), free(dx), free(g);
    free(c.x), free(c.G), free(c.out);
}

/* ---------------------------------------------------------------- attention */

struct att_ctx {
    double *qkv, *G, *out;
    int B, T, C, H;
};
/* reference attention in double, naive (the full T x T softmax); lse[B,H,T] if not NULL */
static void att_ref(struct att_ctx *c, double *lse) {
    int B = c->B, T = c->T, C = c->C, H = c->H, D = C / H;
    double scale = 1.0 / sqrt((double)D), *p = malloc(sizeof(double) * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const double *q = c->qkv + ((long)b * T + t) * 3 * C + h * D;
                double mx = -INFINITY, sum = 0;
                for (int s = 0; s <= t; s++) {
                    const double *k = c->qkv + ((long)b * T + s) * 3 * C + C + h * D;
                    double d = 0;
                    for (int i = 0; i < D; i++) d += q[i] * k[i];
                    p[s] = d * scale;
                    mx = fmax(mx, p[s]);
                }
                for (int s = 0; s <= t; s++) sum += p[s] = exp(p[s] - mx);
                if (lse) lse[((long)b * H + h) * T + t] = mx + log(sum);
                double *o = c->out + ((long)b * T + t) * C + h * D;
                for (int i = 0; i < D; i++) o[i] = 0;
                for (int s = 0; s <= t; s++) {
                    p[s] /= sum;
                    const double *v = c->qkv + ((long)b * T + s) * 3 * C + 2 * C + h * D;
                    for (int i = 0; i < D; i++) o[i] += p[s] * v[i];
                }
            }
    free(p);
}
static double att_loss(void *p) {
    struct att_ctx *c = p;
    att_ref(c, NULL);
    return dot_fd(c->G, c->out, (long)c->B * c->T * c->C);
}

/* forward and the saved row logsumexp vs the naive reference, and backward: all coordinates by
 * FD when `full`, else a directional derivative along a random direction (2 reference
 * evaluations, for larger T). att and scratch are [B,H,T]: the blocked kernels keep no T x T. */
static void check_attention(int B, int T, int C, int H, int full) {
    long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * H * T;
    float *qkv = frand(nq, 1.5), *out = fzeros(no), *att = frand(na, 1), *G = frand(no, 1);
    ax_attention_forward_gqa(CTX, out, att, qkv, B, T, C, H, H);
    struct att_ctx c = {todbl(qkv, nq), todbl(G, no), dzeros(no), B, T, C, H};
    double *aref = dzeros(na);
    att_ref(&c, aref);
    expect_close("attention out", out, c.out, no, TOL_FWD * 2);
    expect_close("attention lse", att, aref, na, TOL_FWD * 2);

    float *dqkv = fzeros(nq), *scratch = frand(na, 1);
    ax_attention_backward_gqa(CTX, dqkv, scratch, G, qkv, att, NULL, B, T, C, H, H);
    if (full) {
        double *g = fd_grad(att_loss, &c, c.qkv, nq);
        expect_close("attention dqkv", dqkv, g, nq, TOL_GRAD);
        free(g);
    } else {
        double *u = dzeros(nq), h = 1e-5, an = 0, mag = 0, *x0 = todbl(qkv, nq);
        for (long i = 0; i < nq; i++)
            u[i] = urand(), an += u[i] * dqkv[i], mag += fabs(u[i] * dqkv[i]);
        for (long i = 0; i < nq; i++) c.qkv[i] = x0[i] + h * u[i];
        double lp = att_loss(&c);
        for (long i = 0; i < nq; i++) c.qkv[i] = x0[i] - h * u[i];
        double lm = att_loss(&c), fd = (lp - lm) / (2 * h);
        cr_expect(fabs(an - fd) <= 1e-6 * mag, "directional derivative %.9g vs fd %.9g", an, fd);
        free(u), free(x0);
    }
    /* accumulates: a second call doubles dqkv (scratch contents are irrelevant) */
    float *d1 = fcopy(dqkv, nq);
    for (long i = 0; i < na; i++) scratch[i] = 1e30f;
    ax_attention_backward_gqa(CTX, dqkv, scratch, G, qkv, att, NULL, B, T, C, H, H);
    for (long i = 0; i < nq; i++) d1[i] *= 2;
    expect_closef("attention dqkv x2", dqkv, d1, nq, 1e-6);
    free(qkv), free(out), free(att), free(G), free(aref), free(dqkv), free(scratch), free(d1);
    free(c.qkv), free(c.G), free(c.out);
}

Test(ops, attention_small_fd) {
    seed(8);
    check_attention(2, 7, 12, 3, 1);
}
Test(ops, attention_one_token) {
    seed(9);
    check_attention(1, 1, 8, 2, 1);
}
Test(ops, attention_multi_block) { /* T > 64 crosses the kernel's query tiles */
    seed(10);
    check_attention(1, 133, 24, 3, 0);
}
Test(ops, attention_key_tiles) { /* T > 256: several key tiles (online softmax), T % 64 != 0 */
    seed(14);
    check_attention(1, 300, 16, 2, 0);
}
Test(ops, attention_key_tiles_exact) { /* T = 512: tile edges exactly on T */
    seed(15);
    check_attention(1, 512, 8, 1, 0);
}
Test(ops, attention_head_dim_64) {
    seed(11);
    check_attention(2, 70, 128, 2, 0);
}

/* one query per sequence against caches [B, Hkv, Tmax, D] (KV-cached decoding): against a
 * float64 softmax(q k / sqrt(D)) v for the generic loops (D = 8, 24) and the register paths
 * (D = 64, 128), with grouped-query heads; the same bits on 1 to 3 threads and for a sequence
 * decoded alone (its cache rows copied to a batch of 1) */
Test(ops, attention_decode_head_sizes) {
    seed(16);
    const int Ds[] = {8, 24, 64, 128}, lens[] = {1, 17, 40};
    int B = 3, H = 4, Hkv = 2, Tmax = 40, G = H / Hkv;
    for (size_t a = 0; a < sizeof Ds / sizeof *Ds; a++)
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
            int D = Ds[a], len = lens[l];
            long nq = (long)B * H * D, nc = (long)B * Hkv * Tmax * D;
            float *q = frand(nq, 1), *kc = frand(nc, 1), *vc = frand(nc, 1);
            float *out = fzeros(nq);
            double *want = dzeros(nq), *p = dzeros(len);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++) {
                    const float *qv = q + ((long)b * H + h) * D;
                    long off = ((long)b * Hkv + h / G) * Tmax * D;
                    double mx = -INFINITY, sum = 0;
                    for (int t = 0; t < len; t++) {
                        double s = 0;
                        for (int d = 0; d < D; d++) s += (double)qv[d] * kc[off + (long)t * D + d];
                        p[t] = s / sqrt((double)D);
                        mx = p[t] > mx ? p[t] : mx;
                    }
                    for (int t = 0; t < len; t++) sum += p[t] = exp(p[t] - mx);
                    for (int t = 0; t < len; t++)
                        for (int d = 0; d < D; d++)
                            want[((long)b * H + h) * D + d] +=
                                p[t] / sum * vc[off + (long)t * D + d];
                }
            char what[64];
            snprintf(what, sizeof what, "attention decode D=%d len=%d", D, len);
            omp_set_num_threads(1);
            ax_attention_decode_gqa(CTX, out, q, kc, vc, B, H, Hkv, D, len, Tmax);
            expect_close(what, out, want, nq, TOL_FWD * 4);
            for (int nt = 2; nt <= 3; nt++) {
                float *o2 = fzeros(nq);
                omp_set_num_threads(nt);
                ax_attention_decode_gqa(CTX, o2, q, kc, vc, B, H, Hkv, D, len, Tmax);
                cr_expect(!memcmp(o2, out, sizeof(float) * nq), "%s: %d threads change the bits",
                          what, nt);
                free(o2);
            }
            omp_set_num_threads(1);
            int b = B - 1; /* the last sequence alone */
            float *one = fzeros((long)H * D);
            ax_attention_decode_gqa(CTX, one, q + (long)b * H * D, kc + (long)b * Hkv * Tmax * D,
                                    vc + (long)b * Hkv * Tmax * D, 1, H, Hkv, D, len, Tmax);
            cr_expect(!memcmp(one, out + (long)b * H * D, sizeof(float) * H * D),
                      "%s: a sequence alone differs from the batch's", what);
            free(q), free(kc), free(vc), free(out), free(want), free(p), free(one);
        }
}

Test(ops, attention_causal) {
    seed(12);
    int B = 2, T = 19, C = 20, H = 4, t0 = 11;
    long nq = (long)B * T * 3 * C, no = (long)B * T * C;
    float *qkv = frand(nq, 1), *out1 = fzeros(no), *out2 = fzeros(no);
    float *att = fzeros((long)B * H * T);
    ax_attention_forward_gqa(CTX, out1, att, qkv, B, T, C, H, H);
    for (int b = 0; b < B; b++) /* change q, k and v of every token after t0 */
        for (int t = t0 + 1; t < T; t++)
            for (int j = 0; j < 3 * C; j++) qkv[((long)b * T + t) * 3 * C + j] += 3.0f;
    ax_attention_forward_gqa(CTX, out2, att, qkv, B, T, C, H, H);
    for (int b = 0; b < B; b++) {
        long o = (long)b * T * C;
        cr_expect(memcmp(out1 + o, out2 + o, sizeof(float) * (t0 + 1) * C) == 0,
                  "outputs at t <= %d changed with later tokens", t0);
        cr_expect(memcmp(out1 + o + (t0 + 1) * C, out2 + o + (t0 + 1) * C, sizeof(float) * C) != 0);
    }
    /* and the gradient reaching tokens > t0 from outputs <= t0 is zero */
    float *G = fzeros(no), *dqkv = fzeros(nq), *scratch = fzeros((long)B * H * T);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < (t0 + 1) * C; j++) G[(long)b * T * C + j] = 1.0f;
    ax_attention_backward_gqa(CTX, dqkv, scratch, G, qkv, att, NULL, B, T, C, H, H);
    for (int b = 0; b < B; b++)
        for (long j = (t0 + 1) * 3L * C; j < T * 3L * C; j++)
            cr_expect(dqkv[(long)b * T * 3 * C + j] == 0.0f);
    free(qkv), free(out1), free(out2), free(att), free(G), free(dqkv), free(scratch);
}

/* bitwise the same on a second call and with 1 or 3 threads: every (b, h, query tile) of the
 * forward and every (b, h) of the backward is computed by one thread in a fixed order */
Test(ops, attention_deterministic) {
    seed(13);
    int B = 2, T = 277, C = 32, H = 2;
    long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * H * T;
    float *qkv = frand(nq, 1), *G = frand(no, 1), *o[2], *a[2], *d[2];
    float *d2 = fzeros(nq), *scratch = fzeros(na);
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(r == 0 ? 1 : 3);
        o[r] = fzeros(no), a[r] = fzeros(na), d[r] = fzeros(nq);
        ax_attention_forward_gqa(CTX, o[r], a[r], qkv, B, T, C, H, H);
        ax_attention_backward_gqa(CTX, d[r], scratch, G, qkv, a[r], NULL, B, T, C, H, H);
    }
    ax_attention_backward_gqa(CTX, d2, scratch, G, qkv, a[1], NULL, B, T, C, H, H);
    cr_expect(memcmp(o[0], o[1], sizeof(float) * no) == 0, "out: 1 vs 3 threads");
    cr_expect(memcmp(a[0], a[1], sizeof(float) * na) == 0, "lse: 1 vs 3 threads");
    cr_expect(memcmp(d[0], d[1], sizeof(float) * nq) == 0, "dqkv: 1 vs 3 threads");
    cr_expect(memcmp(d[1], d2, sizeof(float) * nq) == 0, "dqkv: a second call");
    /* one head (B*H = 2 < 3 threads): heads in turn, threaded GEMMs; twice bitwise equal and
     * close to the 1-thread result */
    float *e[2];
    for (int r = 0; r < 2; r++) {
        e[r] = fzeros(nq);
        ax_attention_backward_gqa(CTX, e[r], scratch, G, qkv, a[1], NULL, 1, T, C, 2, 2);
    }
    cr_expect(memcmp(e[0], e[1], sizeof(float) * nq / 2) == 0, "dqkv, heads in turn: twice");
    double *want = todbl(d[0], nq / 2);
    expect_close("dqkv, heads in turn vs 1 thread", e[0], want, nq / 2, TOL_FWD * 2);
    free(want), free(e[0]), free(e[1]);
    for (int r = 0; r < 2; r++) free(o[r]), free(a[r]), free(d[r]);
    free(qkv), free(G), free(d2), free(scratch);
}

/* ---------------------------------------------------------------- SwiGLU and residual */

struct swi_ctx {
    double *h, *G;
    int N, F;
};
static double swi_loss(void *p) {
    struct swi_ctx *c = p;
    double L = 0;
    for (int i = 0; i < c->N; i++)
        for (int j = 0; j < c->F; j++) {
            double g = c->h[i * 2 * c->F + j], u = c->h[i * 2 * c->F + c->F + j];
            L += c->G[i * c->F + j] * g / (1 + exp(-g)) * u;
        }
    return L;
}

Test(ops, swiglu) {
    seed(14);
    int N = 3, F = 21;
    float *h = frand(N * 2 * F, 4), *G = frand(N * F, 1), *out = fzeros(N * F);
    h[0] = 100.0f, h[1] = -100.0f; /* saturated sigmoid stays finite */
    ax_swiglu_forward(CTX, out, h, N, F);
    double *want = dzeros(N * F);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < F; j++) {
            double g = h[i * 2 * F + j], u = h[i * 2 * F + F + j];
            want[i * F + j] = g / (1 + exp(-g)) * u;
        }
    expect_close("swiglu out", out, want, N * F, TOL_FWD);
    float *dh = fzeros(N * 2 * F);
    ax_swiglu_backward(CTX, dh, G, h, N, F);
    struct swi_ctx c = {todbl(h, N * 2 * F), todbl(G, N * F), N, F};
    double *g = fd_grad(swi_loss, &c, c.h, N * 2 * F);
    expect_close("swiglu dh", dh, g, N * 2 * F, TOL_GRAD);
    ax_swiglu_backward(CTX, dh, G, h, N, F);
    for (int i = 0; i < N * 2 * F; i++) g[i] *= 2;
    expect_close("swiglu dh x2", dh, g, N * 2 * F, TOL_GRAD);
    free(h), free(G), free(out), free(want), free(dh), free(g), free(c.h), free(c.G);
}

Test(ops, accumulate) {
    seed(15);
    long n = 40003; /* over the parallel threshold, odd tail */
    float *a = frand(n, 1), *b = frand(n, 1), *o = fcopy(b, n);
    ax_accumulate(CTX, o, a, n);
    for (long i = 0; i < n; i++) cr_assert(o[i] == b[i] + a[i]);
    free(a), free(b), free(o);
}

/* ---------------------------------------------------------------- cross-entropy */

struct ce_ctx {
    double *logits, dscale;
    const int32_t *tg;
    const uint8_t *mask;
    int N, V;
};
static double ce_ref(struct ce_ctx *c, double *losses) {
    double total = 0;
    for (int i = 0; i < c->N; i++) {
        double l = 0;
        if (!c->mask || c->mask[i]) {
            const double *x = c->logits + (long)i * c->V;
            double mx = -INFINITY, s = 0;
            for (int j = 0; j < c->V; j++) mx = fmax(mx, x[j]);
            for (int j = 0; j < c->V; j++) s += exp(x[j] - mx);
            l = log(s) + mx - x[c->tg[i]];
        }
        if (losses) losses[i] = l;
        total += l;
    }
    return total;
}
static double ce_loss(void *p) {
    struct ce_ctx *c = p;
    return c->dscale * ce_ref(c, NULL);
}

Test(ops, crossentropy_masked) {
    seed(16);
    int N = 7, V = 37;
    int32_t tg[7] = {0, 5, -1, 36, 12, 7, -1}; /* -1: padding, never read (masked) */
    uint8_t mask[7] = {1, 1, 0, 1, 0, 1, 0};
    float *logits = frand(N * V, 5), *losses = frand(N, 1), *dl = frand(N * V, 1);
    float dscale = 0.25f;
    double ret = crossentropy1(CTX, losses, dl, logits, tg, mask, dscale, N, V);
    struct ce_ctx c = {todbl(logits, N * V), dscale, tg, mask, N, V};
    double *lref = dzeros(N);
    double tref = ce_ref(&c, lref);
    expect_close("ce losses", losses, lref, N, TOL_FWD);
    cr_expect(fabs(ret - tref) < 1e-5 * fabs(tref), "sum %g vs %g", ret, tref);
    for (int i = 0; i < N; i++)
        if (!mask[i]) {
            cr_expect(losses[i] == 0.0f);
            for (int j = 0; j < V; j++) cr_expect(dl[i * V + j] == 0.0f, "masked row %d", i);
        }
    double *g = fd_grad(ce_loss, &c, c.logits, N * V);
    expect_close("ce dlogits", dl, g, N * V, TOL_GRAD);

    /* dscale scales the gradient linearly; the loss does not depend on it */
    float *dl2 = fzeros(N * V);
    double ret2 = crossentropy1(CTX, NULL, dl2, logits, tg, mask, 1.0f, N, V);
    cr_expect(ret2 == ret);
    for (int i = 0; i < N * V; i++) dl2[i] *= dscale;
    expect_closef("ce dscale", dl, dl2, N * V, 1e-6);

    /* in place (dlogits == logits) gives the same bits as out of place */
    float *inpl = fcopy(logits, N * V);
    double ret3 = crossentropy1(CTX, NULL, inpl, inpl, tg, mask, dscale, N, V);
    cr_expect(ret3 == ret);
    cr_expect(memcmp(inpl, dl, sizeof(float) * N * V) == 0, "in place differs");

    /* loss only */
    double ret4 = crossentropy1(CTX, NULL, NULL, logits, tg, mask, dscale, N, V);
    cr_expect(fabs(ret4 - ret) < 1e-6 * fabs(ret));
    free(logits), free(losses), free(dl), free(lref), free(g), free(dl2), free(inpl),
        free(c.logits);
}

Test(ops, crossentropy_stable_large_vocab) {
    seed(17);
    int N = 3, V = 5003;
    int32_t tg[3] = {0, 5002, 2500};
    float *logits = frand(N * V, 3);
    for (int j = 0; j < V; j++) logits[j] += 1000.0f; /* naive exp would overflow */
    for (int j = 0; j < V; j++) logits[V + j] -= 1000.0f;
    float *losses = fzeros(N), *dl = fzeros(N * V);
    double ret = crossentropy1(CTX, losses, dl, logits, tg, NULL, 1.0f, N, V);
    struct ce_ctx c = {todbl(logits, N * V), 1.0, tg, NULL, N, V};
    double *lref = dzeros(N);
    double tref = ce_ref(&c, lref);
    cr_expect(isfinite(ret) && fabs(ret - tref) < 1e-5 * tref, "sum %g vs %g", ret, tref);
    expect_close("ce losses", losses, lref, N, 1e-5);
    for (int i = 0; i < N; i++) { /* softmax - onehot sums to 0 per row */
        double s = 0;
        for (int j = 0; j < V; j++) s += dl[i * V + j];
        cr_expect(fabs(s) < 1e-5, "row %d grad sum %g", i, s);
    }
    free(logits), free(losses), free(dl), free(lref), free(c.logits);
}

/* ---------------------------------------------------------------- optimizer */

Test(ops, adamw_matches_scalar_reference) {
    seed(18);
    long n = 40000 + 13; /* vector body, threads and a scalar tail */
    float *p = frand(n, 1), *m = fzeros(n), *v = fzeros(n);
    double *pr = todbl(p, n), *mr = dzeros(n), *vr = dzeros(n);
    float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, gs = 0.5f;
    for (long t = 1; t <= 4; t++) {
        float *g = frand(n, t == 3 ? 1e-6 : 1.0); /* tiny grads: eps regime */
        ax_adamw_update(CTX, p, NULL, g, m, v, n, lr, b1, b2, eps, wd, gs, t);
        double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        for (long i = 0; i < n; i++) {
            double gi = (double)g[i] * gs;
            mr[i] = b1 * mr[i] + (1 - (double)b1) * gi;
            vr[i] = b2 * vr[i] + (1 - (double)b2) * gi * gi;
            pr[i] -= lr * ((mr[i] / bc1) / (sqrt(vr[i] / bc2) + eps) + wd * pr[i]);
        }
        free(g);
    }
    expect_close("adamw m", m, mr, n, 1e-5);
    expect_close("adamw v", v, vr, n, 1e-5);
    expect_close("adamw p", p, pr, n, 1e-6);
    free(p), free(m), free(v), free(pr), free(mr), free(vr);
}

Test(ops, adamw_small_uses_same_math) {
    /* n < 16 goes through the scalar code only; must agree bitwise with the vector path. The
     * bf16 copy written with the update is the to_bf16 rounding of the new parameters. */
    seed(19);
    long n = 37;
    float *p = frand(n, 1), *g = frand(n, 1), *m = frand(n, 0.1), *v = frand(n, 0.1);
    for (long i = 0; i < n; i++) v[i] = fabsf(v[i]);
    float *p2 = fcopy(p, n), *m2 = fcopy(m, n), *v2 = fcopy(v, n);
    uint16_t p16[37], want16[37];
    ax_adamw_update(CTX, p, p16, g, m, v, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 7);
    for (long i = 0; i < n; i++) /* element by element: every call has n = 1 (scalar tail) */
        ax_adamw_update(CTX, p2 + i, NULL, g + i, m2 + i, v2 + i, 1, 1e-2f, 0.9f, 0.999f, 1e-8f,
                        0.01f, 1.0f, 7);
    cr_expect(memcmp(p, p2, sizeof(float) * n) == 0);
    cr_expect(memcmp(m, m2, sizeof(float) * n) == 0 && memcmp(v, v2, sizeof(float) * n) == 0);
    ax_to_bf16(CTX, want16, p, n);
    cr_expect(memcmp(p16, want16, sizeof p16) == 0, "the bf16 copy is the rounded update");
    free(p), free(g), free(m), free(v), free(p2), free(m2), free(v2);
}

Test(ops, sum_squares) {
    seed(20);
    long sizes[3] = {0, 1001, 200003};
    for (int s = 0; s < 3; s++) {
        long n = sizes[s];
        float *x = frand(n, 3);
        double want = 0;
        for (long i = 0; i < n; i++) want += (double)x[i] * x[i];
        double got = ax_sum_squares(CTX, x, n);
        cr_expect(fabs(got - want) <= 1e-12 * want, "n=%ld: %.17g vs %.17g", n, got, want);
        free(x);
    }
}
