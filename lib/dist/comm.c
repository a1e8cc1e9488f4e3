#include "lib/dist/comm.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* defined in lib/dist/grid.c: the grid owns its counters */
ax_comm_stats *ax_grid_stats_(ax_grid_t *g);
int ax_grid_next_tag_(ax_grid_t *g, ax_axis axis);

const char *ax_comm_kind_name(ax_comm_kind kind) {
    static const char *names[AX_COMM_KINDS] = {"allreduce", "allgather", "reduce_scatter", "bcast"};
    return ((int)kind >= 0 && (int)kind < AX_COMM_KINDS) ? names[kind] : "?";
}

double ax_comm_volume(ax_comm_kind kind, int p, long n, int elem_size) {
    if (p <= 1 || n <= 0) return 0.0;
    double bytes = (double)n * elem_size;
    switch (kind) {
    case AX_COMM_ALLREDUCE:
        return 2.0 * (p - 1) / p * bytes;
    case AX_COMM_ALLGATHER:
    case AX_COMM_REDUCE_SCATTER:
        return (double)(p - 1) * bytes;
    case AX_COMM_BCAST:
        return (double)(p - 1) / p * bytes;
    default:
        return 0.0;
    }
}

/* ---- helpers ---- */

static ax_status mpi_fail(const char *op, ax_axis axis, int rc) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ax_errorf(AX_ERR_MPI,
                     "%s over the %s axis failed: %s; check that every rank issues the same "
                     "collectives in the same order with the same sizes",
                     op, ax_axis_name(axis), msg);
}

/* Validates the call, counts it and returns the axis size in *p. */
static ax_status begin(ax_grid_t *g, ax_axis axis, const char *op, ax_comm_kind kind, long n,
                       int elem, int *p) {
    if (!g)
        return ax_errorf(AX_ERR_ARG, "%s: no grid (pass the ax_grid_t from ax_grid_create)", op);
    if ((int)axis < 0 || (int)axis >= AX_AXIS_COUNT)
        return ax_errorf(AX_ERR_ARG, "%s: axis %d is not an ax_axis", op, (int)axis);
    if (n < 0)
        return ax_errorf(AX_ERR_ARG, "%s over %s: negative count %ld", op, ax_axis_name(axis), n);
    if (n > INT_MAX)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s over %s: %ld elements exceed MPI's int count; split the buffer", op,
                         ax_axis_name(axis), n);
    *p = ax_grid_dim(g, axis);
    if ((int)kind >= 0 && kind < AX_COMM_KINDS) {
        ax_comm_stats *s = ax_grid_stats_(g);
        s->bytes[kind][axis] += ax_comm_volume(kind, *p, n, elem);
        s->calls[kind][axis]++;
    }
    return AX_OK;
}

/* Marks a blocking wait for the stalled-rank watchdog (lib/core/stop.h); returns the start time. */
static double wait_begin(const char *op, ax_axis axis) {
    ax_stall_begin(op, ax_axis_name(axis));
    return ax_now();
}

static void add_wait(ax_grid_t *g, int axis, double dt) {
    ax_stall_end();
    ax_comm_stats *s = ax_grid_stats_(g);
    s->wait_s[axis] += dt;
    s->wait_s_total += dt;
}

static void req_init(ax_req *req, ax_grid_t *g, ax_axis axis, ax_comm_kind kind) {
    memset(req, 0, sizeof *req);
    req->g = g;
    req->axis = axis;
    req->kind = kind;
}

/* ---- blocking ---- */

static ax_status allreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, MPI_Datatype type,
                           int elem, MPI_Op op, const char *name) {
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLREDUCE, n, elem, &p));
    if (p == 1 || n == 0) return AX_OK;
    double t0 = wait_begin(name, axis);
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, type, op, ax_grid_mpi_comm(g, axis));
    add_wait(g, axis, ax_now() - t0);
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail(name, axis, rc);
}

