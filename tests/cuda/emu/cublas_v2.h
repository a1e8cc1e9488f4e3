/* TEST-ONLY cuBLAS emulator (see cuda_runtime_api.h here): cublasSgemm as the column-major
 * reference loop, so the backend's row-major -> column-major mapping is checked; cublasGemmEx
 * for the types --precision bf16 uses (bf16 or fp32 A and B, fp32 C, 32-bit compute);
 * cublasGemmStridedBatchedEx on fp32 matrices (the attention's), with CUBLAS_COMPUTE_32F_FAST_16BF
 * emulated as A and B rounded to bf16 (nearest even) before the exact products. */
#pragma once
#include <stdint.h>
#include <string.h>

#include "cuda_runtime_api.h"

typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_PEDANTIC_MATH = 2 } cublasMath_t;
typedef struct ax_emu_blas *cublasHandle_t;
/* library_types.h's values */
typedef enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_16BF = 75 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

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

/* element i of a matrix of type t: bf16 is the top half of a binary32 */
static inline float ax_emu_elem(const void *X, cudaDataType t, long i) {
    if (t == CUDA_R_32F) return ((const float *)X)[i];
    uint32_t u = (uint32_t)((const uint16_t *)X)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, const void *B, cudaDataType bt, int ldb,
                                          const void *beta, void *C, cudaDataType ct, int ldc,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    (void)h, (void)algo;
    if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m || ct != CUDA_R_32F ||
        compute != CUBLAS_COMPUTE_32F || (at != CUDA_R_32F && at != CUDA_R_16BF) || at != bt)
        return CUBLAS_STATUS_INVALID_VALUE;
    float al = *(const float *)alpha, be = *(const float *)beta;
    ax_emu_open();
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) {
                float a =
                    ax_emu_elem(A, at, ta == CUBLAS_OP_N ? i + (long)p * lda : p + (long)i * lda);
                float b =
                    ax_emu_elem(B, bt, tb == CUBLAS_OP_N ? p + (long)j * ldb : j + (long)p * ldb);
                s += (double)a * (double)b;
            }
            float *c = (float *)C + i + (long)j * ldc;
            *c = (float)(al * s) + (be == 0.0f ? 0.0f : be * *c);
        }
    ax_emu_close();
    return CUBLAS_STATUS_SUCCESS;
}

/* round to bf16 (nearest even), as a float: CUBLAS_COMPUTE_32F_FAST_16BF's operands */
static inline float ax_emu_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const void *alpha, const void *A, cudaDataType at, int lda,
                           long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                           const void *beta, void *C, cudaDataType ct, int ldc, long long sc,
                           int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    (void)h, (void)algo;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ta == CUBLAS_OP_N ? m : k) ||
        ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m || at != CUDA_R_32F || bt != CUDA_R_32F ||
        ct != CUDA_R_32F ||
        (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_16BF))
        return CUBLAS_STATUS_INVALID_VALUE;
    int rnd = compute == CUBLAS_COMPUTE_32F_FAST_16BF;
    float al = *(const float *)alpha, be = *(const float *)beta;
    ax_emu_open();
    for (int q = 0; q < batch; q++) {
        const float *Aq = (const float *)A + q * sa, *Bq = (const float *)B + q * sb;
        float *Cq = (float *)C + q * sc;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0.0;
                for (int p = 0; p < k; p++) {
                    float a = ta == CUBLAS_OP_N ? Aq[i + (long)p * lda] : Aq[p + (long)i * lda];
                    float b = tb == CUBLAS_OP_N ? Bq[p + (long)j * ldb] : Bq[j + (long)p * ldb];
                    if (rnd) a = ax_emu_bf16(a), b = ax_emu_bf16(b);
                    s += (double)a * (double)b;
                }
                float *c = &Cq[i + (long)j * ldc];
                *c = (float)(al * s) + (be == 0.0f ? 0.0f : be * *c);
            }
    }
    ax_emu_close();
    return CUBLAS_STATUS_SUCCESS;
}
