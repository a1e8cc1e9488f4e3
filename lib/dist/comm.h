/* Collectives along one axis of the 4D grid (lib/dist/grid.h), with traffic accounting.
 *
 * Typed and backend-neutral: every call names its element type (ax_dtype) and, when it reduces,
 * the reduction (ax_redop); no MPI type appears here. lib/dist/comm.c is the front end (checks,
 * size-1 shortcuts, accounting); the bytes move through the grid's transport, a table of
 * functions (lib/dist/comm_transport.h; MPI: lib/dist/comm_mpi.c; NCCL for device buffers:
 * lib/dist/comm_nccl.c, see ax_comm_select). Counts are elements. Collectives are issued
 * by the main thread only (MPI funneled thread level), outside OpenMP parallel regions. On an axis
 * of size 1 (and on every axis of a serial grid) a collective is a local copy or a no-op and
 * never reaches the transport. Transport failures return AX_ERR_MPI with a message naming the
 * collective and the axis. Blocking calls and ax_wait mark their wait for the stalled-rank
 * watchdog (lib/core/stop.h), so a rank that stops progressing fails the job instead of hanging it.
 * Overlapping collectives with compute: lib/dist/overlap.h.
 *
 * ---- Performance model: bytes sent per rank (the one definition) ----
 * p = ranks along the axis, e = element size in bytes. Ring algorithms:
 *   allreduce       n elements:            2 (p-1)/p * n * e   (reduce-scatter + all-gather)
 *   allgather       n_per_rank elements:   (p-1) * n_per_rank * e
 *   reduce-scatter  n_per_rank elements:   (p-1) * n_per_rank * e   (our own ring,
 *                                                   lib/dist/comm_mpi.c)
 *   bcast           n elements:            (p-1)/p * n * e     (pipelined chain: p-1 of the p
 *                                                               ranks forward n elements)
 *   alltoall        n_per_rank elements:   (p-1) * n_per_rank * e
 *   alltoallv       the elements this rank sends to the other p-1 ranks, times e
 *   send            n elements:            n * e   (counted by the sender only)
 *   barrier:        0
 * p == 1 costs 0. ax_comm_volume() computes these; the counters below add exactly
 * ax_comm_volume() per call, and a performance model should call the same function. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "lib/dist/grid.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

typedef enum {
    AX_COMM_ALLREDUCE = 0,
    AX_COMM_ALLGATHER = 1,
    AX_COMM_REDUCE_SCATTER = 2,
    AX_COMM_BCAST = 3,
    AX_COMM_ALLTOALL = 4, /* alltoall and alltoallv (memscan's index build) */
    AX_COMM_SEND = 5,     /* point to point (memscan's index save) */
    AX_COMM_KINDS = 6,
} ax_comm_kind;

const char *ax_comm_kind_name(ax_comm_kind kind); /* "allreduce", "allgather", ... */

/* Bytes sent per rank for one call (formulas above). n is the total element count for
 * allreduce and bcast, the per-rank block for allgather, reduce-scatter and alltoall. */
double ax_comm_volume(ax_comm_kind kind, int p, long n, int elem_size);

/* ---- element types and reductions ---- */
typedef enum {
    AX_DT_F32 = 0,
    AX_DT_F64 = 1,
    AX_DT_BF16 = 2, /* uint16_t bits; reduced in f32, rounded to nearest even per combine */
    AX_DT_I32 = 3,
    AX_DT_U64 = 4,
    AX_DT_U8 = 5,
    AX_DT_COUNT = 6,
} ax_dtype;

typedef enum { AX_OP_SUM = 0, AX_OP_MAX = 1, AX_OP_MIN = 2, AX_OP_COUNT = 3 } ax_redop;

int ax_dtype_size(ax_dtype t);          /* bytes per element; 0 for an unknown type */
const char *ax_dtype_name(ax_dtype t);  /* "f32", "f64", "bf16", "i32", "u64", "u8" */
const char *ax_redop_name(ax_redop op); /* "sum", "max", "min" */
uint16_t ax_f32_to_bf16(float f);       /* round to nearest even; NaN stays NaN */
float ax_bf16_to_f32(uint16_t b);
/* acc[i] = acc[i] (op) in[i]: the combine every reduction here uses (bf16: in f32, rounded
 * back); also the serial reference of the tests. */
void ax_reduce_local(ax_dtype t, ax_redop op, void *acc, const void *in, long n);

