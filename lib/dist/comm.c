/* The backend-neutral front end of lib/dist/comm.h: argument checks, the size-1 shortcuts,
 * traffic accounting, the stall watchdog's marks, the test-only failure hook, element types and
 * the local combine (shared by every transport and by the tests' references). What moves the
 * bytes is the grid's transport (lib/dist/comm_transport.h; MPI: lib/dist/comm_mpi.c). */
#include "lib/dist/comm_transport.h"
#include "lib/core/plugin.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

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
 * sum of the training path vectorises. */
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

void ax_comm_combine_(ax_dtype t, ax_redop op, void *out, const void *a, const void *b, long n) {
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
    ax_comm_combine_(t, op, acc, acc, in, n);
}

/* ---- transport choice ---- */

static const char *comm_choice = "auto";

int ax_comm_nccl_built(void) {
#ifdef AX_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
}

#ifdef AX_HAVE_NCCL
/* The NCCL transport is built into the CUDA plugin (lib/core/plugin.h), loaded by --comm nccl
 * (ax_comm_check) or, with --comm auto, taken from the plugin the CUDA backend has loaded. */
static struct {
    const ax_transport *tr; /* NULL until loaded */
    int (*use)(ax_grid_t *g, ax_axis axis, int forced);
} nccl;

static ax_status nccl_load(const char *flag) {
    if (nccl.tr) return AX_OK;
    void *tr_fn = NULL, *use_fn = NULL;
    AX_CHECK(ax_cuda_plugin_sym(flag, "--comm mpi", "ax_transport_nccl", &tr_fn));
    AX_CHECK(ax_cuda_plugin_sym(flag, "--comm mpi", "ax_nccl_use_", &use_fn));
    nccl.use = (int (*)(ax_grid_t *, ax_axis, int))use_fn;
    nccl.tr = ((const ax_transport *(*)(void))tr_fn)();
    return AX_OK;
}
#endif

ax_status ax_comm_check(const char *name) {
    if (!name || !*name || !strcmp(name, "auto") || !strcmp(name, "mpi")) return AX_OK;
    if (!strcmp(name, "nccl")) {
#ifdef AX_HAVE_NCCL
        return nccl_load("--comm nccl");
#else
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "--comm nccl: this build has no NCCL transport (not built: it comes with "
                         "scons cuda=yes where NCCL is installed); use --comm mpi or auto");
#endif
    }
    return ax_errorf(AX_ERR_ARG, "--comm '%s' is not one of auto, mpi, nccl", name);
}

ax_status ax_comm_select(const char *name) {
    AX_CHECK(ax_comm_check(name));
    if (name && *name)
        comm_choice = !strcmp(name, "mpi") ? "mpi" : !strcmp(name, "nccl") ? "nccl" : "auto";
    return AX_OK;
}

const char *ax_comm_selected(void) {
    return comm_choice;
}

/* ---- test-only failure injection ---- */

/* One armed failure at a time (main thread only, like every collective). */
static struct {
    int armed, skip;
    const ax_grid_t *g; /* NULL: any grid */
    int kind;
    ax_axis axis;
} inject;

void ax_comm_inject_failure(const ax_grid_t *g, ax_comm_kind kind, ax_axis axis,
                            int after_n_calls) {
    inject.armed = after_n_calls >= 0;
    inject.skip = after_n_calls;
    inject.g = g;
    inject.kind = kind;
    inject.axis = axis;
}

static ax_status injected(const ax_grid_t *g, ax_axis axis, int kind, const char *op) {
    if (!inject.armed || kind != inject.kind || axis != inject.axis || (inject.g && inject.g != g))
        return AX_OK;
    if (inject.skip-- > 0) return AX_OK;
    inject.armed = 0;
    return ax_errorf(AX_ERR_MPI,
                     "%s over the %s axis failed: injected failure (ax_comm_inject_failure, a "
                     "test hook)",
                     op, ax_axis_name(axis));
}

/* ---- helpers ---- */

/* Validates the call, applies the failure hook (before any size-1 shortcut, so it fires on a
 * serial grid too) and returns the axis size in *p. kind: an ax_comm_kind, -1 for a barrier. */
