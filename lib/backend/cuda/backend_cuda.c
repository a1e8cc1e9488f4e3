/* The CUDA backend's table: device memory (cudaMalloc), one stream and one cuBLAS handle per
 * execution context, the GPU chosen from the local rank, and the sticky first error. The ops
 * are the kernels of this folder (*.cu) and cuBLAS (gemm.c). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/backend/cuda/cuda.h"
#include "lib/core/log.h"

/* ---- the first failure, process-wide (allocations and launches need not hold a context) ---- */
static int g_failed; /* 0 none, 2 being written, 1 recorded */
static char g_why[512];

void ax_cuda_fail(const char *fmt, ...) {
    char why[sizeof g_why];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ax_log(AX_LOG_ERROR, "cuda: %s", why);
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_failed, &expected, 2, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        memcpy(g_why, why, sizeof why);
        __atomic_store_n(&g_failed, 1, __ATOMIC_RELEASE);
    }
}

static int check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 1;
    ax_cuda_fail("%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
}

/* ---- what may have written device memory (bf16 operand reuse, gemm.c) ---- */
static unsigned long g_generation;

unsigned long ax_cuda_generation(void) {
    return __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE);
}

void ax_cuda_advance(void) {
    __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL);
}

/* ---- profiling (AXMEM_CUDA_PROFILE=1): per-op device time, each op waited for ---- */
#define PROF_ROWS 96
static int g_prof = -1; /* -1 unread, 0 off, 1 on */
static struct {
    const char *op; /* string literals of the ops */
    double s;
    long n;
} g_prof_tab[PROF_ROWS];
static double g_prof_last;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void prof_print(void) {
    double total = 0;
    int n = 0;
    while (n < PROF_ROWS && g_prof_tab[n].op) total += g_prof_tab[n++].s;
    for (int i = 1; i < n; i++) /* by time, largest first (insertion sort: few rows) */
        for (int j = i; j > 0 && g_prof_tab[j].s > g_prof_tab[j - 1].s; j--) {
            __typeof__(g_prof_tab[0]) t = g_prof_tab[j];
            g_prof_tab[j] = g_prof_tab[j - 1], g_prof_tab[j - 1] = t;
        }
    fprintf(stderr,
            "axmem cuda profile (AXMEM_CUDA_PROFILE=1; every op waited for, so each row is its "
            "device time plus launch; host work and copies between ops count to the next op)\n"
            "  %-40s %8s %10s %8s %10s\n",
            "op", "calls", "total s", "share", "ms/call");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %-40s %8ld %10.3f %7.1f%% %10.3f\n", g_prof_tab[i].op, g_prof_tab[i].n,
                g_prof_tab[i].s, total > 0 ? 100 * g_prof_tab[i].s / total : 0,
                1e3 * g_prof_tab[i].s / (double)g_prof_tab[i].n);
    fprintf(stderr, "  %-40s %8s %10.3f\n", "all", "", total);
}

void ax_cuda_prof_mark(const char *op) {
    if (g_prof < 0) {
        const char *e = getenv("AXMEM_CUDA_PROFILE");
        g_prof = e && *e && strcmp(e, "0") != 0;
        if (g_prof) {
            atexit(prof_print);
            g_prof_last = now_s();
        }
    }
    if (!g_prof) return;
    cudaDeviceSynchronize();
    double t = now_s(), dt = t - g_prof_last;
    g_prof_last = t;
    int i = 0;
    while (i < PROF_ROWS && g_prof_tab[i].op && strcmp(g_prof_tab[i].op, op) != 0) i++;
    if (i == PROF_ROWS) return; /* full: dropped */
    g_prof_tab[i].op = op;
    g_prof_tab[i].s += dt;
    g_prof_tab[i].n++;
}

void ax_cuda_launched(const char *op) {
    ax_cuda_prof_mark(op);
    ax_cuda_advance();
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) ax_cuda_fail("kernel launch of %s: %s", op, cudaGetErrorString(e));
}

ax_status ax_cuda_status(ax_ctx *ctx) {
    /* an asynchronous kernel fault shows on the next query of the stream (without waiting) */
    if (ctx && ctx->stream) {
        cudaError_t e = cudaStreamQuery((cudaStream_t)ctx->stream);
        if (e != cudaSuccess && e != cudaErrorNotReady) check(e, "a kernel on the stream");
    }
    if (__atomic_load_n(&g_failed, __ATOMIC_ACQUIRE) != 1) return AX_OK;
    return ax_errorf(AX_ERR_INTERNAL, "CUDA backend: %s", g_why);
}

/* ---- device selection ---- */
static int g_device = -1;

