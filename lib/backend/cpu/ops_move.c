/* Data movement of KV-cached decoding: cache append, strided row copies and the greedy choice
 * over a vocabulary slice; and the bf16 wire conversions of reduced gradients: ops, so a device
 * backend runs them next to the data. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <omp.h>
#include <string.h>

void ax_cpu_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                      int B, int H, int D, int Tmax, int pos) {
    (void)ctx;
    /* every (sequence, head) row of K and of V starts lines of its own, each a write miss: the
     * 768 rows of 256 bytes a layer at B = 32 took 77 us on one thread (2% of a decoding step),
     * so both threads take rows once there are enough to share */
    long rows = (long)B * H;
#pragma omp parallel for schedule(static) if (rows >= 64)
    for (long bh = 0; bh < rows; bh++) {
        long b = bh / H, h = bh % H, dst = (bh * Tmax + pos) * D;
        memcpy(kc + dst, k + b * ld + h * D, sizeof(float) * D);
        memcpy(vc + dst, v + b * ld + h * D, sizeof(float) * D);
    }
}

void ax_cpu_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                      long rows, long cols) {
    (void)ctx;
    if (cols <= 0) return;
    for (long r = 0; r < rows; r++)
        memcpy(dst + r * ld_dst, src + r * ld_src, sizeof(float) * (size_t)cols);
}

/* Branch-free, so it vectorises: the gradient slab's 124M elements (GPT-2-124M) each way
 * around every bf16 all-reduce (--grad-comm bf16) */
void ax_cpu_to_bf16(ax_ctx *ctx, uint16_t *dst, const float *src, long n) {
    (void)ctx;
#pragma omp parallel for simd schedule(static) if (n >= 65536 && !omp_in_parallel())
    for (long i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, 4);
        uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u;
        uint32_t even = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)(nan ? (u >> 16) | 0x40u : even);
    }
}

void ax_cpu_from_bf16(ax_ctx *ctx, float *dst, const uint16_t *src, long n) {
    (void)ctx;
#pragma omp parallel for simd schedule(static) if (n >= 65536 && !omp_in_parallel())
    for (long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(dst + i, &u, 4);
    }
}

/* the first j in [0, n) with row[j] > row[arg] for every earlier arg (the first maximum; a NaN
 * never wins, nor is beaten when it is row[0]): blocks of 16 are tested at once against the
 * best so far and scanned in order only when one beats it, so the result is the scalar scan's */
enum { ARGMAX_BLOCK = 16 };
static int argmax_first(const float *row, int n) {
    int arg = 0, j = 1;
    for (; j < n && j % ARGMAX_BLOCK; j++)
        if (row[j] > row[arg]) arg = j;
    for (; j + ARGMAX_BLOCK <= n; j += ARGMAX_BLOCK) {
        float bv = row[arg];
        int any = 0;
#pragma omp simd reduction(| : any)
        for (int t = 0; t < ARGMAX_BLOCK; t++) any |= row[j + t] > bv;
        if (any)
            for (int t = 0; t < ARGMAX_BLOCK; t++)
                if (row[j + t] > row[arg]) arg = j + t;
    }
    for (; j < n; j++)
        if (row[j] > row[arg]) arg = j;
    return arg;
}

void ax_cpu_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                        int v0) {
    (void)ctx;
    /* a row each: a whole vocabulary's logits are too long for one thread while the others wait */
#pragma omp parallel for if (B > 1 && (long)B * valid >= 65536 && !omp_in_parallel())
    for (int b = 0; b < B; b++) {
        const float *row = x + (long)b * Vl;
        int arg = valid > 0 ? argmax_first(row, valid) : 0;
        best[2 * b] = valid > 0 ? row[arg] : -INFINITY;
        best[2 * b + 1] = -(double)(v0 + arg);
    }
}