static ax_status check(ax_grid_t *g, ax_axis axis, const char *op, int kind, long n, ax_dtype t,
                       ax_redop rop, int *p) {
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
                         "%s over %s: %ld elements exceed the transport's int count; split the "
                         "buffer",
                         op, ax_axis_name(axis), n);
    *p = ax_grid_dim(g, axis);
    if (*p > 1 && !ax_grid_transport_(g))
        return ax_errorf(AX_ERR_INTERNAL, "%s over %s: %d ranks but the grid has no transport", op,
                         ax_axis_name(axis), *p);
    return injected(g, axis, kind, op);
}

static void count(ax_grid_t *g, ax_axis axis, ax_comm_kind kind, double bytes) {
    ax_comm_stats *s = ax_grid_stats_(g);
    s->bytes[kind][axis] += bytes;
    s->calls[kind][axis]++;
}

/* Validates the call, counts it (ax_comm_volume) and returns the axis size in *p. */
static ax_status begin(ax_grid_t *g, ax_axis axis, const char *op, ax_comm_kind kind, long n,
                       ax_dtype t, ax_redop rop, int *p) {
    AX_CHECK(check(g, axis, op, kind, n, t, rop, p));
    count(g, axis, kind, ax_comm_volume(kind, *p, n, ax_dtype_size(t)));
    return AX_OK;
}

static const ax_transport *tr(const ax_grid_t *g) {
    return ax_grid_transport_(g);
}

/* Marks a blocking wait for the stalled-rank watchdog (lib/core/stop.h); returns the start
 * time. */
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

