/* The CUDA table's ops: each kernel entry point wrapped so that, once its launches are
 * enqueued, the parameter ranges its outputs overlap get new write stamps (their cached bf16
 * weight copies are converted again at next use: wcache.c). Any op may in principle be handed
 * a parameter pointer as output (AdamW always is), so every one declares what it writes. The
 * wrapper also opens an op scope: a kernel launched outside one (a new op added to the table
 * without a wrapper here) drops every cached copy instead (backend_cuda.c, ax_cuda_launched).
 *
 * Extents in floats; 0 where the op's shape does not give it (a write starting at p: the range
 * holding p, which is enough because ranges are whole allocations). Scratch-arena writes are
 * not declared (the arena is never a parameter range). */
#include "lib/backend/cuda/cuda.h"

#include <stdlib.h>
#include <string.h>

#define BEGIN int scope_ = ax_cuda_op_scope(1)
#define END ax_cuda_op_scope(scope_)
#define WROTE(p, n) ax_cuda_bf16_invalidate((p), (size_t)(n) * sizeof *(p))

/* gemm.c renews C's range itself (every path, after the enqueue) */
static void w_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                   const float *A, long lda, const float *B, long ldb, float beta, float *C,
                   long ldc) {
    BEGIN;
    ax_cuda_gemm(ctx, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    END;
}
static void w_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w, int N,
                             int C, int OC) {
    BEGIN;
    ax_cuda_matmul_forward(ctx, out, inp, w, N, C, OC);
    END;
}
static void w_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                              const float *inp, const float *w, int N, int C, int OC) {
    BEGIN;
    ax_cuda_matmul_backward(ctx, dinp, dw, dout, inp, w, N, C, OC);
    END;
}
static void w_embedding_forward(ax_ctx *ctx, float *out, const int32_t *tokens, const float *wte,
                                int N, int C) {
    BEGIN;
    ax_cuda_embedding_forward(ctx, out, tokens, wte, N, C);
    WROTE(out, (long)N * C);
    END;
}
static void w_embedding_backward(ax_ctx *ctx, float *dwte, const float *dout, const int32_t *tokens,
                                 int N, int C) {
    BEGIN;
    ax_cuda_embedding_backward(ctx, dwte, dout, tokens, N, C);
    WROTE(dwte, 0); /* rows named by tokens: the range holding dwte */
    END;
}
static void w_rmsnorm_forward(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                              const float *weight, int N, int C, float eps) {
    BEGIN;
    ax_cuda_rmsnorm_forward(ctx, out, rstd, inp, weight, N, C, eps);
    WROTE(out, (long)N * C), WROTE(rstd, N);
    END;
}
static void w_rmsnorm_backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                               const float *inp, const float *weight, const float *rstd, int N,
                               int C) {
    BEGIN;
    ax_cuda_rmsnorm_backward(ctx, dinp, dweight, dout, inp, weight, rstd, N, C);
    WROTE(dinp, (long)N * C), WROTE(dweight, C);
    END;
}
static void w_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D, float theta) {
    BEGIN;
    ax_cuda_rope_table(ctx, cos_t, sin_t, T, D, theta);
    WROTE(cos_t, (long)T * (D / 2)), WROTE(sin_t, (long)T * (D / 2));
    END;
}
static void w_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B,
                           int T, int H, int D, long ld) {
    BEGIN;
    ax_cuda_rope_forward(ctx, x, cos_t, sin_t, B, T, H, D, ld);
    WROTE(x, ((long)B * T - 1) * ld + (long)H * D);
    END;
}
static void w_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t, int B,
                            int T, int H, int D, long ld) {
    BEGIN;
    ax_cuda_rope_backward(ctx, dx, cos_t, sin_t, B, T, H, D, ld);
    WROTE(dx, ((long)B * T - 1) * ld + (long)H * D);
    END;
}
static void w_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                                int C, int H, int Hkv) {
    BEGIN;
    ax_cuda_attention_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
    WROTE(out, (long)B * T * C), WROTE(att, (long)B * H * T);
    END;
}
static void w_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                                 const float *qkv, const float *att, const float *out, int B, int T,
                                 int C, int H, int Hkv) {
    BEGIN;
    ax_cuda_attention_backward(ctx, dqkv, scratch, dout, qkv, att, out, B, T, C, H, Hkv);
    WROTE(dqkv, (long)B * T * (C + 2L * (C / H) * Hkv)), WROTE(scratch, (long)B * H * T);
    END;
}
static void w_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F) {
    BEGIN;
    ax_cuda_swiglu_forward(ctx, out, h, N, F);
    WROTE(out, (long)N * F);
    END;
}
static void w_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N,
                              int F) {
    BEGIN;
    ax_cuda_swiglu_backward(ctx, dh, dout, h, N, F);
    WROTE(dh, 2L * N * F);
    END;
}
static void w_add_forward(ax_ctx *ctx, float *out, const float *a, const float *b, long n) {
    BEGIN;
    ax_cuda_add_forward(ctx, out, a, b, n);
    WROTE(out, n);
    END;
}
static void w_accumulate(ax_ctx *ctx, float *dst, const float *src, long n) {
    BEGIN;
    ax_cuda_accumulate(ctx, dst, src, n);
    WROTE(dst, n);
    END;
}
static double w_crossentropy_forward_backward(ax_ctx *ctx, float *losses, float *dlogits,
                                              const float *logits, const int32_t *targets,
                                              const uint8_t *mask, float dscale, int N, int V) {
    BEGIN;
    double r = ax_cuda_crossentropy_forward_backward(ctx, losses, dlogits, logits, targets, mask,
                                                     dscale, N, V);
    WROTE(losses, N), WROTE(dlogits, (long)N * V);
    END;
    return r;
}
/* the one op the model hands the parameter slab as output (every step) */
static void w_adamw_update(ax_ctx *ctx, float *param, const float *grad, float *m, float *v, long n,
                           float lr, float beta1, float beta2, float eps, float wd,
                           float grad_scale, long t) {
    BEGIN;
    ax_cuda_adamw_update(ctx, param, grad, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
    WROTE(param, n), WROTE(m, n), WROTE(v, n);
    END;
}
static double w_sum_squares(ax_ctx *ctx, const float *x, long n) {
    BEGIN; /* writes only the arena */
    double r = ax_cuda_sum_squares(ctx, x, n);
    END;
    return r;
}
static void w_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C) {
    BEGIN;
    ax_cuda_rmsnorm_sumsq(ctx, ss, inp, N, C);
    WROTE(ss, N);
    END;
}
static void w_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                            const float *weight, const float *ss, int N, int C, int C_total,
                            float eps) {
    BEGIN;
    ax_cuda_rmsnorm_apply(ctx, out, rstd, inp, weight, ss, N, C, C_total, eps);
    WROTE(out, (long)N * C), WROTE(rstd, N);
    END;
}
static void w_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout, const float *inp,
                                   const float *weight, int N, int C) {
    BEGIN;
    ax_cuda_rmsnorm_backward_dot(ctx, dot, dout, inp, weight, N, C);
    WROTE(dot, N);
    END;
}
static void w_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                     const float *inp, const float *weight, const float *rstd,
                                     const float *dot, int N, int C, int C_total) {
    BEGIN;
    ax_cuda_rmsnorm_backward_apply(ctx, dinp, dweight, dout, inp, weight, rstd, dot, N, C, C_total);
    WROTE(dinp, (long)N * C), WROTE(dweight, C);
    END;
}
static void w_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl, int valid) {
    BEGIN;
    ax_cuda_ce_rowmax(ctx, rowmax, logits, N, Vl, valid);
    WROTE(rowmax, N);
    END;
}
static void w_ce_partial(ax_ctx *ctx, float *stats, const float *logits, const float *rowmax,
                         const int32_t *targets, const uint8_t *mask, int N, int Vl, int valid,
                         int v0) {
    BEGIN;
    ax_cuda_ce_partial(ctx, stats, logits, rowmax, targets, mask, N, Vl, valid, v0);
    WROTE(stats, 2L * N);
    END;
}
static double w_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                          const float *rowmax, const float *stats, const int32_t *targets,
                          const uint8_t *mask, float dscale, int N, int Vl, int valid, int v0) {
    BEGIN;
    double r = ax_cuda_ce_finish(ctx, losses, dlogits, logits, rowmax, stats, targets, mask, dscale,
                                 N, Vl, valid, v0);
    WROTE(losses, N), WROTE(dlogits, (long)N * Vl);
    END;
    return r;
}
static void w_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                      const float *wte, int N, int C, int v0, int rows) {
    BEGIN;
    ax_cuda_embedding_shard_forward(ctx, out, tokens, wte, N, C, v0, rows);
    WROTE(out, (long)N * C);
    END;
}
static void w_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                       const int32_t *tokens, int N, int C, int v0, int rows) {
    BEGIN;
    ax_cuda_embedding_shard_backward(ctx, dwte, dout, tokens, N, C, v0, rows);
    WROTE(dwte, (long)rows * C);
    END;
}
static void w_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
                               const float *vc, int B, int H, int Hkv, int D, int len, int Tmax) {
    BEGIN;
    ax_cuda_attention_decode(ctx, out, q, kc, vc, B, H, Hkv, D, len, Tmax);
    WROTE(out, (long)B * H * D);
    END;
}
static void w_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                        int B, int H, int D, int Tmax, int pos) {
    BEGIN;
    ax_cuda_kv_append(ctx, kc, vc, k, v, ld, B, H, D, Tmax, pos);
    WROTE(kc, (long)B * H * Tmax * D), WROTE(vc, (long)B * H * Tmax * D);
    END;
}
/* writes only the model's bf16 staging (never a parameter range): nothing to declare */
static void w_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n) {
    BEGIN;
    ax_cuda_wire_to_bf16(ctx, dst, src, n);
    END;
}
static void w_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n) {
    BEGIN;
    ax_cuda_wire_from_bf16(ctx, dst, src, n);
    WROTE(dst, n);
    END;
}
static void w_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                        long rows, long cols) {
    BEGIN;
    ax_cuda_copy_rows(ctx, dst, ld_dst, src, ld_src, rows, cols);
    if (rows > 0 && cols > 0) WROTE(dst, (rows - 1) * ld_dst + cols);
    END;
}
static void w_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                          int v0) {
    BEGIN; /* best is host memory; the rest is the arena */
    ax_cuda_argmax_rows(ctx, best, x, B, Vl, valid, v0);
    END;
}
static void w_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C) {
    BEGIN;
    ax_cuda_layernorm_rowsum(ctx, sum, inp, N, C);
    WROTE(sum, N);
    END;
}
static void w_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum, int N,
                              int C, int C_total) {
    BEGIN;
    ax_cuda_layernorm_sqdev(ctx, sq, inp, sum, N, C, C_total);
    WROTE(sq, N);
    END;
}
static void w_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, const float *sum,
                              const float *sq, int N, int C, int C_total, float eps) {
    BEGIN;
    ax_cuda_layernorm_apply(ctx, out, mean, rstd, inp, weight, bias, sum, sq, N, C, C_total, eps);
    WROTE(out, (long)N * C), WROTE(mean, N), WROTE(rstd, N);
    END;
}
static void w_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout, const float *inp,
                                     const float *weight, const float *mean, const float *rstd,
                                     int N, int C) {
    BEGIN;
    ax_cuda_layernorm_backward_dot(ctx, dots, dout, inp, weight, mean, rstd, N, C);
    WROTE(dots, 2L * N);
    END;
}
static void w_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                       const float *dout, const float *inp, const float *weight,
                                       const float *mean, const float *rstd, const float *dots,
                                       int N, int C, int C_total) {
    BEGIN;
    ax_cuda_layernorm_backward_apply(ctx, dinp, dweight, dbias, dout, inp, weight, mean, rstd, dots,
                                     N, C, C_total);
    WROTE(dinp, (long)N * C), WROTE(dweight, C), WROTE(dbias, C);
    END;
}
static void w_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F, int tanh_approx) {
    BEGIN;
    ax_cuda_gelu_forward(ctx, out, h, N, F, tanh_approx);
    WROTE(out, (long)N * F);
    END;
}
static void w_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N, int F,
                            int tanh_approx) {
    BEGIN;
    ax_cuda_gelu_backward(ctx, dh, dout, h, N, F, tanh_approx);
    WROTE(dh, (long)N * F);
    END;
}
static void w_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC) {
    BEGIN;
    ax_cuda_bias_add(ctx, out, bias, N, OC);
    WROTE(out, (long)N * OC);
    END;
}
/* bf16 storage (backend.h): rows ax_cuda_bf16_ld(cols) elements of 2 bytes apart */
#define WROTE16(p, rows, cols)                                                                     \
    ax_cuda_bf16_invalidate((p), (size_t)(rows) * (size_t)ax_cuda_bf16_ld(cols) * 2)
