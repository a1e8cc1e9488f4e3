/* The collectives of lib/dist/comm.h: validation and accounting, the local combine (shared by
 * every transport and by the tests' references), and the MPI transport. */
#include "lib/dist/comm.h"
#include "lib/dist/grid_mpi.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* defined in lib/dist/grid.c: the grid owns its counters */
ax_comm_stats *ax_grid_stats_(ax_grid_t *g);
int ax_grid_next_tag_(ax_grid_t *g, ax_axis axis);

/* the request's transport handles are MPI requests */
_Static_assert(2 * sizeof(MPI_Request) <= sizeof(((ax_req *)0)->handle),
               "ax_req.handle must hold two MPI_Request");
static MPI_Request *handles(ax_req *q) {
    return (MPI_Request *)(void *)q->handle;
}

/* tags of ax_coll_send/recv sit above the ring tags (1..32000 from ax_grid_next_tag_) */
#define P2P_TAG_BASE 32256

const char *ax_comm_kind_name(ax_comm_kind kind) {
    static const char *names[AX_COMM_KINDS] = {"allreduce", "allgather", "reduce_scatter",
                                               "bcast",     "alltoall",  "send"};
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
    case AX_COMM_ALLTOALL:
        return (double)(p - 1) * bytes;
    case AX_COMM_BCAST:
        return (double)(p - 1) / p * bytes;
    case AX_COMM_SEND:
        return bytes;
    default:
        return 0.0;
    }
}

/* ---- types and the local combine ---- */

int ax_dtype_size(ax_dtype t) {
    static const int size[AX_DT_COUNT] = {4, 8, 2, 4, 8, 1};
    return ((int)t >= 0 && (int)t < AX_DT_COUNT) ? size[t] : 0;
}

const char *ax_dtype_name(ax_dtype t) {
    static const char *names[AX_DT_COUNT] = {"f32", "f64", "bf16", "i32", "u64", "u8"};
    return ((int)t >= 0 && (int)t < AX_DT_COUNT) ? names[t] : "?";
}

const char *ax_redop_name(ax_redop op) {
    static const char *names[AX_OP_COUNT] = {"sum", "max", "min"};
    return ((int)op >= 0 && (int)op < AX_OP_COUNT) ? names[op] : "?";
}

uint16_t ax_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                          /* nearest even */
    return (uint16_t)(u >> 16);
}

float ax_bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* out[i] = a[i] (op) b[i]; out may alias a or b. One plain loop per (type, op), so the f32
 * sum of the training path vectorises as before. */
#define COMBINE(T, OP)                                                                             \
    do {                                                                                           \
        T *o = out;                                                                                \
        const T *x = a, *y = b;                                                                    \
        for (long i = 0; i < n; i++) o[i] = OP(x[i], y[i]);                                        \
    } while (0)
#define ADD(x, y) ((x) + (y))
#define MAX(x, y) ((x) > (y) ? (x) : (y))
#define MIN(x, y) ((x) < (y) ? (x) : (y))
#define COMBINE_OPS(T)                                                                             \
    do {                                                                                           \
        if (op == AX_OP_SUM)                                                                       \
            COMBINE(T, ADD);                                                                       \
        else if (op == AX_OP_MAX)                                                                  \
            COMBINE(T, MAX);                                                                       \
        else                                                                                       \
            COMBINE(T, MIN);                                                                       \
    } while (0)

static float bf16_op(ax_redop op, uint16_t x, uint16_t y) {
    float fx = ax_bf16_to_f32(x), fy = ax_bf16_to_f32(y);
    return op == AX_OP_SUM ? fx + fy : op == AX_OP_MAX ? MAX(fx, fy) : MIN(fx, fy);
}

static void combine(ax_dtype t, ax_redop op, void *out, const void *a, const void *b, long n) {
    switch (t) {
    case AX_DT_F32:
        COMBINE_OPS(float);
        break;
    case AX_DT_F64:
        COMBINE_OPS(double);
        break;
    case AX_DT_I32:
        COMBINE_OPS(int32_t);
        break;
    case AX_DT_U64:
        COMBINE_OPS(uint64_t);
        break;
    case AX_DT_U8:
        COMBINE_OPS(uint8_t);
        break;
    case AX_DT_BF16: {
        uint16_t *o = out;
        const uint16_t *x = a, *y = b;
        for (long i = 0; i < n; i++) o[i] = ax_f32_to_bf16(bf16_op(op, x[i], y[i]));
        break;
    }
    default:
        break;
    }
}