/* ends a blocking transport call started with wait_begin */
static ax_status waited(ax_grid_t *g, ax_axis axis, double t0, ax_status st) {
    add_wait(g, axis, ax_now() - t0);
    return st;
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

/* ---- device memory (ax_comm_memory): classification, staging, local copies ---- */

/* 1 when p is device memory of the grid's owner; 0 without a hook (the CPU path: one load and
 * one branch per buffer) */
static int on_dev(const ax_comm_memory *m, const void *p) {
    return m && p && m->is_device(m->user, p);
}

/* dst <- src (bytes), each side host or device memory */
static ax_status mem_copy(const ax_comm_memory *m, void *dst, const void *src, size_t bytes) {
    if (dst == src || bytes == 0) return AX_OK;
    int dd = on_dev(m, dst), sd = on_dev(m, src);
    if (dd && sd) return m->dev_copy(m->user, dst, src, bytes);
    if (dd) return m->from_host(m->user, dst, src, bytes);
    if (sd) return m->to_host(m->user, dst, src, bytes);
    memmove(dst, src, bytes);
    return AX_OK;
}

/* the size-1 shortcuts' copy: memmove for host memory, the owner's copy for device memory */
static ax_status copy_local(ax_grid_t *g, void *dst, const void *src, long n, ax_dtype t) {
    if (dst == src || n <= 0) return AX_OK;
    return mem_copy(ax_grid_memory(g), dst, src, (size_t)n * (size_t)ax_dtype_size(t));
}

/* The transport for device buffers on g: NCCL when built and chosen (--comm nccl, or auto on a
 * grid with device memory), else NULL (device buffers are staged for the MPI transport). */
static const ax_transport *dev_tr_axis(ax_grid_t *g, ax_axis axis) {
#ifdef AX_HAVE_NCCL
    int forced = !strcmp(comm_choice, "nccl");
    /* auto: only once the CUDA backend has loaded the plugin (the grid's device memory is then
     * CUDA memory; a test's emulated device memory never loads the CUDA libraries) */
    if (ax_grid_uses_mpi(g) && ax_grid_memory(g) && strcmp(comm_choice, "mpi") != 0 &&
        (forced || ax_cuda_plugin_loaded())) {
        if (nccl_load(forced ? "--comm nccl" : "--comm auto") != AX_OK) {
            ax_error_clear(); /* handled: the staged MPI path serves the call */
            return NULL;
        }
        if (nccl.use(g, axis, forced)) return nccl.tr;
    }
#else
    (void)g, (void)axis;
#endif
    return NULL;
}

/* The host buffers of one blocking staged call; released together by unstage. */
typedef struct {
    ax_grid_t *g;
    const ax_comm_memory *m;
    void *buf[3];
    int n;
} stager;

/* a staging buffer of `bytes` from the grid's pool; NULL (the error recorded) when out of memory */
static void *stage_acquire(ax_grid_t *g, const char *name, ax_axis axis, size_t bytes) {
    void *h = ax_grid_stage_acquire_(g, bytes ? bytes : 1);
    if (!h)
        ax_errorf(AX_ERR_NOMEM,
                  "%s over %s: out of host memory for a %zu-byte staging buffer (device memory "
                  "goes through the host with --comm mpi)",
                  name, ax_axis_name(axis), bytes);
    return h;
}

/* *host = a staging buffer of `bytes` (with dev's contents when copy_in) */
static ax_status stage(stager *s, const char *name, ax_axis axis, const void *dev, size_t bytes,
                       int copy_in, void **host) {
    void *h = stage_acquire(s->g, name, axis, bytes);
    if (!h) return AX_ERR_NOMEM;
    s->buf[s->n++] = h;
    *host = h;
    return copy_in ? s->m->to_host(s->m->user, h, dev, bytes) : AX_OK;
}

static ax_status unstage(stager *s, ax_status st) {
    for (int i = 0; i < s->n; i++) ax_grid_stage_release_(s->g, s->buf[i]);
    s->n = 0;
    return st;
}

/* A request's staged result goes back to the device once the transport is done with it. */
static void req_unstage(ax_req *req) {
    if (!req->stage) return;
    const ax_comm_memory *m = ax_grid_memory(req->g);
    if (req->err == AX_OK && req->stage_out) {
        ax_status st =
            m->from_host(m->user, req->stage_out, req->stage_host, (size_t)req->stage_bytes);
        if (st != AX_OK) req->err = st;
    }
    ax_grid_stage_release_(req->g, req->stage);
    req->stage = req->stage_host = req->stage_out = NULL;
}

/* req->stage = a staging buffer of `bytes` (released by req_unstage); when out is not NULL,
 * its out_bytes at offset `at` go back to device memory out once the request completes */
static ax_status req_stage(ax_req *req, const char *name, size_t bytes, void *out, size_t at,
                           size_t out_bytes, void **host) {
    void *h = stage_acquire(req->g, name, (ax_axis)req->axis, bytes);
    if (!h) return AX_ERR_NOMEM;
    req->stage = *host = h;
    if (out) {
        req->stage_host = (char *)h + at;
        req->stage_out = out;
        req->stage_bytes = (long)out_bytes;
    }
    return AX_OK;
}

/* After a transport's issue: a failed issue releases the staging; a request that completed at
 * issue is unstaged at once. */
static ax_status req_issued(ax_req *req, ax_status st) {
    if (st != AX_OK) {
        req->stage_out = NULL;
        req_unstage(req);
        return st;
    }
    if (!req->active) req_unstage(req);
    return req->err;
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

/* One blocking call's arguments, so that routing, staging and timing are written once. */
typedef struct {
    int what;         /* N_ALLREDUCE .. N_RECV */
    const void *send; /* allgather, alltoall(v), send */
    void *buf;        /* allreduce, bcast, recv: in place; allgather, alltoall(v): recv */
    long n;           /* elements; per rank for allgather and alltoall */
    ax_dtype t;
    ax_redop op;
    int peer, tag;                /* bcast: peer is the root coordinate */
    const int *sc, *sd, *rc, *rd; /* alltoallv's counts and displacements */
} call_t;

/* c on transport T, the wait marked for the watchdog and timed */
static ax_status invoke(const ax_transport *T, ax_grid_t *g, ax_axis axis, const char *name,
                        const call_t *c) {
    double t0 = wait_begin(name, axis);
    ax_status st = AX_ERR_INTERNAL;
    switch (c->what) {
    case N_ALLREDUCE:
        st = T->allreduce(g, axis, name, c->buf, c->n, c->t, c->op);
        break;
    case N_ALLGATHER:
        st = T->allgather(g, axis, name, c->send, c->n, c->buf, c->t);
        break;
    case N_BCAST:
        st = T->bcast(g, axis, name, c->buf, c->n, c->t, c->peer);
        break;
    case N_ALLTOALL:
        st = T->alltoall(g, axis, name, c->send, c->n, c->buf, c->t);
        break;
    case N_ALLTOALLV:
        st = T->alltoallv(g, axis, name, c->send, c->sc, c->sd, c->buf, c->rc, c->rd, c->t);
        break;
    case N_SEND:
        st = T->send(g, axis, name, c->send, c->n, c->t, c->peer, c->tag);
        break;
    case N_RECV:
        st = T->recv(g, axis, name, c->buf, c->n, c->t, c->peer, c->tag);
        break;
    }
    return waited(g, axis, t0, st);
}

/* Runs c on the device transport (NCCL) when all its buffers are device memory and one is
 * chosen, else on the grid's transport with device buffers staged through host ones: send's
 * first sbytes copied in, buf's first bbytes copied in when buf_in and back when buf_out
 * (alltoallv: only the received ranges, so gaps keep their device contents). An allgather's
 * send goes into its own block of the (staged) receive buffer: gathered in place. */
static ax_status run(ax_grid_t *g, ax_axis axis, const char *name, call_t c, size_t sbytes,
                     size_t bbytes, int buf_in, int buf_out) {
    const ax_comm_memory *m = ax_grid_memory(g);
    int has_send =
        c.what == N_ALLGATHER || c.what == N_ALLTOALL || c.what == N_ALLTOALLV || c.what == N_SEND;
    int sd = has_send && on_dev(m, c.send), rd = c.what != N_SEND && on_dev(m, c.buf);
    const ax_transport *T;
    if ((sd || !has_send) && (rd || c.what == N_SEND) && (T = dev_tr_axis(g, axis)))
        return invoke(T, g, axis, name, &c);
    if (!sd && !rd) return invoke(tr(g), g, axis, name, &c);
    stager s = {g, m, {0}, 0};
    void *dev = c.buf, *hs = (void *)c.send;
    ax_status st =
        sd && c.what != N_ALLGATHER ? stage(&s, name, axis, c.send, sbytes, 1, &hs) : AX_OK;
    if (st == AX_OK && rd) st = stage(&s, name, axis, dev, bbytes, buf_in, &c.buf);
    if (st == AX_OK && c.what == N_ALLGATHER) {
        size_t blk = (size_t)c.n * (size_t)ax_dtype_size(c.t);
        hs = (char *)c.buf + (size_t)ax_grid_coord(g, axis) * blk;
        st = mem_copy(m, hs, c.send, blk);
    }
    c.send = hs;
    if (st == AX_OK) st = invoke(tr(g), g, axis, name, &c);
    if (st == AX_OK && rd && buf_out && c.what != N_ALLTOALLV)
        st = m->from_host(m->user, dev, c.buf, bbytes);
    size_t e = (size_t)ax_dtype_size(c.t);
    for (int r = 0; c.what == N_ALLTOALLV && st == AX_OK && rd && r < ax_grid_dim(g, axis); r++)
        if (c.rc[r])
            st = m->from_host(m->user, (char *)dev + (size_t)c.rd[r] * e,
                              (char *)c.buf + (size_t)c.rd[r] * e, (size_t)c.rc[r] * e);
    return unstage(&s, st);
}

static size_t nbytes(long n, ax_dtype t) {
    return (size_t)n * (size_t)ax_dtype_size(t);
}

ax_status ax_coll_allreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t,
                            ax_redop op) {
    const char *name = name_of(N_ALLREDUCE, op, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLREDUCE, n, t, op, &p));
    if (p == 1 || n == 0) return AX_OK;
    call_t c = {.what = N_ALLREDUCE, .buf = buf, .n = n, .t = t, .op = op};
    return run(g, axis, name, c, 0, nbytes(n, t), 1, 1);
}

