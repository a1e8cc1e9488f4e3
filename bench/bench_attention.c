/* The CUDA attention op alone on a bf16 context: the product's path (query blocks on cuBLAS,
 * lib/backend/cuda/ops_attention.cu) against the fused bf16 flash kernels (ops_flash.cu,
 * selected only here and in tests/cuda/cuda_ops_check), forward and backward at the ~1B model's
 * shape by default, medians of `reps`, and the largest difference between their outputs
 * relative to the largest output. Flash becomes the product's path only once this shows it
 * faster on a GPU.
 * Usage: bench_attention [reps=5] [B=4] [T=2048] [H=16] [D=128]
 * Exit 77 with "SKIP: ..." where there is no CUDA device. */
#include "lib/backend/ops.h"
#include "lib/core/plugin.h"
#include "lib/core/timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*attention_set_fn)(int flash, int block_rows);
#ifdef AX_HAVE_CUDA
void ax_cuda_attention_set(int flash, int block_rows);
static attention_set_fn attention_set(void) {
    return ax_cuda_attention_set;
}
#else
static attention_set_fn attention_set(void) {
    void *f = NULL;
    if (ax_cuda_plugin_sym("bench_attention", "a build with CUDA", "ax_cuda_attention_set", &f) !=
        AX_OK)
        return NULL;
    return (attention_set_fn)f;
}
#endif

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *dev_rand(ax_ctx *ctx, size_t n, float scale, unsigned seed) {
    float *h = malloc(sizeof(float) * n), *d = ax_dev_alloc(ctx, sizeof(float) * n);
    if (!h || !d) {
        fprintf(stderr, "bench_attention: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = scale * ((float)(seed >> 8) / 8388608.0f - 1.0f);
    }
    ax_copy(ctx, d, h, sizeof(float) * n, AX_COPY_H2D);
    free(h);
    return d;
}

/* max |a - b| / max |a| over n floats of device memory */
static double rel_diff(ax_ctx *ctx, const float *a, const float *b, size_t n) {
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    ax_copy(ctx, x, a, sizeof(float) * n, AX_COPY_D2H);
    ax_copy(ctx, y, b, sizeof(float) * n, AX_COPY_D2H);
    double mx = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)x[i]));
        diff = fmax(diff, fabs((double)x[i] - (double)y[i]));
    }
    free(x), free(y);
    return mx > 0 ? diff / mx : diff;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5, B = argc > 2 ? atoi(argv[2]) : 4;
    int T = argc > 3 ? atoi(argv[3]) : 2048, H = argc > 4 ? atoi(argv[4]) : 16;
    int D = argc > 5 ? atoi(argv[5]) : 128;
    if (reps < 1 || B < 1 || T < 1 || H < 1 || D < 1) {
        fprintf(stderr, "usage: bench_attention [reps>=1] [B] [T] [H] [D]\n");
        return 2;
    }
    const ax_backend *be = NULL;
    ax_ctx *ctx = NULL;
    attention_set_fn set = NULL;
    if (ax_backend_select("cuda", &be) != AX_OK || !(set = attention_set()) ||
        ax_ctx_create_prec(be, AX_PREC_BF16, 0, &ctx) != AX_OK) {
        printf("SKIP: no CUDA device: %s\n", ax_error_msg());
        return 77;
    }
    int C = H * D;
    size_t n3 = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nr = (size_t)B * H * T;
    if (ax_ctx_reserve(ctx, ax_attention_workspace(ctx, B, T, H, D, 1)) != AX_OK) {
        fprintf(stderr, "bench_attention: %s\n", ax_error_msg());
        return 1;
    }
    float *qkv = dev_rand(ctx, n3, 1.0f, 1), *dout = dev_rand(ctx, no, 1.0f, 2);
    float *out[2], *dqkv[2], *att = ax_dev_alloc(ctx, sizeof(float) * nr);
    float *scratch = ax_dev_alloc(ctx, sizeof(float) * nr);
    for (int f = 0; f < 2; f++) {
        out[f] = ax_dev_alloc(ctx, sizeof(float) * no);
        dqkv[f] = ax_dev_alloc(ctx, sizeof(float) * n3);
    }
    double *tf = malloc(sizeof(double) * reps), *tb = malloc(sizeof(double) * reps);
    if (!att || !scratch || !out[0] || !out[1] || !dqkv[0] || !dqkv[1] || !tf || !tb) {
        fprintf(stderr, "bench_attention: out of memory\n");
        return 1;
    }
    /* causal attention FLOPs: QK^T and PV forward, twice as many backward, half the square */
    double flops = 4.0 * B * H * (double)T * T * D / 2;
    printf("bench_attention: bf16 context, B=%d T=%d H=%d D=%d, medians of %d\n", B, T, H, D, reps);
    static const char *names[2] = {"blocks on cuBLAS (the product's)", "flash (ops_flash.cu)"};
    for (int f = 0; f < 2; f++) {
        set(f, 0);
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            ax_zero(ctx, dqkv[f], sizeof(float) * n3);
            ax_sync(ctx);
            double t0 = ax_now();
            ax_attention_forward_gqa(ctx, out[f], att, qkv, B, T, C, H, H);
            ax_sync(ctx);
            double t1 = ax_now();
            ax_attention_backward_gqa(ctx, dqkv[f], scratch, dout, qkv, att, out[f], B, T, C, H, H);
            ax_sync(ctx);
            if (r >= 0) tf[r] = t1 - t0, tb[r] = ax_now() - t1;
        }
        qsort(tf, (size_t)reps, sizeof *tf, cmp_double);
        qsort(tb, (size_t)reps, sizeof *tb, cmp_double);
        double mf = tf[reps / 2], mb = tb[reps / 2];
        printf("  %-34s forward %8.3f ms (%6.1f TFLOP/s)  backward %8.3f ms (%6.1f TFLOP/s)\n",
               names[f], 1e3 * mf, flops / mf / 1e12, 1e3 * mb, 2 * flops / mb / 1e12);
    }
    set(0, 0);
    printf("  flash vs blocks: out differs by %.2e, dqkv by %.2e (relative to the largest)\n",
           rel_diff(ctx, out[0], out[1], no), rel_diff(ctx, dqkv[0], dqkv[1], n3));
    ax_status st = ax_ctx_status(ctx);
    if (st != AX_OK) fprintf(stderr, "bench_attention: %s\n", ax_error_msg());
    ax_dev_free(ctx, qkv), ax_dev_free(ctx, dout), ax_dev_free(ctx, att);
    ax_dev_free(ctx, scratch);
    for (int f = 0; f < 2; f++) ax_dev_free(ctx, out[f]), ax_dev_free(ctx, dqkv[f]);
    ax_ctx_free(ctx);
    free(tf), free(tb);
    return st == AX_OK ? 0 : 1;
}
