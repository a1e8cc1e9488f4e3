/* Data movement of KV-cached decoding: cache append, strided row copies and the greedy choice
 * over a vocabulary slice. Host loops before the backend boundary; ops now, so a device
 * backend runs them next to the data. */
#include "lib/backend/cpu/cpu.h"

#include <math.h>
#include <string.h>

void ax_cpu_kv_append(ax_ctx *ctx, float *kc, float *vc, const float *k, const float *v, long ld,
                      int B, int H, int D, int Tmax, int pos) {
    (void)ctx;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long dst = (((long)b * H + h) * Tmax + pos) * D;
            memcpy(kc + dst, k + (long)b * ld + (long)h * D, sizeof(float) * D);
            memcpy(vc + dst, v + (long)b * ld + (long)h * D, sizeof(float) * D);
        }
}

void ax_cpu_copy_rows(ax_ctx *ctx, float *dst, long ld_dst, const float *src, long ld_src,
                      long rows, long cols) {
    (void)ctx;
    if (cols <= 0) return;
    for (long r = 0; r < rows; r++)
        memcpy(dst + r * ld_dst, src + r * ld_src, sizeof(float) * (size_t)cols);
}

void ax_cpu_argmax_rows(ax_ctx *ctx, double *best, const float *x, int B, int Vl, int valid,
                        int v0) {
    (void)ctx;
    for (int b = 0; b < B; b++) {
        const float *row = x + (long)b * Vl;
        int arg = 0;
        for (int j = 1; j < valid; j++)
            if (row[j] > row[arg]) arg = j;
        best[2 * b] = valid > 0 ? row[arg] : -INFINITY;
        best[2 * b + 1] = -(double)(v0 + arg);
    }
}