void ax_reduce_local(ax_dtype t, ax_redop op, void *acc, const void *in, long n) {
    combine(t, op, acc, acc, in, n);
}

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
    combine(AX_DT_BF16, op, inout, in, inout, *len);
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

/* Validates the call and returns the axis size in *p. */
static ax_status check(ax_grid_t *g, ax_axis axis, const char *op, long n, ax_dtype t, ax_redop rop,
                       int *p) {
    if (!g)
        return ax_errorf(AX_ERR_ARG, "%s: no grid (pass the ax_grid_t from ax_grid_create)", op);
    if ((int)axis < 0 || (int)axis >= AX_AXIS_COUNT)
        return ax_errorf(AX_ERR_ARG, "%s: axis %d is not an ax_axis", op, (int)axis);
    if (ax_dtype_size(t) == 0)
        return ax_errorf(AX_ERR_ARG, "%s over %s: %d is not an ax_dtype", op, ax_axis_name(axis),
                         (int)t);
    if ((int)rop < 0 || (int)rop >= AX_OP_COUNT)
        return ax_errorf(AX_ERR_ARG, "%s over %s: %d is not an ax_redop", op, ax_axis_name(axis),
                         (int)rop);
    if (n < 0)
        return ax_errorf(AX_ERR_ARG, "%s over %s: negative count %ld", op, ax_axis_name(axis), n);
    if (n > INT_MAX)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s over %s: %ld elements exceed MPI's int count; split the buffer", op,
                         ax_axis_name(axis), n);
    *p = ax_grid_dim(g, axis);
    return AX_OK;
}

static void count(ax_grid_t *g, ax_axis axis, ax_comm_kind kind, double bytes) {
    ax_comm_stats *s = ax_grid_stats_(g);
    s->bytes[kind][axis] += bytes;
    s->calls[kind][axis]++;
}

/* Validates the call, counts it (ax_comm_volume) and returns the axis size in *p. */
static ax_status begin(ax_grid_t *g, ax_axis axis, const char *op, ax_comm_kind kind, long n,
                       ax_dtype t, ax_redop rop, int *p) {
    AX_CHECK(check(g, axis, op, n, t, rop, p));
    if ((int)kind >= 0 && kind < AX_COMM_KINDS)
        count(g, axis, kind, ax_comm_volume(kind, *p, n, ax_dtype_size(t)));
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

/* ends a blocking MPI call started with wait_begin */
static ax_status waited(ax_grid_t *g, ax_axis axis, double t0, int rc, const char *name) {
    add_wait(g, axis, ax_now() - t0);
    return rc == MPI_SUCCESS ? AX_OK : mpi_fail(name, axis, rc);
}

static void req_init(ax_req *req, ax_grid_t *g, ax_axis axis, ax_comm_kind kind, ax_dtype t,
                     ax_redop op) {
    memset(req, 0, sizeof *req);
    req->g = g;
    req->axis = axis;
    req->kind = kind;
    req->dtype = t;
    req->op = op;
}

static void copy_local(void *dst, const void *src, long n, ax_dtype t) {
    if (dst != src && n > 0) memmove(dst, src, (size_t)n * (size_t)ax_dtype_size(t));
}

/* Call names for messages and the stall watchdog, e.g. "allreduce(sum, f32)". Static: the
 * watchdog keeps the pointer (lib/core/stop.h). Filled on first use (main thread only). */
enum {
    N_ALLREDUCE,
    N_ALLGATHER,
    N_BCAST,
    N_ALLTOALL,
    N_ALLTOALLV,
    N_SEND,
    N_RECV,
    N_IALLREDUCE,
    N_IALLGATHER,
    N_COUNT
};
static const char *name_of(int what, ax_redop op, ax_dtype t) {
    static const char *base[N_COUNT] = {"allreduce", "allgather",  "bcast",
                                        "alltoall",  "alltoallv",  "send",
                                        "recv",      "iallreduce", "iallgather"};
    static char names[N_COUNT][AX_OP_COUNT][AX_DT_COUNT][40];
    static int filled;
    if (!filled) {
        for (int w = 0; w < N_COUNT; w++)
            for (int o = 0; o < AX_OP_COUNT; o++)
                for (int d = 0; d < AX_DT_COUNT; d++) {
                    if (w == N_ALLREDUCE || w == N_IALLREDUCE)
                        snprintf(names[w][o][d], sizeof names[w][o][d], "%s(%s, %s)", base[w],
                                 ax_redop_name((ax_redop)o), ax_dtype_name((ax_dtype)d));
                    else
                        snprintf(names[w][o][d], sizeof names[w][o][d], "%s(%s)", base[w],
                                 ax_dtype_name((ax_dtype)d));
                }
        filled = 1;
    }
    if ((int)op < 0 || (int)op >= AX_OP_COUNT || ax_dtype_size(t) == 0) return base[what];
    return names[what][op][t];
}

/* ---- blocking ---- */

ax_status ax_coll_allreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t,
                            ax_redop op) {
    const char *name = name_of(N_ALLREDUCE, op, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLREDUCE, n, t, op, &p));
    if (p == 1 || n == 0) return AX_OK;
    MPI_Op mop;
    int rc = mpi_op(t, op, &mop);
    if (rc != MPI_SUCCESS) return mpi_fail(name, axis, rc);
    double t0 = wait_begin(name, axis);
    rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(t), mop, ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

