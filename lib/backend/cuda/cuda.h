/* The CUDA backend's internals: the per-context state, error recording and the kernels' host
 * entry points (the `ax_cuda_*` ops, same signatures as lib/backend/cpu/cpu.h). Included by
 * the C files of this folder (the table, cuBLAS) and by the .cu kernel files (as C++).
 *
 * Conventions shared by every kernel here:
 * - Pointers are device memory (lib/backend/ops.h), except `best` of argmax_rows (host) and
 *   the double results, which are copied back and waited for (a synchronising op).
 * - Everything runs on the context's stream (ctx->stream); kernels never allocate: workspace
 *   comes from ax_ctx_scratch.
 * - No float atomics: every reduction has a fixed order, so results are deterministic
 *   run to run (they differ from the CPU's order by rounding only).
 * - A failed launch or an unsupported shape is recorded once, process-wide (ax_cuda_fail),
 *   and reported by the backend's `status` (ax_ctx_status): ops return nothing. */
#pragma once
#include <math.h> /* system headers outside the extern "C" block below (C++ overloads) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "lib/backend/ops.h"

/* bf16 mode (gemm.c): one GEMM operand rounded to bf16, packed with a leading dimension padded
 * to 8 (16-byte rows for the tensor cores), and what it was made from. It is reused, or a
 * block of it, while nothing may have written its source since: same pointer and leading
 * dimension, same ax_cuda_generation (the model's dW GEMMs come in row chunks that all read
 * the same input and column blocks of the dout the dX GEMM staged). */
typedef struct {
    void *buf; /* device, cap bf16 elements */
    size_t cap;
    const float *src; /* NULL: empty */
    long rows, cols, ld;
    unsigned long gen;
} ax_cuda_bf16_slot;

/* padded leading dimension of a bf16 copy of `cols` columns: 16-byte rows */
static inline long ax_cuda_bf16_ld(long cols) {
    return (cols + 7) & ~7L;
}

/* bf16 mode, parameters (wcache.c): one weight matrix (or block of one) that lies inside a
 * declared parameter range (the table's params_range), rounded to bf16 like a staged operand
 * and kept across GEMMs until something writes into its range. */
typedef struct {
    void *buf; /* device, cap bf16 elements; NULL: empty */
    size_t cap;
    const float *src;
    long rows, cols, ld;
    unsigned long stamp; /* the range's write stamp when converted (valid while equal) */
    unsigned long used;  /* last use (LRU eviction) */
} ax_cuda_wentry;

/* a context's bf16 weight cache: entries, a byte budget, counters for the debug log */
typedef struct {
    ax_cuda_wentry *e;
    int n, cap;
    size_t bytes;  /* device bytes held by entries */
    double budget; /* bytes; < 0: the default (declared parameter bytes / 2 plus slack); 0: off */
    int check;     /* AXMEM_CUDA_BF16_CHECK=1: every hit compared with a fresh conversion */
    unsigned long tick;
    long hits, misses, refills, evictions, over;
    void *chk; /* check mode's fresh conversion, chk_cap bf16 elements */
    size_t chk_cap;
} ax_cuda_wcache;

/* per-context state behind ctx->impl (the stream itself is ctx->stream) */
typedef struct {
    void *blas; /* cublasHandle_t */
    int device;
    int bf16;                  /* ctx->precision == AX_PREC_BF16 */
    ax_cuda_bf16_slot slot[2]; /* the two operands of a bf16 GEMM */
    int slot_last;             /* the slot used last (the other one takes a new operand) */
    ax_cuda_wcache wc;         /* bf16 copies of weights */
} ax_cuda_ctx;

/* ---- the bf16 weight cache (wcache.c) ----
 * Parameter ranges are process-wide (memory, whoever writes it), each with a write stamp drawn
 * from one counter; an entry is valid while its range's stamp is the one it was converted
 * under. Every route that writes device memory through this plugin calls
 * ax_cuda_bf16_invalidate AFTER enqueueing the write (a conversion enqueued before it then
 * carries the old stamp): the table's ops (ops_table.c, their outputs), copies, zeroing,
 * unmap, cuBLAS outputs and NCCL's receive buffers (lib/dist/comm_nccl.c). */
