/* The MPI transport of lib/dist/comm.h (table in lib/dist/comm_transport.h): blocking calls map
 * onto MPI collectives over the grid's axis communicators; the non-blocking all-reduce and
 * all-gather onto MPI_Iallreduce / MPI_Iallgather; the reduce-scatter is our own ring over
 * Irecv/Isend whose steps advance inside progress (much faster than Open MPI's
 * reduce_scatter_block, bench/bench_comm.c). Open MPI moves data only inside MPI calls, which is
 * why a compute loop that wants overlap calls the progress step between chunks
 * (lib/dist/overlap.h). */
#include "lib/dist/comm_transport.h"
#include "lib/dist/grid_mpi.h"

#include <stdlib.h>
#include <string.h>

/* the request's transport handles are MPI requests */
_Static_assert(2 * sizeof(MPI_Request) <= sizeof(((ax_req *)0)->handle),
               "ax_req.handle must hold two MPI_Request");
static MPI_Request *handles(ax_req *q) {
    return (MPI_Request *)(void *)q->handle;
}

/* tags of send/recv sit above the ring tags (1..32000 from ax_grid_next_tag_) */
#define P2P_TAG_BASE 32256

/* ---- MPI types ---- */

static MPI_Datatype mpi_type(ax_dtype t) {
    switch (t) {
    case AX_DT_F32:
        return MPI_FLOAT;
    case AX_DT_F64:
        return MPI_DOUBLE;
    case AX_DT_BF16:
        return MPI_UINT16_T;
    case AX_DT_I32:
        return MPI_INT32_T;
    case AX_DT_U64:
        return MPI_UINT64_T;
    default:
        return MPI_UINT8_T;
    }
}

/* bf16 has no MPI reduction: user ops over uint16_t that combine in f32 (commutative) */
static void bf16_user(void *in, void *inout, int *len, MPI_Datatype *dt, ax_redop op) {
    (void)dt;
    ax_comm_combine_(AX_DT_BF16, op, inout, in, inout, *len);
}
static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    bf16_user(in, inout, len, dt, AX_OP_SUM);
}
static void bf16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    bf16_user(in, inout, len, dt, AX_OP_MAX);
}
static void bf16_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
    bf16_user(in, inout, len, dt, AX_OP_MIN);
}

/* The MPI op; bf16 ops are created on first use (main thread only: MPI_THREAD_FUNNELED) and
 * live until MPI_Finalize. */
static int mpi_op(ax_dtype t, ax_redop op, MPI_Op *out) {
    if (t != AX_DT_BF16) {
        *out = op == AX_OP_SUM ? MPI_SUM : op == AX_OP_MAX ? MPI_MAX : MPI_MIN;
        return MPI_SUCCESS;
    }
    static MPI_Op made[AX_OP_COUNT];
    static int have[AX_OP_COUNT];
    static MPI_User_function *fn[AX_OP_COUNT] = {bf16_sum, bf16_max, bf16_min};
    if (!have[op]) {
        int rc = MPI_Op_create(fn[op], 1, &made[op]);
        if (rc != MPI_SUCCESS) return rc;
        have[op] = 1;
    }
    *out = made[op];
    return MPI_SUCCESS;
}

static ax_status mpi_fail(const char *op, ax_axis axis, int rc) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ax_errorf(AX_ERR_MPI,
                     "%s over the %s axis failed: %s; check that every rank issues the same "
                     "collectives in the same order with the same sizes",
                     op, ax_axis_name(axis), msg);
}

static ax_status done(int rc, const char *name, ax_axis axis) {
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail(name, axis, rc);
}

/* ---- blocking ---- */

static ax_status mpi_allreduce(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                               ax_dtype t, ax_redop op) {
    MPI_Op mop;
    int rc = mpi_op(t, op, &mop);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(t), mop, ax_grid_mpi_comm(g, axis));
    return done(rc, name, axis);
}

/* MPI_IN_PLACE when the caller's block already sits at its slot in recv (ZeRO shards). */
static const void *gather_src(ax_grid_t *g, ax_axis axis, const void *send, long n, void *recv,
                              ax_dtype t) {
    const char *slot = (const char *)recv + (long)ax_grid_coord(g, axis) * n * ax_dtype_size(t);
    return (const void *)slot == send ? MPI_IN_PLACE : send;
}

