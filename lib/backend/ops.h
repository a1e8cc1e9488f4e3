/* The ops: every kernel the model runs, each taking the execution context first and dispatched
 * through its backend's table (lib/backend/backend.h). The CPU kernels (lib/backend/cpu/) are
 * the specification every other backend is tested against.
 *
 * Conventions
 * - Row-major. N = B*T token rows, C = model dim, V = vocab, H = heads, D = C/H head dim.
 * - Every *_backward ACCUMULATES (+=) into all of its gradient outputs (llm.c style): the
 *   caller zeroes gradient buffers once per step (or, where a GEMM writes a buffer first,
 *   runs that GEMM with beta = 0: ax_model_zero_grad). This makes residual branches and tied
 *   weights free of special cases.
 * - Pointers are the context's device memory unless a comment says host.
 * - Kernels never allocate: workspace comes from the context's scratch arena.
 * - Kernels are OpenMP-parallel and deterministic for a fixed thread count (no atomics on
 *   floats; reductions go through per-thread partials summed in a fixed order).
 */
#pragma once
#include <stdint.h>
#include <math.h>

#include "lib/backend/backend.h"
#include "lib/core/fastmath.h"

/* ---- GEMM (CPU: oneDNN dnnl_sgemm) ----
 * C[m,n] = alpha * op(A)[m,k] op(B)[k,n] + beta * C, row-major, trans = 'N' or 'T'. */
static inline void ax_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k,
                           float alpha, const float *A, long lda, const float *B, long ldb,
                           float beta, float *C, long ldc) {
    ctx->be->gemm(ctx, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- linear: out = inp W^T ----
 * out[N,OC], inp[N,C], w[OC,C] */
static inline void ax_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w,
                                     int N, int C, int OC) {
    ctx->be->matmul_forward(ctx, out, inp, w, N, C, OC);
}
/* packed weights for decoding (backend.h, matmul_pack_bytes): 1 when this context's backend
 * packs; the bytes of w[OC, C]'s packed copy; the copy written into `packed`; and out[N,OC] = inp
 * W^T from it. On the CPU each output is one fused multiply-add chain over k in order, so a
 * row's result does not depend on the batch it is in or the thread count. */
static inline int ax_matmul_packs(const ax_ctx *ctx) {
    return ctx->be->matmul_pack_bytes && ctx->be->matmul_pack && ctx->be->matmul_forward_packed;
}
static inline size_t ax_matmul_pack_bytes(const ax_ctx *ctx, int C, int OC) {
    return ax_matmul_packs(ctx) ? ctx->be->matmul_pack_bytes(C, OC) : 0;
}
static inline void ax_matmul_pack(ax_ctx *ctx, void *packed, const float *w, int C, int OC) {
    ctx->be->matmul_pack(ctx, packed, w, C, OC);
}
static inline void ax_matmul_forward_packed(ax_ctx *ctx, float *out, const float *inp,
                                            const void *packed, int N, int C, int OC) {
    ctx->be->matmul_forward_packed(ctx, out, inp, packed, N, C, OC);
}
/* dinp[N,C] += dout W ; dw[OC,C] += dout^T inp. Either output may be NULL (skipped). */
static inline void ax_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                                      const float *inp, const float *w, int N, int C, int OC) {
    ctx->be->matmul_backward(ctx, dinp, dw, dout, inp, w, N, C, OC);
}

/* ---- token embedding ----
 * out[N,C] = wte[tokens[i], :], tokens[N] in [0,V) */
static inline void ax_embedding_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                        const float *wte, int N, int C) {
    ctx->be->embedding_forward(ctx, out, tokens, wte, N, C);
}
/* dwte[V,C] += scatter of dout[N,C]; touches only rows named in tokens (never all V rows) */
static inline void ax_embedding_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                         const int32_t *tokens, int N, int C) {
    ctx->be->embedding_backward(ctx, dwte, dout, tokens, N, C);
}

/* ---- RMSNorm: out = inp * rstd * weight, rstd = 1/sqrt(mean(inp^2) + eps) ----
 * out[N,C], rstd[N] (saved for backward), inp[N,C], weight[C] */
