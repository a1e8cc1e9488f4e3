/* The ops: every kernel the model runs, each taking the execution context first and dispatched
 * through its backend's table (lib/backend/backend.h). Each op is declared once, with its
 * shapes, semantics and conventions, in lib/backend/ops.def; ax_NAME below calls the table's
 * NAME. The CPU kernels (lib/backend/cpu/) are the specification every other backend is tested
 * against. Every *_backward ACCUMULATES (+=) into its gradient outputs (llm.c style): the caller
 * zeroes gradient buffers once per step (or runs the GEMM that writes one first with beta = 0),
 * so residual branches and tied weights need no special cases. Kernels never allocate
 * (workspace comes from the context's scratch arena) and are deterministic for a fixed thread
 * count (no atomics on floats; reductions sum partials in a fixed order). */
#pragma once
#include <math.h>
#include <stdint.h>

#include "lib/backend/backend.h"
#include "lib/core/fastmath.h"

/* ax_NAME(ctx, ...) for every op of ops.def: ctx->be->NAME(ctx, ...) (AX_RET_ returns the
 * value of the ops that have one) */
#define AX_RET_void
#define AX_RET_double return
#define AX_RET_size_t return
#define AX_OP(ret, name, params, args, group)                                                      \
    static inline ret ax_##name params {                                                           \
        AX_RET_##ret ctx->be->name args;                                                           \
    }
#include "lib/backend/ops.def"

/* The CPU attention's tiles: queries per tile and keys per forward tile (BK a multiple of BQ). */
#define AX_ATT_BQ 64
#define AX_ATT_BK 256
/* Arena bytes the CPU attention ops take with `nthreads` OpenMP threads at head dim D: per
 * thread, the forward's S, O, m, l tiles or the backward's P and dS row blocks of AX_ATT_BQ x T
 * (linear in T), rounded to 64 bytes so threads do not share cache lines. */
static inline size_t ax_attention_scratch_bytes(int T, int D, int nthreads) {
    size_t ld = ((size_t)T + 15) / 16 * 16;
    size_t fwd = (size_t)AX_ATT_BQ * (AX_ATT_BK + (size_t)D + 2), bwd = 2 * AX_ATT_BQ * ld;
    size_t per = ((fwd > bwd ? fwd : bwd) + 15) / 16 * 16;
    return sizeof(float) * per * (size_t)(nthreads > 0 ? nthreads : 1);
}
/* The arena bytes ctx's backend takes for attention over B x T tokens, H heads of D: reserve
 * this once (the CUDA backend's query-block score matrices, the CPU's per-thread tiles). */
static inline size_t ax_attention_workspace(const ax_ctx *ctx, int B, int T, int H, int D,
                                            int nthreads) {
    if (ctx->be->attention_scratch) return ctx->be->attention_scratch(B, T, H, D, nthreads);
    return ax_attention_scratch_bytes(T, D, nthreads);
}

/* The unsharded LayerNorm (one rank holds every column). stats: [2N] of workspace. */
static inline void ax_layernorm_forward(ax_ctx *ctx, float *out, float *mean, float *rstd,
                                        const float *inp, const float *weight, const float *bias,
                                        float *stats, int N, int C, float eps) {
    ax_layernorm_rowsum(ctx, stats, inp, N, C);
    ax_layernorm_sqdev(ctx, stats + N, inp, stats, N, C, C);
    ax_layernorm_apply(ctx, out, mean, rstd, inp, weight, bias, stats, stats + N, N, C, C, eps);
}
static inline void ax_layernorm_backward(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                         const float *dout, const float *inp, const float *weight,
                                         const float *mean, const float *rstd, float *stats, int N,
                                         int C) {
    ax_layernorm_backward_dot(ctx, stats, dout, inp, weight, mean, rstd, N, C);
    ax_layernorm_backward_apply(ctx, dinp, dweight, dbias, dout, inp, weight, mean, rstd, stats, N,
                                C, C);
}

/* ---- partial rotary (GPT-NeoX rotary_pct): the first rd of each head's D dims rotate with
 * rotate-half pairs (i, i + rd/2) at angle t * theta^(-2i/rd) (table ax_rope_table(T, rd));
 * dims rd..D-1 pass through. rd == D is ax_rope_forward itself; else the rope op runs per head
 * as one "head" of size rd at the head's offset, so every backend's rope kernel serves. Same
 * layout and overwrite semantics as ax_rope_forward/backward. */
static inline void ax_rope_partial_forward(ax_ctx *ctx, float *x, const float *cos_t,
                                           const float *sin_t, int B, int T, int H, int D, int rd,
                                           long ld) {
    if (rd == D) {
        ax_rope_forward(ctx, x, cos_t, sin_t, B, T, H, D, ld);
        return;
    }
    for (int h = 0; h < H; h++)
        ax_rope_forward(ctx, x + (long)h * D, cos_t, sin_t, B, T, 1, rd, ld);
}
static inline void ax_rope_partial_backward(ax_ctx *ctx, float *dx, const float *cos_t,
                                            const float *sin_t, int B, int T, int H, int D, int rd,
                                            long ld) {
    if (rd == D) {
        ax_rope_backward(ctx, dx, cos_t, sin_t, B, T, H, D, ld);
        return;
    }
    for (int h = 0; h < H; h++)
        ax_rope_backward(ctx, dx + (long)h * D, cos_t, sin_t, B, T, 1, rd, ld);
}

/* ---- bf16 storage (ops.def group BF16): rows of uint16 bf16 bit patterns ax_bf16_ld(cols)
 * apart (16-byte rows) ---- */
static inline long ax_bf16_ld(long cols) {
    return (cols + 7) & ~7L;
}
/* 1 when ctx computes in bf16: the model then keeps bf16 copies of its weights and stores the
 * GEMM-only activations in bf16 (a backend with `bf16` has every op of group BF16) */
static inline int ax_bf16_acts(const ax_ctx *ctx) {
    return ctx->precision == AX_PREC_BF16;
}

/* 1 when ctx's backend packs decoding's weights (ops.def group PACK) */
static inline int ax_matmul_packs(const ax_ctx *ctx) {
    return ctx->be->matmul_pack_bytes && ctx->be->matmul_pack && ctx->be->matmul_forward_packed;
}
