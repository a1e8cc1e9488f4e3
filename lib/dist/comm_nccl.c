/* The NCCL transport (lib/dist/comm_transport.h) for grids whose buffers are GPU memory
 * (--comm nccl, or auto on a GPU run; lib/dist/comm.h). Built only with CUDA and NCCL
 * (SConstruct: AX_HAVE_NCCL), into the CUDA plugin (lib/core/plugin.h), not into lib/dist: the
 * front end (comm.c) looks up ax_transport_nccl and ax_nccl_use_ there by name, and the calls
 * below into lib/dist and lib/core resolve to the executable's own copies.
 *
 * One NCCL communicator and one communication stream per grid axis, made on the axis's first
 * device collective (every rank along the axis issues it, so the lazy creation is collective
 * there): coordinate 0 draws the unique id and broadcasts it over the axis's MPI communicator
 * (lib/dist/grid_mpi.h), then ncclCommInitRank(p, id, coord). Every collective runs on the
 * axis's stream, ordered after the compute stream (the memory hook's stream) by an event, and
 * the compute stream waits for its end by another event, so the caller's later kernels see the
 * result and a blocking call never blocks the host. Non-blocking requests keep their end event:
 * progress is cudaEventQuery, wait makes the compute stream wait for it (the buffer is read by
 * later kernels on that stream; the host reads device memory only through the backend's
 * copies, which are ordered on the same stream). Alltoall(v) and point to point are grouped
 * ncclSend/ncclRecv (NCCL matches messages per peer in order, so the tag is not needed).
 * bf16 reduces in NCCL's own bf16 arithmetic, not ax_reduce_local's f32-and-round: results may
 * differ from the MPI transport in the last bit. Buffers are device memory: the front end sends
 * host buffers (scalars, memscan's index) to the MPI transport.
 *
 * Not run on a GPU yet (bench/device_check.sh runs it); compiled and linked in CI. */
#include "lib/dist/comm_transport.h"
#include "lib/dist/grid_mpi.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ncclComm_t comm[AX_AXIS_COUNT];
    cudaStream_t stream[AX_AXIS_COUNT];
    int use[AX_AXIS_COUNT]; /* 0 undecided, 1 NCCL, -1 host-staged MPI (ax_nccl_use_) */
} nccl_state;

static void state_free(void *p) {
    nccl_state *s = p;
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        if (s->stream[a]) cudaStreamSynchronize(s->stream[a]);
        if (s->comm[a]) ncclCommDestroy(s->comm[a]);
        if (s->stream[a]) cudaStreamDestroy(s->stream[a]);
    }
    free(s);
}

static nccl_state *state_of(ax_grid_t *g) {
    nccl_state *s = ax_grid_ext_(g);
    if (!s && (s = calloc(1, sizeof *s)) != NULL) ax_grid_set_ext_(g, s, state_free);
    return s;
}

static ax_status nccl_fail(const char *name, ax_axis axis, const char *what, ncclResult_t r) {
    return ax_errorf(AX_ERR_MPI, "%s over the %s axis failed: %s: %s (NCCL; --comm mpi avoids it)",
                     name, ax_axis_name(axis), what, ncclGetErrorString(r));
}

static ax_status cuda_fail(const char *name, ax_axis axis, const char *what, cudaError_t e) {
    return ax_errorf(AX_ERR_MPI, "%s over the %s axis failed: %s: %s", name, ax_axis_name(axis),
                     what, cudaGetErrorString(e));
}

/* The axis's communicator and stream, made on first use (collective along the axis). */
static ax_status axis_comm(ax_grid_t *g, ax_axis axis, const char *name, ncclComm_t *comm,
                           cudaStream_t *stream) {
    nccl_state *s = state_of(g);
    if (!s) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory for NCCL state", name);
    if (!s->comm[axis]) {
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        int coord = ax_grid_coord(g, axis), p = ax_grid_dim(g, axis);
        if (coord == 0) {
            ncclResult_t r = ncclGetUniqueId(&id);
            if (r != ncclSuccess) return nccl_fail(name, axis, "ncclGetUniqueId", r);
        }
        if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, ax_grid_mpi_comm(g, axis)) != MPI_SUCCESS)
            return ax_errorf(AX_ERR_MPI, "%s over the %s axis: broadcasting the NCCL id failed",
                             name, ax_axis_name(axis));
        cudaError_t e = cudaStreamCreateWithFlags(&s->stream[axis], cudaStreamNonBlocking);
        if (e != cudaSuccess) return cuda_fail(name, axis, "cudaStreamCreate", e);
        ncclResult_t r = ncclCommInitRank(&s->comm[axis], p, id, coord);
        if (r != ncclSuccess) {
            s->comm[axis] = NULL;
            return nccl_fail(name, axis, "ncclCommInitRank", r);
        }
    }
    *comm = s->comm[axis];
    *stream = s->stream[axis];
    return AX_OK;
}

/* Ranks on this node, from the launcher's environment (Open MPI, MPICH, Slurm); 1 if unknown. */
static int local_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 1;
}