static void w_gemm_mixed(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                         const void *A, int a_bf16, long lda, const void *B, int b_bf16, long ldb,
                         float beta, float *C, long ldc) {
    BEGIN;
    ax_cuda_gemm_mixed(ctx, transa, transb, m, n, k, alpha, A, a_bf16, lda, B, b_bf16, ldb, beta, C,
                       ldc);
    END;
}
static void w_rmsnorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *rstd, const float *inp,
                                 const float *weight, const float *ss, int N, int C, int C_total,
                                 float eps) {
    BEGIN;
    ax_cuda_rmsnorm_apply_bf16(ctx, out, rstd, inp, weight, ss, N, C, C_total, eps);
    WROTE16(out, N, C), WROTE(rstd, N);
    END;
}
static void w_layernorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *mean, float *rstd,
                                   const float *inp, const float *weight, const float *bias,
                                   const float *sum, const float *sq, int N, int C, int C_total,
                                   float eps) {
    BEGIN;
    ax_cuda_layernorm_apply_bf16(ctx, out, mean, rstd, inp, weight, bias, sum, sq, N, C, C_total,
                                 eps);
    WROTE16(out, N, C), WROTE(mean, N), WROTE(rstd, N);
    END;
}
static void w_swiglu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F) {
    BEGIN;
    ax_cuda_swiglu_forward_bf16(ctx, out, h, N, F);
    WROTE16(out, N, F);
    END;
}
static void w_gelu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F,
                                int tanh_approx) {
    BEGIN;
    ax_cuda_gelu_forward_bf16(ctx, out, h, N, F, tanh_approx);
    WROTE16(out, N, F);
    END;
}
static void w_swiglu_backward_bf16(ax_ctx *ctx, uint16_t *dh, const float *dout, const float *h,
                                   int N, int F) {
    BEGIN;
    ax_cuda_swiglu_backward_bf16(ctx, dh, dout, h, N, F);
    WROTE16(dh, N, 2L * F);
    END;
}
static void w_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC) {
    BEGIN;
    ax_cuda_bias_backward(ctx, dbias, dout, N, OC);
    WROTE(dbias, OC);
    END;
}

