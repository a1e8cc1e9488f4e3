/* Backend selection and execution contexts (the backend-neutral half of lib/backend). */
#include "lib/backend/backend.h"
#include "lib/core/plugin.h"

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
#if defined(AX_HAVE_CUDA) /* linked in (the emulator's build, tests/cuda/emu/run.sh) */
        return ax_backend_cuda_open(out);
#elif defined(AX_CUDA_PLUGIN) /* the release build: from libaxmem_cuda.so, loaded now */
        void *open_fn = NULL;
        AX_CHECK(
            ax_cuda_plugin_sym("--device cuda", "--device cpu", "ax_backend_cuda_open", &open_fn));
        ax_status (*open_cuda)(const ax_backend **) = (ax_status(*)(const ax_backend **))open_fn;
        return open_cuda(out);
#else
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "--device cuda: built without CUDA; rebuild with scons cuda=yes");
#endif
    }
    return ax_errorf(AX_ERR_ARG, "--device %s is not a backend; use cpu or cuda", name);
}

const char *ax_backend_cuda_build(void) {
#if defined(AX_HAVE_CUDA)
    return "linked in";
#elif defined(AX_CUDA_PLUGIN)
    return "plugin";
#else
    return NULL;
#endif
}

ax_status ax_backend_cuda_describe(char *buf, size_t cap) {
    if (cap) buf[0] = '\0';
#if defined(AX_HAVE_CUDA)
    return ax_cuda_devices_describe(buf, cap);
#elif defined(AX_CUDA_PLUGIN)
    void *fn = NULL;
    AX_CHECK(ax_cuda_plugin_sym("axmem version --devices", "a build with CUDA",
                                "ax_cuda_devices_describe", &fn));
    return ((ax_status(*)(char *, size_t))fn)(buf, cap);
#else
    return ax_errorf(AX_ERR_UNSUPPORTED, "built without CUDA; rebuild with scons cuda=yes");
#endif
}

const char *ax_precision_name(ax_precision p) {
    return p == AX_PREC_BF16 ? "bf16" : "fp32";
}

ax_status ax_precision_resolve(const ax_backend *be, const char *name, ax_precision *out) {
    *out = AX_PREC_FP32;
    if (!name || !*name || !strcmp(name, "auto")) {
        *out = be->bf16 ? AX_PREC_BF16 : AX_PREC_FP32;
        return AX_OK;
    }
    if (!strcmp(name, "fp32")) return AX_OK;
    if (!strcmp(name, "bf16")) {
        if (!be->bf16)
            return ax_errorf(AX_ERR_UNSUPPORTED,
                             "--precision bf16 needs --device cuda; the %s backend computes in "
                             "fp32 (use --precision fp32 or auto)",
                             !strcmp(be->name, "cpu") ? "CPU" : be->name);
        *out = AX_PREC_BF16;
        return AX_OK;
    }
    return ax_errorf(AX_ERR_ARG, "--precision %s is not a precision; use auto, fp32 or bf16", name);
}

ax_status ax_ctx_open(const char *spec, size_t scratch_bytes, ax_ctx **out) {
    *out = NULL;
    char dev[64] = "cpu";
    const char *prec = NULL;
    if (spec) {
        const char *colon = strchr(spec, ':');
        size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
        if (n >= sizeof dev)
            return ax_errorf(AX_ERR_ARG, "--device %.64s is not a backend; use cpu or cuda", spec);
        memcpy(dev, spec, n);
        dev[n] = '\0';
        if (colon) prec = colon + 1;
    }
    const ax_backend *be = NULL;
    AX_CHECK(ax_backend_select(dev, &be));
    ax_precision p;
    AX_CHECK(ax_precision_resolve(be, prec, &p));
    return ax_ctx_create_prec(be, p, scratch_bytes, out);
}

ax_status ax_ctx_create(const ax_backend *be, size_t scratch_bytes, ax_ctx **out) {
    return ax_ctx_create_prec(be, AX_PREC_FP32, scratch_bytes, out);
}

ax_status ax_ctx_create_prec(const ax_backend *be, ax_precision p, size_t scratch_bytes,
                             ax_ctx **out) {
    *out = NULL;
    if (p == AX_PREC_BF16 && !be->bf16)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "--precision bf16 needs --device cuda; the %s backend computes in fp32",
                         !strcmp(be->name, "cpu") ? "CPU" : be->name);
    ax_ctx *ctx = be->host_alloc(sizeof *ctx);
    if (!ctx) return ax_errorf(AX_ERR_NOMEM, "out of memory creating an execution context");
    ctx->be = be;
    ctx->stream = NULL;
    ctx->precision = p;
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
