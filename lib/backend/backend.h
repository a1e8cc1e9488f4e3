/* The backend interface: what the model layer may do to memory and compute.
 *
 * A backend is a table of functions: memory (allocate, free, copy between host and device,
 * zero, synchronise) and every op of lib/backend/ops.h. An execution context (ax_ctx) binds a
 * backend to a stream (NULL on the CPU) and a scratch arena, and every op takes it as its first
 * argument. Kernels never allocate: a kernel that needs workspace takes it from the context's
 * arena, which the caller sizes once (ax_ctx_reserve) outside the hot path.
 *
 * The CPU backend (lib/backend/cpu/) is today's code and the specification every other backend
 * is tested against. A CUDA backend adds a table (device memory, cuBLAS, a stream) and nothing
 * in lib/model changes. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct ax_backend ax_backend;

/* The arithmetic of a context's GEMMs (--precision). fp32: fp32 everywhere (the CPU backend's
 * and the specification). bf16: the GEMMs' operands are rounded to bf16 (round to nearest
 * even) and multiplied with fp32 accumulation and fp32 output; parameters, gradients,
 * optimizer state and every other op stay fp32, and so do the activations but those only
 * GEMMs read, which a backend with the bf16 producers below stores in bf16 (the same values
 * the GEMMs would have rounded them to). Only a backend that sets `bf16` in its table
 * computes it (CUDA). */
typedef enum { AX_PREC_FP32 = 0, AX_PREC_BF16 = 1 } ax_precision;

/* Bump arena for kernel workspace: one block, reused by every kernel in turn (ops on one
 * context run one after another, so at most one kernel holds it at a time). */
typedef struct {
    char *base;
    size_t cap;
} ax_arena;

typedef struct ax_ctx {
    const ax_backend *be;
    void *stream;     /* the backend's stream or queue; NULL on the CPU */
    ax_arena scratch; /* device memory of `be` */
    ax_status status; /* first failure inside an op (ops return nothing): see ax_ctx_status */
    void *impl;       /* the backend's per-context state (CUDA: cuBLAS handle); NULL on the CPU */
    ax_precision precision; /* set at creation (ax_ctx_create_prec), before ctx_init */
} ax_ctx;

typedef enum {
    AX_COPY_H2D, /* host -> device */
    AX_COPY_D2H, /* device -> host */
    AX_COPY_D2D, /* device -> device */
} ax_copy_kind;

