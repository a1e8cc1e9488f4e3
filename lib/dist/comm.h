/* Collectives along one axis of the 4D grid (lib/dist/grid.h), with traffic accounting.
 *
 * Buffers are float32 unless the name says _f64. Counts are elements. Collectives are issued
 * by the main thread only (MPI_THREAD_FUNNELED), outside OpenMP parallel regions. On an axis
 * of size 1 (and on every axis of a serial grid) a collective is a local copy or a no-op and
 * never calls MPI. MPI failures return AX_ERR_MPI with a message naming the collective and
 * the axis. Blocking calls and ax_wait mark their wait for the stalled-rank watchdog
 * (lib/core/stop.h), so a rank that stops progressing fails the job instead of hanging it.
 *
 * ---- Performance model: bytes sent per rank (the one definition) ----
 * p = ranks along the axis, e = element size in bytes. Ring algorithms:
 *   allreduce       n elements:            2 (p-1)/p * n * e   (reduce-scatter + all-gather)
 *   allgather       n_per_rank elements:   (p-1) * n_per_rank * e
 *   reduce-scatter  n_per_rank elements:   (p-1) * n_per_rank * e   (our own ring: Open MPI
 *                                                   4.1's reduce_scatter_block was ~5x slower
 *                                                   than a ring on 2 ranks, bench/bench_comm.c)
 *   bcast           n elements:            (p-1)/p * n * e     (pipelined chain: p-1 of the p
 *                                                               ranks forward n elements)
 *   barrier:        0
 * p == 1 costs 0. ax_comm_volume() computes these; the counters below add exactly
 * ax_comm_volume() per call, and a performance model should call the same function. */
#pragma once
#include <mpi.h>
#include "lib/dist/grid.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

typedef enum {
    AX_COMM_ALLREDUCE = 0,
    AX_COMM_ALLGATHER = 1,
    AX_COMM_REDUCE_SCATTER = 2,
    AX_COMM_BCAST = 3,
    AX_COMM_KINDS = 4,
} ax_comm_kind;

const char *ax_comm_kind_name(ax_comm_kind kind); /* "allreduce", "allgather", ... */

/* Bytes sent per rank for one call (formulas above). n is the total element count for
 * allreduce and bcast, the per-rank block for allgather and reduce-scatter. */
double ax_comm_volume(ax_comm_kind kind, int p, long n, int elem_size);

/* ---- blocking ---- */
/* in place: buf[n] <- sum (max) over the axis */
ax_status ax_allreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n);
ax_status ax_allreduce_max(ax_grid_t *g, ax_axis axis, float *buf, long n);
ax_status ax_allreduce_sum_f64(ax_grid_t *g, ax_axis axis, double *buf, long n);
ax_status ax_allreduce_max_f64(ax_grid_t *g, ax_axis axis, double *buf, long n);
/* recv[p * n_per_rank] = concatenation of every rank's send[n_per_rank] in coordinate order.
 * send may be recv + coord * n_per_rank (in place: the rank's own block already there). */
ax_status ax_allgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank, float *recv);
/* recv[n_per_rank] = block `coord` of the sum over the axis of send[p * n_per_rank]. */
ax_status ax_reduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                            long n_per_rank);
/* buf[n] <- the buffer of the rank with coordinate root_coord */
ax_status ax_bcast(ax_grid_t *g, ax_axis axis, float *buf, long n, int root_coord);
ax_status ax_bcast_bytes(ax_grid_t *g, ax_axis axis, void *buf, long nbytes, int root_coord);
ax_status ax_barrier(ax_grid_t *g, ax_axis axis);

/* ---- non-blocking ----
 * Issue, compute, then ax_wait. Buffers must stay untouched until the request completes.
 * Open MPI progresses a non-blocking collective only inside MPI calls, so a compute loop that
 * wants overlap calls ax_test(req) between chunks. A zero-initialised ax_req is a valid,
 * already complete request. On a serial grid / size-1 axis the request completes at issue.
 * Complete every issued request with ax_wait (or ax_test returning 1): a reduce-scatter holds a
 * scratch buffer until then. */
typedef struct {
    MPI_Request mpi[2]; /* outstanding MPI requests: mpi[0..nmpi-1] */
    int nmpi;
    int active;     /* 1 while the operation is in flight */
    int kind, axis; /* for error messages and stats */
    ax_status err;  /* failure seen by ax_test, reported by ax_wait */
    ax_grid_t *g;   /* whose stats the wait time goes to */
    /* ring reduce-scatter state (lib/dist/comm.c): step of p-1, buffers, peer ranks, tag */
    int step, p, coord, tag;
    long n;
    const float *send;
    float *recv, *tmp;
} ax_req;

ax_status ax_iallreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n, ax_req *req);
ax_status ax_iallgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank, float *recv,
                        ax_req *req);
ax_status ax_ireduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                             long n_per_rank, ax_req *req);
/* 1 when complete (or failed: ax_wait then returns the failure), 0 while in flight.
 * Cheap enough to call every few hundred microseconds of compute. */
int ax_test(ax_req *req);
ax_status ax_wait(ax_req *req); /* blocks until complete; a complete request returns at once */

/* ---- accounting (per grid, this rank) ---- */
typedef struct {
    double bytes[AX_COMM_KINDS][AX_AXIS_COUNT]; /* bytes sent, ax_comm_volume() per call */
    long calls[AX_COMM_KINDS][AX_AXIS_COUNT];   /* includes size-1 axes (0 bytes) */
    double wait_s[AX_AXIS_COUNT]; /* seconds blocked in blocking calls and ax_wait, p > 1 */
    double wait_s_total;
    double test_s; /* seconds inside ax_test (MPI progress done while polling) */
} ax_comm_stats;

void ax_comm_stats_get(const ax_grid_t *g, ax_comm_stats *out);
void ax_comm_stats_reset(ax_grid_t *g);
double ax_comm_stats_bytes_total(const ax_comm_stats *s);
/* Writes one JSON object (as a value: call ax_jw_key first when inside an object):
 * {"comm_bytes": {"allreduce": {"data":..,"x":..,"y":..,"z":..,"batch":..,"world":..}, ...},
 *  "comm_calls": {same shape}, "comm_wait_s": total, "comm_wait_s_axis": {"data":..,...},
 *  "comm_test_s": ..} */
void ax_comm_stats_json(const ax_comm_stats *s, ax_jw *w);

/* The axis communicator (rank in it == coordinate), for operations not wrapped here (e.g.
 * MPI_Alltoallv over AX_AXIS_WORLD). MPI_COMM_NULL on a serial grid. */
MPI_Comm ax_grid_mpi_comm(const ax_grid_t *g, ax_axis axis);