static ax_status mpi_allgather(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                               long n_per_rank, void *recv, ax_dtype t) {
    int rc =
        MPI_Allgather(gather_src(g, axis, send, n_per_rank, recv, t), (int)n_per_rank, mpi_type(t),
                      recv, (int)n_per_rank, mpi_type(t), ax_grid_mpi_comm(g, axis));
    return done(rc, name, axis);
}

static ax_status mpi_bcast(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                           ax_dtype t, int root_coord) {
    return done(MPI_Bcast(buf, (int)n, mpi_type(t), root_coord, ax_grid_mpi_comm(g, axis)), name,
                axis);
}

static ax_status mpi_alltoall(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                              long n_per_rank, void *recv, ax_dtype t) {
    int rc = MPI_Alltoall(send, (int)n_per_rank, mpi_type(t), recv, (int)n_per_rank, mpi_type(t),
                          ax_grid_mpi_comm(g, axis));
    return done(rc, name, axis);
}

static ax_status mpi_alltoallv(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                               const int *scounts, const int *sdispls, void *recv,
                               const int *rcounts, const int *rdispls, ax_dtype t) {
    int rc = MPI_Alltoallv(send, scounts, sdispls, mpi_type(t), recv, rcounts, rdispls, mpi_type(t),
                           ax_grid_mpi_comm(g, axis));
    return done(rc, name, axis);
}

static ax_status mpi_send(ax_grid_t *g, ax_axis axis, const char *name, const void *buf, long n,
                          ax_dtype t, int peer, int tag) {
    int rc =
        MPI_Send(buf, (int)n, mpi_type(t), peer, P2P_TAG_BASE + tag, ax_grid_mpi_comm(g, axis));
    return done(rc, name, axis);
}

static ax_status mpi_recv(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                          ax_dtype t, int peer, int tag) {
    MPI_Status status;
    int rc = MPI_Recv(buf, (int)n, mpi_type(t), peer, P2P_TAG_BASE + tag, ax_grid_mpi_comm(g, axis),
                      &status);
    if (rc != MPI_SUCCESS) return mpi_fail(name, axis, rc);
    int got = 0;
    MPI_Get_count(&status, mpi_type(t), &got);
    if (got != (int)n)
        return ax_errorf(AX_ERR_MPI, "%s over %s: coordinate %d sent %d elements, expected %ld",
                         name, ax_axis_name(axis), peer, got, n);
    return AX_OK;
}

static ax_status mpi_barrier(ax_grid_t *g, ax_axis axis) {
    return done(MPI_Barrier(ax_grid_mpi_comm(g, axis)), "barrier", axis);
}

/* ---- non-blocking ---- */

static ax_status issued(ax_req *req, int rc, const char *name) {
    if (rc != MPI_SUCCESS) return mpi_fail(name, (ax_axis)req->axis, rc);
    req->nh = 1;
    req->active = 1;
    return AX_OK;
}

static ax_status mpi_iallreduce(ax_req *req, const char *name, void *buf, long n) {
    ax_dtype t = (ax_dtype)req->dtype;
    MPI_Op mop;
    int rc = mpi_op(t, (ax_redop)req->op, &mop);
    if (rc == MPI_SUCCESS)
        rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(t), mop,
                            ax_grid_mpi_comm(req->g, (ax_axis)req->axis), &handles(req)[0]);
    return issued(req, rc, name);
}

static ax_status mpi_iallgather(ax_req *req, const char *name, const void *send, long n_per_rank,
                                void *recv) {
    ax_grid_t *g = req->g;
    ax_axis axis = (ax_axis)req->axis;
    ax_dtype t = (ax_dtype)req->dtype;
    return issued(req,
                  MPI_Iallgather(gather_src(g, axis, send, n_per_rank, recv, t), (int)n_per_rank,
                                 mpi_type(t), recv, (int)n_per_rank, mpi_type(t),
                                 ax_grid_mpi_comm(g, axis), &handles(req)[0]),
                  name);
}

/* Ring reduce-scatter: p-1 steps. At step s a rank sends its running partial (kept in recv)
 * to coord+1 and receives one from coord-1 into tmp, then recv = tmp (op) own block.
 * Rank r starts with block r-1 and each step moves one block down, so after p-1 steps recv
 * holds block r reduced over all p ranks. Its steps advance inside progress, which is where a
 * polling compute loop gives it progress. */
static long rs_block(const ax_req *q, int step) { /* block received at `step` */
    return ((q->coord - 2 - step) % q->p + 2L * q->p) % q->p;
}