static inline void ax_rmsnorm_forward(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                                      const float *weight, int N, int C, float eps) {
    ctx->be->rmsnorm_forward(ctx, out, rstd, inp, weight, N, C, eps);
}
/* dinp[N,C] +=, dweight[C] += */
static inline void ax_rmsnorm_backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                       const float *inp, const float *weight, const float *rstd,
                                       int N, int C) {
    ctx->be->rmsnorm_backward(ctx, dinp, dweight, dout, inp, weight, rstd, N, C);
}

/* ---- rotary position embedding (rotate-half pairs (i, i + D/2), positions t = 0..T-1) ----
 * Table: cos/sin[T, D/2], angle(t, i) = t * theta^(-2i/D). */
static inline void ax_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D,
                                 float theta) {
    ctx->be->rope_table(ctx, cos_t, sin_t, T, D, theta);
}
/* In place on x, laid out [B, T, (row stride ld floats)], heads at x[row*ld + h*D + d] for
 * h < H. Used on the q and k parts of the packed qkv buffer (ld = 3C). */
static inline void ax_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t,
                                   int B, int T, int H, int D, long ld) {
    ctx->be->rope_forward(ctx, x, cos_t, sin_t, B, T, H, D, ld);
}
/* In place: dx <- R^T dx (rope is orthogonal, so backward is the inverse rotation). Note this
 * OVERWRITES (it is a transform of the gradient already accumulated in dx). */
static inline void ax_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t,
                                    int B, int T, int H, int D, long ld) {
    ctx->be->rope_backward(ctx, dx, cos_t, sin_t, B, T, H, D, ld);
}

/* ---- causal multi-head self-attention over a packed qkv buffer ----
 * qkv[B,T,3C] = [q | k | v] (q,k already rotated), out[B,T,C], scale = 1/sqrt(D). Blocked
 * (flash-attention style) on every backend: the T x T probabilities are never stored.
 * att[B,H,T]: the backend's own saved state, read only by its attention_backward; the CPU and
 * CUDA backends both store the row logsumexp lse = log(sum_s exp(scale q.k_s)) there and
 * recompute the probabilities in the backward. Workspace: ax_attention_scratch_bytes from the
 * context's arena (reserve it once; the CPU kernels take per-thread tiles from it). */
static inline void ax_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv,
                                        int B, int T, int C, int H) {
    ctx->be->attention_forward(ctx, out, att, qkv, B, T, C, H, H);
}
/* dqkv[B,T,3C] +=. scratch: B*H*T floats of workspace (contents ignored; CUDA keeps D_i there).
 * out: the forward's output [B,T,C] as it returned it, or NULL; a backend may read it (CUDA's
 * flash kernels take D_i = rowsum(dout * out) from it instead of recomputing it). */
static inline void ax_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch,
                                         const float *dout, const float *qkv, const float *att,
                                         const float *out, int B, int T, int C, int H) {
    ctx->be->attention_backward(ctx, dqkv, scratch, dout, qkv, att, out, B, T, C, H, H);
}
/* Grouped-query attention: Hkv K/V heads (Hkv divides H), rows qkv[B,T,C + 2 Hkv D] =
 * [q (H heads) | k (Hkv heads) | v (Hkv heads)]; query head h reads K/V head h / (H / Hkv).
 * The backward sums dK, dV over each group's query heads in a fixed order (deterministic).
 * Hkv == H is the multi-head op above. */
static inline void ax_attention_forward_gqa(ax_ctx *ctx, float *out, float *att, const float *qkv,
                                            int B, int T, int C, int H, int Hkv) {
    ctx->be->attention_forward(ctx, out, att, qkv, B, T, C, H, Hkv);
}
static inline void ax_attention_backward_gqa(ax_ctx *ctx, float *dqkv, float *scratch,
                                             const float *dout, const float *qkv, const float *att,
                                             const float *out, int B, int T, int C, int H,
                                             int Hkv) {
    ctx->be->attention_backward(ctx, dqkv, scratch, dout, qkv, att, out, B, T, C, H, Hkv);
}
/* The CPU attention's tiles: queries per tile and keys per forward tile (BK a multiple of BQ). */
#define AX_ATT_BQ 64
#define AX_ATT_BK 256
/* Arena bytes the attention ops take with `nthreads` OpenMP threads at head dim D: per thread,
 * the forward's S, O, m, l tiles or the backward's P and dS row blocks of AX_ATT_BQ x T (linear
 * in T), rounded to 64 bytes so threads do not share cache lines. */
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