int ax_nccl_use_(ax_grid_t *g, ax_axis axis, int forced) {
    nccl_state *s = state_of(g);
    if (!s) return 0; /* out of memory: the staged path still works */
    if (!s->use[axis]) {
        /* --comm auto: NCCL refuses two ranks on one GPU, so it is used only when this node has
         * a device per rank; every rank along the axis agrees (the MIN of their verdicts) */
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) cudaGetLastError(), n = 0;
        int ok = forced || (n > 0 && local_size() <= n), all = ok;
        if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ax_grid_mpi_comm(g, axis)) != MPI_SUCCESS)
            all = 0;
        s->use[axis] = all ? 1 : -1;
    }
    return s->use[axis] == 1;
}

static ncclDataType_t nccl_type(ax_dtype t) {
    switch (t) {
    case AX_DT_F64:
        return ncclFloat64;
    case AX_DT_BF16:
        return ncclBfloat16;
    case AX_DT_I32:
        return ncclInt32;
    case AX_DT_U64:
        return ncclUint64;
    case AX_DT_U8:
        return ncclUint8;
    default:
        return ncclFloat32;
    }
}

static ncclRedOp_t nccl_op(ax_redop op) {
    return op == AX_OP_MAX ? ncclMax : op == AX_OP_MIN ? ncclMin : ncclSum;
}

static cudaStream_t compute_stream(const ax_grid_t *g) {
    const ax_comm_memory *m = ax_grid_memory(g);
    return m ? (cudaStream_t)m->stream : 0;
}

/* `from` waits for everything enqueued on `to_wait_for` so far */
static ax_status order(const char *name, ax_axis axis, cudaStream_t to_wait_for,
                       cudaStream_t from) {
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ev, to_wait_for);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(from, ev, 0);
    cudaEventDestroy(ev); /* released once the work it marks is done */
    return e == cudaSuccess ? AX_OK : cuda_fail(name, axis, "ordering the streams", e);
}

/* The bracket around one NCCL operation: begin orders the axis stream after the compute stream
 * (the inputs are written); end orders the compute stream after the operation (the outputs are
 * read by later kernels). */
typedef struct {
    ncclComm_t comm;
    cudaStream_t s, compute;
} op_ctx;

static ax_status begin_op(ax_grid_t *g, ax_axis axis, const char *name, op_ctx *o) {
    AX_CHECK(axis_comm(g, axis, name, &o->comm, &o->s));
    o->compute = compute_stream(g);
    return order(name, axis, o->compute, o->s);
}

static ax_status end_op(ax_axis axis, const char *name, const op_ctx *o, ncclResult_t r) {
    if (r != ncclSuccess) return nccl_fail(name, axis, "enqueueing the collective", r);
    return order(name, axis, o->s, o->compute);
}

#define ELEM(t) ((size_t)ax_dtype_size(t))

static ax_status n_allreduce(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                             ax_dtype t, ax_redop op) {
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    return end_op(axis, name, &o,
                  ncclAllReduce(buf, buf, (size_t)n, nccl_type(t), nccl_op(op), o.comm, o.s));
}

static ax_status n_allgather(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                             long n_per_rank, void *recv, ax_dtype t) {
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    return end_op(axis, name, &o,
                  ncclAllGather(send, recv, (size_t)n_per_rank, nccl_type(t), o.comm, o.s));
}

static ax_status n_bcast(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n,
                         ax_dtype t, int root_coord) {
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    return end_op(axis, name, &o,
                  ncclBroadcast(buf, buf, (size_t)n, nccl_type(t), root_coord, o.comm, o.s));
}

/* grouped sends and receives: to coordinate r, scounts[r] elements from send + sdispls[r];
 * from r, rcounts[r] into recv + rdispls[r] (NULL arrays: n_per_rank blocks in order) */
static ax_status exchange(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                          const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                          const int *rdispls, long n_per_rank, ax_dtype t) {
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    int p = ax_grid_dim(g, axis);
    size_t e = ELEM(t);
    ncclDataType_t nt = nccl_type(t);
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < p && r == ncclSuccess; i++) {
        size_t sc = scounts ? (size_t)scounts[i] : (size_t)n_per_rank;
        size_t so = sdispls ? (size_t)sdispls[i] : (size_t)i * (size_t)n_per_rank;
        size_t rc = rcounts ? (size_t)rcounts[i] : (size_t)n_per_rank;
        size_t ro = rdispls ? (size_t)rdispls[i] : (size_t)i * (size_t)n_per_rank;
        if (sc) r = ncclSend((const char *)send + so * e, sc, nt, i, o.comm, o.s);
        if (r == ncclSuccess && rc) r = ncclRecv((char *)recv + ro * e, rc, nt, i, o.comm, o.s);
    }
    ncclResult_t r2 = ncclGroupEnd();
    return end_op(axis, name, &o, r != ncclSuccess ? r : r2);
}

static ax_status n_alltoall(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                            long n_per_rank, void *recv, ax_dtype t) {
    return exchange(g, axis, name, send, NULL, NULL, recv, NULL, NULL, n_per_rank, t);
}