/* ---- device memory: host staging ----
 * A grid whose collectives may carry device memory (a GPU backend's buffers) learns how to reach
 * it from whoever owns that memory (lib/model at model creation); lib/dist never includes
 * lib/backend. With a hook set, the front end asks is_device for every buffer it is given: a
 * host buffer goes to the transport as before; a device buffer is staged, device -> host
 * staging buffer -> transport -> device (blocking calls: around the transport call;
 * non-blocking: in at issue, out when the request completes in ax_req_progress / ax_test /
 * ax_wait), and the size-1 shortcuts copy with dev_copy / to_host / from_host instead of
 * memmove. Without a hook (the CPU backend) every buffer is host memory and nothing changes.
 * The copies are ordered after the owner's pending device work (the owner's stream) and
 * to_host has finished when it returns. */
typedef struct {
    void *user;                                  /* passed to every function below */
    int (*is_device)(void *user, const void *p); /* 1: p is device memory */
    ax_status (*to_host)(void *user, void *host, const void *dev, size_t bytes);
    ax_status (*from_host)(void *user, void *dev, const void *host, size_t bytes);
    ax_status (*dev_copy)(void *user, void *dst, const void *src, size_t bytes);
    void *(*host_alloc)(void *user, size_t bytes); /* staging memory (may be pinned) */
    void (*host_free)(void *user, void *p);
    void *stream; /* the owner's compute stream (a device transport orders after it); or NULL */
} ax_comm_memory;

/* Copies *mem into the grid (NULL clears the hook and frees the staging buffers, which mem's
 * host_free releases: clear before that owner goes away). Main thread, no request in flight. */
void ax_grid_set_memory(ax_grid_t *g, const ax_comm_memory *mem);
/* The hook set on g, or NULL (CPU memory only). */
const ax_comm_memory *ax_grid_memory(const ax_grid_t *g);

/* ---- transport choice (--comm) ----
 * "mpi": the MPI transport (device memory staged through the host, above); "nccl": NCCL on the
 * device (only in builds with NCCL); "auto": nccl for grids carrying device memory when built
 * with NCCL, else mpi. Process-wide (every grid made after it); NULL or "" keeps the current
 * choice (default auto). ax_comm_check only validates: AX_ERR_UNSUPPORTED naming --comm when
 * this build lacks the transport, AX_ERR_ARG for an unknown name. */
ax_status ax_comm_check(const char *name);
ax_status ax_comm_select(const char *name);
const char *ax_comm_selected(void); /* "auto", "mpi" or "nccl" */
/* 1 when this build has the NCCL transport (it lives in the CUDA plugin; nothing is loaded) */
int ax_comm_nccl_built(void);

/* ---- blocking, typed ---- */
/* in place: buf[n] <- op over the axis */
ax_status ax_coll_allreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, ax_redop op);
/* recv[p * n_per_rank] = concatenation of every rank's send[n_per_rank] in coordinate order.
 * send may be recv + coord * n_per_rank (in place: the rank's own block already there). */
ax_status ax_coll_allgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                            void *recv, ax_dtype t);
/* recv[n_per_rank] = block `coord` of op over the axis of send[p * n_per_rank]. */
ax_status ax_coll_reduce_scatter(ax_grid_t *g, ax_axis axis, const void *send, void *recv,
                                 long n_per_rank, ax_dtype t, ax_redop op);
/* buf[n] <- the buffer of the rank with coordinate root_coord */
ax_status ax_coll_bcast(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, int root_coord);
/* recv block i (n_per_rank elements) <- send block `coord` of the rank with coordinate i */
ax_status ax_coll_alltoall(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                           void *recv, ax_dtype t);
/* The same with per-peer counts and displacements (elements; int, as MPI's): scounts[i]
 * elements from send + sdispls[i] go to coordinate i, rcounts[i] from coordinate i land at
 * recv + rdispls[i]. Every array has ax_grid_dim(g, axis) entries. */
ax_status ax_coll_alltoallv(ax_grid_t *g, ax_axis axis, const void *send, const int *scounts,
                            const int *sdispls, void *recv, const int *rcounts, const int *rdispls,
                            ax_dtype t);
/* Point to point with the rank at coordinate `peer` along the axis; tag 0..255 (kept apart from
 * the tags of the ring collectives). A recv must match the sender's count exactly. */
ax_status ax_coll_send(ax_grid_t *g, ax_axis axis, const void *buf, long n, ax_dtype t, int peer,
                       int tag);
ax_status ax_coll_recv(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, int peer,
                       int tag);
ax_status ax_barrier(ax_grid_t *g, ax_axis axis);
/* A status every rank along the axis agrees on: the worst one (largest code). A rank that was
 * fine but sees another's failure gets "WHAT: another rank failed (see its message)". */