/* The function table. Ops take the context first; the memory functions below them. */
struct ax_backend {
    const char *name;
    void *(*dev_alloc)(size_t bytes); /* zeroed, 64-byte aligned */
    void (*dev_free)(void *p);
    void *(*host_alloc)(size_t bytes); /* zeroed */
    void (*host_free)(void *p);
    void (*copy)(ax_ctx *ctx, void *dst, const void *src, size_t bytes, ax_copy_kind kind);
    void (*zero)(ax_ctx *ctx, void *p, size_t bytes);
    void (*sync)(ax_ctx *ctx);
    void *(*map)(ax_ctx *ctx, void *dev, size_t bytes, int flags);
    void (*unmap)(ax_ctx *ctx, void *dev, void *host, size_t bytes, int flags);
    /* 1 when p is this backend's device memory (not host-accessible); NULL when device memory is
     * host memory (the CPU). lib/dist stages device buffers of collectives through the host. */
    int (*is_device)(const void *p);
    /* the first kernel failure the backend saw (sticky, like a device's last error), with its
     * message recorded on the calling thread; AX_OK if none */
    ax_status (*status)(ax_ctx *ctx);
    /* every op of lib/backend/ops.h, in its order */
    void (*gemm)(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                 const float *A, long lda, const float *B, long ldb, float beta, float *C,
                 long ldc);
    void (*matmul_forward)(ax_ctx *ctx, float *out, const float *inp, const float *w, int N, int C,
                           int OC);
    void (*matmul_backward)(ax_ctx *ctx, float *dinp, float *dw, const float *dout,
                            const float *inp, const float *w, int N, int C, int OC);
    void (*embedding_forward)(ax_ctx *ctx, float *out, const int32_t *tokens, const float *wte,
                              int N, int C);
    void (*embedding_backward)(ax_ctx *ctx, float *dwte, const float *dout, const int32_t *tokens,
                               int N, int C);
    void (*rmsnorm_forward)(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C, float eps);
    void (*rmsnorm_backward)(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                             const float *inp, const float *weight, const float *rstd, int N,
                             int C);
    void (*rope_table)(ax_ctx *ctx, float *cos_t, float *sin_t, int T, int D, float theta);
    void (*rope_forward)(ax_ctx *ctx, float *x, const float *cos_t, const float *sin_t, int B,
                         int T, int H, int D, long ld);
    void (*rope_backward)(ax_ctx *ctx, float *dx, const float *cos_t, const float *sin_t, int B,
                          int T, int H, int D, long ld);
    void (*attention_forward)(ax_ctx *ctx, float *out, float *att, const float *qkv, int B, int T,
                              int C, int H, int Hkv);
    void (*attention_backward)(ax_ctx *ctx, float *dqkv, float *scratch, const float *dout,
                               const float *qkv, const float *att, const float *out, int B, int T,
                               int C, int H, int Hkv);
    void (*swiglu_forward)(ax_ctx *ctx, float *out, const float *h, int N, int F);
    void (*swiglu_backward)(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N,
                            int F);
    void (*add_forward)(ax_ctx *ctx, float *out, const float *a, const float *b, long n);
    void (*accumulate)(ax_ctx *ctx, float *dst, const float *src, long n);
    double (*crossentropy_forward_backward)(ax_ctx *ctx, float *losses, float *dlogits,
                                            const float *logits, const int32_t *targets,
                                            const uint8_t *mask, float dscale, int N, int V);
    void (*adamw_update)(ax_ctx *ctx, float *param, const float *grad, float *m, float *v, long n,
                         float lr, float beta1, float beta2, float eps, float wd, float grad_scale,
                         long t);
    double (*sum_squares)(ax_ctx *ctx, const float *x, long n);
    void (*rmsnorm_sumsq)(ax_ctx *ctx, float *ss, const float *inp, int N, int C);
    void (*rmsnorm_apply)(ax_ctx *ctx, float *out, float *rstd, const float *inp,
                          const float *weight, const float *ss, int N, int C, int C_total,
                          float eps);
    void (*rmsnorm_backward_dot)(ax_ctx *ctx, float *dot, const float *dout, const float *inp,
                                 const float *weight, int N, int C);
    void (*rmsnorm_backward_apply)(ax_ctx *ctx, float *dinp, float *dweight, const float *dout,
                                   const float *inp, const float *weight, const float *rstd,
                                   const float *dot, int N, int C, int C_total);
    void (*ce_rowmax)(ax_ctx *ctx, float *rowmax, const float *logits, int N, int Vl, int valid);
    void (*ce_partial)(ax_ctx *ctx, float *stats, const float *logits, const float *rowmax,
                       const int32_t *targets, const uint8_t *mask, int N, int Vl, int valid,
                       int v0);
    double (*ce_finish)(ax_ctx *ctx, float *losses, float *dlogits, const float *logits,
                        const float *rowmax, const float *stats, const int32_t *targets,
                        const uint8_t *mask, float dscale, int N, int Vl, int valid, int v0);
    void (*embedding_shard_forward)(ax_ctx *ctx, float *out, const int32_t *tokens,
                                    const float *wte, int N, int C, int v0, int rows);
    void (*embedding_shard_backward)(ax_ctx *ctx, float *dwte, const float *dout,
                                     const int32_t *tokens, int N, int C, int v0, int rows);
    void (*attention_decode)(ax_ctx *ctx, float *out, const float *q, const float *kc,
                             const float *vc, int B, int H, int Hkv, int D, int len, int Tmax);
    void (*kv_append)(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                      int B, int H, int D, int Tmax, int pos);
    void (*copy_rows)(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                      long rows, long cols);
    void (*argmax_rows)(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                        int v0);
    /* the bf16 wire format of reduced gradients (--grad-comm bf16, lib/model): dst = src rounded
     * to nearest even (NaN stays NaN), and back (exact) */
    void (*to_bf16)(ax_ctx *ctx, uint16_t *dst, const float *src, long n);
    void (*from_bf16)(ax_ctx *ctx, float *dst, const uint16_t *src, long n);
    /* architectures beyond Llama (GPT-NeoX, GPT-2): LayerNorm, GELU, biases. NULL in a backend
     * that lacks them; the model then refuses those architectures on it (ax_model_create_dev). */
    void (*layernorm_rowsum)(ax_ctx *ctx, float *sum, const float *inp, int N, int C);
    void (*layernorm_sqdev)(ax_ctx *ctx, float *sq, const float *inp, const float *sum, int N,
                            int C, int C_total);
    void (*layernorm_apply)(ax_ctx *ctx, float *out, float *mean, float *rstd, const float *inp,
                            const float *weight, const float *bias, const float *sum,
                            const float *sq, int N, int C, int C_total, float eps);
    void (*layernorm_backward_dot)(ax_ctx *ctx, float *dots, const float *dout, const float *inp,
                                   const float *weight, const float *mean, const float *rstd, int N,
                                   int C);
    void (*layernorm_backward_apply)(ax_ctx *ctx, float *dinp, float *dweight, float *dbias,
                                     const float *dout, const float *inp, const float *weight,
                                     const float *mean, const float *rstd, const float *dots, int N,
                                     int C, int C_total);
    void (*gelu_forward)(ax_ctx *ctx, float *out, const float *h, int N, int F, int tanh_approx);
    void (*gelu_backward)(ax_ctx *ctx, float *dh, const float *dout, const float *h, int N, int F,
                          int tanh_approx);
    void (*bias_add)(ax_ctx *ctx, float *out, const float *bias, int N, int OC);
    void (*bias_backward)(ax_ctx *ctx, float *dbias, const float *dout, int N, int OC);
    /* optional (NULL on the CPU): per-context setup after ax_ctx_create has set ctx->be (a
     * device backend creates its stream and library handles here) and teardown before
     * ax_ctx_free releases the context */
    ax_status (*ctx_init)(ax_ctx *ctx);
    void (*ctx_fini)(ax_ctx *ctx);
    /* optional (NULL: ax_attention_scratch_bytes, the CPU's tiles): arena bytes that
     * attention_forward/backward take for B sequences of T tokens and H local heads of D */
    size_t (*attention_scratch)(int B, int T, int H, int D, int nthreads);
    /* optional (NULL on the CPU): [p, p + bytes) of device memory holds parameters, the weights
     * GEMMs read; bytes = 0 withdraws the range declared at p (before it is freed). Declare
     * whole allocations. A backend may keep derived copies (CUDA bf16 contexts: bf16 copies of
     * weights), valid until something writes into the range through the backend (an op's
     * output, a copy, zeroing, unmap) or its collectives: see ax_params_range. */
    void (*params_range)(ax_ctx *ctx, const void *p, size_t bytes);
    /* optional (NULL: every activation stays fp32): bf16 storage, on bf16 contexts, for the
     * activations that only GEMMs read (the norms' outputs, the MLP activation's). A bf16
     * matrix is rows of uint16 bf16 bit patterns, `ax_bf16_ld(cols)` elements apart (ops.h).
     * The _bf16 producers are their fp32 ops with each output rounded to nearest even as it is
     * stored, so a bf16 GEMM reading them multiplies the same operands it would have staged from
     * the fp32 output (bit for bit: the model's results do not change). gemm_mixed is gemm with
     * each operand either fp32 (a_bf16 / b_bf16 = 0) or such bf16 storage (1, ld in elements).
     * swiglu_backward_bf16 is the gradient the same way: dh = its fp32 op's dh += on a zeroed
     * dh (the model's SwiGLU without biases feeds dh to the up projection's GEMMs only). A
     * backend sets all six or none (ax_bf16_acts). */
    void (*gemm_mixed)(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                       const void *A, int a_bf16, long lda, const void *B, int b_bf16, long ldb,
                       float beta, float *C, long ldc);
    void (*rmsnorm_apply_bf16)(ax_ctx *ctx, uint16_t *out, float *rstd, const float *inp,
                               const float *weight, const float *ss, int N, int C, int C_total,
                               float eps);
    void (*layernorm_apply_bf16)(ax_ctx *ctx, uint16_t *out, float *mean, float *rstd,
                                 const float *inp, const float *weight, const float *bias,
                                 const float *sum, const float *sq, int N, int C, int C_total,
                                 float eps);
    void (*swiglu_forward_bf16)(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F);
    void (*gelu_forward_bf16)(ax_ctx *ctx, uint16_t *out, const float *h, int N, int F,
                              int tanh_approx);
    void (*swiglu_backward_bf16)(ax_ctx *ctx, uint16_t *dh, const float *dout, const float *h,
                                 int N, int F);
    /* optional (NULL: decoding multiplies the weights as they are, with matmul_forward): a
     * weight matrix w[OC, C] copied once into a layout its few-row products (KV-cached decoding)
     * read faster. matmul_pack_bytes(C, OC) is the copy's size (0: not packed), matmul_pack
     * writes it (device memory the caller allocated), matmul_forward_packed is matmul_forward
     * reading it. A backend sets all three or none (ax_matmul_packs). */
    size_t (*matmul_pack_bytes)(int C, int OC);
    void (*matmul_pack)(ax_ctx *ctx, void *packed, const float *w, int C, int OC);
    void (*matmul_forward_packed)(ax_ctx *ctx, float *out, const float *inp, const void *packed,
                                  int N, int C, int OC);
    int bf16; /* 1 when contexts may compute in AX_PREC_BF16 (ax_ctx_create_prec) */
};

