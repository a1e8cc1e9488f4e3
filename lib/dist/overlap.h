/* Compute/communication overlap, written once above the transports.
 *
 * An ax_overlap owns a fixed set of request slots on one grid. The model's schedule (AxoNN's
 * OAG, ORS and OAR; docs/grid.md "Overlap") is expressed in these calls:
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
 * Overlap is decided per axis (ax_overlap_decide): on an axis where it is off (or of one rank,
 * where nothing would overlap) every issue is the blocking collective, so the slot is complete
 * when the issue returns; a compute runs in chunks only while some slot is really in flight. */
#pragma once
#include "lib/dist/comm.h"

#include <stddef.h>

typedef struct ax_overlap ax_overlap;

/* The `overlap` argument of ax_overlap_create (and of the model's create calls). */
enum {
    AX_OVERLAP_OFF = 0,   /* every collective blocking (--no-overlap) */
    AX_OVERLAP_FORCE = 1, /* overlap on every axis of > 1 rank, even where it cannot help */
    AX_OVERLAP_AUTO = 2,  /* overlap only on axes where it can hide something (below) */
};

/* The per-axis rule, a pure function (unit-tested without MPI). An axis of `ranks` ranks
 * spanning `hosts` hosts (0 = not known), `local_ranks` ranks of the job on this host, each with
 * `threads` threads, on `cores` cores; `device` = 1 when its collectives may run on a transport
 * that moves device memory by itself (NCCL: copy engines and NVLink while the GPU computes),
 * where neither condition below applies and AUTO is on. Otherwise AUTO turns overlap off when
 *   - the axis lies inside one host (or its placement is not known): its transport is shared
 *     memory, whose copies (and, in Open MPI, whose progress: only inside MPI calls) run on the
 *     ranks' own cores, so there is no idle engine to hide communication behind, and the
 *     overlapped schedule only adds chunked GEMMs and polling (slower on most axes of
 *     bench/grid_scaling.sh on one host);
 *   - the host's ranks x threads exceed its cores: a rank waiting in a non-blocking
 *     collective's progress takes a core another rank needs.
 * Otherwise (the axis crosses hosts, cores to spare) it is on: a NIC moves the bytes while the
 * cores compute. Returns 1 for on; writes the reason (one line, no period) to why[cap]. */
int ax_overlap_decide(int mode, int ranks, int hosts, int local_ranks, int threads, int cores,
                      int device, char *why, size_t cap);
/* ax_overlap_decide for `axis` of grid g, with this process's threads (omp_get_max_threads) and
 * cores (its CPU affinity mask); device: a build with NCCL, a grid carrying device memory
 * (ax_grid_memory) and --comm not mpi. Local; every rank of an axis decides the same (the
 * placement is the axis's, threads, cores and the transport choice the job's). */
int ax_overlap_decide_axis(ax_grid_t *g, int mode, ax_axis axis, char *why, size_t cap);

/* Whether AUTO's answer for an axis is a guess that timing can settle (1) or a rule (0): the
 * axis lies inside one host with cores to spare (the "off: ... share one host" branch above),
 * and it is a tensor axis (X, Y, Z: the data all-reduce ends the step, nothing runs behind it).
 * There the shared-memory copies run on the ranks' own cores, so whether the overlapped
 * schedule wins depends on the machine; lib/dist/overlap_trial.h times both. Pure, like the
 * rule. */
int ax_overlap_measurable(int mode, ax_axis axis, int ranks, int hosts, int local_ranks,
                          int threads, int cores, int device);
int ax_overlap_measurable_axis(ax_grid_t *g, int mode, ax_axis axis);
/* n_slots request slots on grid g; mode AX_OVERLAP_* (decided per axis at creation). */
ax_status ax_overlap_create(ax_grid_t *g, int mode, int n_slots, ax_overlap **out);
/* Accepts NULL. Requests still in flight are not waited for (a failed step may leave some;
 * the transport's failure has already been reported). */
void ax_overlap_free(ax_overlap *ov);
int ax_overlap_enabled(const ax_overlap *ov); /* on for at least one axis */
int ax_overlap_axis_on(const ax_overlap *ov, ax_axis axis);
const char *ax_overlap_axis_why(const ax_overlap *ov, ax_axis axis); /* the decision's reason */
/* Turns overlap on `axis` on or off, with the reason (copied; one line), between steps: refused
 * while any slot is in flight (an issue keeps the schedule it was made with until waited). The
 * schedule gives the same bits either way (tests/mpi/mpi_model.c), so a run may switch. */
ax_status ax_overlap_set_axis(ax_overlap *ov, ax_axis axis, int on, const char *why);

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

/* fn(arg, begin, end) over [0, n): while a slot is in flight (a non-blocking collective, on an
 * axis with overlap on), in chunks of `chunk` with ax_overlap_progress after each; otherwise in
 * one call fn(arg, 0, n). */
typedef void (*ax_overlap_fn)(void *arg, long begin, long end);
void ax_overlap_compute(ax_overlap *ov, long n, long chunk, ax_overlap_fn fn, void *arg);
