/* Ceilings measured in the same run, for benchmarks to divide by. */
#pragma once
#include <stddef.h>

/* GFLOP/s of ax_sgemm('N', 'T') on C[m,n] = A[m,k] B[n,k]^T (2mnk flops), median of reps timed
 * calls after one warm-up call, at the current OpenMP thread count. 0 on allocation failure. */
double ax_perf_sgemm_gflops(long m, long n, long k, int reps);

/* Memory bandwidth in GB/s (1e9 bytes/s) of an OpenMP-parallel copy of `bytes` bytes, counting
 * read + write traffic (2 * bytes per copy): the ceiling for streaming kernels such as AdamW.
 * Median of reps after one warm-up. 0 on allocation failure. */
double ax_perf_memcpy_gbps(size_t bytes, int reps);