ax_status ax_coll_allgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                            void *recv, ax_dtype t) {
    const char *name = name_of(N_ALLGATHER, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLGATHER, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) return copy_local(g, recv, send, n_per_rank, t);
    call_t c = {.what = N_ALLGATHER, .send = send, .buf = recv, .n = n_per_rank, .t = t};
    return run(g, axis, name, c, 0, nbytes(n_per_rank, t) * (size_t)p, 0, 1);
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
    call_t c = {.what = N_BCAST, .buf = buf, .n = n, .t = t, .peer = root_coord};
    int root = ax_grid_coord(g, axis) == root_coord;
    return run(g, axis, name, c, 0, nbytes(n, t), root, !root);
}

ax_status ax_coll_alltoall(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                           void *recv, ax_dtype t) {
    const char *name = name_of(N_ALLTOALL, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLTOALL, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) return copy_local(g, recv, send, n_per_rank, t);
    call_t c = {.what = N_ALLTOALL, .send = send, .buf = recv, .n = n_per_rank, .t = t};
    size_t all = nbytes(n_per_rank, t) * (size_t)p;
    return run(g, axis, name, c, all, all, 0, 1);
}

ax_status ax_coll_alltoallv(ax_grid_t *g, ax_axis axis, const void *send, const int *scounts,
                            const int *sdispls, void *recv, const int *rcounts, const int *rdispls,
                            ax_dtype t) {
    const char *name = name_of(N_ALLTOALLV, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(check(g, axis, name, AX_COMM_ALLTOALL, 0, t, AX_OP_SUM, &p));
    int me = ax_grid_coord(g, axis), e = ax_dtype_size(t);
    double sent = 0;
    size_t sext = 0, rext = 0; /* each side's extent in bytes */
    for (int r = 0; r < p; r++) {
        if (scounts[r] < 0 || rcounts[r] < 0)
            return ax_errorf(AX_ERR_ARG, "%s over %s: negative count for coordinate %d", name,
                             ax_axis_name(axis), r);
        if (r != me) sent += (double)scounts[r] * e;
        size_t se = nbytes((long)sdispls[r] + scounts[r], t);
        size_t re = nbytes((long)rdispls[r] + rcounts[r], t);
        if (scounts[r] && se > sext) sext = se;
        if (rcounts[r] && re > rext) rext = re;
    }
    count(g, axis, AX_COMM_ALLTOALL, sent);
    if (p == 1) {
        if (rcounts[0] != scounts[0])
            return ax_errorf(AX_ERR_ARG, "%s over %s: sends %d elements to itself but expects %d",
                             name, ax_axis_name(axis), scounts[0], rcounts[0]);
        return copy_local(g, (char *)recv + (long)rdispls[0] * e,
                          (const char *)send + (long)sdispls[0] * e, scounts[0], t);
    }
    call_t c = {.what = N_ALLTOALLV, .send = send, .buf = recv, .t = t};
    c.sc = scounts, c.sd = sdispls, c.rc = rcounts, c.rd = rdispls;
    return run(g, axis, name, c, sext, rext, 0, 1);
}

static ax_status p2p_check(ax_grid_t *g, ax_axis axis, const char *name, long n, ax_dtype t,
                           int peer, int tag, int *p) {
    AX_CHECK(check(g, axis, name, AX_COMM_SEND, n, t, AX_OP_SUM, p));
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
    call_t c = {.what = N_SEND, .send = buf, .n = n, .t = t, .peer = peer, .tag = tag};
    return run(g, axis, name, c, nbytes(n, t), 0, 0, 0);
}

ax_status ax_coll_recv(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, int peer,
                       int tag) {
    const char *name = name_of(N_RECV, AX_OP_SUM, t);
    int p = 1;
    AX_CHECK(p2p_check(g, axis, name, n, t, peer, tag, &p));
    call_t c = {.what = N_RECV, .buf = buf, .n = n, .t = t, .peer = peer, .tag = tag};
    return run(g, axis, name, c, 0, nbytes(n, t), 0, 1);
}

ax_status ax_barrier(ax_grid_t *g, ax_axis axis) {
    int p = 1;
    AX_CHECK(check(g, axis, "barrier", -1, 0, AX_DT_U8, AX_OP_SUM, &p));
    if (p == 1) return AX_OK;
    double t0 = wait_begin("barrier", axis);
    return waited(g, axis, t0, tr(g)->barrier(g, axis));
}

ax_status ax_coll_agree(ax_grid_t *g, ax_axis axis, ax_status st, const char *what) {
    uint64_t v = (uint64_t)st;
    ax_status rs = ax_coll_allreduce(g, axis, &v, 1, AX_DT_U64, AX_OP_MAX);
    if (rs != AX_OK) return rs;
    if (v != AX_OK && st == AX_OK)
        return ax_errorf((ax_status)v, "%s: another rank failed (see its message)", what);
    return (ax_status)v;
}

/* ---- non-blocking ---- */

/* the device transport for a request whose buffers are all device memory (all_dev), if one is
 * chosen; marks the request as issued there */
static const ax_transport *req_dev_tr(ax_req *req, int all_dev) {
    const ax_transport *T = all_dev ? dev_tr_axis(req->g, (ax_axis)req->axis) : NULL;
    req->dev = T != NULL;
    return T;
}

ax_status ax_coll_iallreduce(ax_grid_t *g, ax_axis axis, void *buf, long n, ax_dtype t, ax_redop op,
                             ax_req *req) {
    const char *name = name_of(N_IALLREDUCE, op, t);
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLREDUCE, t, op);
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLREDUCE, n, t, op, &p));
    if (p == 1 || n == 0) return AX_OK;
    const ax_comm_memory *m = ax_grid_memory(g);
    const ax_transport *T = req_dev_tr(req, on_dev(m, buf));
    if (T) return T->iallreduce(req, name, buf, n);
    if (on_dev(m, buf)) { /* staged in now, out when the request completes */
        size_t bytes = nbytes(n, t);
        void *h = NULL;
        AX_CHECK(req_stage(req, name, bytes, buf, 0, bytes, &h));
        ax_status st = m->to_host(m->user, h, buf, bytes);
        if (st != AX_OK) return req_issued(req, st);
        return req_issued(req, tr(g)->iallreduce(req, name, h, n));
    }
    return tr(g)->iallreduce(req, name, buf, n);
}