/* The CPU backend (always built). */
const ax_backend *ax_backend_cpu(void);
/* The CUDA backend (lib/backend/cuda/, only in a build with AX_HAVE_CUDA): picks this rank's
 * GPU (local rank modulo the visible devices); fails when no device is found at run time. */
ax_status ax_backend_cuda_open(const ax_backend **out);
/* How this build has the CUDA backend: "plugin" (build/lib/libaxmem_cuda.so, loaded on demand),
 * "linked in" (the emulator), or NULL (built without CUDA). */
const char *ax_backend_cuda_build(void);
/* One line per visible GPU into buf ("0: NAME, N GiB, sm_XY"), loading the plugin: what
 * `axmem version --devices` prints. Fails (naming the plugin) when it cannot be loaded. */
ax_status ax_backend_cuda_describe(char *buf, size_t cap);
/* the plugin's side of it (lib/backend/cuda/backend_cuda.c) */
ax_status ax_cuda_devices_describe(char *buf, size_t cap);
/* Backend by name: "cpu", or "cuda" (fails in a build without CUDA, naming the rebuild flag,
 * and on a machine without a GPU, saying so). */
ax_status ax_backend_select(const char *name, const ax_backend **out);
const char *ax_backend_name(const ax_backend *be);

/* A context on backend be with scratch_bytes of workspace (may be 0; grown by ax_ctx_reserve),
 * computing in fp32. */
