/* The CPU backend's kernels (the specification) and its GEMM. Only lib/backend/cpu/ files, the
 * CPU table in backend_cpu.c and CPU-specific benchmarks include this; everything else calls
 * the ops of lib/backend/ops.h through a context. */
#pragma once
#include "lib/backend/ops.h"

/* Streaming loops with much arithmetic per element (an exp, a float-to-double square) go in
 * blocks of AX_CPU_STREAM_BLOCK floats, each block first prefetching the one after it: their
 * arithmetic fills the out-of-order window before many loads are in flight, and the hardware
 * prefetcher did not make up for it. Cross-entropy's sum of exps over logits a GEMM had just
 * written: 11-13 ms as one loop, 4 ms in prefetched blocks (GPT-2-124M's [256, 50257], AVX-512
 * Xeon VM, 2 threads); a plain block split without the prefetch stayed at 11-12. */
#define AX_CPU_STREAM_BLOCK 1024
/* the cache lines of x[from, to) clipped to [0, end) */
static inline void ax_cpu_prefetch(const float *x, long from, long to, long end) {
    if (to > end) to = end;
    for (long i = from; i < to; i += 16) __builtin_prefetch(x + i);
}

/* C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C on oneDNN (row-major); the CPU `gemm` op. A
 * failure (only bad arguments, a caller's bug) is logged and kept for ax_cpu_status: the
 * library never aborts. */
void ax_sgemm(char transa, char transb, long m, long n, long k, float alpha, const float *A,
              long lda, const float *B, long ldb, float beta, float *C, long ldc);
/* C[m,n] = A[m,k] B[n,k]^T + beta C (beta 0 or 1) on a oneDNN matmul primitive cached per
 * shape (lib/backend/cpu/gemm_primitive.c), for the forward's token-row counts in
 * [AX_CPU_PRIMITIVE_MIN_M, AX_CPU_PRIMITIVE_MAX_M]; 0 when done, -1 when the caller must run
 * dnnl_sgemm instead (another shape, a full cache, AX_GEMM_PRIMITIVE=0). Call it outside
 * OpenMP parallel regions: the primitive runs on the whole team. */
#define AX_CPU_PRIMITIVE_MIN_M 64
#define AX_CPU_PRIMITIVE_MAX_M 384
int ax_sgemm_primitive_nt(long m, long n, long k, const float *A, long lda, const float *B,
                          long ldb, float beta, float *C, long ldc);
/* turns the primitive on (1) or off (0) process-wide; returns the previous setting (on by default
 * in AVX-512 builds, where it was measured, and AX_GEMM_PRIMITIVE=0/1 sets it at startup) */
int ax_sgemm_primitive_enable(int on);
ax_status ax_cpu_status(ax_ctx *ctx); /* the backend's `status`: the first GEMM failure */
void ax_cpu_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                 const float *A, long lda, const float *B, long ldb, float beta, float *C,
                 long ldc);
void ax_cpu_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w, int N, int C,
                           int OC);
/* out[N,OC] = inp[N,C] w[OC,C]^T reading each weight row once (lib/backend/cpu/gemv.c): what
 * matmul_forward runs for N <= AX_CPU_GEMV_MAX_N rows (decoding's batches). Threads split OC;
 * the result does not depend on the thread count. */
#define AX_CPU_GEMV_MAX_N 32
void ax_cpu_gemv_forward(float *out, const float *inp, const float *w, int N, int C, int OC);
/* decoding's packed weights (lib/backend/cpu/gemv_packed.c): column groups of w[OC, C], each
 * output one FMA chain over k in order (the same bits at any N and thread count) */
size_t ax_cpu_matmul_pack_bytes(int C, int OC);
void ax_cpu_matmul_pack(ax_ctx *ctx, void *packed, const float *w, int C, int OC);
void ax_cpu_matmul_forward_packed(ax_ctx *ctx, float *out, const float *inp, const void *packed,
                                  int N, int C, int OC);