/* MPI_IN_PLACE when the caller's block already sits at its slot in recv (ZeRO shards). */
static const void *gather_src(ax_grid_t *g, ax_axis axis, const void *send, long n, void *recv,
                              ax_dtype t) {
    const char *slot = (const char *)recv + (long)ax_grid_coord(g, axis) * n * ax_dtype_size(t);
    return (const void *)slot == send ? MPI_IN_PLACE : send;
}

ax_status ax_coll_allgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                            void *recv, ax_dtype t) {
    const char *name = name_of(N_ALLGATHER, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLGATHER, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) {
        copy_local(recv, send, n_per_rank, t);
        return AX_OK;
    }
    double t0 = wait_begin(name, axis);
    int rc =
        MPI_Allgather(gather_src(g, axis, send, n_per_rank, recv, t), (int)n_per_rank, mpi_type(t),
                      recv, (int)n_per_rank, mpi_type(t), ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

ax_status ax_coll_reduce_scatter(ax_grid_t *g, ax_axis axis, const void *send, void *recv,
                                 long n_per_rank, ax_dtype t, ax_redop op) {
    ax_req req;
    AX_CHECK(ax_coll_ireduce_scatter(g, axis, send, recv, n_per_rank, t, op, &req));
    return ax_wait(&req);
}

ax_status ax_coll_bcast(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, int root_coord) {
    const char *name = name_of(N_BCAST, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_BCAST, n, t, AX_OP_SUM, &p));
    if (root_coord < 0 || root_coord >= p)
        return ax_errorf(AX_ERR_ARG, "%s over %s: root coordinate %d is outside 0..%d", name,
                         ax_axis_name(axis), root_coord, p - 1);
    if (p == 1 || n == 0) return AX_OK;
    double t0 = wait_begin(name, axis);
    int rc = MPI_Bcast(buf, (int)n, mpi_type(t), root_coord, ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

ax_status ax_coll_alltoall(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                           void *recv, ax_dtype t) {
    const char *name = name_of(N_ALLTOALL, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLTOALL, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) {
        copy_local(recv, send, n_per_rank, t);
        return AX_OK;
    }
    double t0 = wait_begin(name, axis);
    int rc = MPI_Alltoall(send, (int)n_per_rank, mpi_type(t), recv, (int)n_per_rank, mpi_type(t),
                          ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

ax_status ax_coll_alltoallv(ax_grid_t *g, ax_axis axis, const void *send, const int *scounts,
                            const int *sdispls, void *recv, const int *rcounts, const int *rdispls,
                            ax_dtype t) {
    const char *name = name_of(N_ALLTOALLV, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(check(g, axis, name, 0, t, AX_OP_SUM, &p));
    int me = ax_grid_coord(g, axis), e = ax_dtype_size(t);
    double sent = 0;
    for (int r = 0; r < p; r++) {
        if (scounts[r] < 0 || rcounts[r] < 0)
            return ax_errorf(AX_ERR_ARG, "%s over %s: negative count for coordinate %d", name,
                             ax_axis_name(axis), r);
        if (r != me) sent += (double)scounts[r] * e;
    }
    count(g, axis, AX_COMM_ALLTOALL, sent);
    if (p == 1) {
        if (rcounts[0] != scounts[0])
            return ax_errorf(AX_ERR_ARG, "%s over %s: sends %d elements to itself but expects %d",
                             name, ax_axis_name(axis), scounts[0], rcounts[0]);
        copy_local((char *)recv + (long)rdispls[0] * e, (const char *)send + (long)sdispls[0] * e,
                   scounts[0], t);
        return AX_OK;
    }
    double t0 = wait_begin(name, axis);
    int rc = MPI_Alltoallv(send, scounts, sdispls, mpi_type(t), recv, rcounts, rdispls, mpi_type(t),
                           ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

static ax_status p2p_check(ax_grid_t *g, ax_axis axis, const char *name, long n, ax_dtype t,
                           int peer, int tag, int *p) {
    AX_CHECK(check(g, axis, name, n, t, AX_OP_SUM, p));
    if (peer < 0 || peer >= *p || peer == ax_grid_coord(g, axis))
        return ax_errorf(AX_ERR_ARG, "%s over %s: peer coordinate %d is not another rank of 0..%d",
                         name, ax_axis_name(axis), peer, *p - 1);
    if (tag < 0 || tag > 255)
        return ax_errorf(AX_ERR_ARG, "%s over %s: tag %d is outside 0..255", name,
                         ax_axis_name(axis), tag);
    return AX_OK;
}

ax_status ax_coll_send(ax_grid_t *g, ax_axis axis, const void *buf, long n, ax_dtype t, int peer,
                       int tag) {
    const char *name = name_of(N_SEND, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(p2p_check(g, axis, name, n, t, peer, tag, &p));
    count(g, axis, AX_COMM_SEND, ax_comm_volume(AX_COMM_SEND, p, n, ax_dtype_size(t)));
    double t0 = wait_begin(name, axis);
    int rc =
        MPI_Send(buf, (int)n, mpi_type(t), peer, P2P_TAG_BASE + tag, ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, name);
}

ax_status ax_coll_recv(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, int peer,
                       int tag) {
    const char *name = name_of(N_RECV, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(p2p_check(g, axis, name, n, t, peer, tag, &p));
    double t0 = wait_begin(name, axis);
    MPI_Status status;
    int rc = MPI_Recv(buf, (int)n, mpi_type(t), peer, P2P_TAG_BASE + tag, ax_grid_mpi_comm(g, axis),
                      &status);
    AX_CHECK(waited(g, axis, t0, rc, name));
    int got = 0;
    MPI_Get_count(&status, mpi_type(t), &got);
    if (got != (int)n)
        return ax_errorf(AX_ERR_MPI, "%s over %s: coordinate %d sent %d elements, expected %ld",
                         name, ax_axis_name(axis), peer, got, n);
    return AX_OK;
}

ax_status ax_barrier(ax_grid_t *g, ax_axis axis) {
    int p = 1;
    AX_CHECK(check(g, axis, "barrier", 0, AX_DT_U8, AX_OP_SUM, &p));
    if (p == 1) return AX_OK;
    double t0 = wait_begin("barrier", axis);
    int rc = MPI_Barrier(ax_grid_mpi_comm(g, axis));
    return waited(g, axis, t0, rc, "barrier");
}

ax_status ax_coll_agree(ax_grid_t *g, ax_axis axis, ax_status st, const char *what) {
    uint64_t v = (uint64_t)st;
    ax_status rs = ax_coll_allreduce(g, axis, &v, 1, AX_DT_U64, AX_OP_MAX);
    if (rs != AX_OK) return rs;
    if (v != AX_OK && st == AX_OK)
        return ax_errorf((ax_status)v, "%s: another rank failed (see its message)", what);
    return (ax_status)v;
}

/* ---- float32 wrappers ---- */

ax_status ax_allreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n) {
    return ax_coll_allreduce(g, axis, buf, n, AX_DT_F32, AX_OP_SUM);
}
ax_status ax_allreduce_max(ax_grid_t *g, ax_axis axis, float *buf, long n) {
    return ax_coll_allreduce(g, axis, buf, n, AX_DT_F32, AX_OP_MAX);
}
ax_status ax_allreduce_sum_f64(ax_grid_t *g, ax_axis axis, double *buf, long n) {
    return ax_coll_allreduce(g, axis, buf, n, AX_DT_F64, AX_OP_SUM);
}
ax_status ax_allreduce_max_f64(ax_grid_t *g, ax_axis axis, double *buf, long n) {
    return ax_coll_allreduce(g, axis, buf, n, AX_DT_F64, AX_OP_MAX);
}
ax_status ax_allgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank,
                       float *recv) {
    return ax_coll_allgather(g, axis, send, n_per_rank, recv, AX_DT_F32);
}
ax_status ax_reduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                            long n_per_rank) {
    return ax_coll_reduce_scatter(g, axis, send, recv, n_per_rank, AX_DT_F32, AX_OP_SUM);
}
ax_status ax_bcast(ax_grid_t *g, ax_axis axis, float *buf, long n, int root_coord) {
    return ax_coll_bcast(g, axis, buf, n, AX_DT_F32, root_coord);
}
ax_status ax_bcast_bytes(ax_grid_t *g, ax_axis axis, void *buf, long nbytes, int root_coord) {
    return ax_coll_bcast(g, axis, buf, nbytes, AX_DT_U8, root_coord);
}

/* ---- non-blocking ---- */

static ax_status issued(ax_req *req, int rc, const char *name) {
    if (rc != MPI_SUCCESS) return mpi_fail(name, (ax_axis)req->axis, rc);
    req->nh = 1;
    req->active = 1;
    return AX_OK;
}

ax_status ax_coll_iallreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, ax_redop op,
                             ax_req *req) {
    const char *name = name_of(N_IALLREDUCE, op, t);
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLREDUCE, t, op);
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLREDUCE, n, t, op, &p));
    if (p == 1 || n == 0) return AX_OK;
    MPI_Op mop;
    int rc = mpi_op(t, op, &mop);
    if (rc == MPI_SUCCESS)
        rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(t), mop, ax_grid_mpi_comm(g, axis),
                            &handles(req)[0]);
    return issued(req, rc, name);
}

ax_status ax_coll_iallgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                             void *recv, ax_dtype t, ax_req *req) {
    const char *name = name_of(N_IALLGATHER, AX_OP_SUM, t);
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLGATHER, t, AX_OP_SUM);
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLGATHER, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) {
        copy_local(recv, send, n_per_rank, t);
        return AX_OK;
    }
    return issued(req,
                  MPI_Iallgather(gather_src(g, axis, send, n_per_rank, recv, t), (int)n_per_rank,
                                 mpi_type(t), recv, (int)n_per_rank, mpi_type(t),
                                 ax_grid_mpi_comm(g, axis), &handles(req)[0]),
                  name);
}

