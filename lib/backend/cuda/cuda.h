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

/* bf16 contexts (gemm.c): a GEMM operand that is fp32 in memory is rounded to bf16 into one of
 * the context's two staging slots, rows padded to ax_bf16_ld(cols) (16-byte rows for the
 * tensor cores), and kept with what it was made from. It is reused, or a block of it, while
 * nothing may have written its source since: same pointer and leading dimension, same
 * ax_cuda_generation (the model's dW GEMMs come in row chunks that all read the same input and
 * column blocks of the dout the dX GEMM staged). */
typedef struct {
    void *buf; /* device, cap bf16 elements */
    size_t cap;
    const float *src; /* NULL: empty */
    long rows, cols, ld;
    unsigned long gen;
} ax_cuda_bf16_slot;

/* per-context state behind ctx->impl (the stream itself is ctx->stream) */
typedef struct {
    void *blas; /* cublasHandle_t */
    int device;
    int bf16;                  /* ctx->precision == AX_PREC_BF16 */
    ax_cuda_bf16_slot slot[2]; /* the two operands of a bf16 GEMM */
    int slot_last;             /* the slot used last (the other one takes a new operand) */
} ax_cuda_ctx;

/* the kernels of ops.def's groups ALL and BF16: ax_cuda_NAME, the table's NAME */
#define AX_CUDA_ALL(ret, name, params) ret ax_cuda_##name params;
#define AX_CUDA_BF16(ret, name, params) ret ax_cuda_##name params;
#define AX_CUDA_PACK(ret, name, params)
#define AX_OP(ret, name, params, args, group) AX_CUDA_##group(ret, name, params)
#include "lib/backend/ops.def"
#undef AX_CUDA_ALL
#undef AX_CUDA_BF16
#undef AX_CUDA_PACK

/* Records the first failure (printf-style message) for ax_cuda_status; later ones are logged. */
void ax_cuda_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ax_status ax_cuda_status(ax_ctx *ctx);
/* After a launch: records a launch error (bad configuration, no device) naming `op`, and
 * advances ax_cuda_generation (device memory may have changed). Every op calls it after its
 * launches; a new kernel file must too, or a bf16 GEMM may reuse a stale staged operand. */
void ax_cuda_launched(const char *op);
/* A counter of everything that may write device memory through this backend: kernels
 * (ax_cuda_launched), copies, zeroing, unmap, cuBLAS outputs. Process-wide. */
unsigned long ax_cuda_generation(void);
void ax_cuda_advance(void);
/* Profiling (AXMEM_CUDA_PROFILE=1): waits for the device and adds the time since the last mark
 * to `op`'s row of the table printed at exit. Costs one getenv'd flag test when off. */
void ax_cuda_prof_mark(const char *op);
/* Copies `bytes` of device memory to host and waits (results of the double-returning ops). */
void ax_cuda_d2h_sync(ax_ctx *ctx, void *host, const void *dev, size_t bytes);

/* dst[rows, ldd] (bf16, packed rows of ldd >= cols; the padding is left alone) =
 * round-to-nearest-even of src[rows, cols] (leading dimension ld): a GEMM operand into a
 * staging slot. Does not advance the generation (it writes only the staging): ops_bf16.cu. */
void ax_cuda_stage_bf16(ax_ctx *ctx, void *dst, long ldd, const float *src, long rows, long cols,
                        long ld);
/* batched: C_q = alpha op(A_q) op(B_q) + beta C_q, X_q = X + q s_X (the attention's products) */
void ax_cuda_gemm_strided(ax_ctx *ctx, char transa, char transb, long m, long n, long k,
                          float alpha, const float *A, long lda, long sa, const float *B, long ldb,
                          long sb, float beta, float *C, long ldc, long sc, long batch);
/* C[m,n] = beta C for k = 0 (BLAS semantics, beta = 0 clears NaNs): ops_elem.cu */
void ax_cuda_scale_matrix(ax_ctx *ctx, float *C, long ldc, long m, long n, float beta);
/* Arena bytes attention_forward/backward take for B sequences of T tokens, H heads of D (the
 * table's attention_scratch) */
size_t ax_cuda_attention_scratch(int B, int T, int H, int D, int nthreads);
/* The attention's alternatives, process-wide, for the ops check and bench/bench_attention:
 * flash = 1 runs the fused bf16 kernels of ops_flash.cu on bf16 contexts and the head dims
 * they take (unmeasured on a GPU, so not the product's path); block_rows > 0 fixes the blocked
 * path's query rows per block (several blocks at a test's small T). 0, 0 is the product's. */
void ax_cuda_attention_set(int flash, int block_rows);
/* The fused bf16 kernels (ops_flash.cu): head dims 16, 32, 64, 128. Same lse as the blocked
 * path; the backward reads the forward's output `out` and keeps D_i in Di[B*H*T]. */
int ax_cuda_flash_supported(int B, int C, int H, int Hkv);
void ax_cuda_flash_forward(ax_ctx *ctx, float *out, float *lse, const float *qkv, int B, int T,
                           int C, int H, int Hkv);
void ax_cuda_flash_backward(ax_ctx *ctx, float *dqkv, float *Di, const float *dout,
                            const float *qkv, const float *lse, const float *out, int B, int T,
                            int C, int H, int Hkv);

#ifdef __cplusplus
}
#endif
