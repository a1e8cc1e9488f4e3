/* Collective bandwidth on the grid's world axis (run on 2 ranks: mpirun -np 2 bench_comm) as a
 * ratio to memcpy bandwidth measured in the same run, and how much of a non-blocking
 * all-reduce hides behind a compute loop that polls ax_test every chunk vs one that does not.
 *
 * Bandwidth = bytes sent per rank (ax_comm_volume: the ring formulas of lib/dist/comm.h) / time of
 * the slowest rank. Ceiling = single-threaded memcpy bytes/s per rank, every rank copying at
 * once (on shared memory a message is at least one copy, so no collective beats it).
 * Usage: mpirun -np 2 bench_comm [reps]   (default 7; median after a warm-up) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/grid_mpi.h"
#include "lib/dist/mpienv.h"
#include "lib/core/timer.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_comm: %s: %s\n", what, ax_error_msg());
    ax_mpi_abort(1);
}
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if ((expr) != AX_OK) die(#expr);                                                           \
    } while (0)

/* slowest rank's time: a collective is done when the last rank is */
static double slowest(ax_grid_t *g, double t) {
    TRY(ax_coll_allreduce(g, AX_AXIS_WORLD, &t, 1, AX_DT_F64, AX_OP_MAX));
    return t;
}

typedef enum { OP_MEMCPY, OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCE_SCATTER, OP_MPI_RS } op_t;

/* median seconds of one op on n floats (per rank block for the gather/scatter) */
static double time_op(ax_grid_t *g, op_t op, long n, int reps, float *a, float *b) {
    double *t = malloc(sizeof(double) * reps);
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        TRY(ax_barrier(g, AX_AXIS_WORLD));
        double t0 = ax_now();
        switch (op) {
        case OP_MEMCPY:
            memcpy(b, a, sizeof(float) * n);
            break;
        case OP_ALLREDUCE:
            TRY(ax_coll_allreduce(g, AX_AXIS_WORLD, a, n, AX_DT_F32, AX_OP_SUM));
            break;
        case OP_ALLGATHER:
            TRY(ax_coll_allgather(g, AX_AXIS_WORLD, a, n, b, AX_DT_F32));
            break;
        case OP_REDUCE_SCATTER:
            TRY(ax_coll_reduce_scatter(g, AX_AXIS_WORLD, b, a, n, AX_DT_F32, AX_OP_SUM));
            break;
        case OP_MPI_RS: /* what lib/comm's ring replaces */
            MPI_Reduce_scatter_block(b, a, (int)n, MPI_FLOAT, MPI_SUM,
                                     ax_grid_mpi_comm(g, AX_AXIS_WORLD));
            break;
        }
        double dt = slowest(g, ax_now() - t0);
        if (r >= 0) t[r] = dt;
    }
    double m = median(t, reps);
    free(t);
    return m;
}

/* Compute that does not compete for memory bandwidth: FMAs on an L1-resident array. */
static volatile float g_sink;
static void compute_chunk(float *x, int iters) {
    for (int it = 0; it < iters; it++)
        for (int i = 0; i < 1024; i++) x[i] = x[i] * 0.999f + 0.001f;
    g_sink = x[iters & 1023];
}

/* One run: mode 0 = comm only, 1 = compute only, 2 = both without polling, 3 = both, polling
 * ax_test after every chunk. Returns the slowest rank's seconds. */
static int g_rs; /* overlap an ireduce_scatter (of n / p floats per rank) instead */
static double overlap_run(ax_grid_t *g, int mode, float *buf, long n, int chunks, int iters,
                          float *x) {
    TRY(ax_barrier(g, AX_AXIS_WORLD));
    double t0 = ax_now();
    ax_req req = {0};
    if (mode != 1 && !g_rs)
        TRY(ax_coll_iallreduce(g, AX_AXIS_WORLD, buf, n, AX_DT_F32, AX_OP_SUM, &req));
    if (mode != 1 && g_rs) {
        long blk = n / ax_grid_size(g);
        TRY(ax_coll_ireduce_scatter(g, AX_AXIS_WORLD, buf, buf + n, blk, AX_DT_F32, AX_OP_SUM,
                                    &req));
    }
    if (mode != 0)
        for (int c = 0; c < chunks; c++) {
            compute_chunk(x, iters);
            if (mode == 3) ax_test(&req);
        }
    TRY(ax_wait(&req));
    return slowest(g, ax_now() - t0);
}

static double overlap_median(ax_grid_t *g, int mode, float *buf, long n, int chunks, int iters,
                             float *x, int reps) {
    double *t = malloc(sizeof(double) * reps);
    overlap_run(g, mode, buf, n, chunks, iters, x);
    for (int r = 0; r < reps; r++) t[r] = overlap_run(g, mode, buf, n, chunks, iters, x);
    double m = median(t, reps);
    free(t);
    return m;
}

