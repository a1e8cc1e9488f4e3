/* GEMM on cuBLAS (fp32, pedantic math: no TF32), and the linear layer built on it.
 *
 * cuBLAS is column-major. A row-major matrix X[r,c] with leading dimension ld is, read
 * column-major, X^T[c,r] with the same ld. So the row-major C = op(A) op(B) is the
 * column-major C^T = op(B)^T op(A)^T: call cuBLAS with the operands swapped (B first), the
 * same transpose flags, and m and n swapped. */
#include <cublas_v2.h>
#include <limits.h>

#include "lib/backend/cuda/cuda.h"

static cublasOperation_t op_of(char t) {
    return t == 'T' || t == 't' ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/* C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C, row-major */
void ax_cuda_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                  const float *A, long lda, const float *B, long ldb, float beta, float *C,
                  long ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) { /* empty product: C = beta C, as the CPU backend does */
        ax_cuda_scale_matrix(ctx, C, ldc, m, n, beta);
        return;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX) {
        ax_cuda_fail("gemm(%c,%c,m=%ld,n=%ld,k=%ld): a dimension exceeds cuBLAS's int range",
                     transa, transb, m, n, k);
        return;
    }
    ax_cuda_ctx *c = ctx->impl;
    cublasStatus_t s =
        cublasSgemm((cublasHandle_t)c->blas, op_of(transb), op_of(transa), (int)n, (int)m, (int)k,
                    &alpha, B, (int)ldb, A, (int)lda, &beta, C, (int)ldc);
    if (s != CUBLAS_STATUS_SUCCESS)
        ax_cuda_fail("cublasSgemm(%c,%c,m=%ld,n=%ld,k=%ld,lda=%ld,ldb=%ld,ldc=%ld): %s", transa,
                     transb, m, n, k, lda, ldb, ldc, cublasGetStatusString(s));
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
