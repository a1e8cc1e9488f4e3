/* The CPU backend's kernels (the specification) and its GEMM. Only lib/backend/cpu/ files, the
 * CPU table in backend_cpu.c and CPU-specific benchmarks include this; everything else calls
 * the ops of lib/backend/ops.h through a context. */
#pragma once
#include "lib/backend/ops.h"

/* Streaming loops with much arithmetic per element (an exp, a float-to-double square) go in
 * blocks of AX_CPU_STREAM_BLOCK floats, each block first prefetching the one after it: their
 * arithmetic fills the out-of-order window before many loads are in flight, and the hardware
 * prefetcher does not make up for it. */
#define AX_CPU_STREAM_BLOCK 1024
/* the cache lines of x[from, to) clipped to [0, end) */
static inline void ax_cpu_prefetch(const float *x, long from, long to, long end) {
    if (to > end) to = end;
    for (long i = from; i < to; i += 16) __builtin_prefetch(x + i);
}

/* the kernels of ops.def's groups ALL and PACK: ax_cpu_NAME, the table's NAME */
#define AX_CPU_ALL(ret, name, params) ret ax_cpu_##name params;
#define AX_CPU_PACK(ret, name, params) ret ax_cpu_##name params;
#define AX_CPU_BF16(ret, name, params)
#define AX_OP(ret, name, params, args, group) AX_CPU_##group(ret, name, params)
#include "lib/backend/ops.def"
#undef AX_CPU_ALL
#undef AX_CPU_PACK
#undef AX_CPU_BF16

ax_status ax_cpu_status(ax_ctx *ctx); /* the backend's `status`: the first GEMM failure */
/* C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C on oneDNN (row-major): the `gemm` op. A
 * failure (only bad arguments, a caller's bug) is logged and kept for ax_cpu_status: the
 * library never aborts. */
void ax_sgemm(char transa, char transb, long m, long n, long k, float alpha, const float *A,
              long lda, const float *B, long ldb, float beta, float *C, long ldc);
/* C[m,n] = A[m,k] B[n,k]^T + beta C (beta 0 or 1) on a oneDNN matmul primitive cached per
 * shape (lib/backend/cpu/gemm_primitive.c), for the forward's token-row counts in
 * [AX_CPU_PRIMITIVE_MIN_M, AX_CPU_PRIMITIVE_MAX_M]; 0 when done, -1 when the caller must run
 * dnnl_sgemm instead (another shape, a full cache, the primitive off). Call it outside OpenMP
 * parallel regions: the primitive runs on the whole team. */
#define AX_CPU_PRIMITIVE_MIN_M 64
#define AX_CPU_PRIMITIVE_MAX_M 384
int ax_sgemm_primitive_nt(long m, long n, long k, const float *A, long lda, const float *B,
                          long ldb, float beta, float *C, long ldc);
/* turns the primitive on (1) or off (0) process-wide, for tests and benchmarks; returns the
 * previous setting (on by default in AVX-512 builds, where it was measured) */
int ax_sgemm_primitive_enable(int on);
/* out[N,OC] = inp[N,C] w[OC,C]^T reading each weight row once (lib/backend/cpu/gemv.c): what
 * matmul_forward runs for N <= AX_CPU_GEMV_MAX_N rows (decoding's batches). Threads split OC;
 * the result does not depend on the thread count. */
#define AX_CPU_GEMV_MAX_N 32
void ax_cpu_gemv_forward(float *out, const float *inp, const float *w, int N, int C, int OC);