void ax_cuda_table_ops(ax_backend *t) {
    t->gemm = w_gemm;
    t->matmul_forward = w_matmul_forward;
    t->matmul_backward = w_matmul_backward;
    t->embedding_forward = w_embedding_forward;
    t->embedding_backward = w_embedding_backward;
    t->rmsnorm_forward = w_rmsnorm_forward;
    t->rmsnorm_backward = w_rmsnorm_backward;
    t->rope_table = w_rope_table;
    t->rope_forward = w_rope_forward;
    t->rope_backward = w_rope_backward;
    t->attention_forward = w_attention_forward;
    t->attention_backward = w_attention_backward;
    t->swiglu_forward = w_swiglu_forward;
    t->swiglu_backward = w_swiglu_backward;
    t->add_forward = w_add_forward;
    t->accumulate = w_accumulate;
    t->crossentropy_forward_backward = w_crossentropy_forward_backward;
    t->adamw_update = w_adamw_update;
    t->sum_squares = w_sum_squares;
    t->rmsnorm_sumsq = w_rmsnorm_sumsq;
    t->rmsnorm_apply = w_rmsnorm_apply;
    t->rmsnorm_backward_dot = w_rmsnorm_backward_dot;
    t->rmsnorm_backward_apply = w_rmsnorm_backward_apply;
    t->ce_rowmax = w_ce_rowmax;
    t->ce_partial = w_ce_partial;
    t->ce_finish = w_ce_finish;
    t->embedding_shard_forward = w_embedding_shard_forward;
    t->embedding_shard_backward = w_embedding_shard_backward;
    t->attention_decode = w_attention_decode;
    t->kv_append = w_kv_append;
    t->copy_rows = w_copy_rows;
    t->to_bf16 = w_to_bf16;
    t->from_bf16 = w_from_bf16;
    t->argmax_rows = w_argmax_rows;
    t->layernorm_rowsum = w_layernorm_rowsum;
    t->layernorm_sqdev = w_layernorm_sqdev;
    t->layernorm_apply = w_layernorm_apply;
    t->layernorm_backward_dot = w_layernorm_backward_dot;
    t->layernorm_backward_apply = w_layernorm_backward_apply;
    t->gelu_forward = w_gelu_forward;
    t->gelu_backward = w_gelu_backward;
    t->bias_add = w_bias_add;
    t->bias_backward = w_bias_backward;
    /* bf16 activations (AXMEM_CUDA_BF16_ACTS=0 keeps them fp32 and staged per GEMM: the same
     * results, for comparison) */
    const char *acts = getenv("AXMEM_CUDA_BF16_ACTS");
    if (acts && !strcmp(acts, "0")) return;
    t->gemm_mixed = w_gemm_mixed;
    t->rmsnorm_apply_bf16 = w_rmsnorm_apply_bf16;
    t->layernorm_apply_bf16 = w_layernorm_apply_bf16;
    t->swiglu_forward_bf16 = w_swiglu_forward_bf16;
    t->gelu_forward_bf16 = w_gelu_forward_bf16;
    t->swiglu_backward_bf16 = w_swiglu_backward_bf16;
}
