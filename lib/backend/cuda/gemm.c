/* GEMM on cuBLAS, and the linear layer built on it. fp32 contexts: cublasSgemm in pedantic
 * math (no TF32). bf16 contexts (--precision bf16): cublasGemmEx on bf16 operands with fp32
 * accumulation and fp32 C (CUBLAS_COMPUTE_32F), so everything around the GEMMs stays fp32. An
 * operand already in bf16 (gemm_mixed: the model's bf16 weights and GEMM-only activations) is
 * used as it is; an fp32 one is rounded into the context's staging slots.
 *
 * cuBLAS is column-major. A row-major matrix X[r,c] with leading dimension ld is, read
 * column-major, X^T[c,r] with the same ld. So the row-major C = op(A) op(B) is the
 * column-major C^T = op(B)^T op(A)^T: call cuBLAS with the operands swapped (B first), the
 * same transpose flags, and m and n swapped. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdint.h>

#include "lib/backend/cuda/cuda.h"

static cublasOperation_t op_of(char t) {
    return t == 'T' || t == 't' ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* the slot already holding src[rows, cols] (leading dimension ld), or a matrix it is a block
 * of, with nothing written since (generation gen): its index, and the block's bf16 copy in *p
 * with leading dimension *pld; -1 when none. (The dW chunks of the overlap schedule read
 * column blocks of the dout that the dX GEMM just staged.) */
static int slot_find(const ax_cuda_ctx *c, const float *src, long rows, long cols, long ld,
                     unsigned long gen, const void **p, long *pld) {
    for (int i = 0; i < 2; i++) {
        const ax_cuda_bf16_slot *s = &c->slot[i];
        if (!s->src || s->gen != gen || s->ld != ld || src < s->src) continue;
        long off = (long)(src - s->src), r = off / ld, col = off % ld;
        if (r + rows > s->rows || col + cols > s->cols) continue;
        *pld = ax_bf16_ld(s->cols);
        *p = (const uint16_t *)s->buf + r * *pld + col;
        return i;
    }
    return -1;
}

/* converts src into slot v (growing it); 0 when the staging cannot be allocated (recorded) */
static int slot_fill(ax_ctx *ctx, ax_cuda_ctx *c, int v, const float *src, long rows, long cols,
                     long ld, unsigned long gen) {
    ax_cuda_bf16_slot *s = &c->slot[v];
    size_t need = (size_t)rows * (size_t)ax_bf16_ld(cols);
    s->src = NULL;
    if (need > s->cap) {
        /* once per larger shape, not per step: cudaFree waits for the GEMMs reading it */
        if (s->buf) cudaFree(s->buf);
        s->buf = NULL, s->cap = 0;
        if (cudaMalloc(&s->buf, need * 2) != cudaSuccess) {
            cudaGetLastError();
            s->buf = NULL;
            ax_cuda_fail("out of device memory for %zu bytes of bf16 GEMM staging", need * 2);
            return 0;
        }
        s->cap = need;
    }
    ax_cuda_stage_bf16(ctx, s->buf, ax_bf16_ld(cols), src, rows, cols, ld);
    s->src = src, s->rows = rows, s->cols = cols, s->ld = ld, s->gen = gen;
    return 1;
}

/* bf16 operands, fp32 accumulation and output; C's writes end the slots' reuse. An operand
 * already in bf16 storage (A16 / B16 non-NULL, lda / ldb in elements) is used as it is, the
 * rest come from the slots. */