/* this process's index among the ranks on its node (0 when not launched by mpirun or srun) */
static int local_rank(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                          "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

/* ---- memory ---- */
static void *cu_dev_alloc(size_t bytes) {
    size_t n = ((bytes ? bytes : 1) + 63) & ~(size_t)63; /* cudaMalloc aligns to 256 */
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        cudaGetLastError(); /* out of memory is the caller's to report, not a sticky fault */
        return NULL;
    }
    /* zeroed like the CPU's; cudaMemset runs on the legacy default stream, which every
     * context's (blocking) stream waits for, and the wait makes the zeroing visible to all */
    if (!check(cudaMemset(p, 0, n), "cudaMemset of a new allocation") ||
        !check(cudaStreamSynchronize(0), "cudaStreamSynchronize after cudaMemset")) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cu_dev_free(void *p) {
    if (!p) return;
    check(cudaFree(p), "cudaFree");
}

/* Host memory is plain pageable memory: a D2H cudaMemcpyAsync into pageable memory returns
 * only when the copy is done, so the model may read host results right after ax_copy, as on
 * the CPU backend (pinned memory would need an explicit ax_sync first). */
static void *cu_host_alloc(size_t bytes) {
    return calloc(1, bytes ? bytes : 1);
}

static void cu_host_free(void *p) {
    free(p);
}

static void cu_copy(ax_ctx *ctx, void *dst, const void *src, size_t bytes, ax_copy_kind kind) {
    if (!bytes || dst == src) return;
    if (kind != AX_COPY_D2H) ax_cuda_advance(); /* device memory is written */
    enum cudaMemcpyKind k = kind == AX_COPY_H2D   ? cudaMemcpyHostToDevice
                            : kind == AX_COPY_D2H ? cudaMemcpyDeviceToHost
                                                  : cudaMemcpyDeviceToDevice;
    cudaStream_t s = (cudaStream_t)ctx->stream;
    check(cudaMemcpyAsync(dst, src, bytes, k, s), "cudaMemcpyAsync");
    /* D2H into pageable memory has completed on return, but a host source of H2D may be
     * reused by the caller at once: also complete for pageable memory (staged by the driver) */
}

/* device (or managed) memory: what a host-side transport must not read directly */
static int cu_is_device(const void *p) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* an unknown pointer is host memory, not a sticky failure */
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static void cu_zero(ax_ctx *ctx, void *p, size_t bytes) {
    if (!bytes) return;
    ax_cuda_advance();
    check(cudaMemsetAsync(p, 0, bytes, (cudaStream_t)ctx->stream), "cudaMemsetAsync");
}

static void cu_sync(ax_ctx *ctx) {
    check(cudaStreamSynchronize((cudaStream_t)ctx->stream), "cudaStreamSynchronize");
}

void ax_cuda_d2h_sync(ax_ctx *ctx, void *host, const void *dev, size_t bytes) {
    cudaStream_t s = (cudaStream_t)ctx->stream;
    if (check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync D2H"))
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

/* map: a host staging copy (one-time work such as initialisation, never in a step). The view
 * always starts with the device's contents, even for AX_MAP_WRITE alone: a caller that writes
 * part of it then writes back the rest unchanged, as on the CPU where the view is the memory. */
static void *cu_map(ax_ctx *ctx, void *dev, size_t bytes, int flags) {
    (void)flags;
    void *h = malloc(bytes ? bytes : 1);
    if (!h) return NULL;
    cudaStream_t s = (cudaStream_t)ctx->stream;
    if (bytes &&
        (!check(cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, s), "ax_map copy") ||
         !check(cudaStreamSynchronize(s), "ax_map wait"))) {
        free(h);
        return NULL;
    }
    return h;
}

static void cu_unmap(ax_ctx *ctx, void *dev, void *host, size_t bytes, int flags) {
    if (!host) return;
    if ((flags & AX_MAP_WRITE) && bytes) {
        ax_cuda_advance();
        cudaStream_t s = (cudaStream_t)ctx->stream;
        if (check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s), "ax_unmap copy"))
            check(cudaStreamSynchronize(s), "ax_unmap wait"); /* before the staging is freed */
    }
    free(host);
}

