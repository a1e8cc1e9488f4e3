/* TEST-ONLY cuBLAS emulator (see cuda_runtime_api.h here): cublasSgemm as the column-major
 * reference loop, so the backend's row-major -> column-major mapping is checked. */
#pragma once
#include "cuda_runtime_api.h"

typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_PEDANTIC_MATH = 2 } cublasMath_t;
typedef struct ax_emu_blas *cublasHandle_t;

static inline cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = (cublasHandle_t)malloc(1);
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    (void)h, (void)s;
    return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
    (void)h;
    return m == CUBLAS_PEDANTIC_MATH || m == CUBLAS_DEFAULT_MATH ? CUBLAS_STATUS_SUCCESS
                                                                 : CUBLAS_STATUS_INVALID_VALUE;
}
static inline const char *cublasGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}
/* column-major: C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C; X(i,j) = X[i + j*ld] */
static inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         const float *B, int ldb, const float *beta, float *C,
                                         int ldc) {
    (void)h;
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
        return CUBLAS_STATUS_INVALID_VALUE;
    ax_emu_open(); /* a device operation: device memory reachable */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) {
                float a = ta == CUBLAS_OP_N ? A[i + (long)p * lda] : A[p + (long)i * lda];
                float b = tb == CUBLAS_OP_N ? B[p + (long)j * ldb] : B[j + (long)p * ldb];
                s += (double)a * (double)b;
            }
            float *c = &C[i + (long)j * ldc];
            *c = (float)(*alpha * s) + (*beta == 0.0f ? 0.0f : *beta * *c);
        }
    ax_emu_close();
    return CUBLAS_STATUS_SUCCESS;
}