/* Ring reduce-scatter: p-1 steps. At step s a rank sends its running partial (kept in recv)
 * to coord+1 and receives one from coord-1 into tmp, then recv = tmp (op) own block.
 * Rank r starts with block r-1 and each step moves one block down, so after p-1 steps recv
 * holds block r reduced over all p ranks. Hand-written because Open MPI 4.1's
 * reduce_scatter_block was ~5x slower than this on 2 ranks; and its steps advance inside
 * ax_req_progress, which is where a polling compute loop gives it progress. */
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

/* Completes finished steps and posts the next; blocking: MPI_Waitall instead of Testall.
 * Returns 1 when the whole reduce-scatter is done (or failed). */
static int rs_advance(ax_req *q, int blocking) {
    long e = ax_dtype_size((ax_dtype)q->dtype);
    while (q->active) {
        int flag = 1, rc;
        if (blocking)
            rc = MPI_Waitall(q->nh, handles(q), MPI_STATUSES_IGNORE);
        else
            rc = MPI_Testall(q->nh, handles(q), &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            rs_finish(q, mpi_fail("reduce-scatter", (ax_axis)q->axis, rc));
            return 1;
        }
        if (!flag) return 0;
        const char *own = (const char *)q->send + rs_block(q, q->step) * q->n * e;
        combine((ax_dtype)q->dtype, (ax_redop)q->op, q->recv, q->tmp, own, q->n);
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

ax_status ax_coll_ireduce_scatter(ax_grid_t *g, ax_axis axis, const void *send, void *recv,
                                  long n_per_rank, ax_dtype t, ax_redop op, ax_req *req) {
    int p = 1;
    req_init(req, g, axis, AX_COMM_REDUCE_SCATTER, t, op);
    AX_CHECK(begin(g, axis, "reduce-scatter", AX_COMM_REDUCE_SCATTER, n_per_rank, t, op, &p));
    if (p == 1 || n_per_rank == 0) {
        copy_local(recv, send, n_per_rank, t);
        return AX_OK;
    }
    size_t bytes = (size_t)n_per_rank * (size_t)ax_dtype_size(t);
    req->p = p;
    req->coord = ax_grid_coord(g, axis);
    req->tag = ax_grid_next_tag_(g, axis);
    req->n = n_per_rank;
    req->send = send;
    req->recv = recv;
    req->tmp = malloc(bytes);
    if (!req->tmp)
        return ax_errorf(AX_ERR_NOMEM, "reduce-scatter over %s: no memory for a %ld-element buffer",
                         ax_axis_name(axis), n_per_rank);
    /* step 0 sends this rank's own contribution to block coord-1 */
    memcpy(recv, (const char *)send + (size_t)((req->coord + p - 1) % p) * bytes, bytes);
    req->active = 1;
    ax_status st = rs_post(req);
    if (st != AX_OK) rs_finish(req, st);
    return st;
}

ax_status ax_iallreduce_sum(ax_grid_t *g, ax_axis axis, float *buf, long n, ax_req *req) {
    return ax_coll_iallreduce(g, axis, buf, n, AX_DT_F32, AX_OP_SUM, req);
}
ax_status ax_iallgather(ax_grid_t *g, ax_axis axis, const float *send, long n_per_rank, float *recv,
                        ax_req *req) {
    return ax_coll_iallgather(g, axis, send, n_per_rank, recv, AX_DT_F32, req);
}
ax_status ax_ireduce_scatter(ax_grid_t *g, ax_axis axis, const float *send, float *recv,
                             long n_per_rank, ax_req *req) {
    return ax_coll_ireduce_scatter(g, axis, send, recv, n_per_rank, AX_DT_F32, AX_OP_SUM, req);
}

static const char *req_name(const ax_req *req) {
    return ax_comm_kind_name((ax_comm_kind)req->kind);
}

ax_status ax_req_progress(ax_req *req) {
    if (!req->active) return req->err;
    double t0 = ax_now();
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        rs_advance(req, 0);
    } else {
        int done = 0;
        int rc = MPI_Test(&handles(req)[0], &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            req->err = mpi_fail(req_name(req), (ax_axis)req->axis, rc);
            done = 1;
        }
        if (done) req->active = 0;
    }
    ax_grid_stats_(req->g)->test_s += ax_now() - t0;
    return req->err;
}

int ax_test(ax_req *req) {
    ax_req_progress(req);
    return !req->active;
}

ax_status ax_wait(ax_req *req) {
    if (!req->active) return req->err;
    double t0 = wait_begin(req_name(req), (ax_axis)req->axis);
    if (req->kind == AX_COMM_REDUCE_SCATTER) {
        rs_advance(req, 1);
    } else {
        int rc = MPI_Wait(&handles(req)[0], MPI_STATUS_IGNORE);
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

/* {"kind": {"axis": value, ...}, ...}: bytes as numbers, call counts as integers */
static void kind_axis_table(ax_jw *w, const char *key, const double (*bytes)[AX_AXIS_COUNT],
                            const long (*calls)[AX_AXIS_COUNT]) {
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_COMM_KINDS; k++) {
        ax_jw_key(w, ax_comm_kind_name((ax_comm_kind)k));
        ax_jw_obj_begin(w);
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            ax_jw_key(w, ax_axis_name((ax_axis)a));
            if (bytes)
                ax_jw_num(w, bytes[k][a]);
            else
                ax_jw_int(w, calls[k][a]);
        }
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
}

void ax_comm_stats_json(const ax_comm_stats *s, ax_jw *w) {
    ax_jw_obj_begin(w);
    kind_axis_table(w, "comm_bytes", s->bytes, NULL);
    kind_axis_table(w, "comm_calls", NULL, s->calls);
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