static ax_status n_alltoallv(ax_grid_t *g, ax_axis axis, const char *name, const void *send,
                             const int *scounts, const int *sdispls, void *recv, const int *rcounts,
                             const int *rdispls, ax_dtype t) {
    return exchange(g, axis, name, send, scounts, sdispls, recv, rcounts, rdispls, 0, t);
}

static ax_status n_send(ax_grid_t *g, ax_axis axis, const char *name, const void *buf, long n,
                        ax_dtype t, int peer, int tag) {
    (void)tag; /* NCCL matches per peer in issue order */
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    return end_op(axis, name, &o, ncclSend(buf, (size_t)n, nccl_type(t), peer, o.comm, o.s));
}

static ax_status n_recv(ax_grid_t *g, ax_axis axis, const char *name, void *buf, long n, ax_dtype t,
                        int peer, int tag) {
    (void)tag;
    op_ctx o;
    AX_CHECK(begin_op(g, axis, name, &o));
    return end_op(axis, name, &o, ncclRecv(buf, (size_t)n, nccl_type(t), peer, o.comm, o.s));
}

/* a barrier carries no device data: the MPI one */
static ax_status n_barrier(ax_grid_t *g, ax_axis axis) {
    return ax_transport_mpi()->barrier(g, axis);
}

/* ---- non-blocking: the request holds the operation's end event (handle[0]) ---- */

/* records the end event of a just enqueued operation into req */
static ax_status issued(ax_req *req, const char *name, const op_ctx *o, ncclResult_t r) {
    ax_axis axis = (ax_axis)req->axis;
    if (r != ncclSuccess) return nccl_fail(name, axis, "enqueueing the collective", r);
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ev, o->s);
    if (e != cudaSuccess) return cuda_fail(name, axis, "recording the request's event", e);
    req->handle[0] = (uint64_t)(uintptr_t)ev;
    req->nh = 1;
    req->active = 1;
    return AX_OK;
}

static ax_status n_iallreduce(ax_req *req, const char *name, void *buf, long n) {
    op_ctx o;
    AX_CHECK(begin_op(req->g, (ax_axis)req->axis, name, &o));
    return issued(req, name, &o,
                  ncclAllReduce(buf, buf, (size_t)n, nccl_type((ax_dtype)req->dtype),
                                nccl_op((ax_redop)req->op), o.comm, o.s));
}

static ax_status n_iallgather(ax_req *req, const char *name, const void *send, long n_per_rank,
                              void *recv) {
    op_ctx o;
    AX_CHECK(begin_op(req->g, (ax_axis)req->axis, name, &o));
    return issued(req, name, &o,
                  ncclAllGather(send, recv, (size_t)n_per_rank, nccl_type((ax_dtype)req->dtype),
                                o.comm, o.s));
}

static ax_status n_ireduce_scatter(ax_req *req, const char *name, const void *send, void *recv,
                                   long n_per_rank) {
    op_ctx o;
    AX_CHECK(begin_op(req->g, (ax_axis)req->axis, name, &o));
    return issued(req, name, &o,
                  ncclReduceScatter(send, recv, (size_t)n_per_rank, nccl_type((ax_dtype)req->dtype),
                                    nccl_op((ax_redop)req->op), o.comm, o.s));
}

/* the request is done: the compute stream waits for its event (later kernels read the result) */
static void finish(ax_req *req) {
    cudaEvent_t ev = (cudaEvent_t)(uintptr_t)req->handle[0];
    cudaError_t e = cudaStreamWaitEvent(compute_stream(req->g), ev, 0);
    if (e != cudaSuccess && req->err == AX_OK)
        req->err = cuda_fail(ax_comm_kind_name((ax_comm_kind)req->kind), (ax_axis)req->axis,
                             "cudaStreamWaitEvent", e);
    cudaEventDestroy(ev);
    req->handle[0] = 0;
    req->nh = 0;
    req->active = 0;
}

static void n_progress(ax_req *req) {
    cudaEvent_t ev = (cudaEvent_t)(uintptr_t)req->handle[0];
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaErrorNotReady) return;
    if (e != cudaSuccess && req->err == AX_OK)
        req->err = cuda_fail(ax_comm_kind_name((ax_comm_kind)req->kind), (ax_axis)req->axis,
                             "cudaEventQuery", e);
    finish(req);
}

/* a stream wait, not a host wait: the buffer's readers are kernels on the compute stream */
static void n_wait(ax_req *req) {
    finish(req);
}

static const ax_transport nccl_transport = {
    .name = "nccl",
    .allreduce = n_allreduce,
    .allgather = n_allgather,
    .bcast = n_bcast,
    .alltoall = n_alltoall,
    .alltoallv = n_alltoallv,
    .send = n_send,
    .recv = n_recv,
    .barrier = n_barrier,
    .iallreduce = n_iallreduce,
    .iallgather = n_iallgather,
    .ireduce_scatter = n_ireduce_scatter,
    .progress = n_progress,
    .wait = n_wait,
};

const ax_transport *ax_transport_nccl(void) {
    return &nccl_transport;
}
