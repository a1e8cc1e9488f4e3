/* The overlap machinery of lib/dist/overlap.h: request slots, progress between compute chunks. */
#include "lib/dist/overlap.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ax_overlap {
    ax_grid_t *g;
    int enabled;           /* on for some axis */
    int on[AX_AXIS_COUNT]; /* per axis: non-blocking issues */
    char why[AX_AXIS_COUNT][256];
    int n_slots;
    int issued;   /* slots issued and not yet waited for (in flight or complete) */
    int nb_issue; /* the issue in progress is non-blocking */
    ax_req *req;
    unsigned char *used; /* slot issued and not yet waited for: 1 blocking, 2 non-blocking */
};

int ax_overlap_decide(int mode, int ranks, int hosts, int local_ranks, int threads, int cores,
                      int device, char *why, size_t cap) {
    char tmp[8];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    if (ranks <= 1) return snprintf(why, cap, "off: one rank, nothing to communicate"), 0;
    if (mode == AX_OVERLAP_OFF) return snprintf(why, cap, "off: --no-overlap"), 0;
    if (mode == AX_OVERLAP_FORCE) return snprintf(why, cap, "on: forced"), 1;
    if (device)
        return snprintf(why, cap, "on: device memory over NCCL, which progresses by itself"), 1;
    if (hosts <= 0) return snprintf(why, cap, "off: placement of its %d ranks not known", ranks), 0;
    if (hosts == 1)
        return snprintf(why, cap,
                        "off: its %d ranks share one host (shared-memory transport: the ranks' "
                        "own cores copy, nothing to hide it behind)",
                        ranks),
               0;
    if (local_ranks > 0 && cores > 0 && (long)local_ranks * threads > cores)
        return snprintf(why, cap, "off: %d ranks x %d threads on this host's %d cores", local_ranks,
                        threads, cores),
               0;
    return snprintf(why, cap, "on: its %d ranks span %d hosts", ranks, hosts), 1;
}

int ax_overlap_measurable(int mode, ax_axis axis, int ranks, int hosts, int local_ranks,
                          int threads, int cores, int device) {
    if (mode != AX_OVERLAP_AUTO || ranks <= 1 || device || hosts != 1) return 0;
    if (axis != AX_AXIS_X && axis != AX_AXIS_Y && axis != AX_AXIS_Z) return 0;
    return !(local_ranks > 0 && cores > 0 && (long)local_ranks * threads > cores);
}

static int cores_here(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 0;
}

/* the grid's device buffers may go to NCCL (comm.c's dev_tr_axis; the per-axis NCCL choice is
 * made later, on the first device collective: a rank sharing a GPU then stages through MPI, and
 * overlap stays on there, as forced) */
static int device_transport(ax_grid_t *g) {
#ifdef AX_HAVE_NCCL
    return ax_grid_memory(g) != NULL && strcmp(ax_comm_selected(), "mpi") != 0;
#else
    (void)g;
    return 0;
#endif
}

int ax_overlap_decide_axis(ax_grid_t *g, int mode, ax_axis axis, char *why, size_t cap) {
    return ax_overlap_decide(mode, ax_grid_dim(g, axis), ax_grid_axis_hosts(g, axis),
                             ax_grid_local_ranks(g), omp_get_max_threads(), cores_here(),
                             device_transport(g), why, cap);
}

int ax_overlap_measurable_axis(ax_grid_t *g, int mode, ax_axis axis) {
    return ax_overlap_measurable(mode, axis, ax_grid_dim(g, axis), ax_grid_axis_hosts(g, axis),
                                 ax_grid_local_ranks(g), omp_get_max_threads(), cores_here(),
                                 device_transport(g));
}

ax_status ax_overlap_create(ax_grid_t *g, int mode, int n_slots, ax_overlap **out) {
    *out = NULL;
    if (!g || n_slots < 1)
        return ax_errorf(AX_ERR_ARG, "overlap: needs a grid and at least one slot (got %d)",
                         n_slots);
    ax_overlap *ov = calloc(1, sizeof *ov);
    if (ov) ov->req = calloc((size_t)n_slots, sizeof *ov->req);
    if (ov) ov->used = calloc((size_t)n_slots, 1);
    if (!ov || !ov->req || !ov->used) {
        ax_overlap_free(ov);
        return ax_errorf(AX_ERR_NOMEM, "out of memory for %d overlap slots", n_slots);
    }
    ov->g = g;
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        ov->on[a] = ax_overlap_decide_axis(g, mode, (ax_axis)a, ov->why[a], sizeof ov->why[a]);
        ov->enabled |= ov->on[a];
    }
    ov->n_slots = n_slots;
    *out = ov;
    return AX_OK;
}

void ax_overlap_free(ax_overlap *ov) {
    if (!ov) return;
    free(ov->req);
    free(ov->used);
    free(ov);
}

int ax_overlap_enabled(const ax_overlap *ov) {
    return ov->enabled;
}

int ax_overlap_axis_on(const ax_overlap *ov, ax_axis axis) {
    return (int)axis >= 0 && (int)axis < AX_AXIS_COUNT && ov->on[axis];
}

const char *ax_overlap_axis_why(const ax_overlap *ov, ax_axis axis) {
    return (int)axis >= 0 && (int)axis < AX_AXIS_COUNT ? ov->why[axis] : "?";
}

