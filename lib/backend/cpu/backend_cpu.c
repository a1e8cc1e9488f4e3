/* The CPU backend's table: host memory is device memory, the stream is NULL, and the ops are
 * the kernels of this folder. */
#include "lib/backend/cpu/cpu.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *cpu_dev_alloc(size_t bytes) {
    /* 64-byte aligned for AVX-512 loads; zeroed so padding stays exactly 0. Blocks of 2 MB and
     * more start on a 2 MB boundary and ask for transparent huge pages (where THP is "madvise"
     * only): decoding streams every weight once a step, slower on 4 KB pages */
    size_t huge = (size_t)2 << 20, n = ((bytes ? bytes : 1) + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, n >= huge ? huge : 64, n)) return NULL;
    if (n >= huge) (void)madvise(p, n, MADV_HUGEPAGE); /* a hint: without THP nothing changes */
    memset(p, 0, n);
    return p;
}

static void *cpu_host_alloc(size_t bytes) {
    return calloc(1, bytes ? bytes : 1);
}

static void cpu_free(void *p) {
    free(p);
}

static void cpu_copy(ax_ctx *ctx, void *dst, const void *src, size_t bytes, ax_copy_kind kind) {
    (void)ctx, (void)kind;
    if (bytes && dst != src) memmove(dst, src, bytes);
}

static void cpu_zero(ax_ctx *ctx, void *p, size_t bytes) {
    (void)ctx;
    if (bytes) memset(p, 0, bytes);
}

static void cpu_sync(ax_ctx *ctx) {
    (void)ctx; /* every CPU op has finished when it returns */
}

static void *cpu_map(ax_ctx *ctx, void *dev, size_t bytes, int flags) {
    (void)ctx, (void)bytes, (void)flags;
    return dev; /* host memory is device memory */
}

static void cpu_unmap(ax_ctx *ctx, void *dev, void *host, size_t bytes, int flags) {
    (void)ctx, (void)dev, (void)host, (void)bytes, (void)flags;
}

void ax_cpu_gemm(ax_ctx *ctx, char transa, char transb, long m, long n, long k, float alpha,
                 const float *A, long lda, const float *B, long ldb, float beta, float *C,
                 long ldc) {
    (void)ctx;
    ax_sgemm(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static const ax_backend cpu_backend = {
    .name = "cpu",
    .dev_alloc = cpu_dev_alloc,
    .dev_free = cpu_free,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_free,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .status = ax_cpu_status,
    .map = cpu_map,
    .unmap = cpu_unmap,
#define AX_CPU_ALL(name) .name = ax_cpu_##name,
#define AX_CPU_PACK(name) .name = ax_cpu_##name,
#define AX_CPU_BF16(name) /* fp32 contexts only */
#define AX_OP(ret, name, params, args, group) AX_CPU_##group(name)
#include "lib/backend/ops.def"
};

const ax_backend *ax_backend_cpu(void) {
    return &cpu_backend;
}