void ax_cpu_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC);
void ax_cpu_embedding_forward(ax_ctx *ctx, float *out, const int32_t *tokens, const float *wte,
                              int N, int C);
void ax_cpu_embedding_backward(ax_ctx *ctx, float *dwte, const float *dout, const int32_t *tokens,
                               int N, int C);
void ax_cpu_rmsnorm_forward(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C, float eps);
void ax_cpu_rmsnorm_backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                             const float *inp, const float *weight, const float *rstd, int N,
                             int C);
void ax_cpu_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D, float theta);
void ax_cpu_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B,
                         int T, int H, int D, long ld);
void ax_cpu_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t, int B,
                          int T, int H, int D, long ld);
void ax_cpu_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                              int C, int H, int Hkv);
void ax_cpu_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                               const float *qkv, const float *att, const float *out, int B, int T,
                               int C, int H, int Hkv);
void ax_cpu_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F);
void ax_cpu_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N,
                            int F);
void ax_cpu_add_forward(ax_ctx *ctx, float *out, const float *a, const float *b, long n);
void ax_cpu_accumulate(ax_ctx *ctx, float *dst, const float *src, long n);
double ax_cpu_crossentropy_forward_backward(ax_ctx *ctx, float *losses, float *dlogits,
                                            const float *logits, const int32_t *targets,
                                            const uint8_t *mask, float dscale, int N, int V);
void ax_cpu_adamw_update(ax_ctx *ctx, float *param, const float *grad, float *m, float *v, long n,
                         float lr, float beta1, float beta2, float eps, float wd, float grad_scale,
                         long t);
double ax_cpu_sum_squares(ax_ctx *ctx, const float *x, long n);
void ax_cpu_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C);
void ax_cpu_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                          const float *weight, const float *ss, int N, int C, int C_total,
                          float eps);
void ax_cpu_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout, const float *inp,
                                 const float *weight, int N, int C);
void ax_cpu_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                   const float *inp, const float *weight, const float *rstd,
                                   const float *dot, int N, int C, int C_total);
void ax_cpu_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl, int valid);
void ax_cpu_ce_partial(ax_ctx *ctx, float *stats, const float *logits, const float *rowmax,
                       const int32_t *targets, const uint8_t *mask, int N, int Vl, int valid,
                       int v0);
double ax_cpu_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                        const float *rowmax, const float *stats, const int32_t *targets,
                        const uint8_t *mask, float dscale, int N, int Vl, int valid, int v0);
void ax_cpu_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                    const float *wte, int N, int C, int v0, int rows);
void ax_cpu_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                     const int32_t *tokens, int N, int C, int v0, int rows);
void ax_cpu_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
                             const float *vc, int B, int H, int Hkv, int D, int len, int Tmax);
void ax_cpu_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                      int B, int H, int D, int Tmax, int pos);
void ax_cpu_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                      long rows, long cols);
void ax_cpu_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n);
void ax_cpu_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n);
void ax_cpu_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                        int v0);
/* architectures beyond Llama (ops_layernorm.c, ops_gelu.c, ops_bias.c) */
void ax_cpu_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C);
void ax_cpu_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum, int N,
                            int C, int C_total);
void ax_cpu_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd, const float *inp,
                            const float *weight, const float *bias, const float *sum,
                            const float *sq, int N, int C, int C_total, float eps);
void ax_cpu_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout, const float *inp,
                                   const float *weight, const float *mean, const float *rstd, int N,
                                   int C);
void ax_cpu_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                     const float *dout, const float *inp, const float *weight,
                                     const float *mean, const float *rstd, const float *dots, int N,
                                     int C, int C_total);
void ax_cpu_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F, int tanh_approx);
void ax_cpu_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N, int F,
                          int tanh_approx);
void ax_cpu_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC);
void ax_cpu_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC);