/* ---- SwiGLU: out = silu(gate) * up, h = [gate | up] per row ----
 * out[N,F], h[N,2F] */
static inline void ax_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F) {
    ctx->be->swiglu_forward(ctx, out, h, N, F);
}
/* dh[N,2F] += */
static inline void ax_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h,
                                      int N, int F) {
    ctx->be->swiglu_backward(ctx, dh, dout, h, N, F);
}

/* ---- residual: out = a + b, n elements (backward is two accumulations by the caller) ---- */
static inline void ax_add_forward(ax_ctx *ctx, float *out, const float *a, const float *b, long n) {
    ctx->be->add_forward(ctx, out, a, b, n);
}
static inline void ax_accumulate(ax_ctx *ctx, float *dst, const float *src, long n) {
    ctx->be->accumulate(ctx, dst, src, n);
} /* dst += src */

/* ---- fused softmax + masked cross-entropy ----
 * logits[N,V], targets[N], mask[N] (1 = supervised target, 0 = dropped/padding).
 * losses[i] = -log softmax(logits[i])[targets[i]] if mask[i], else 0.
 * If dlogits != NULL: dlogits[i,:] = mask[i] * dscale * (softmax(logits[i]) - onehot(t_i)),
 * OVERWRITTEN (not accumulated); dlogits may alias logits (in place, saves N*V floats).
 * dscale is 1 / (supervised targets summed over all ranks): the loss is their global mean.
 * Returns the sum of losses over supervised rows (double accumulation). */
static inline double ax_crossentropy_forward_backward(ax_ctx *ctx, float *losses, float *dlogits,
                                                      const float *logits, const int32_t *targets,
                                                      const uint8_t *mask, float dscale, int N,
                                                      int V) {
    return ctx->be->crossentropy_forward_backward(ctx, losses, dlogits, logits, targets, mask,
                                                  dscale, N, V);
}

/* ---- optimizer ----
 * AdamW (decoupled weight decay), one fused pass over n parameters:
 *   g = grad * grad_scale            (grad_scale folds in gradient clipping)
 *   m = b1 m + (1-b1) g ; v = b2 v + (1-b2) g^2
 *   p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd * p )
 * t is the 1-based step count. */
static inline void ax_adamw_update(ax_ctx *ctx, float *param, const float *grad, float *m, float *v,
                                   long n, float lr, float beta1, float beta2, float eps, float wd,
                                   float grad_scale, long t) {
    ctx->be->adamw_update(ctx, param, grad, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
}
/* sum of squares in double (for the global gradient norm) */
static inline double ax_sum_squares(ax_ctx *ctx, const float *x, long n) {
    return ctx->be->sum_squares(ctx, x, n);
}

/* ---- helpers shared by the kernels (additions) ---- */

/* ax_expf, the vectorising expf: lib/core/fastmath.h */

/* ---- sharded-hidden RMSNorm (hidden dim split over ranks; lib/backend/cpu/ops_shard.c) ----
 * Each rank holds C of the C_total columns. The per-row sums are all-reduced by the caller
 * between the two halves, so every grid computes the same normalisation.
 * forward:  ss[N] = sum_c inp^2 (local) ; [all-reduce ss] ;
 *           out[N,C] = inp * rstd * weight, rstd[N] = 1/sqrt(ss/C_total + eps) */
static inline void ax_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C) {
    ctx->be->rmsnorm_sumsq(ctx, ss, inp, N, C);
}
static inline void ax_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                                    const float *weight, const float *ss, int N, int C, int C_total,
                                    float eps) {
    ctx->be->rmsnorm_apply(ctx, out, rstd, inp, weight, ss, N, C, C_total, eps);
}
/* backward: dot[N] = sum_c dout * weight * inp (local) ; [all-reduce dot] ;
 *           dinp[N,C] += rstd * weight * dout - inp * rstd^3 * dot / C_total ;
 *           dweight[C] += sum_rows dout * inp * rstd (either output may be NULL) */