ax_status ax_ctx_create(const ax_backend *be, size_t scratch_bytes, ax_ctx **out);
/* As ax_ctx_create, computing in precision p; AX_PREC_BF16 on a backend without it fails
 * naming --precision. */
ax_status ax_ctx_create_prec(const ax_backend *be, ax_precision p, size_t scratch_bytes,
                             ax_ctx **out);
/* --precision: "fp32", "bf16" or "auto" (NULL or "" too) on backend be. auto is bf16 where the
 * backend computes it (cuda) and fp32 elsewhere (cpu); bf16 on the CPU fails ("bf16 needs
 * --device cuda; the CPU backend computes in fp32"). */
ax_status ax_precision_resolve(const ax_backend *be, const char *name, ax_precision *out);
const char *ax_precision_name(ax_precision p);
/* A context from a device spec "DEVICE[:PRECISION]" ("cpu", "cuda", "cuda:fp32", "cuda:bf16",
 * "cpu:auto", ...; NULL is "cpu"): ax_backend_select(DEVICE), then ax_precision_resolve
 * (PRECISION absent = auto) and ax_ctx_create_prec. This is how lib/model opens its context:
 * the --device and --precision flags reach it as one string, so it never interprets them. */
ax_status ax_ctx_open(const char *spec, size_t scratch_bytes, ax_ctx **out);
void ax_ctx_free(ax_ctx *ctx);
/* Makes the scratch arena at least `bytes` large. Call before the ops that need it, never from
 * a kernel (this is where the allocation happens). */
