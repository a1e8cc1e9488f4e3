/* Backend selection and execution contexts (the backend-neutral half of lib/backend). */
#include "lib/backend/backend.h"

#include <string.h>

const char *ax_backend_name(const ax_backend *be) {
    return be->name;
}

ax_status ax_backend_select(const char *name, const ax_backend **out) {
    *out = NULL;
    if (!name || !strcmp(name, "cpu")) {
        *out = ax_backend_cpu();
        return AX_OK;
    }
    if (!strcmp(name, "cuda")) {
#ifdef AX_HAVE_CUDA
        return ax_backend_cuda_open(out);
#else
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "--device cuda: built without CUDA; rebuild with scons cuda=yes");
#endif
    }
    return ax_errorf(AX_ERR_ARG, "--device %s is not a backend; use cpu or cuda", name);
}

ax_status ax_ctx_create(const ax_backend *be, size_t scratch_bytes, ax_ctx **out) {
    *out = NULL;
    ax_ctx *ctx = be->host_alloc(sizeof *ctx);
    if (!ctx) return ax_errorf(AX_ERR_NOMEM, "out of memory creating an execution context");
    ctx->be = be;
    ctx->stream = NULL;
    if (be->ctx_init) {
        ax_status st = be->ctx_init(ctx);
        if (st != AX_OK) {
            be->host_free(ctx);
            return st;
        }
    }
    ax_status st = ax_ctx_reserve(ctx, scratch_bytes);
    if (st != AX_OK) {
        ax_ctx_free(ctx);
        return st;
    }
    *out = ctx;
    return AX_OK;
}

void ax_ctx_free(ax_ctx *ctx) {
    if (!ctx) return;
    if (ctx->scratch.base) ctx->be->dev_free(ctx->scratch.base);
    if (ctx->be->ctx_fini) ctx->be->ctx_fini(ctx);
    ctx->be->host_free(ctx);
}

ax_status ax_ctx_reserve(ax_ctx *ctx, size_t bytes) {
    if (bytes <= ctx->scratch.cap) return AX_OK;
    char *p = ctx->be->dev_alloc(bytes);
    if (!p) return ax_errorf(AX_ERR_NOMEM, "out of memory for %zu bytes of kernel scratch", bytes);
    if (ctx->scratch.base) ctx->be->dev_free(ctx->scratch.base);
    ctx->scratch.base = p;
    ctx->scratch.cap = bytes;
    return AX_OK;
}

void *ax_ctx_scratch(ax_ctx *ctx, size_t bytes) {
    if (bytes > ctx->scratch.cap && ax_ctx_reserve(ctx, bytes) != AX_OK) {
        if (ctx->status == AX_OK) ctx->status = AX_ERR_NOMEM; /* the message is recorded */
        return NULL;
    }
    return ctx->scratch.base;
}

ax_status ax_ctx_status(ax_ctx *ctx) {
    if (ctx->status != AX_OK) return ctx->status;
    return ctx->be->status ? ctx->be->status(ctx) : AX_OK;
}