static inline void ax_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout,
                                           const float *inp, const float *weight, int N, int C) {
    ctx->be->rmsnorm_backward_dot(ctx, dot, dout, inp, weight, N, C);
}
static inline void ax_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight,
                                             const float *dout, const float *inp,
                                             const float *weight, const float *rstd,
                                             const float *dot, int N, int C, int C_total) {
    ctx->be->rmsnorm_backward_apply(ctx, dinp, dweight, dout, inp, weight, rstd, dot, N, C,
                                    C_total);
}

/* ---- vocabulary-parallel cross-entropy (vocab split over ranks; lib/backend/cpu/ops_shard.c) ----
 * Each rank holds logits[N, Vl] for global vocab ids [v0, v0 + Vl); only the first `valid`
 * columns are real tokens (the rest pad the vocabulary to a multiple of the ranks and never
 * take part). Three passes with all-reduces between them:
 *   ax_ce_rowmax    rowmax[N] over local valid columns      -> all-reduce MAX
 *   ax_ce_partial   stats[2N] = {sum exp(l - max), target logit if owned else 0} -> SUM
 *   ax_ce_finish    losses[N], dlogits (may alias logits, padding columns -> 0), returns
 *                   the sum of supervised losses; same semantics as the fused kernel. */
static inline void ax_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl,
                                int valid) {
    ctx->be->ce_rowmax(ctx, rowmax, logits, N, Vl, valid);
}
static inline void ax_ce_partial(ax_ctx *ctx, float *stats, const float *logits,
                                 const float *rowmax, const int32_t *targets, const uint8_t *mask,
                                 int N, int Vl, int valid, int v0) {
    ctx->be->ce_partial(ctx, stats, logits, rowmax, targets, mask, N, Vl, valid, v0);
}
static inline double ax_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                                  const float *rowmax, const float *stats, const int32_t *targets,
                                  const uint8_t *mask, float dscale, int N, int Vl, int valid,
                                  int v0) {
    return ctx->be->ce_finish(ctx, losses, dlogits, logits, rowmax, stats, targets, mask, dscale, N,
                              Vl, valid, v0);
}

/* ---- vocabulary-sharded embedding: rows [v0, v0 + rows) of the table live here ----
 * out[N,C] = wte[t - v0] for owned tokens, 0 otherwise (the caller all-reduces);
 * backward accumulates only owned rows. */
static inline void ax_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                              const float *wte, int N, int C, int v0, int rows) {
    ctx->be->embedding_shard_forward(ctx, out, tokens, wte, N, C, v0, rows);
}
static inline void ax_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                               const int32_t *tokens, int N, int C, int v0,
                                               int rows) {
    ctx->be->embedding_shard_backward(ctx, dwte, dout, tokens, N, C, v0, rows);
}

/* ---- one decoding step of causal attention against a KV cache (lib/backend/cpu/ops_decode.c) ----
 * q[B, H*D] (rotated) for the newest position; kc, vc[B, H, Tmax, D] hold positions
 * 0..len-1 (the newest already appended); out[B, H*D]. scale = 1/sqrt(D). */
static inline void ax_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
                                       const float *vc, int B, int H, int D, int len, int Tmax) {
    ctx->be->attention_decode(ctx, out, q, kc, vc, B, H, H, D, len, Tmax);
}
/* Grouped-query: the caches kc, vc[B, Hkv, Tmax, D] hold Hkv heads; query head h reads head
 * h / (H / Hkv). */
static inline void ax_attention_decode_gqa(ax_ctx *ctx, float *out, const float *q, const float *kc,
                                           const float *vc, int B, int H, int Hkv, int D, int len,
                                           int Tmax) {
    ctx->be->attention_decode(ctx, out, q, kc, vc, B, H, Hkv, D, len, Tmax);
}

/* ---- data movement of decoding (lib/backend/cpu/ops_move.c) ---- */
/* Appends position pos of B sequences to the caches kc, vc[B, H, Tmax, D]: the key of sequence
 * b is k[b*ld + h*D + d] (likewise v), e.g. the k and v parts of a packed qkv row (ld = 3HD). */