static void gemm_bf16(ax_ctx *ctx, ax_cuda_ctx *c, char transa, char transb, long m, long n, long k,
                      float alpha, const float *A, const void *A16, long lda, const float *B,
                      const void *B16, long ldb, float beta, float *C, long ldc) {
    int ta = op_of(transa) == CUBLAS_OP_T, tb = op_of(transb) == CUBLAS_OP_T;
    /* row-major storage: A is [m,k] ('N') or [k,m] ('T'); B is [k,n] or [n,k] */
    long ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    unsigned long gen = ax_cuda_generation();
    const void *a = A16, *b = B16;
    long la = lda, lb = ldb;
    /* -2: in bf16 already; -1: not in a slot */
    int ha = A16 ? -2 : slot_find(c, A, ar, ac, lda, gen, &a, &la);
    int hb = B16 ? -2 : slot_find(c, B, br, bc, ldb, gen, &b, &lb);
    if (ha == -1) { /* not into the slot B hits (the older one when B is in bf16) */
        ha = hb == 0 ? 1 : hb == -2 ? 1 - c->slot_last : 0;
        if (!slot_fill(ctx, c, ha, A, ar, ac, lda, gen)) return;
        a = c->slot[ha].buf, la = ax_bf16_ld(ac);
        if (!B16) hb = slot_find(c, B, br, bc, ldb, gen, &b, &lb); /* B may be A, or a block */
    }
    if (hb == -1) {
        hb = ha >= 0 ? 1 - ha : 1 - c->slot_last;
        if (!slot_fill(ctx, c, hb, B, br, bc, ldb, gen)) return;
        b = c->slot[hb].buf, lb = ax_bf16_ld(bc);
    }
    if (ha >= 0) c->slot_last = ha;
    if (hb >= 0) c->slot_last = hb;
    if (!A16 || !B16) ax_cuda_prof_mark("gemm (bf16): operand conversion");
    if (la > INT_MAX || lb > INT_MAX) {
        ax_cuda_fail("gemm(%c,%c,m=%ld,n=%ld,k=%ld): a dimension exceeds cuBLAS's int range",
                     transa, transb, m, n, k);
        return;
    }
    cublasStatus_t s =
        cublasGemmEx((cublasHandle_t)c->blas, op_of(transb), op_of(transa), (int)n, (int)m, (int)k,
                     &alpha, b, CUDA_R_16BF, (int)lb, a, CUDA_R_16BF, (int)la, &beta, C, CUDA_R_32F,
                     (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        ax_cuda_fail("cublasGemmEx(bf16,%c,%c,m=%ld,n=%ld,k=%ld,lda=%ld,ldb=%ld,ldc=%ld): %s",
                     transa, transb, m, n, k, la, lb, ldc, cublasGetStatusString(s));
    ax_cuda_prof_mark("gemm (bf16)");
    /* a staged operand whose source overlaps C is stale now */
    const char *c0 = (const char *)C, *c1 = (const char *)(C + (m - 1) * ldc + n);
    for (int i = 0; i < 2; i++) {
        ax_cuda_bf16_slot *sl = &c->slot[i];
        if (!sl->src) continue;
        const char *s0 = (const char *)sl->src,
                   *s1 = (const char *)(sl->src + (sl->rows - 1) * sl->ld + sl->cols);
        if (s0 < c1 && c0 < s1) sl->src = NULL;
    }
}

/* The shapes no cuBLAS call serves, handled here (1): nothing to write, an empty product
 * (C = beta C, as the CPU backend does), a dimension past cuBLAS's int range (recorded). */
static int gemm_degenerate(ax_ctx *ctx, char transa, char transb, long m, long n, long k, long lda,
                           long ldb, float beta, float *C, long ldc) {
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) {
        ax_cuda_scale_matrix(ctx, C, ldc, m, n, beta);
        return 1;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX) {
        ax_cuda_fail("gemm(%c,%c,m=%ld,n=%ld,k=%ld): a dimension exceeds cuBLAS's int range",
                     transa, transb, m, n, k);
        return 1;
    }
    return 0;
}

/* C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C, row-major */
void ax_cuda_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                  const float *A, long lda, const float *B, long ldb, float beta, float *C,
                  long ldc) {
    if (gemm_degenerate(ctx, transa, transb, m, n, k, lda, ldb, beta, C, ldc)) return;
    ax_cuda_ctx *c = ctx->impl;
    if (c->bf16) {
        gemm_bf16(ctx, c, transa, transb, m, n, k, alpha, A, NULL, lda, B, NULL, ldb, beta, C, ldc);
        return;
    }
    cublasStatus_t s =
        cublasSgemm((cublasHandle_t)c->blas, op_of(transb), op_of(transa), (int)n, (int)m, (int)k,
                    &alpha, B, (int)ldb, A, (int)lda, &beta, C, (int)ldc);
    if (s != CUBLAS_STATUS_SUCCESS)
        ax_cuda_fail("cublasSgemm(%c,%c,m=%ld,n=%ld,k=%ld,lda=%ld,ldb=%ld,ldc=%ld): %s", transa,
                     transb, m, n, k, lda, ldb, ldc, cublasGetStatusString(s));
    ax_cuda_prof_mark("gemm (fp32)");
}