/* the table's params_range hook: declares [p, p + bytes) as parameters (bytes = 0 withdraws
 * the range starting at p) */
void ax_cuda_params_range(ax_ctx *ctx, const void *p, size_t bytes);
/* something wrote [p, p + bytes) (bytes = 0: at p, extent unknown): the parameter ranges it
 * overlaps get new stamps, so their cached bf16 copies are converted again at next use */
void ax_cuda_bf16_invalidate(const void *p, size_t bytes);
/* every range gets a new stamp (a kernel launched outside a table op: outputs unknown) */
void ax_cuda_bf16_invalidate_all(void);
/* device memory at p is being freed: a range starting there is withdrawn */
void ax_cuda_params_freed(const void *p);
/* reads AXMEM_CUDA_BF16_CACHE (MB; 0 = off) and AXMEM_CUDA_BF16_CHECK; fails on a bad value */
ax_status ax_cuda_wcache_init(ax_cuda_wcache *w);
/* logs the counters (debug), frees the copies, withdraws the ranges ctx declared */
void ax_cuda_wcache_fini(ax_ctx *ctx, ax_cuda_wcache *w);
/* frees every entry but the current GEMM's (device memory the staging slots need first);
 * returns how many */
int ax_cuda_wcache_release(ax_cuda_wcache *w);
/* the bf16 copy of src[rows, cols] (leading dimension ld) when it lies in a parameter range and
 * the cache is on: *p (inside an entry; converted now on a miss) with leading dimension *pld,
 * returning 1; 0 otherwise (the caller stages it). `what` names the operand for check mode.
 * The caller advances w->tick once per GEMM: an entry taken under the current tick is never
 * evicted for the GEMM's other operand. */
int ax_cuda_wcache_get(ax_ctx *ctx, ax_cuda_wcache *w, const float *src, long rows, long cols,
                       long ld, const char *what, const void **p, long *pld);
/* Test-only (tests/cuda/cuda_ops_check.c --stale): while `on`, ax_cuda_bf16_invalidate ignores
 * writes, so a cached copy goes stale and check mode must catch it. */
void ax_cuda_bf16_test_skip(int on);
/* Test-only: ctx's counters: hits, misses (incl. refills), refills, evictions, over budget,
 * entries, bytes */
void ax_cuda_bf16_cache_stats(ax_ctx *ctx, long out[7]);
/* Table ops run in an op scope (ops_table.c): a kernel launched outside one (a new op that
 * bypassed the wrappers) drops every cached weight copy. Returns the previous state. */
int ax_cuda_op_scope(int on);
/* fills the table's op entries with those wrappers (ops_table.c) */
void ax_cuda_table_ops(ax_backend *t);

/* Records the first failure (printf-style message) for ax_cuda_status; later ones are logged. */
void ax_cuda_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* After a launch: records a launch error (bad configuration, no device) naming `op`, and
 * advances ax_cuda_generation (device memory may have changed). Every op calls it after its
 * launches; a new kernel file must too, or a bf16 GEMM may reuse a stale operand. */
void ax_cuda_launched(const char *op);
/* A counter of everything that may write device memory through this backend: kernels
 * (ax_cuda_launched), copies, zeroing, unmap, cuBLAS outputs. Process-wide. */
unsigned long ax_cuda_generation(void);
void ax_cuda_advance(void);
/* dst[rows, ldd] (bf16, packed rows of ldd >= cols; the padding is left alone) =
 * round-to-nearest-even of src[rows, cols] (leading dimension ld). Does not advance the
 * generation (it writes only the backend's own staging): ops_bf16.cu. */
void ax_cuda_to_bf16(ax_ctx *ctx, void *dst, long ldd, const float *src, long rows, long cols,
                     long ld);
/* the wire format of reduced gradients (ops_bf16.cu): dst = src rounded to nearest even, NaN
 * the CPU's quiet NaN; and back */
void ax_cuda_wire_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n);
void ax_cuda_wire_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n);
ax_status ax_cuda_status(ax_ctx *ctx);
/* Copies `bytes` of device memory to host and waits (results of the double-returning ops). */
void ax_cuda_d2h_sync(ax_ctx *ctx, void *host, const void *dev, size_t bytes);

