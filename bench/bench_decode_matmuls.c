/* The matmuls of one KV-cached decoding step alone: a GPT-2-124M-shaped model's 12 layers x
 * {qkv 768 -> 2304, out 768 -> 768, SwiGLU up 768 -> 4096, down 2048 -> 768} and the LM head
 * 768 -> 50257, every weight distinct (streamed from memory, as in decoding), times N rows.
 * Times the packed kernel (gemv_packed.c, what decoding uses) and the row-major one (gemv.c,
 * what matmul_forward runs on unpacked weights) alternately, medians of `reps` steps each, and
 * prints each as GFLOP/s and as a ratio to the 2048^3 sgemm rate measured before and after (the
 * higher). bench_decode times the whole step; this isolates the part that is ~80% of it at N = 32.
 * At small N the step is bound by the weights' read, not the FLOPs: compare its GB/s of weights
 * with the read ceiling bench_decode prints. Usage: bench_decode_matmuls [N=32] [reps=9]   (threads
 * from OMP_NUM_THREADS) */
#include "lib/backend/cpu/cpu.h"
#include "bench/support/perf.h"
#include "lib/core/timer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { LAYERS = 12, KINDS = 4, MATS = LAYERS * KINDS + 1 };
static const int SHAPE[KINDS + 1][2] = {
    {768, 2304}, {768, 768}, {768, 4096}, {2048, 768}, {768, 50257}};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 2 MB aligned, on transparent huge pages where they are offered, as the backend allocates */
static void *huge_alloc(size_t bytes) {
    size_t huge = (size_t)2 << 20, n = (bytes + huge - 1) / huge * huge;
    void *p = NULL;
    if (posix_memalign(&p, huge, n)) return NULL;
    (void)madvise(p, n, MADV_HUGEPAGE);
    memset(p, 0, n);
    return p;
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 32, reps = argc > 2 ? atoi(argv[2]) : 9;
    if (N < 1 || N > 4096 || reps < 1) {
        fprintf(stderr, "usage: bench_decode_matmuls [N=32 rows, 1..4096] [reps=9]\n");
        return 2;
    }
    int C[MATS], OC[MATS];
    float *w[MATS];
    void *pk[MATS];
    double flops = 0, bytes = 0;
    for (int i = 0; i < MATS; i++) {
        const int *s = i == MATS - 1 ? SHAPE[KINDS] : SHAPE[i % KINDS];
        C[i] = s[0], OC[i] = s[1];
        size_t n = (size_t)C[i] * OC[i];
        w[i] = huge_alloc(n * sizeof(float));
        pk[i] = huge_alloc(ax_cpu_matmul_pack_bytes(NULL, C[i], OC[i]));
        if (!w[i] || !pk[i]) {
            fprintf(stderr, "bench_decode_matmuls: out of memory\n");
            return 1;
        }
        for (size_t j = 0; j < n; j++) w[i][j] = (float)((j * 2654435761u) % 1000) * 1e-3f - 0.5f;
        ax_cpu_matmul_pack(NULL, pk[i], w[i], C[i], OC[i]);
        flops += 2.0 * N * (double)n, bytes += 4.0 * (double)n;
    }
    float *x = malloc(sizeof(float) * (size_t)N * 4096),
          *out = malloc(sizeof(float) * (size_t)N * 50257);
    double *t[2] = {malloc(sizeof(double) * reps), malloc(sizeof(double) * reps)};
    if (!x || !out || !t[0] || !t[1]) return 1;
    for (long j = 0; j < (long)N * 4096; j++) x[j] = (float)(j % 97) * 0.01f - 0.48f;
    double ceil0 = ax_perf_sgemm_gflops(2048, 2048, 2048, 3);
    for (int r = -1; r < reps; r++) /* r = -1: a warm-up step of each */
        for (int packed = 1; packed >= 0; packed--) {
            double t0 = ax_now();
            for (int i = 0; i < MATS; i++) {
                if (packed)
                    ax_cpu_matmul_forward_packed(NULL, out, x, pk[i], N, C[i], OC[i]);
                else
                    ax_cpu_matmul_forward(NULL, out, x, w[i], N, C[i], OC[i]);
            }
            if (r >= 0) t[packed][r] = ax_now() - t0;
        }
    double ceil1 = ax_perf_sgemm_gflops(2048, 2048, 2048, 3), ceil = ceil0 > ceil1 ? ceil0 : ceil1;
    printf("bench_decode_matmuls: GPT-2-124M-shaped step, %d matmuls (%.0f MB of weights), N = %d, "
           "%d threads, medians of %d\n",
           MATS, bytes / 1e6, N, omp_get_max_threads(), reps);
    printf("  ceiling: 2048^3 sgemm %.0f / %.0f GFLOP/s before / after (the higher is used)\n",
           ceil0, ceil1);
    const char *name[2] = {"row-major (gemv.c)", "packed (gemv_packed.c)"};
    for (int packed = 1; packed >= 0; packed--) {
        qsort(t[packed], reps, sizeof(double), cmp_double);
        double med = t[packed][reps / 2];
        printf("  %-24s %7.1f ms (min %.1f, max %.1f)  %6.1f GFLOP/s  %5.1f GB/s of weights  "
               "ratio to ceiling %.3f\n",
               name[packed], med * 1e3, t[packed][0] * 1e3, t[packed][reps - 1] * 1e3,
               flops / med * 1e-9, bytes / med * 1e-9, flops / med * 1e-9 / ceil);
    }
    if (N <= 4)
        printf(
            "  (N = %d is bound by reading the weights: compare the GB/s with bench_decode's read "
            "ceiling, not the FLOP ratio)\n",
            N);
    for (int i = 0; i < MATS; i++) free(w[i]), free(pk[i]);
    free(x), free(out), free(t[0]), free(t[1]);
    return 0;
}
