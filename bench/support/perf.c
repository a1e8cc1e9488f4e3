#include "bench/support/perf.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/cpu/cpu.h"
#include "lib/core/timer.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static float *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64; /* aligned_alloc wants a multiple */
    return aligned_alloc(64, bytes ? bytes : 64);
}

double ax_perf_sgemm_gflops(long m, long n, long k, int reps) {
    if (reps < 1) reps = 1;
    float *A = alloc_floats((size_t)m * k), *B = alloc_floats((size_t)n * k);
    float *C = alloc_floats((size_t)m * n);
    double *t = malloc(sizeof(double) * reps), res = 0.0;
    if (!A || !B || !C || !t) goto done;
    /* small well-scaled values: no denormals or overflow to slow anything down */
    for (long i = 0; i < m * k; i++) A[i] = (float)((i * 7 % 13) - 6) * 0.01f;
    for (long i = 0; i < n * k; i++) B[i] = (float)((i * 5 % 11) - 5) * 0.01f;
    memset(C, 0, sizeof(float) * m * n);
    ax_sgemm('N', 'T', m, n, k, 1.0f, A, k, B, k, 0.0f, C, n); /* warm-up: JIT, page faults */
    for (int r = 0; r < reps; r++) {
        double t0 = ax_now();
        ax_sgemm('N', 'T', m, n, k, 1.0f, A, k, B, k, 0.0f, C, n);
        t[r] = ax_now() - t0;
    }
    res = 2.0 * m * n * k / median(t, reps) / 1e9;
done:
    free(A);
    free(B);
    free(C);
    free(t);
    return res;
}

struct ax_perf_gemm_probe {
    long n;
    float *A, *B, *C;
};

ax_perf_gemm_probe *ax_perf_gemm_probe_new(long n) {
    ax_perf_gemm_probe *p = calloc(1, sizeof *p);
    if (!p || n < 1) {
        free(p);
        return NULL;
    }
    p->n = n;
    p->A = alloc_floats((size_t)(n * n)), p->B = alloc_floats((size_t)(n * n));
    p->C = alloc_floats((size_t)(n * n));
    if (!p->A || !p->B || !p->C) {
        ax_perf_gemm_probe_free(p);
        return NULL;
    }
    for (long i = 0; i < n * n; i++) { /* the values of ax_perf_sgemm_gflops */
        p->A[i] = (float)((i * 7 % 13) - 6) * 0.01f;
        p->B[i] = (float)((i * 5 % 11) - 5) * 0.01f;
    }
    memset(p->C, 0, sizeof(float) * (size_t)(n * n));
    ax_perf_gemm_probe_read(p); /* warm-up: JIT, page faults */
    return p;
}

double ax_perf_gemm_probe_read(ax_perf_gemm_probe *p) {
    long n = p->n;
    double t0 = ax_now();
    ax_sgemm('N', 'T', n, n, n, 1.0f, p->A, n, p->B, n, 0.0f, p->C, n);
    return 2.0 * n * n * n / (ax_now() - t0) / 1e9;
}

void ax_perf_gemm_probe_free(ax_perf_gemm_probe *p) {
    if (!p) return;
    free(p->A), free(p->B), free(p->C), free(p);
}

static void par_copy(char *dst, const char *src, size_t bytes) {
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        size_t per = (bytes / nt + 63) / 64 * 64, lo = per * id, hi = lo + per;
        if (lo > bytes) lo = bytes;
        if (hi > bytes) hi = bytes;
        if (hi > lo) memcpy(dst + lo, src + lo, hi - lo);
    }
}

double ax_perf_memcpy_gbps(size_t bytes, int reps) {
    if (reps < 1) reps = 1;
    char *src = malloc(bytes ? bytes : 1), *dst = malloc(bytes ? bytes : 1);
    double *t = malloc(sizeof(double) * reps), res = 0.0;
    if (!src || !dst || !t || !bytes) goto done;
    memset(src, 1, bytes);
    par_copy(dst, src, bytes); /* warm-up: faults in dst's pages */
    for (int r = 0; r < reps; r++) {
        double t0 = ax_now();
        par_copy(dst, src, bytes);
        t[r] = ax_now() - t0;
    }
    res = 2.0 * (double)bytes / median(t, reps) / 1e9;
done:
    free(src);
    free(dst);
    free(t);
    return res;
}