void ax_cuda_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                  const float *A, long lda, const float *B, long ldb, float beta, float *C,
                  long ldc);
/* ax_cuda_gemm with A and/or B in bf16 storage (bf16 contexts; the table's gemm_mixed) */
void ax_cuda_gemm_mixed(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                        const void *A, int a_bf16, long lda, const void *B, int b_bf16, long ldb,
                        float beta, float *C, long ldc);
/* the bf16-storage producers (backend.h): rows ax_cuda_bf16_ld(C or F) elements apart */
void ax_cuda_rmsnorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *rstd, const float *inp,
                                const float *weight, const float *ss, int N, int C, int C_total,
                                float eps);
void ax_cuda_layernorm_apply_bf16(ax_ctx *ctx, uint16_t *out, float *mean, float *rstd,
                                  const float *inp, const float *weight, const float *bias,
                                  const float *sum, const float *sq, int N, int C, int C_total,
                                  float eps);
void ax_cuda_swiglu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F);
void ax_cuda_gelu_forward_bf16(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F,
                               int tanh_approx);
void ax_cuda_swiglu_backward_bf16(ax_ctx *ctx, uint16_t *dh, const float *dout, const float *h,
                                  int N, int F);
/* batched: C_q = alpha op(A_q) op(B_q) + beta C_q, X_q = X + q s_X (the attention's products) */
void ax_cuda_gemm_strided(ax_ctx *ctx, char transa, char transb, long m, long n, long k,
                          float alpha, const float *A, long lda, long sa, const float *B, long ldb,
                          long sb, float beta, float *C, long ldc, long sc, long batch);
/* Fused bf16 tensor-core attention (ops_flash.cu), AXMEM_CUDA_ATTENTION=flash on bf16 contexts:
 * supported for head dims 16, 32, 64, 128. Same lse as the blocked path; the backward reads the
 * forward's output `out` and keeps D_i in Di[B*H*T]. */
int ax_cuda_flash_supported(int B, int C, int H, int Hkv);
void ax_cuda_flash_forward(ax_ctx *ctx, float *out, float *lse, const float *qkv, int B, int T,
                           int C, int H, int Hkv);
void ax_cuda_flash_backward(ax_ctx *ctx, float *dqkv, float *Di, const float *dout,
                            const float *qkv, const float *lse, const float *out, int B, int T,
                            int C, int H, int Hkv);
/* Arena bytes attention_forward/backward take for B sequences of T tokens, H heads of D */
size_t ax_cuda_attention_scratch(int B, int T, int H, int D, int nthreads);
/* Profiling (AXMEM_CUDA_PROFILE=1): waits for the device and adds the time since the last mark
 * to `op`'s row of the table printed at exit. Costs one getenv'd flag test when off. */
void ax_cuda_prof_mark(const char *op);
void ax_cuda_matmul_forward(ax_ctx *ctx, float *out, const float *inp, const float *w, int N, int C,
                            int OC);
void ax_cuda_matmul_backward(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                             const float *inp, const float *w, int N, int C, int OC);
/* C[m,n] = beta C for k = 0 (BLAS semantics, beta = 0 clears NaNs): ops_elem.cu */
void ax_cuda_scale_matrix(ax_ctx *ctx, float *C, long ldc, long m, long n, float beta);
void ax_cuda_embedding_forward(ax_ctx *ctx, float *out, const int32_t *tokens, const float *wte,
                               int N, int C);
void ax_cuda_embedding_backward(ax_ctx *ctx, float *dwte, const float *dout, const int32_t *tokens,
                                int N, int C);
void ax_cuda_rmsnorm_forward(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                             const float *weight, int N, int C, float eps);
void ax_cuda_rmsnorm_backward(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                              const float *inp, const float *weight, const float *rstd, int N,
                              int C);
void ax_cuda_rope_table(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D, float theta);
void ax_cuda_rope_forward(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B,
                          int T, int H, int D, long ld);
void ax_cuda_rope_backward(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t, int B,
                           int T, int H, int D, long ld);
