/* The transport behind lib/dist/comm.h: a table of functions the backend-neutral front end
 * (lib/dist/comm.c) calls once it has checked the arguments, counted the traffic and taken the
 * size-1 shortcuts. Private to lib/dist: code above it uses comm.h.
 *
 * A transport sees only calls with p = ax_grid_dim(g, axis) > 1 and n > 0 (alltoallv: p > 1),
 * counts that fit an int, and valid types, reductions, roots and peers. It returns AX_OK or a
 * failure with a message naming `name` (e.g. "allreduce(sum, f32)") and the axis. Blocking calls
 * block; the front end marks the wait for the stalled-rank watchdog and times it.
 *
 * Requests: an issue function fills the transport part of the ax_req (handles, ring state) and
 * sets req->active = 1 when something is in flight; progress(req) never blocks and clears
 * req->active when the operation is done; wait(req) blocks until it is. Both record a failure
 * in req->err and release whatever the request holds (scratch) once it is no longer active.
 *
 * The MPI transport (lib/dist/comm_mpi.c) serves every grid with communicators; the NCCL one
 * (lib/dist/comm_nccl.c: streams + events, built with AX_HAVE_NCCL) fills the same table for
 * calls whose buffers are all device memory, with a progress step that only queries an event. */
#pragma once
#include "lib/dist/comm.h"

typedef struct ax_transport {
    const char *name; /* "mpi" */
    ax_status (*allreduce)(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                           ax_dtype t, ax_redop op);
    ax_status (*allgather)(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                           long n_per_rank, void *recv, ax_dtype t);
    ax_status (*bcast)(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n, ax_dtype t,
                       int root_coord);
    ax_status (*alltoall)(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                          long n_per_rank, void *recv, ax_dtype t);
    ax_status (*alltoallv)(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                           const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                           const int *rdispls, ax_dtype t);
    /* point to point; tag 0..255 (the transport keeps them apart from its own) */
    ax_status (*send)(ax_grid_t *g, ax_axis axis, const char *name, const void *buf, long n,
                      ax_dtype t, int peer, int tag);
    ax_status (*recv)(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n, ax_dtype t,
                      int peer, int tag);
    ax_status (*barrier)(ax_grid_t *g, ax_axis axis);
    /* non-blocking: req was initialised by the front end (g, axis, kind, dtype, op) */
    ax_status (*iallreduce)(ax_req *req, const char *name, void *buf, long n);
    ax_status (*iallgather)(ax_req *req, const char *name, const void *send, long n_per_rank,
                            void *recv);
    ax_status (*ireduce_scatter)(ax_req *req, const char *name, const void *send, void *recv,
                                 long n_per_rank);
    void (*progress)(ax_req *req); /* never blocks */
    void (*wait)(ax_req *req);
} ax_transport;

/* out[i] = a[i] (op) b[i]; out may alias a or b (lib/dist/comm.c: the one combine every
 * reduction uses, so transports reduce exactly as ax_reduce_local does). */
void ax_comm_combine_(ax_dtype t, ax_redop op, void *out, const void *a, const void *b, long n);

/* The MPI transport (lib/dist/comm_mpi.c). */
const ax_transport *ax_transport_mpi(void);
/* The NCCL transport (lib/dist/comm_nccl.c; only in builds with AX_HAVE_NCCL): device buffers
 * only, chosen per call by the front end (lib/dist/comm.c) when both buffers are device memory
 * and --comm picks nccl. */
const ax_transport *ax_transport_nccl(void);
/* 1 when device collectives on g's axis go through NCCL: forced (--comm nccl), or (auto) when the
 * node has a GPU per rank, agreed along the axis (collective there on the first call per axis). */
int ax_nccl_use_(ax_grid_t *g, ax_axis axis, int forced);

/* A transport's per-grid state (NCCL: communicators and streams per axis), freed with the grid
 * by free_fn. NULL until set. */
void *ax_grid_ext_(const ax_grid_t *g);
void ax_grid_set_ext_(ax_grid_t *g, void *ext, void (*free_fn)(void *));

/* Defined in lib/dist/grid.c: the grid owns its counters, its ring tags and its transport. */
ax_comm_stats *ax_grid_stats_(ax_grid_t *g);
/* A message tag for the next ring collective on `axis` (1..32000). Every rank issues
 * collectives in the same order, so the sequence agrees across ranks. */
int ax_grid_next_tag_(ax_grid_t *g, ax_axis axis);
/* NULL on a serial grid (every axis has size 1: the front end never reaches a transport). */
const ax_transport *ax_grid_transport_(const ax_grid_t *g);

/* Host staging buffers for device memory (lib/dist/comm.h, ax_comm_memory), owned by the grid:
 * a small pool of grow-only buffers from the hook's host_alloc, so a step's collectives reuse
 * the same few buffers (requests in flight together each hold one). NULL when out of memory
 * or no hook is set. */
void *ax_grid_stage_acquire_(ax_grid_t *g, size_t bytes);
void ax_grid_stage_release_(ax_grid_t *g, void *p);