int main(int argc, char **argv) {
    TRY(ax_mpi_start(&argc, &argv));
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1) {
        fprintf(stderr, "usage: mpirun -np 2 bench_comm [reps >= 1]\n");
        ax_mpi_abort(2);
    }
    int p = ax_mpi_world_size(), rank = ax_mpi_world_rank();
    int dims[4] = {p, 1, 1, 1};
    ax_grid_t *g = NULL;
    TRY(ax_grid_create(dims, &g));
    if (p < 2 && rank == 0)
        printf("bench_comm: 1 rank, collectives are local copies; run with mpirun -np 2\n");

    const long max_n = 16L << 20; /* floats per rank block: 64 MiB */
    float *a = malloc(sizeof(float) * max_n * p), *b = malloc(sizeof(float) * max_n * p);
    if (!a || !b) die("out of memory");
    for (long i = 0; i < max_n * p; i++) a[i] = b[i] = (float)(i % 7);

    if (rank == 0) {
        printf(
            "bench_comm: %d ranks, GB/s = bytes sent per rank (ring formula) / time; ratio to\n"
            "single-thread memcpy GB/s per rank, all ranks copying at once. MPI_rs = Open MPI's\n"
            "MPI_Reduce_scatter_block, which ax_reduce_scatter's ring replaces\n",
            p);
        printf("%10s %9s | %8s | %9s %5s | %9s %5s | %9s %5s | %9s %5s\n", "bytes", "floats",
               "memcpy", "allreduce", "ratio", "allgather", "ratio", "red_scat", "ratio", "MPI_rs",
               "ratio");
    }
    const long sizes[] = {1L << 10, 16L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        long n = sizes[si];
        /* small values: repeated in-place sums must not overflow into inf (slow paths) */
        for (long i = 0; i < n * p; i++) a[i] = b[i] = (float)(i % 7) * 1e-3f;
        int r = n >= (4L << 20) ? (reps < 3 ? reps : 3) : reps * 3;
        double t_cp = time_op(g, OP_MEMCPY, n, r, a, b);
        double t_ar = time_op(g, OP_ALLREDUCE, n, r, a, b);
        double t_ag = time_op(g, OP_ALLGATHER, n, r, a, b);
        double t_rs = time_op(g, OP_REDUCE_SCATTER, n, r, a, b);
        double t_mrs = p > 1 ? time_op(g, OP_MPI_RS, n, r, a, b) : t_rs;
        double cp = 4.0 * n / t_cp / 1e9;
        double ar = ax_comm_volume(AX_COMM_ALLREDUCE, p, n, 4) / t_ar / 1e9;
        double ag = ax_comm_volume(AX_COMM_ALLGATHER, p, n, 4) / t_ag / 1e9;
        double rs = ax_comm_volume(AX_COMM_REDUCE_SCATTER, p, n, 4) / t_rs / 1e9;
        double mrs = ax_comm_volume(AX_COMM_REDUCE_SCATTER, p, n, 4) / t_mrs / 1e9;
        if (rank == 0)
            printf("%10ld %9ld | %8.2f | %9.2f %5.2f | %9.2f %5.2f | %9.2f %5.2f | %9.2f %5.2f\n",
                   4 * n, n, cp, ar, ar / cp, ag, ag / cp, rs, rs / cp, mrs, mrs / cp);
    }

    /* Overlap: a 16 MiB all-reduce / reduce-scatter against compute calibrated to take about
     * as long, split in chunks; ax_test after each chunk or not at all. */
    long n = 4L << 20;
    float *x = malloc(sizeof(float) * 1024);
    for (int i = 0; i < 1024; i++) x[i] = 1.0f;
    for (g_rs = 0; g_rs < 2; g_rs++) {
        for (long i = 0; i < 2 * n; i++) a[i] = (float)(i % 7) * 1e-3f;
        int chunks = 200, r3 = 3 * reps;
        double t_comm = overlap_median(g, 0, a, n, chunks, 1, x, r3);
        double t_8 = overlap_median(g, 1, a, n, chunks, 8, x, r3);
        double it_d = 8.0 * t_comm / t_8 + 0.5; /* ranks must agree on the calibration */
        TRY(ax_coll_allreduce(g, AX_AXIS_WORLD, &it_d, 1, AX_DT_F64, AX_OP_MAX));
        int iters = it_d < 1 ? 1 : (int)it_d;
        double t_comp = overlap_median(g, 1, a, n, chunks, iters, x, r3);
        double t_nopoll = overlap_median(g, 2, a, n, chunks, iters, x, r3);
        double t_poll = overlap_median(g, 3, a, n, chunks, iters, x, r3);
        double lo = t_comm < t_comp ? t_comm : t_comp;
        double hid_nopoll = (t_comm + t_comp - t_nopoll) / lo;
        double hid_poll = (t_comm + t_comp - t_poll) / lo;
        if (rank == 0) {
            printf("\noverlap: %s of %ld floats (%.0f MiB) vs %d chunks of compute\n",
                   g_rs ? "ireduce_scatter" : "iallreduce", n, 4.0 * n / (1 << 20), chunks);
            printf("  comm alone %.2f ms, compute alone %.2f ms, serial sum %.2f ms\n",
                   1e3 * t_comm, 1e3 * t_comp, 1e3 * (t_comm + t_comp));
            printf("  overlapped, no polling:        %.2f ms  hidden %.2f of the shorter\n",
                   1e3 * t_nopoll, hid_nopoll);
            printf("  overlapped, ax_test per chunk: %.2f ms  hidden %.2f of the shorter\n",
                   1e3 * t_poll, hid_poll);
            printf("  polling speedup over not polling: %.2fx\n", t_nopoll / t_poll);
        }
    }
    free(x);
    free(a);
    free(b);
    ax_grid_free(g);
    ax_mpi_stop();
    return 0;
}
