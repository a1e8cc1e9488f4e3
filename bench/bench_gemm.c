/* GEMM rate of ax_sgemm on the shapes of one GPT-2-124M-sized training step (N = 256 token
 * rows, C = 768, Llama-style SwiGLU with F = 2048, V = 50257), as a ratio to a large square GEMM
 * measured in the same run, at the current OMP_NUM_THREADS.
 * Usage: bench_gemm [reps]  (default 5; median of reps after a warm-up) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/backend/cpu/cpu.h"
#include "bench/support/perf.h"
#include "lib/core/timer.h"

typedef struct {
    const char *name;
    char ta, tb;
    long m, n, k;
} shape;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GFLOP/s of ax_sgemm(ta, tb) with packed operands (ld = row length) */
static double rate(const shape *s, int reps) {
    long ra = s->ta == 'N' ? s->m : s->k, ca = s->ta == 'N' ? s->k : s->m;
    long rb = s->tb == 'N' ? s->k : s->n, cb = s->tb == 'N' ? s->n : s->k;
    float *A = malloc(sizeof(float) * ra * ca), *B = malloc(sizeof(float) * rb * cb);
    float *C = calloc((size_t)s->m * s->n, sizeof(float));
    double *t = malloc(sizeof(double) * reps);
    if (!A || !B || !C || !t) {
        fprintf(stderr, "bench_gemm: out of memory for %s\n", s->name);
        exit(1);
    }
    for (long i = 0; i < ra * ca; i++) A[i] = (float)(i % 17 - 8) * 0.01f;
    for (long i = 0; i < rb * cb; i++) B[i] = (float)(i % 13 - 6) * 0.01f;
    /* backward GEMMs accumulate (beta = 1), forward ones overwrite: time what the model runs */
    float beta = s->ta == 'T' || s->tb == 'N' ? 1.0f : 0.0f;
    ax_sgemm(s->ta, s->tb, s->m, s->n, s->k, 1.0f, A, ca, B, cb, beta, C, s->n);
    for (int r = 0; r < reps; r++) {
        double t0 = ax_now();
        ax_sgemm(s->ta, s->tb, s->m, s->n, s->k, 1.0f, A, ca, B, cb, beta, C, s->n);
        t[r] = ax_now() - t0;
    }
    qsort(t, reps, sizeof(double), cmp_double);
    double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    free(A), free(B), free(C), free(t);
    return 2.0 * s->m * s->n * s->k / med / 1e9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) {
        fprintf(stderr, "usage: bench_gemm [reps >= 1]\n");
        return 2;
    }
    const long N = 256, C = 768, F = 2048, V = 50257;
    /* linear out = inp W^T: forward (N,T) m=N n=OC k=IC; dinp += dout W (N,N) m=N n=IC k=OC;
     * dW += dout^T inp (T,N) m=OC n=IC k=N */
    const struct {
        const char *name;
        long ic, oc;
    } lin[] = {{"qkv", C, 3 * C},
               {"attn_out", C, C},
               {"mlp_up", C, 2 * F},
               {"mlp_down", F, C},
               {"lm_head", C, V}};
    shape sh[15];
    int ns = 0;
    for (int i = 0; i < 5; i++) {
        sh[ns++] = (shape){lin[i].name, 'N', 'T', N, lin[i].oc, lin[i].ic};
        sh[ns++] = (shape){lin[i].name, 'N', 'N', N, lin[i].ic, lin[i].oc};
        sh[ns++] = (shape){lin[i].name, 'T', 'N', lin[i].oc, lin[i].ic, N};
    }
    int nt = omp_get_max_threads();
    double ceil = ax_perf_sgemm_gflops(2048, 2048, 2048, reps);
    printf("bench_gemm: threads=%d ceiling (2048^3 NT) %.1f GFLOP/s = %.1f per thread\n", nt, ceil,
           ceil / nt);
    const char *pass[3] = {"fwd     ", "bwd dinp", "bwd dw  "};
    double flops = 0, secs = 0;
    for (int i = 0; i < ns; i++) {
        double g = rate(&sh[i], reps), f = 2.0 * sh[i].m * sh[i].n * sh[i].k;
        flops += f, secs += f / (g * 1e9);
        printf("gemm %-8s %s %c%c m=%-5ld n=%-5ld k=%-5ld %7.1f GFLOP/s  %.2f x ceiling\n",
               sh[i].name, pass[i % 3], sh[i].ta, sh[i].tb, sh[i].m, sh[i].n, sh[i].k, g, g / ceil);
    }
    printf("gemm step total (one layer + lm head): %.2f GFLOP in %.1f ms = %.1f GFLOP/s  %.2f x "
           "ceiling\n",
           flops / 1e9, secs * 1e3, flops / secs / 1e9, flops / secs / 1e9 / ceil);
    printf("memcpy ceiling: %.1f GB/s (read + write, 256 MiB)\n",
           ax_perf_memcpy_gbps((size_t)256 << 20, reps));
    return 0;
}