/* ax_cuda_gemm with either operand in bf16 storage (a_bf16 / b_bf16; bf16 contexts only: the
 * model stores activations in bf16 only there) */
void ax_cuda_gemm_mixed(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                        const void *A, int a_bf16, long lda, const void *B, int b_bf16, long ldb,
                        float beta, float *C, long ldc) {
    if (!a_bf16 && !b_bf16) {
        ax_cuda_gemm(ctx, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    ax_cuda_ctx *c = ctx->impl;
    if (!c->bf16) {
        ax_cuda_fail("gemm with a bf16 operand on an fp32 context (--precision fp32 keeps every "
                     "activation fp32)");
        return;
    }
    if (gemm_degenerate(ctx, transa, transb, m, n, k, lda, ldb, beta, C, ldc)) return;
    gemm_bf16(ctx, c, transa, transb, m, n, k, alpha, a_bf16 ? NULL : A, a_bf16 ? A : NULL, lda,
              b_bf16 ? NULL : B, b_bf16 ? B : NULL, ldb, beta, C, ldc);
}

/* out[N,OC] = inp[N,C] w[OC,C]^T */
void ax_cuda_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w, int N, int C,
                            int OC) {
    ax_cuda_gemm(ctx, 'N', 'T', N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
}

/* dinp[N,C] += dout[N,OC] w[OC,C] ; dw[OC,C] += dout^T inp (beta = 1 accumulates) */
void ax_cuda_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                             const float *inp, const float *w, int N, int C, int OC) {
    if (dinp) ax_cuda_gemm(ctx, 'N', 'N', N, C, OC, 1.0f, dout, OC, w, C, 1.0f, dinp, C);
    if (dw) ax_cuda_gemm(ctx, 'T', 'N', OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
}

/* C_q[m,n] = alpha op(A_q) op(B_q) + beta C_q for q < batch, X_q = X + q stride_X, row-major,
 * fp32 in memory. fp32 contexts multiply in fp32 (pedantic math: no TF32); bf16 contexts let
 * the tensor cores round A and B to bf16 (CUBLAS_COMPUTE_32F_FAST_16BF), fp32 accumulation. */
void ax_cuda_gemm_strided(ax_ctx *ctx, char transa, char transb, long m, long n, long k,
                          float alpha, const float *A, long lda, long sa, const float *B, long ldb,
                          long sb, float beta, float *C, long ldc, long sc, long batch) {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return; /* the callers never pass k = 0 */
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX || batch > INT_MAX) {
        ax_cuda_fail("gemm_strided(%c,%c,m=%ld,n=%ld,k=%ld,batch=%ld): a dimension exceeds "
                     "cuBLAS's int range",
                     transa, transb, m, n, k, batch);
        return;
    }
    ax_cuda_ctx *c = ctx->impl;
    cublasComputeType_t ct = c->bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
    cublasStatus_t s = cublasGemmStridedBatchedEx(
        (cublasHandle_t)c->blas, op_of(transb), op_of(transa), (int)n, (int)m, (int)k, &alpha, B,
        CUDA_R_32F, (int)ldb, (long long)sb, A, CUDA_R_32F, (int)lda, (long long)sa, &beta, C,
        CUDA_R_32F, (int)ldc, (long long)sc, (int)batch, ct, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        ax_cuda_fail("cublasGemmStridedBatchedEx(%c,%c,m=%ld,n=%ld,k=%ld,batch=%ld): %s", transa,
                     transb, m, n, k, batch, cublasGetStatusString(s));
    ax_cuda_advance(); /* C written: no staged bf16 operand of it may be reused */
}