ax_status ax_overlap_set_axis(ax_overlap *ov, ax_axis axis, int on, const char *why) {
    if ((int)axis < 0 || (int)axis >= AX_AXIS_COUNT)
        return ax_errorf(AX_ERR_INTERNAL, "overlap: no grid axis %d", (int)axis);
    if (ov->issued)
        return ax_errorf(AX_ERR_INTERNAL,
                         "overlap: axis %s switched while %d slot(s) are in flight (switch "
                         "between steps)",
                         ax_axis_name(axis), ov->issued);
    ov->on[axis] = on && ax_grid_dim(ov->g, axis) > 1;
    snprintf(ov->why[axis], sizeof ov->why[axis], "%s", why ? why : (on ? "on" : "off"));
    ov->enabled = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) ov->enabled |= ov->on[a];
    return AX_OK;
}

int ax_overlap_in_flight(const ax_overlap *ov) {
    return ov->issued;
}

/* Claims a free slot for an issue. */
static ax_status claim(ax_overlap *ov, int slot, const char *what, ax_axis axis) {
    if (slot < 0 || slot >= ov->n_slots)
        return ax_errorf(AX_ERR_INTERNAL, "overlap: %s over %s into slot %d of 0..%d", what,
                         ax_axis_name(axis), slot, ov->n_slots - 1);
    if (ov->used[slot])
        return ax_errorf(AX_ERR_INTERNAL,
                         "overlap: %s over %s into slot %d, which was not waited for", what,
                         ax_axis_name(axis), slot);
    memset(&ov->req[slot], 0, sizeof ov->req[slot]);
    return AX_OK;
}

/* Records an issued slot; a failed issue leaves the slot free. */
static ax_status issued(ax_overlap *ov, int slot, ax_status st) {
    if (st == AX_OK) {
        ov->used[slot] = ov->nb_issue ? 2 : 1;
        ov->issued++;
    }
    return st;
}

ax_status ax_overlap_allreduce(ax_overlap *ov, int slot, ax_axis axis, void *buf, long n,
                               ax_dtype t, ax_redop op) {
    AX_CHECK(claim(ov, slot, "allreduce", axis));
    ov->nb_issue = ax_overlap_axis_on(ov, axis);
    if (!ov->nb_issue) return issued(ov, slot, ax_coll_allreduce(ov->g, axis, buf, n, t, op));
    return issued(ov, slot, ax_coll_iallreduce(ov->g, axis, buf, n, t, op, &ov->req[slot]));
}

ax_status ax_overlap_allgather(ax_overlap *ov, int slot, ax_axis axis, const void *send,
                               long n_per_rank, void *recv, ax_dtype t) {
    AX_CHECK(claim(ov, slot, "allgather", axis));
    ov->nb_issue = ax_overlap_axis_on(ov, axis);
    if (!ov->nb_issue)
        return issued(ov, slot, ax_coll_allgather(ov->g, axis, send, n_per_rank, recv, t));
    return issued(ov, slot,
                  ax_coll_iallgather(ov->g, axis, send, n_per_rank, recv, t, &ov->req[slot]));
}

ax_status ax_overlap_reduce_scatter(ax_overlap *ov, int slot, ax_axis axis, const void *send,
                                    void *recv, long n_per_rank, ax_dtype t, ax_redop op) {
    AX_CHECK(claim(ov, slot, "reduce-scatter", axis));
    ov->nb_issue = ax_overlap_axis_on(ov, axis);
    if (!ov->nb_issue)
        return issued(ov, slot, ax_coll_reduce_scatter(ov->g, axis, send, recv, n_per_rank, t, op));
    return issued(
        ov, slot,
        ax_coll_ireduce_scatter(ov->g, axis, send, recv, n_per_rank, t, op, &ov->req[slot]));
}

void ax_overlap_progress(ax_overlap *ov) {
    if (!ov->issued) return;
    for (int i = 0; i < ov->n_slots; i++)
        if (ov->req[i].active) ax_req_progress(&ov->req[i]);
}

ax_status ax_overlap_wait(ax_overlap *ov, int slot) {
    if (slot < 0 || slot >= ov->n_slots || !ov->used[slot]) return AX_OK;
    ax_status st = ax_wait(&ov->req[slot]);
    ov->used[slot] = 0;
    ov->issued--;
    memset(&ov->req[slot], 0, sizeof ov->req[slot]);
    return st;
}

ax_status ax_overlap_wait_all(ax_overlap *ov) {
    ax_status first = AX_OK;
    for (int i = 0; i < ov->n_slots && ov->issued; i++) {
        ax_status st = ax_overlap_wait(ov, i);
        if (first == AX_OK) first = st;
    }
    return first;
}

/* a non-blocking issue not yet waited for (whether or not it has completed meanwhile: the
 * chunking must not depend on timing) */
static int any_active(const ax_overlap *ov) {
    if (!ov->enabled || !ov->issued) return 0;
    for (int i = 0; i < ov->n_slots; i++)
        if (ov->used[i] == 2) return 1;
    return 0;
}

void ax_overlap_compute(ax_overlap *ov, long n, long chunk, ax_overlap_fn fn, void *arg) {
    if (chunk <= 0 || !any_active(ov)) {
        fn(arg, 0, n);
        return;
    }
    for (long b = 0; b < n; b += chunk) {
        fn(arg, b, n - b < chunk ? n : b + chunk);
        ax_overlap_progress(ov);
    }
}