ax_status ax_allreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n) {
    return allreduce(g, axis, buf, n, MPI_FLOAT, 4, MPI_SUM, "allreduce(sum)");
}
ax_status ax_allreduce_max(ax_grid_t *g, ax_axis axis, float *buf, long n) {
    return allreduce(g, axis, buf, n, MPI_FLOAT, 4, MPI_MAX, "allreduce(max)");
}
ax_status ax_allreduce_sum_f64(ax_grid_t *g, ax_axis axis, double *buf, long n) {
    return allreduce(g, axis, buf, n, MPI_DOUBLE, 8, MPI_SUM, "allreduce(sum, f64)");
}
ax_status ax_allreduce_max_f64(ax_grid_t *g, ax_axis axis, double *buf, long n) {
    return allreduce(g, axis, buf, n, MPI_DOUBLE, 8, MPI_MAX, "allreduce(max, f64)");
}

/* MPI_IN_PLACE when the caller's block already sits at its slot in recv (ZeRO shards). */
static const void *gather_src(ax_grid_t *g, ax_axis axis, const float *send, long n, float *recv) {
    return send == recv + (long)ax_grid_coord(g, axis) * n ? MPI_IN_PLACE : (const void *)send;
}

ax_status ax_allgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank,
                       float *recv) {
    int p = 1;
    AX_CHECK(begin(g, axis, "allgather", AX_COMM_ALLGATHER, n_per_rank, 4, &p));
    if (p == 1 || n_per_rank == 0) {
        if (send != recv) memmove(recv, send, (size_t)n_per_rank * sizeof(float));
        return AX_OK;
    }
    double t0 = wait_begin("allgather", axis);
    int rc = MPI_Allgather(gather_src(g, axis, send, n_per_rank, recv), (int)n_per_rank, MPI_FLOAT,
                           recv, (int)n_per_rank, MPI_FLOAT, ax_grid_mpi_comm(g, axis));
    add_wait(g, axis, ax_now() - t0);
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail("allgather", axis, rc);
}

static ax_status bcast(ax_grid_t *g, ax_axis axis, void *buf, long n, MPI_Datatype type, int elem,
                       int root, const char *name) {
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_BCAST, n, elem, &p));
    if (root < 0 || root >= p)
        return ax_errorf(AX_ERR_ARG, "%s over %s: root coordinate %d is outside 0..%d", name,
                         ax_axis_name(axis), root, p - 1);
    if (p == 1 || n == 0) return AX_OK;
    double t0 = wait_begin(name, axis);
    int rc = MPI_Bcast(buf, (int)n, type, root, ax_grid_mpi_comm(g, axis));
    add_wait(g, axis, ax_now() - t0);
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail(name, axis, rc);
}

ax_status ax_bcast(ax_grid_t *g, ax_axis axis, float *buf, long n, int root_coord) {
    return bcast(g, axis, buf, n, MPI_FLOAT, 4, root_coord, "bcast");
}
ax_status ax_bcast_bytes(ax_grid_t *g, ax_axis axis, void *buf, long nbytes, int root_coord) {
    return bcast(g, axis, buf, nbytes, MPI_BYTE, 1, root_coord, "bcast(bytes)");
}

ax_status ax_barrier(ax_grid_t *g, ax_axis axis) {
    int p = 1;
    AX_CHECK(begin(g, axis, "barrier", AX_COMM_KINDS, 0, 0, &p));
    if (p == 1) return AX_OK;
    double t0 = wait_begin("barrier", axis);
    int rc = MPI_Barrier(ax_grid_mpi_comm(g, axis));
    add_wait(g, axis, ax_now() - t0);
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail("barrier", axis, rc);
}

/* ---- non-blocking ---- */

static ax_status issued(ax_req *req, int rc, const char *name) {
    if (rc != MPI_SUCCESS) return mpi_fail(name, (ax_axis)req->axis, rc);
    req->nmpi = 1;
    req->active = 1;
    return AX_OK;
}

ax_status ax_iallreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n, ax_req *req) {
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLREDUCE);
    AX_CHECK(begin(g, axis, "iallreduce(sum)", AX_COMM_ALLREDUCE, n, 4, &p));
    if (p == 1 || n == 0) return AX_OK;
    return issued(req,
                  MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM,
                                 ax_grid_mpi_comm(g, axis), &req->mpi[0]),
                  "iallreduce(sum)");
}