/* ---- contexts: a stream and a cuBLAS handle each ---- */
static ax_status cu_ctx_init(ax_ctx *ctx) {
    ax_cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return ax_errorf(AX_ERR_NOMEM, "out of memory creating a CUDA context");
    c->device = g_device < 0 ? 0 : g_device;
    c->bf16 = ctx->precision == AX_PREC_BF16;
    cudaError_t e = cudaSetDevice(c->device);
    cudaStream_t s = NULL;
    /* a blocking stream: it waits for the legacy default stream (cudaMemset of allocations) */
    if (e == cudaSuccess) e = cudaStreamCreate(&s);
    if (e != cudaSuccess) {
        int dev = c->device;
        free(c);
        return ax_errorf(AX_ERR_UNSUPPORTED, "CUDA device %d: cannot create a stream: %s", dev,
                         cudaGetErrorString(e));
    }
    cublasHandle_t h = NULL;
    cublasStatus_t bs = cublasCreate(&h);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(h, s);
    /* fp32 means fp32: no TF32 tensor cores even under NVIDIA_TF32_OVERRIDE, so the GEMMs
     * reproduce the CPU backend to float rounding. bf16 names its types and compute type
     * (cublasGemmEx, CUBLAS_COMPUTE_32F) and wants the tensor cores: the default math. */
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasSetMathMode(h, c->bf16 ? CUBLAS_DEFAULT_MATH : CUBLAS_PEDANTIC_MATH);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        if (h) cublasDestroy(h);
        cudaStreamDestroy(s);
        free(c);
        return ax_errorf(AX_ERR_UNSUPPORTED, "cuBLAS initialisation failed: %s",
                         cublasGetStatusString(bs));
    }
    c->blas = h;
    ctx->stream = s;
    ctx->impl = c;
    AX_DEBUG("cuda: context on device %d, %s GEMMs", c->device, c->bf16 ? "bf16" : "fp32");
    return AX_OK;
}

static void cu_ctx_fini(ax_ctx *ctx) {
    ax_cuda_ctx *c = ctx->impl;
    if (ctx->stream) check(cudaStreamSynchronize((cudaStream_t)ctx->stream), "final stream wait");
    if (c && c->blas) cublasDestroy((cublasHandle_t)c->blas);
    for (int i = 0; c && i < 2; i++)
        if (c->slot[i].buf) check(cudaFree(c->slot[i].buf), "cudaFree of bf16 staging");
    if (ctx->stream) cudaStreamDestroy((cudaStream_t)ctx->stream);
    free(c);
    ctx->impl = NULL;
    ctx->stream = NULL;
}

static const ax_backend cuda_backend = {
    .name = "cuda",
    .dev_alloc = cu_dev_alloc,
    .dev_free = cu_dev_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .copy = cu_copy,
    .zero = cu_zero,
    .sync = cu_sync,
    .status = ax_cuda_status,
    .map = cu_map,
    .unmap = cu_unmap,
    .is_device = cu_is_device,
    .ctx_init = cu_ctx_init,
    .ctx_fini = cu_ctx_fini,
    .attention_scratch = ax_cuda_attention_scratch,
    .bf16 = 1,
#define AX_CUDA_ALL(name) .name = ax_cuda_##name,
#define AX_CUDA_BF16(name) .name = ax_cuda_##name,
#define AX_CUDA_PACK(name) /* decoding multiplies the weights as they are */
#define AX_OP(ret, name, params, args, group) AX_CUDA_##group(name)
#include "lib/backend/ops.def"
};

ax_status ax_backend_cuda_open(const ax_backend **out) {
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        const char *why = e != cudaSuccess ? cudaGetErrorString(e) : "0 devices";
        cudaGetLastError(); /* not a sticky failure of this process: nothing ran */
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "--device cuda: no CUDA device found (cudaGetDeviceCount: %s); "
                         "use --device cpu or run on a machine with an NVIDIA GPU",
                         why);
    }
    if (g_device < 0) {
        /* one rank per GPU: ranks on a node take devices in turn (with CUDA_VISIBLE_DEVICES
         * set per rank, n = 1 and every rank takes its one device) */
        int dev = local_rank() % n;
        e = cudaSetDevice(dev);
        if (e != cudaSuccess)
            return ax_errorf(AX_ERR_UNSUPPORTED, "--device cuda: cudaSetDevice(%d): %s", dev,
                             cudaGetErrorString(e));
        g_device = dev;
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
            AX_DEBUG("cuda: device %d of %d: %s, sm_%d%d, %.1f GiB", dev, n, prop.name, prop.major,
                     prop.minor, (double)prop.totalGlobalMem / (1 << 30));
    }
    *out = &cuda_backend;
    return AX_OK;
}

ax_status ax_cuda_devices_describe(char *buf, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ax_errorf(AX_ERR_UNSUPPORTED, "no CUDA device found (cudaGetDeviceCount: %s)",
                         cudaGetErrorString(e));
    }
    size_t len = 0;
    if (cap) buf[0] = '\0';
    if (n == 0 && cap) snprintf(buf, cap, "no CUDA device visible\n");
    for (int d = 0; d < n && len < cap; d++) {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
            cudaGetLastError();
            len += (size_t)snprintf(buf + len, cap - len, "%d: (properties unavailable)\n", d);
            continue;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%d: %s, %.0f GiB, sm_%d%d\n", d, prop.name,
                                (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
                                prop.major, prop.minor);
    }
    return AX_OK;
}
