/* Ceilings measured in the same run, for benchmarks to divide by. */
#pragma once
#include <stddef.h>

/* GFLOP/s of ax_sgemm('N', 'T') on C[m,n] = A[m,k] B[n,k]^T (2mnk flops), median of reps timed
 * calls after one warm-up call, at the current OpenMP thread count. 0 on allocation failure. */
double ax_perf_sgemm_gflops(long m, long n, long k, int reps);

/* The same n^3 GEMM kept allocated and warm, so a benchmark can read the ceiling between its
 * steps: on a shared machine the rate moves by the second (a 2048^3 reading went from 150 to
 * 312 GFLOP/s within one session), and a step is best divided by a reading taken beside it.
 * ax_perf_gemm_probe_new: NULL on allocation failure; _read: GFLOP/s of one timed call. */
typedef struct ax_perf_gemm_probe ax_perf_gemm_probe;
ax_perf_gemm_probe *ax_perf_gemm_probe_new(long n);
double ax_perf_gemm_probe_read(ax_perf_gemm_probe *p);
void ax_perf_gemm_probe_free(ax_perf_gemm_probe *p);

/* Memory bandwidth in GB/s (1e9 bytes/s) of an OpenMP-parallel copy of `bytes` bytes, counting
 * read + write traffic (2 * bytes per copy): the ceiling for streaming kernels such as AdamW.
 * Median of reps after one warm-up. 0 on allocation failure. */
double ax_perf_memcpy_gbps(size_t bytes, int reps);
