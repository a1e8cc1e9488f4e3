/* TEST-ONLY: the NCCL stand-in of nccl.h over MPI, on the emulated device memory (opened for
 * the duration of each operation, as the emulator does for kernels and copies). Streams are
 * synchronous in the emulator, so each operation completes before it returns. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

struct ax_emu_nccl_comm {
    MPI_Comm c;
    int rank, size;
};

static long g_calls;
long ax_emu_nccl_calls(void) {
    return g_calls;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclInvalidArgument:
        return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage:
        return "invalid usage (emulated NCCL)";
    default:
        return "error (emulated NCCL)";
    }
}

/* the id names its creator (world rank) and a per-creator sequence number */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static int seq;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &me, sizeof me);
    seq++;
    memcpy(id->internal + sizeof me, &seq, sizeof seq);
    return ncclSuccess;
}

/* AX_EMU_NCCL_REPORT=1: a line at exit, so a test sees the transport was used */
static int g_comms;
static void report(void) {
    fprintf(stderr, "emulated NCCL: %d communicators, %ld operations\n", g_comms, g_calls);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    const char *r = getenv("AX_EMU_NCCL_REPORT");
    if (g_comms++ == 0 && r && *r == '1') atexit(report);
    int creator;
    memcpy(&creator, id.internal, sizeof creator);
    struct ax_emu_nccl_comm *c = calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    /* every world rank splits at once; the ranks of one id form one communicator, ordered by
     * the rank each gave */
    if (MPI_Comm_split(MPI_COMM_WORLD, creator, rank, &c->c) != MPI_SUCCESS) {
        free(c);
        return ncclSystemError;
    }
    MPI_Comm_rank(c->c, &c->rank);
    MPI_Comm_size(c->c, &c->size);
    if (c->size != nranks || c->rank != rank) {
        fprintf(stderr,
                "emulated NCCL: communicator of %d ranks (this one %d) where %d (rank %d) were "
                "asked: did every rank create its communicator for this axis together?\n",
                c->size, c->rank, nranks, rank);
        MPI_Comm_free(&c->c);
        free(c);
        return ncclInvalidUsage;
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    MPI_Comm_free(&comm->c);
    free(comm);
    return ncclSuccess;
}

/* ---- data types and reductions; bf16 as NCCL does it: each sum rounded back to bf16 ---- */

static float bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint16_t f_to_bf16(float f) { /* round to nearest even (no NaN inputs here) */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
#define BF16_OP(name, expr)                                                                        \
    static void name(void *in, void *inout, int *len, MPI_Datatype *t) {                           \
        (void)t;                                                                                   \
        const uint16_t *a = in;                                                                    \
        uint16_t *b = inout;                                                                       \
        for (int i = 0; i < *len; i++) {                                                           \
            float x = bf16_to_f(a[i]), y = bf16_to_f(b[i]);                                        \
            b[i] = f_to_bf16(expr);                                                                \
        }                                                                                          \
    }
BF16_OP(bf16_sum, x + y)
BF16_OP(bf16_max, x > y ? x : y)
BF16_OP(bf16_min, x < y ? x : y)

static int mpi_type(ncclDataType_t t, MPI_Datatype *m, size_t *size) {
    switch (t) {
    case ncclInt8:
        *m = MPI_INT8_T, *size = 1;
        return 1;
    case ncclUint8:
        *m = MPI_UINT8_T, *size = 1;
        return 1;
    case ncclInt32:
        *m = MPI_INT32_T, *size = 4;
        return 1;
    case ncclUint32:
        *m = MPI_UINT32_T, *size = 4;
        return 1;
    case ncclInt64:
        *m = MPI_INT64_T, *size = 8;
        return 1;
    case ncclUint64:
        *m = MPI_UINT64_T, *size = 8;
        return 1;
    case ncclFloat32:
        *m = MPI_FLOAT, *size = 4;
        return 1;
    case ncclFloat64:
        *m = MPI_DOUBLE, *size = 8;
        return 1;
    case ncclBfloat16:
        *m = MPI_UINT16_T, *size = 2;
        return 1;
    default:
        return 0;
    }
}

static int mpi_op(ncclRedOp_t op, ncclDataType_t t, MPI_Op *m) {
    static MPI_Op bf[3];
    static int made;
    if (t == ncclBfloat16) {
        if (!made) {
            MPI_Op_create(bf16_sum, 1, &bf[0]);
            MPI_Op_create(bf16_max, 1, &bf[1]);
            MPI_Op_create(bf16_min, 1, &bf[2]);
            made = 1;
        }
        if (op == ncclSum)
            *m = bf[0];
        else if (op == ncclMax)
            *m = bf[1];
        else if (op == ncclMin)
            *m = bf[2];
        else
            return 0;
        return 1;
    }
    if (op == ncclSum)
        *m = MPI_SUM;
    else if (op == ncclMax)
        *m = MPI_MAX;
    else if (op == ncclMin)
        *m = MPI_MIN;
    else if (op == ncclProd)
        *m = MPI_PROD;
    else
        return 0;
    return 1;
}

static ncclResult_t done(int mpi_rc) {
    ax_emu_close();
    g_calls++;
    return mpi_rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

static int bad_count(size_t n) {
    return n > (size_t)INT32_MAX;
}

/* a reduction's MPI type, element size and operation; 0 when an argument is invalid */
static int reduction_args(ncclComm_t comm, size_t count, ncclDataType_t t, ncclRedOp_t op,
                          MPI_Datatype *mt, size_t *es, MPI_Op *mo) {
    return comm && mpi_type(t, mt, es) && mpi_op(op, t, mo) && !bad_count(count);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
    (void)s;
    MPI_Datatype mt;
    MPI_Op mo;
    size_t es;
    if (!reduction_args(comm, count, t, op, &mt, &es, &mo)) return ncclInvalidArgument;
    ax_emu_open();
    return done(
        MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, mt, mo, comm->c));
}

/* recv holds the ranks' blocks of sendcount in rank order; in place when send is this rank's */
ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s) {
    (void)s;
    MPI_Datatype mt;
    size_t es;
    if (!comm || !mpi_type(t, &mt, &es) || bad_count(sendcount)) return ncclInvalidArgument;
    int inplace = (const char *)send == (const char *)recv + (size_t)comm->rank * sendcount * es;
    ax_emu_open();
    return done(MPI_Allgather(inplace ? MPI_IN_PLACE : send, (int)sendcount, mt, recv,
                              (int)sendcount, mt, comm->c));
}

/* this rank's block of recvcount of the reduction of every rank's send[size * recvcount] */
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
    (void)s;
    MPI_Datatype mt;
    MPI_Op mo;
    size_t es;
    if (!reduction_args(comm, recvcount, t, op, &mt, &es, &mo)) return ncclInvalidArgument;
    ax_emu_open();
    const char *in = send;
    void *tmp = NULL;
    if ((const char *)recv >= in && (const char *)recv < in + (size_t)comm->size * recvcount * es) {
        /* in place (NCCL: recv is this rank's block of send): MPI wants them apart */
        tmp = malloc((size_t)comm->size * recvcount * es);
        if (!tmp) {
            ax_emu_close();
            return ncclSystemError;
        }
        memcpy(tmp, in, (size_t)comm->size * recvcount * es);
        in = tmp;
    }
    int rc = MPI_Reduce_scatter_block(in, recv, (int)recvcount, mt, mo, comm->c);
    free(tmp);
    return done(rc);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t s) {
    (void)s;
    MPI_Datatype mt;
    size_t es;
    if (!comm || !mpi_type(t, &mt, &es) || bad_count(count) || root < 0 || root >= comm->size)
        return ncclInvalidArgument;
    ax_emu_open();
    if (comm->rank == root && send != recv) memmove(recv, send, count * es);
    return done(MPI_Bcast(recv, (int)count, mt, root, comm->c));
}