ax_status ax_iallgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank, float *recv,
                        ax_req *req) {
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLGATHER);
    AX_CHECK(begin(g, axis, "iallgather", AX_COMM_ALLGATHER, n_per_rank, 4, &p));
    if (p == 1 || n_per_rank == 0) {
        if (send != recv) memmove(recv, send, (size_t)n_per_rank * sizeof(float));
        return AX_OK;
    }
    return issued(req,
                  MPI_Iallgather(gather_src(g, axis, send, n_per_rank, recv), (int)n_per_rank,
                                 MPI_FLOAT, recv, (int)n_per_rank, MPI_FLOAT,
                                 ax_grid_mpi_comm(g, axis), &req->mpi[0]),
                  "iallgather");
}

/* Ring reduce-scatter: p-1 steps. At step s a rank sends its running partial sum (kept in
 * recv) to coord+1 and receives one from coord-1 into tmp, then recv = tmp + own block.
 * Rank r starts with block r-1 and each step moves one block down, so after p-1 steps recv
 * holds block r summed over all p ranks. Hand-written because Open MPI 4.1's
 * reduce_scatter_block was ~5x slower than this on 2 ranks; and its steps advance inside
 * ax_test, which is where a polling compute loop gives it progress. */
static long rs_block(const ax_req *q, int step) { /* block received at `step` */
    return ((q->coord - 2 - step) % q->p + 2L * q->p) % q->p;
}

static ax_status rs_post(ax_req *q) {
    MPI_Comm comm = ax_grid_mpi_comm(q->g, (ax_axis)q->axis);
    int prev = (q->coord + q->p - 1) % q->p, next = (q->coord + 1) % q->p;
    int rc = MPI_Irecv(q->tmp, (int)q->n, MPI_FLOAT, prev, q->tag, comm, &q->mpi[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(q->recv, (int)q->n, MPI_FLOAT, next, q->tag, comm, &q->mpi[1]);
        q->nmpi = rc == MPI_SUCCESS ? 2 : 1;
        if (rc != MPI_SUCCESS) MPI_Cancel(&q->mpi[0]);
    }
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail("reduce-scatter", (ax_axis)q->axis, rc);
}

static void rs_finish(ax_req *q, ax_status err) {
    free(q->tmp);
    q->tmp = NULL;
    q->nmpi = 0;
    q->active = 0;
    if (q->err == AX_OK) q->err = err;
}

/* Completes finished steps and posts the next; blocking: MPI_Waitall instead of Testall.
 * Returns 1 when the whole reduce-scatter is done (or failed). */
static int rs_advance(ax_req *q, int blocking) {
    while (q->active) {
        int flag = 1, rc;
        if (blocking)
            rc = MPI_Waitall(q->nmpi, q->mpi, MPI_STATUSES_IGNORE);
        else
            rc = MPI_Testall(q->nmpi, q->mpi, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            rs_finish(q, mpi_fail("reduce-scatter", (ax_axis)q->axis, rc));
            return 1;
        }
        if (!flag) return 0;
        const float *own = q->send + rs_block(q, q->step) * q->n;
        float *acc = q->recv;
        const float *in = q->tmp;
        for (long i = 0; i < q->n; i++) acc[i] = in[i] + own[i];
        if (++q->step == q->p - 1) {
            rs_finish(q, AX_OK);
            return 1;
        }
        ax_status st = rs_post(q);
        if (st != AX_OK) {
            rs_finish(q, st);
            return 1;
        }
    }
    return 1;
}

ax_status ax_ireduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                             long n_per_rank, ax_req *req) {
    int p = 1;
    req_init(req, g, axis, AX_COMM_REDUCE_SCATTER);
    AX_CHECK(begin(g, axis, "reduce-scatter", AX_COMM_REDUCE_SCATTER, n_per_rank, 4, &p));
    if (p == 1 || n_per_rank == 0) {
        if (send != recv) memmove(recv, send, (size_t)n_per_rank * sizeof(float));
        return AX_OK;
    }
    req->p = p;
    req->coord = ax_grid_coord(g, axis);
    req->tag = ax_grid_next_tag_(g, axis);
    req->n = n_per_rank;
    req->send = send;
    req->recv = recv;
    req->tmp = malloc((size_t)n_per_rank * sizeof(float));
    if (!req->tmp)
        return ax_errorf(AX_ERR_NOMEM, "reduce-scatter over %s: no memory for a %ld-float buffer",
                         ax_axis_name(axis), n_per_rank);
    /* step 0 sends this rank's own contribution to block coord-1 */
    memcpy(recv, send + ((req->coord + p - 1) % p) * n_per_rank,
           (size_t)n_per_rank * sizeof(float));
    req->active = 1;
    ax_status st = rs_post(req);
    if (st != AX_OK) rs_finish(req, st);
    return st;
}