static ax_status rs_post(ax_req *q) {
    MPI_Comm comm = ax_grid_mpi_comm(q->g, (ax_axis)q->axis);
    MPI_Datatype type = mpi_type((ax_dtype)q->dtype);
    int prev = (q->coord + q->p - 1) % q->p, next = (q->coord + 1) % q->p;
    MPI_Request *h = handles(q);
    int rc = MPI_Irecv(q->tmp, (int)q->n, type, prev, q->tag, comm, &h[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(q->recv, (int)q->n, type, next, q->tag, comm, &h[1]);
        q->nh = rc == MPI_SUCCESS ? 2 : 1;
        if (rc != MPI_SUCCESS) MPI_Cancel(&h[0]);
    }
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail("reduce-scatter", (ax_axis)q->axis, rc);
}

static void rs_finish(ax_req *q, ax_status err) {
    free(q->tmp);
    q->tmp = NULL;
    q->nh = 0;
    q->active = 0;
    if (q->err == AX_OK) q->err = err;
}

/* Completes finished steps and posts the next; blocking: MPI_Waitall instead of Testall. */
static void rs_advance(ax_req *q, int blocking) {
    long e = ax_dtype_size((ax_dtype)q->dtype);
    while (q->active) {
        int flag = 1, rc;
        if (blocking)
            rc = MPI_Waitall(q->nh, handles(q), MPI_STATUSES_IGNORE);
        else
            rc = MPI_Testall(q->nh, handles(q), &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            rs_finish(q, mpi_fail("reduce-scatter", (ax_axis)q->axis, rc));
            return;
        }
        if (!flag) return;
        const char *own = (const char *)q->send + rs_block(q, q->step) * q->n * e;
        ax_comm_combine_((ax_dtype)q->dtype, (ax_redop)q->op, q->recv, q->tmp, own, q->n);
        if (++q->step == q->p - 1) {
            rs_finish(q, AX_OK);
            return;
        }
        ax_status st = rs_post(q);
        if (st != AX_OK) {
            rs_finish(q, st);
            return;
        }
    }
}

static ax_status mpi_ireduce_scatter(ax_req *req, const char *name, const void *send, void *recv,
                                     long n_per_rank) {
    ax_axis axis = (ax_axis)req->axis;
    int p = ax_grid_dim(req->g, axis);
    size_t bytes = (size_t)n_per_rank * (size_t)ax_dtype_size((ax_dtype)req->dtype);
    req->p = p;
    req->coord = ax_grid_coord(req->g, axis);
    req->tag = ax_grid_next_tag_(req->g, axis);
    req->n = n_per_rank;
    req->send = send;
    req->recv = recv;
    req->tmp = malloc(bytes);
    if (!req->tmp)
        return ax_errorf(AX_ERR_NOMEM, "%s over %s: no memory for a %ld-element buffer", name,
                         ax_axis_name(axis), n_per_rank);
    /* step 0 sends this rank's own contribution to block coord-1 */
    memcpy(recv, (const char *)send + (size_t)((req->coord + p - 1) % p) * bytes, bytes);
    req->active = 1;
    ax_status st = rs_post(req);
    if (st != AX_OK) rs_finish(req, st);
    return st;
}

static const char *req_name(const ax_req *req) {
    return ax_comm_kind_name((ax_comm_kind)req->kind);
}

static void mpi_progress(ax_req *req) {
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        rs_advance(req, 0);
        return;
    }
    int flag = 0;
    int rc = MPI_Test(&handles(req)[0], &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        req->err = mpi_fail(req_name(req), (ax_axis)req->axis, rc);
        flag = 1;
    }
    if (flag) req->active = 0;
}

static void mpi_wait(ax_req *req) {
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        rs_advance(req, 1);
        return;
    }
    int rc = MPI_Wait(&handles(req)[0], MPI_STATUS_IGNORE);
    req->active = 0;
    if (rc != MPI_SUCCESS) req->err = mpi_fail(req_name(req), (ax_axis)req->axis, rc);
}

static const ax_transport mpi_transport = {
    .name = "mpi",
    .allreduce = mpi_allreduce,
    .allgather = mpi_allgather,
    .bcast = mpi_bcast,
    .alltoall = mpi_alltoall,
    .alltoallv = mpi_alltoallv,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
    .iallreduce = mpi_iallreduce,
    .iallgather = mpi_iallgather,
    .ireduce_scatter = mpi_ireduce_scatter,
    .progress = mpi_progress,
    .wait = mpi_wait,
};

const ax_transport *ax_transport_mpi(void) {
    return &mpi_transport;
}
