/* The backend interface: what the model layer may do to memory and compute.
 *
 * A backend is a table of functions: memory (allocate, free, copy between host and device,
 * zero, synchronise) and every op of lib/backend/ops.def. An execution context (ax_ctx) binds a
 * backend to a stream (NULL on the CPU) and a scratch arena, and every op takes it as its first
 * argument. Kernels never allocate: a kernel that needs workspace takes it from the context's
 * arena, which the caller sizes once (ax_ctx_reserve) outside the hot path.
 *
 * The CPU backend (lib/backend/cpu/) is the specification every other backend is tested
 * against; the CUDA backend (lib/backend/cuda/) adds device memory, cuBLAS and a stream. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"

typedef struct ax_backend ax_backend;

/* The arithmetic of a context's GEMMs (--precision). fp32: fp32 everywhere (the CPU backend's
 * and the specification). bf16: the GEMMs' operands are rounded to bf16 (round to nearest
 * even) and multiplied with fp32 accumulation and fp32 output. Parameters (fp32 masters),
 * gradients, optimizer state and every other op stay fp32; the weights the GEMMs read come
 * from a bf16 copy the model keeps beside the masters, and the activations only GEMMs read are
 * stored in bf16 by the ops that write them (ops.def group BF16): the same values the GEMMs
 * would have rounded them to. Only a backend that sets `bf16` in its table computes it
 * (CUDA). */
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

/* The function table: memory, context hooks, then the ops of ops.def (the context first). */
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
    /* optional (NULL on the CPU): per-context setup after ax_ctx_create has set ctx->be (a
     * device backend creates its stream and library handles here) and teardown before
     * ax_ctx_free releases the context */
    ax_status (*ctx_init)(ax_ctx *ctx);
    void (*ctx_fini)(ax_ctx *ctx);
    /* optional (NULL: ax_attention_scratch_bytes, the CPU's tiles): arena bytes that
     * attention_forward/backward take for B sequences of T tokens and H local heads of D */
    size_t (*attention_scratch)(int B, int T, int H, int D, int nthreads);
    /* the ops (lib/backend/ops.def; dispatched by lib/backend/ops.h): a backend sets those of
     * group ALL, and those of BF16 when it sets `bf16`; PACK all three or none */
#define AX_OP(ret, name, params, args, group) ret(*name) params;
#include "lib/backend/ops.def"
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
/* waits until every op issued on the context has finished (a no-op on the CPU) */
static inline void ax_sync(ax_ctx *ctx) {
    ctx->be->sync(ctx);
}