ax_status ax_coll_agree(ax_grid_t *g, ax_axis axis, ax_status st, const char *what);

/* ---- test only: failure injection ----
 * Makes the (after_n_calls+1)-th call of `kind` over `axis` on grid g (NULL: on any grid) fail
 * with AX_ERR_MPI and "<collective> over the <axis> axis failed: injected failure ...", before
 * any size-1 shortcut, so the error paths above a collective can be tested on a serial grid.
 * Fires once, then disarms; after_n_calls < 0 disarms. One armed failure at a time (process
 * wide, main thread only). Non-blocking calls fail at issue; point to point (send and recv)
 * matches AX_COMM_SEND; barriers never fail. Never called outside tests. */
void ax_comm_inject_failure(const ax_grid_t *g, ax_comm_kind kind, ax_axis axis, int after_n_calls);

/* ---- non-blocking ----
 * Issue, compute, then ax_wait. Buffers must stay untouched until the request completes.
 * The MPI transport progresses a request only inside a call into it, so a compute loop that
 * wants overlap calls ax_req_progress (or ax_test) between chunks (lib/dist/overlap.h does
 * this for the model); a transport that progresses on its own (NCCL streams) makes that call
 * cheap. A zero-initialised ax_req is a valid,
 * already complete request. On a serial grid / size-1 axis the request completes at issue.
 * Complete every issued request with ax_wait (or ax_test returning 1): a reduce-scatter holds a
 * scratch buffer until then. The layout is opaque: read only `active`. */
typedef struct {
    int active;     /* 1 while the operation is in flight */
    int kind, axis; /* for error messages and stats */
    ax_status err;  /* failure seen while progressing, reported by ax_wait */
    ax_grid_t *g;   /* whose stats the wait time goes to */
    int dtype, op;  /* ax_dtype, ax_redop */
    /* transport state (MPI's ring reduce-scatter, lib/dist/comm_mpi.c): step of p-1, peer
     * ranks, tag */
    int step, p, coord, tag, nh;
    long n;
    const void *send;
    void *recv, *tmp;
    uint64_t handle[4]; /* transport handles (MPI: up to two requests, nh in use) */
    /* device staging (ax_comm_memory): the host buffer the transport works on, the device
     * buffer it is copied back to on completion, and how many bytes */
    void *stage, *stage_host, *stage_out;
    long stage_bytes;
    int dev; /* issued on the device transport (NCCL) */
} ax_req;

ax_status ax_coll_iallreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, ax_redop op,
                             ax_req *req);
ax_status ax_coll_iallgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                             void *recv, ax_dtype t, ax_req *req);
ax_status ax_coll_ireduce_scatter(ax_grid_t *g, ax_axis axis, const void *send, void *recv,
                                  long n_per_rank, ax_dtype t, ax_redop op, ax_req *req);
/* Gives the transport a chance to move the request along (MPI: tests it, posts the next ring
 * step); never blocks. Returns the request's failure, if any (AX_OK while in flight). */
ax_status ax_req_progress(ax_req *req);
/* ax_req_progress, then 1 when complete (or failed: ax_wait then returns the failure), 0 while
 * in flight. Cheap enough to call every few hundred microseconds of compute. */
int ax_test(ax_req *req);
ax_status ax_wait(ax_req *req); /* blocks until complete; a complete request returns at once */

/* ---- accounting (per grid, this rank) ---- */
typedef struct {
    double bytes[AX_COMM_KINDS][AX_AXIS_COUNT]; /* bytes sent, ax_comm_volume() per call */
    long calls[AX_COMM_KINDS][AX_AXIS_COUNT];   /* includes size-1 axes (0 bytes) */
    double wait_s[AX_AXIS_COUNT]; /* seconds blocked in blocking calls and ax_wait, p > 1 */
    double wait_s_total;
    double test_s; /* seconds inside ax_test / ax_req_progress (transport progress) */
} ax_comm_stats;

void ax_comm_stats_get(const ax_grid_t *g, ax_comm_stats *out);
void ax_comm_stats_reset(ax_grid_t *g);
double ax_comm_stats_bytes_total(const ax_comm_stats *s);
/* Writes one JSON object (as a value: call ax_jw_key first when inside an object):
 * {"comm_bytes": {"allreduce": {"data":..,"x":..,"y":..,"z":..,"batch":..,"world":..}, ...},
 *  "comm_calls": {same shape}, "comm_wait_s": total, "comm_wait_s_axis": {"data":..,...},
 *  "comm_test_s": ..} */
void ax_comm_stats_json(const ax_comm_stats *s, ax_jw *w);