ax_status ax_coll_iallgather(ax_grid_t *g, ax_axis axis, const void *send, long n_per_rank,
                             void *recv, ax_dtype t, ax_req *req) {
    const char *name = name_of(N_IALLGATHER, AX_OP_SUM, t);
    int p = 1;
    req_init(req, g, axis, AX_COMM_ALLGATHER, t, AX_OP_SUM);
    AX_CHECK(begin(g, axis, name, AX_COMM_ALLGATHER, n_per_rank, t, AX_OP_SUM, &p));
    if (p == 1 || n_per_rank == 0) return copy_local(g, recv, send, n_per_rank, t);
    const ax_comm_memory *m = ax_grid_memory(g);
    const ax_transport *T = req_dev_tr(req, on_dev(m, send) && on_dev(m, recv));
    if (T) return T->iallgather(req, name, send, n_per_rank, recv);
    if (on_dev(m, send) || on_dev(m, recv)) { /* as the blocking one, unstaged on completion */
        size_t blk = nbytes(n_per_rank, t), all = blk * (size_t)p;
        void *hr = recv;
        if (on_dev(m, recv)) AX_CHECK(req_stage(req, name, all, recv, 0, all, &hr));
        char *hs = (char *)hr + (size_t)ax_grid_coord(g, axis) * blk;
        ax_status st = mem_copy(m, hs, send, blk);
        if (st != AX_OK) return req_issued(req, st);
        return req_issued(req, tr(g)->iallgather(req, name, hs, n_per_rank, hr));
    }
    return tr(g)->iallgather(req, name, send, n_per_rank, recv);
}