ax_status ax_reduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                            long n_per_rank) {
    ax_req req;
    AX_CHECK(ax_ireduce_scatter(g, axis, send, recv, n_per_rank, &req));
    return ax_wait(&req);
}

static const char *req_name(const ax_req *req) {
    return ax_comm_kind_name((ax_comm_kind)req->kind);
}

int ax_test(ax_req *req) {
    if (!req->active) return 1;
    double t0 = ax_now();
    int done;
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        done = rs_advance(req, 0);
    } else {
        int rc = MPI_Test(&req->mpi[0], &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            req->err = mpi_fail(req_name(req), (ax_axis)req->axis, rc);
            done = 1;
        }
        if (done) req->active = 0;
    }
    ax_grid_stats_(req->g)->test_s += ax_now() - t0;
    return done;
}

ax_status ax_wait(ax_req *req) {
    if (!req->active) return req->err;
    double t0 = wait_begin(req_name(req), (ax_axis)req->axis);
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        rs_advance(req, 1);
    } else {
        int rc = MPI_Wait(&req->mpi[0], MPI_STATUS_IGNORE);
        req->active = 0;
        if (rc != MPI_SUCCESS) req->err = mpi_fail(req_name(req), (ax_axis)req->axis, rc);
    }
    add_wait(req->g, req->axis, ax_now() - t0);
    return req->err;
}

/* ---- accounting ---- */

void ax_comm_stats_get(const ax_grid_t *g, ax_comm_stats *out) {
    *out = *ax_grid_stats_((ax_grid_t *)g);
}

void ax_comm_stats_reset(ax_grid_t *g) {
    memset(ax_grid_stats_(g), 0, sizeof(ax_comm_stats));
}

double ax_comm_stats_bytes_total(const ax_comm_stats *s) {
    double t = 0;
    for (int k = 0; k < AX_COMM_KINDS; k++)
        for (int a = 0; a < AX_AXIS_COUNT; a++) t += s->bytes[k][a];
    return t;
}

void ax_comm_stats_json(const ax_comm_stats *s, ax_jw *w) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "comm_bytes");
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_COMM_KINDS; k++) {
        ax_jw_key(w, ax_comm_kind_name((ax_comm_kind)k));
        ax_jw_obj_begin(w);
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            ax_jw_key(w, ax_axis_name((ax_axis)a));
            ax_jw_num(w, s->bytes[k][a]);
        }
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
    ax_jw_key(w, "comm_calls");
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_COMM_KINDS; k++) {
        ax_jw_key(w, ax_comm_kind_name((ax_comm_kind)k));
        ax_jw_obj_begin(w);
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            ax_jw_key(w, ax_axis_name((ax_axis)a));
            ax_jw_int(w, s->calls[k][a]);
        }
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
    ax_jw_key(w, "comm_bytes_total");
    ax_jw_num(w, ax_comm_stats_bytes_total(s));
    ax_jw_key(w, "comm_wait_s");
    ax_jw_num(w, s->wait_s_total);
    ax_jw_key(w, "comm_wait_s_axis");
    ax_jw_obj_begin(w);
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        ax_jw_key(w, ax_axis_name((ax_axis)a));
        ax_jw_num(w, s->wait_s[a]);
    }
    ax_jw_obj_end(w);
    ax_jw_key(w, "comm_test_s");
    ax_jw_num(w, s->test_s);
    ax_jw_obj_end(w);
}