void ax_cuda_attention_forward(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                               int C, int H, int Hkv);
void ax_cuda_attention_backward(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                                const float *qkv, const float *att, const float *out, int B, int T,
                                int C, int H, int Hkv);
void ax_cuda_swiglu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F);
void ax_cuda_swiglu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N,
                             int F);
void ax_cuda_add_forward(ax_ctx *ctx, float *out, const float *a, const float *b, long n);
void ax_cuda_accumulate(ax_ctx *ctx, float *dst, const float *src, long n);
double ax_cuda_crossentropy_forward_backward(ax_ctx *ctx, float *losses, float *dlogits,
                                             const float *logits, const int32_t *targets,
                                             const uint8_t *mask, float dscale, int N, int V);
void ax_cuda_adamw_update(ax_ctx *ctx, float *param, const float *grad, float *m, float *v, long n,
                          float lr, float beta1, float beta2, float eps, float wd, float grad_scale,
                          long t);
double ax_cuda_sum_squares(ax_ctx *ctx, const float *x, long n);
void ax_cuda_rmsnorm_sumsq(ax_ctx *ctx, float *ss, const float *inp, int N, int C);
void ax_cuda_rmsnorm_apply(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                           const float *weight, const float *ss, int N, int C, int C_total,
                           float eps);
void ax_cuda_rmsnorm_backward_dot(ax_ctx *ctx, float *dot, const float *dout, const float *inp,
                                  const float *weight, int N, int C);
void ax_cuda_rmsnorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                    const float *inp, const float *weight, const float *rstd,
                                    const float *dot, int N, int C, int C_total);
void ax_cuda_ce_rowmax(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl, int valid);
void ax_cuda_ce_partial(ax_ctx *ctx, float *stats, const float *logits, const float *rowmax,
                        const int32_t *targets, const uint8_t *mask, int N, int Vl, int valid,
                        int v0);
double ax_cuda_ce_finish(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                         const float *rowmax, const float *stats, const int32_t *targets,
                         const uint8_t *mask, float dscale, int N, int Vl, int valid, int v0);
void ax_cuda_embedding_shard_forward(ax_ctx *ctx, float *out, const int32_t *tokens,
                                     const float *wte, int N, int C, int v0, int rows);
void ax_cuda_embedding_shard_backward(ax_ctx *ctx, float *dwte, const float *dout,
                                      const int32_t *tokens, int N, int C, int v0, int rows);
void ax_cuda_attention_decode(ax_ctx *ctx, float *out, const float *q, const float *kc,
                              const float *vc, int B, int H, int Hkv, int D, int len, int Tmax);
void ax_cuda_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                       int B, int H, int D, int Tmax, int pos);
void ax_cuda_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                       long rows, long cols);
void ax_cuda_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                         int v0);

/* architectures beyond Llama (ops_arch.cu) */
void ax_cuda_layernorm_rowsum(ax_ctx *ctx, float *sum, const float *inp, int N, int C);
void ax_cuda_layernorm_sqdev(ax_ctx *ctx, float *sq, const float *inp, const float *sum, int N,
                             int C, int C_total);
void ax_cuda_layernorm_apply(ax_ctx *ctx, float *out, float *mean, float *rstd, const float *inp,
                             const float *weight, const float *bias, const float *sum,
                             const float *sq, int N, int C, int C_total, float eps);
void ax_cuda_layernorm_backward_dot(ax_ctx *ctx, float *dots, const float *dout, const float *inp,
                                    const float *weight, const float *mean, const float *rstd,
                                    int N, int C);
void ax_cuda_layernorm_backward_apply(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                      const float *dout, const float *inp, const float *weight,
                                      const float *mean, const float *rstd, const float *dots,
                                      int N, int C, int C_total);
void ax_cuda_gelu_forward(ax_ctx *ctx, float *out, const float *h, int N, int F, int tanh_approx);
void ax_cuda_gelu_backward(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N, int F,
                           int tanh_approx);
void ax_cuda_bias_add(ax_ctx *ctx, float *out, const float *bias, int N, int OC);
void ax_cuda_bias_backward(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC);

#ifdef __cplusplus
}
#endif