ax_status ax_coll_ireduce_scatter(ax_grid_t *g, ax_axis axis, const void *send, void *recv,
                                  long n_per_rank, ax_dtype t, ax_redop op, ax_req *req) {
    const char *name = "reduce-scatter";
    int p = 1;
    req_init(req, g, axis, AX_COMM_REDUCE_SCATTER, t, op);
    AX_CHECK(begin(g, axis, name, AX_COMM_REDUCE_SCATTER, n_per_rank, t, op, &p));
    if (p == 1 || n_per_rank == 0) return copy_local(g, recv, send, n_per_rank, t);
    const ax_comm_memory *m = ax_grid_memory(g);
    int sd = on_dev(m, send), rd = on_dev(m, recv);
    const ax_transport *T = req_dev_tr(req, sd && rd);
    if (T) return T->ireduce_scatter(req, name, send, recv, n_per_rank);
    if (sd || rd) { /* one staging buffer: [send p blocks if on the device][recv block] */
        size_t blk = nbytes(n_per_rank, t), sbytes = sd ? blk * (size_t)p : 0;
        char *h = NULL;
        AX_CHECK(req_stage(req, name, sbytes + (rd ? blk : 0), rd ? recv : NULL, sbytes, blk,
                           (void **)&h));
        const void *hs = sd ? h : send;
        void *hr = rd ? h + sbytes : recv;
        ax_status st = sd ? m->to_host(m->user, h, send, sbytes) : AX_OK;
        if (st != AX_OK) return req_issued(req, st);
        return req_issued(req, tr(g)->ireduce_scatter(req, name, hs, hr, n_per_rank));
    }
    return tr(g)->ireduce_scatter(req, name, send, recv, n_per_rank);
}

/* the transport a request was issued on */
static const ax_transport *req_tr(const ax_req *req) {
#ifdef AX_HAVE_NCCL
    if (req->dev) return nccl.tr; /* loaded when the request was issued on it */
#endif
    return tr(req->g);
}

static const char *req_name(const ax_req *req) {
    return ax_comm_kind_name((ax_comm_kind)req->kind);
}

ax_status ax_req_progress(ax_req *req) {
    if (!req->active) return req->err;
    double t0 = ax_now();
    req_tr(req)->progress(req);
    if (!req->active) req_unstage(req);
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
    req_tr(req)->wait(req);
    add_wait(req->g, req->axis, ax_now() - t0);
    req_unstage(req);
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