static inline void ax_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v,
                                long ld, int B, int H, int D, int Tmax, int pos) {
    ctx->be->kv_append(ctx, kc, vc, k, v, ld, B, H, D, Tmax, pos);
}
/* dst[r*ld_dst + c] = src[r*ld_src + c] for r < rows, c < cols (a strided 2-D copy) */
static inline void ax_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                                long rows, long cols) {
    ctx->be->copy_rows(ctx, dst, ld_dst, src, ld_src, rows, cols);
}
/* dst[n] (bf16 bit patterns) = src[n] rounded to nearest even, NaN kept a (quiet) NaN: the
 * rounding of lib/dist's ax_f32_to_bf16, so a collective's bf16 combine sees the same values */
static inline void ax_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n) {
    ctx->be->to_bf16(ctx, dst, src, n);
}
/* dst[n] = src[n] widened to fp32 (exact) */
static inline void ax_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n) {
    ctx->be->from_bf16(ctx, dst, src, n);
}
/* Greedy choice over a vocabulary slice: for each of B rows of x[B, Vl] (first `valid` columns
 * real, global ids from v0), best[2b] = the largest value and best[2b+1] = -(its global id),
 * ties to the lowest id (-INFINITY and -v0 when valid = 0). best is HOST memory [2B]: the pairs
 * are combined over the ranks by the caller. */
static inline void ax_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl,
                                  int valid, int v0) {
    ctx->be->argmax_rows(ctx, best, x, B, Vl, valid, v0);
}

/* ---- architectures beyond Llama: GPT-NeoX (Pythia) and GPT-2 (docs/training.md) */

/* ---- LayerNorm over a hidden dimension split over ranks (lib/backend/cpu/ops_layernorm.c) ----
 * out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps), var the biased variance
 * over all C_total columns; this rank holds C of them. Three passes, the caller all-reducing
 * the row statistics between them (nothing to reduce with one shard, C == C_total):
 *   ax_layernorm_rowsum  sum[N] = sum_c inp                                -> all-reduce SUM
 *   ax_layernorm_sqdev   sq[N] = sum_c (inp - sum/C_total)^2               -> all-reduce SUM
 *   ax_layernorm_apply   out[N,C], mean[N], rstd[N] (saved for backward); weight, bias[C] */
static inline void ax_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C) {
    ctx->be->layernorm_rowsum(ctx, sum, inp, N, C);
}
static inline void ax_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum,
                                      int N, int C, int C_total) {
    ctx->be->layernorm_sqdev(ctx, sq, inp, sum, N, C, C_total);
}
static inline void ax_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd,
                                      const float *inp, const float *weight, const float *bias,
                                      const float *sum, const float *sq, int N, int C, int C_total,
                                      float eps) {
    ctx->be->layernorm_apply(ctx, out, mean, rstd, inp, weight, bias, sum, sq, N, C, C_total, eps);
}
/* backward, xhat = (inp - mean) rstd:
 *   dots[2N] = {sum_c dout w, sum_c dout w xhat} (local)                   -> all-reduce SUM
 *   dinp[N,C] += rstd (dout w - dots[i]/C_total - xhat dots[N+i]/C_total);
 *   dweight[C] += sum_rows dout xhat ; dbias[C] += sum_rows dout (any output may be NULL) */
static inline void ax_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout,
                                             const float *inp, const float *weight,
                                             const float *mean, const float *rstd, int N, int C) {
    ctx->be->layernorm_backward_dot(ctx, dots, dout, inp, weight, mean, rstd, N, C);
}
static inline void ax_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight,
                                               float *dbias, const float *dout, const float *inp,
                                               const float *weight, const float *mean,
                                               const float *rstd, const float *dots, int N, int C,
                                               int C_total) {
    ctx->be->layernorm_backward_apply(ctx, dinp, dweight, dbias, dout, inp, weight, mean, rstd,
                                      dots, N, C, C_total);
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

/* ---- GELU (lib/backend/cpu/ops_gelu.c): out[N,F] = gelu(h[N,F]) ----
 * tanh_approx = 0: 0.5 h (1 + erf(h/sqrt 2)) (GPT-NeoX "gelu"); 1: 0.5 h (1 + tanh(sqrt(2/pi)
 * (h + 0.044715 h^3))) (GPT-2 "gelu_new"). Backward: dh[N,F] += dout gelu'(h). */
static inline void ax_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F,
                                   int tanh_approx) {
    ctx->be->gelu_forward(ctx, out, h, N, F, tanh_approx);
}
static inline void ax_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h,
                                    int N, int F, int tanh_approx) {
    ctx->be->gelu_backward(ctx, dh, dout, h, N, F, tanh_approx);
}