/* ---- point to point: alone, or grouped between ncclGroupStart and ncclGroupEnd ---- */

typedef struct {
    int is_send;
    void *buf;
    int count, peer;
    MPI_Datatype t;
    MPI_Comm c;
} p2p;
static p2p *g_ops;
static int g_nops, g_capops, g_depth;
#define P2P_TAG 4242 /* NCCL matches per peer in issue order; so does one MPI tag */

static ncclResult_t p2p_add(int is_send, const void *buf, size_t count, ncclDataType_t t, int peer,
                            ncclComm_t comm) {
    MPI_Datatype mt;
    size_t es;
    if (!comm || !mpi_type(t, &mt, &es) || bad_count(count) || peer < 0 || peer >= comm->size)
        return ncclInvalidArgument;
    if (!g_depth) { /* alone: blocking, as the stream would be */
        ax_emu_open();
        if (is_send) return done(MPI_Send(buf, (int)count, mt, peer, P2P_TAG, comm->c));
        return done(
            MPI_Recv((void *)buf, (int)count, mt, peer, P2P_TAG, comm->c, MPI_STATUS_IGNORE));
    }
    if (g_nops == g_capops) {
        int cap = g_capops ? 2 * g_capops : 16;
        p2p *n = realloc(g_ops, sizeof *n * (size_t)cap);
        if (!n) return ncclSystemError;
        g_ops = n, g_capops = cap;
    }
    g_ops[g_nops++] = (p2p){is_send, (void *)buf, (int)count, peer, mt, comm->c};
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
    (void)s;
    return p2p_add(1, buf, count, t, peer, comm);
}
ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
    (void)s;
    return p2p_add(0, buf, count, t, peer, comm);
}

ncclResult_t ncclGroupStart(void) {
    g_depth++;
    return ncclSuccess;
}

/* the outermost end posts the group's receives, then its sends, and waits for all */
ncclResult_t ncclGroupEnd(void) {
    if (g_depth <= 0) return ncclInvalidUsage;
    if (--g_depth) return ncclSuccess;
    int n = g_nops, rc = MPI_SUCCESS;
    g_nops = 0;
    if (!n) return ncclSuccess;
    MPI_Request *req = malloc(sizeof *req * (size_t)n);
    if (!req) return ncclSystemError;
    ax_emu_open();
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            p2p *o = &g_ops[i];
            if (o->is_send != pass) continue;
            int r = o->is_send ? MPI_Isend(o->buf, o->count, o->t, o->peer, P2P_TAG, o->c, &req[k])
                               : MPI_Irecv(o->buf, o->count, o->t, o->peer, P2P_TAG, o->c, &req[k]);
            if (r != MPI_SUCCESS) rc = r;
            k++;
        }
    int w = MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    free(req);
    return done(rc != MPI_SUCCESS ? rc : w);
}
