/* Compute/communication overlap, written once above the transports.
 *
 * An ax_overlap owns a fixed set of request slots on one grid. The model's schedule (AxoNN's
 * OAG, ORS and OAR; docs/DESIGN.md "Communication and overlap") is expressed in these calls:
 *   - issue: a weight all-gather a layer ahead (OAG), a gradient reduce-scatter that runs
 *     behind earlier layers' backward (ORS), the dX all-reduce that runs behind the dW GEMM
 *     (OAR), each into its own slot;
 *   - ax_overlap_compute: run a compute in chunks and give every in-flight slot progress
 *     between chunks;
 *   - wait: complete one slot (or all) before its buffer is read.
 * The progress step is the only transport-specific part: with MPI (which moves data only inside
 * MPI calls) it tests every in-flight request; a transport that progresses on its own (NCCL
 * streams and events) makes it a no-op and nothing above changes.
 *
 * With overlap off (or on a 1-rank grid, where nothing would overlap) every issue is the blocking
 * collective, so the slot is complete when the issue returns, and a compute runs in one piece. */
#pragma once
#include "lib/dist/comm.h"

typedef struct ax_overlap ax_overlap;

/* n_slots request slots on grid g; enabled = 0: blocking collectives, unchunked computes. */
ax_status ax_overlap_create(ax_grid_t *g, int enabled, int n_slots, ax_overlap **out);
/* Accepts NULL. Requests still in flight are not waited for (a failed step may leave some;
 * the transport's failure has already been reported). */
void ax_overlap_free(ax_overlap *ov);
int ax_overlap_enabled(const ax_overlap *ov);

/* Issue into `slot` (0..n_slots-1, not in flight). Same arguments and buffers rules as the
 * ax_coll_i* calls of comm.h: buffers stay untouched until the slot is waited for. */
ax_status ax_overlap_allreduce(ax_overlap *ov, int slot, ax_axis axis, void *buf, long n,
                               ax_dtype t, ax_redop op);
ax_status ax_overlap_allgather(ax_overlap *ov, int slot, ax_axis axis, const void *send,
                               long n_per_rank, void *recv, ax_dtype t);
ax_status ax_overlap_reduce_scatter(ax_overlap *ov, int slot, ax_axis axis, const void *send,
                                    void *recv, long n_per_rank, ax_dtype t, ax_redop op);

/* Gives every in-flight slot a chance to move (never blocks). */
void ax_overlap_progress(ax_overlap *ov);
/* Completes `slot` and returns its failure, if any; the slot is then free and its failure
 * forgotten. A slot never issued (or already waited for) returns AX_OK at once. */
ax_status ax_overlap_wait(ax_overlap *ov, int slot);
/* Completes every slot; returns the first failure. */
ax_status ax_overlap_wait_all(ax_overlap *ov);
int ax_overlap_in_flight(const ax_overlap *ov); /* slots issued and not yet waited for */

/* fn(arg, begin, end) over [0, n): with overlap on, in chunks of `chunk` with
 * ax_overlap_progress after each; off, in one call fn(arg, 0, n). */
typedef void (*ax_overlap_fn)(void *arg, long begin, long end);
void ax_overlap_compute(ax_overlap *ov, long n, long chunk, ax_overlap_fn fn, void *arg);