/* ---- biases (lib/backend/cpu/ops_bias.c) ----
 * out[N,OC] += bias[OC]; backward dbias[OC] += column sums of dout[N,OC] (rows summed in
 * order: deterministic) */
static inline void ax_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC) {
    ctx->be->bias_add(ctx, out, bias, N, OC);
}
static inline void ax_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC) {
    ctx->be->bias_backward(ctx, dbias, dout, N, OC);
}

/* ---- partial rotary (GPT-NeoX rotary_pct): the first rd of each head's D dims rotate with
 * rotate-half pairs (i, i + rd/2) at angle t * theta^(-2i/rd) (table ax_rope_table(T, rd));
 * dims rd..D-1 pass through. rd == D is ax_rope_forward itself (one call, today's path); else
 * the rope op runs per head as one "head" of size rd at the head's offset, so every backend's
 * rope kernel serves. Same layout and overwrite semantics as ax_rope_forward/backward. */
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

/* ---- bf16 storage of the activations only GEMMs read (bf16 contexts; backend.h) ----
 * A bf16 matrix [rows, cols] is rows of uint16 bf16 bit patterns ax_bf16_ld(cols) apart
 * (16-byte rows, the backend's own staging layout). */
static inline long ax_bf16_ld(long cols) {
    return (cols + 7) & ~7L;
}
/* 1 when ctx stores those activations in bf16: a bf16 context on a backend with the producers */
static inline int ax_bf16_acts(const ax_ctx *ctx) {
    const ax_backend *b = ctx->be;
    return ctx->precision == AX_PREC_BF16 && b->gemm_mixed && b->rmsnorm_apply_bf16 &&
           b->layernorm_apply_bf16 && b->swiglu_forward_bf16 && b->gelu_forward_bf16 &&
           b->swiglu_backward_bf16;
}
/* ax_gemm with A and/or B in bf16 storage (a_bf16, b_bf16; their ld in elements) */
static inline void ax_gemm_mixed(ax_ctx *ctx, char transa, char transb, long m, long n, long k,
                                 float alpha, const void *A, int a_bf16, long lda, const void *B,
                                 int b_bf16, long ldb, float beta, float *C, long ldc) {
    ctx->be->gemm_mixed(ctx, transa, transb, m, n, k, alpha, A, a_bf16, lda, B, b_bf16, ldb, beta,
                        C, ldc);
}
/* ax_rmsnorm_apply, ax_layernorm_apply, ax_swiglu_forward and ax_gelu_forward writing out in
 * bf16 storage [N, ax_bf16_ld(C or F)] */
static inline void ax_rmsnorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *rstd, const float *inp,
                                         const float *weight, const float *ss, int N, int C,
                                         int C_total, float eps) {
    ctx->be->rmsnorm_apply_bf16(ctx, out, rstd, inp, weight, ss, N, C, C_total, eps);
}
static inline void ax_layernorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *mean, float *rstd,
                                           const float *inp, const float *weight, const float *bias,
                                           const float *sum, const float *sq, int N, int C,
                                           int C_total, float eps) {
    ctx->be->layernorm_apply_bf16(ctx, out, mean, rstd, inp, weight, bias, sum, sq, N, C, C_total,
                                  eps);
}
static inline void ax_swiglu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N,
                                          int F) {
    ctx->be->swiglu_forward_bf16(ctx, out, h, N, F);
}
static inline void ax_gelu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F,
                                        int tanh_approx) {
    ctx->be->gelu_forward_bf16(ctx, out, h, N, F, tanh_approx);
}
/* dh [N, ax_bf16_ld(2F)] (bf16 storage) = what ax_swiglu_backward accumulates into a zeroed dh:
 * written, not accumulated (no zeroing needed) */
static inline void ax_swiglu_backward_bf16(ax_ctx *ctx, uint16_t *dh, const float *dout,
                                           const float *h, int N, int F) {
    ctx->be->swiglu_backward_bf16(ctx, dh, dout, h, N, F);
}