ax_status ax_ctx_reserve(ax_ctx *ctx, size_t bytes);
/* For kernels: the arena's first `bytes` bytes (64-byte aligned). A caller that reserved too
 * little is a bug; the arena then grows here as a safety net, and NULL means out of memory. */
void *ax_ctx_scratch(ax_ctx *ctx, size_t bytes);
/* Ops cannot return an error; a failing op records it. AX_OK, or the first failure of an op
 * on this context (scratch it could not get) or of the backend (a kernel that failed), with a
 * message. The model checks it wherever it checks its collectives (ax_model_status). */
ax_status ax_ctx_status(ax_ctx *ctx);

/* ---- memory through the context's backend ---- */
/* Device memory: 64-byte aligned and zeroed; NULL when out of memory. */
static inline void *ax_dev_alloc(ax_ctx *ctx, size_t bytes) {
    return ctx->be->dev_alloc(bytes);
}
static inline void ax_dev_free(ax_ctx *ctx, void *p) {
    ctx->be->dev_free(p);
}
/* Host memory for handles and tables (zeroed); NULL when out of memory. */
static inline void *ax_host_alloc(ax_ctx *ctx, size_t bytes) {
    return ctx->be->host_alloc(bytes);
}
static inline void ax_host_free(ax_ctx *ctx, void *p) {
    ctx->be->host_free(p);
}
/* dst <- src, `bytes` bytes, in the direction named by kind (ordered on the context's stream) */
static inline void ax_copy(ax_ctx *ctx, void *dst, const void *src, size_t bytes,
                           ax_copy_kind kind) {
    ctx->be->copy(ctx, dst, src, bytes, kind);
}
/* device p[0, bytes) <- 0 */
static inline void ax_zero(ax_ctx *ctx, void *p, size_t bytes) {
    ctx->be->zero(ctx, p, bytes);
}
/* A host view of device memory for one-time host-side work (initialisation, checkpoint
 * layout changes), never in a step: flags AX_MAP_READ (the view starts with the device's
 * contents) and/or AX_MAP_WRITE (ax_unmap writes the view back). The CPU returns dev itself;
 * a device backend stages through host memory. NULL when out of memory. */
enum { AX_MAP_READ = 1, AX_MAP_WRITE = 2 };
static inline void *ax_map(ax_ctx *ctx, void *dev, size_t bytes, int flags) {
    return ctx->be->map(ctx, dev, bytes, flags);
}
static inline void ax_unmap(ax_ctx *ctx, void *dev, void *host, size_t bytes, int flags) {
    ctx->be->unmap(ctx, dev, host, bytes, flags);
}
/* declares (bytes > 0) or withdraws (bytes = 0) a device range holding parameters
 * (params_range above; a no-op on the CPU) */
static inline void ax_params_range(ax_ctx *ctx, const void *p, size_t bytes) {
    if (ctx->be->params_range) ctx->be->params_range(ctx, p, bytes);
}
/* waits until every op issued on the context has finished (a no-op on the CPU) */
static inline void ax_sync(ax_ctx *ctx) {
    ctx->be->sync(ctx);
}
