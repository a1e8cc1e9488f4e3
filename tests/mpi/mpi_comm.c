/* MPI driver for lib/grid + lib/comm: run under `mpirun -np N mpi_comm --grid DxXxYxZ`.
 * Checks the rank layout, the members of every axis communicator, every blocking and
 * non-blocking collective on every axis against values computed locally, and the byte
 * counters against the ring formulas written out again here. Every rank contributes
 * rank-dependent small integers, so float sums are exact in any reduction order.
 * The verdict is reduced over all ranks: rank 0 prints "mpi_comm GRID: ok" (or the failure
 * count) and every rank exits nonzero on failure. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/grid_mpi.h"
#include "lib/dist/mpienv.h"
#include "lib/dist/overlap.h"
#include "lib/dist/shm.h"
#include "tests/mpi/mpi_verdict.h"

static double g_expect_bytes[AX_COMM_KINDS][AX_AXIS_COUNT];
static long g_expect_calls[AX_COMM_KINDS][AX_AXIS_COUNT];

/* The formulas, written out independently of lib/dist/comm.c (p = axis size, e = element bytes). */
static void expect(ax_comm_kind k, ax_axis a, int p, long n, int e) {
    g_expect_calls[k][a]++;
    if (p == 1) return;
    double b = (double)n * e;
    if (k == AX_COMM_ALLREDUCE) g_expect_bytes[k][a] += 2.0 * (p - 1) * b / p;
    if (k == AX_COMM_ALLGATHER || k == AX_COMM_REDUCE_SCATTER) g_expect_bytes[k][a] += (p - 1) * b;
    if (k == AX_COMM_BCAST) g_expect_bytes[k][a] += (p - 1) * b / p;
    if (k == AX_COMM_ALLTOALL) g_expect_bytes[k][a] += (p - 1) * b;
    if (k == AX_COMM_SEND) g_expect_bytes[k][a] += b;
}

/* World rank of the rank that shares this rank's coordinates except coordinate j on axis. */
static int member(const ax_grid_t *g, const int dims[4], ax_axis axis, int j) {
    int c[4];
    for (int i = 0; i < 4; i++) c[i] = ax_grid_coord(g, (ax_axis)i);
    if (axis == AX_AXIS_WORLD) return j;
    if (axis == AX_AXIS_BATCH) {
        c[0] = j / dims[3];
        c[3] = j % dims[3];
    } else {
        c[axis] = j;
    }
    return ax_grid_rank_of(dims, c);
}

/* small integers: exact in float whatever the summation order */
static float val(int rank, long i) {
    return (float)((rank + 1) + (i % 97) * 16);
}
static float sval(int rank, long i) { /* signed, for max */
    return (float)(((rank * 7 + i) % 13) - 6);
}
static float rsval(int rank, int block, long i) {
    return (float)((rank + 1) * (block + 2) + (i % 31));
}

static void check_layout(ax_grid_t *g, const int dims[4]) {
    int rank = ax_grid_rank(g), c[4];
    ax_grid_coords_of(dims, rank, c);
    CHECK(ax_grid_rank_of(dims, c) == rank, "rank_of(coords_of(%d)) != %d", rank, rank);
    /* rank = ((d*Gz + z)*Gy + y)*Gx + x */
    CHECK(((c[0] * dims[3] + c[3]) * dims[2] + c[2]) * dims[1] + c[1] == rank, "layout formula");
    for (int a = 0; a < 4; a++)
        CHECK(ax_grid_coord(g, (ax_axis)a) == c[a], "coord %s = %d, want %d",
              ax_axis_name((ax_axis)a), ax_grid_coord(g, (ax_axis)a), c[a]);
    CHECK(ax_grid_coord(g, AX_AXIS_BATCH) == c[0] * dims[3] + c[3], "batch coord");
    CHECK(ax_grid_dim(g, AX_AXIS_BATCH) == dims[0] * dims[3], "batch dim");
    CHECK(ax_grid_coord(g, AX_AXIS_WORLD) == rank, "world coord");
    CHECK(ax_grid_size(g) == dims[0] * dims[1] * dims[2] * dims[3], "size");

    /* membership, checked with raw MPI so it does not depend on lib/comm */
    for (int a = 0; ax_grid_uses_mpi(g) && a < AX_AXIS_COUNT; a++) {
        ax_axis axis = (ax_axis)a;
        MPI_Comm comm = ax_grid_mpi_comm(g, axis);
        int p = ax_grid_dim(g, axis), sz = -1, r = -1;
        MPI_Comm_size(comm, &sz);
        MPI_Comm_rank(comm, &r);
        CHECK(sz == p && r == ax_grid_coord(g, axis), "%s comm: rank %d of %d", ax_axis_name(axis),
              r, sz);
        if (sz != p) continue;
        int *ranks = malloc(sizeof(int) * p);
        MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, comm);
        for (int j = 0; j < p; j++)
            CHECK(ranks[j] == member(g, dims, axis, j), "%s comm member %d is rank %d, want %d",
                  ax_axis_name(axis), j, ranks[j], member(g, dims, axis, j));
        free(ranks);
    }
}

static void check_blocking(ax_grid_t *g, const int dims[4], ax_axis axis, long n) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis), rank = ax_grid_rank(g);
    const char *an = ax_axis_name(axis);
    float *a = malloc(sizeof(float) * (n + 1)), *big = malloc(sizeof(float) * (p * n + 1));
    double *d = malloc(sizeof(double) * (n + 1));

    for (long i = 0; i < n; i++) a[i] = val(rank, i);
    OK(ax_coll_allreduce(g, axis, a, n, AX_DT_F32, AX_OP_SUM));
    expect(AX_COMM_ALLREDUCE, axis, p, n, 4);
    for (long i = 0; i < n; i++) {
        float want = 0;
        for (int j = 0; j < p; j++) want += val(member(g, dims, axis, j), i);
        if (a[i] != want) {
            CHECK(0, "allreduce_sum %s n=%ld [%ld] = %g, want %g", an, n, i, a[i], want);
            break;
        }
    }

    for (long i = 0; i < n; i++) a[i] = sval(rank, i);
    OK(ax_coll_allreduce(g, axis, a, n, AX_DT_F32, AX_OP_MAX));
    expect(AX_COMM_ALLREDUCE, axis, p, n, 4);
    for (long i = 0; i < n; i++) {
        float want = -1e30f;
        for (int j = 0; j < p; j++) {
            float v = sval(member(g, dims, axis, j), i);
            want = v > want ? v : want;
        }
        if (a[i] != want) {
            CHECK(0, "allreduce_max %s n=%ld [%ld] = %g, want %g", an, n, i, a[i], want);
            break;
        }
    }

    for (long i = 0; i < n; i++) d[i] = 0.5 * val(rank, i);
    OK(ax_coll_allreduce(g, axis, d, n, AX_DT_F64, AX_OP_SUM));
    expect(AX_COMM_ALLREDUCE, axis, p, n, 8);
    for (long i = 0; i < n; i++) {
        double want = 0;
        for (int j = 0; j < p; j++) want += 0.5 * val(member(g, dims, axis, j), i);
        if (d[i] != want) {
            CHECK(0, "allreduce_sum_f64 %s n=%ld [%ld]", an, n, i);
            break;
        }
    }
    for (long i = 0; i < n; i++) d[i] = sval(rank, i);
    OK(ax_coll_allreduce(g, axis, d, n, AX_DT_F64, AX_OP_MAX));
    expect(AX_COMM_ALLREDUCE, axis, p, n, 8);
    for (long i = 0; i < n; i++) {
        double want = -1e300;
        for (int j = 0; j < p; j++) {
            double v = sval(member(g, dims, axis, j), i);
            want = v > want ? v : want;
        }
        if (d[i] != want) {
            CHECK(0, "allreduce_max_f64 %s n=%ld [%ld]", an, n, i);
            break;
        }
    }

    /* allgather, separate buffers then in place */
    for (int inplace = 0; inplace < 2; inplace++) {
        for (long i = 0; i < p * n; i++) big[i] = -7;
        float *src = inplace ? big + (long)me * n : a;
        for (long i = 0; i < n; i++) src[i] = val(rank, i);
        OK(ax_coll_allgather(g, axis, src, n, big, AX_DT_F32));
        expect(AX_COMM_ALLGATHER, axis, p, n, 4);
        for (int j = 0; j < p; j++) {
            int m = member(g, dims, axis, j);
            for (long i = 0; i < n; i++)
                if (big[j * n + i] != val(m, i)) {
                    CHECK(0, "allgather%s %s n=%ld block %d [%ld] = %g, want %g",
                          inplace ? "(in place)" : "", an, n, j, i, big[j * n + i], val(m, i));
                    j = p;
                    break;
                }
        }
    }

    for (int j = 0; j < p; j++)
        for (long i = 0; i < n; i++) big[j * n + i] = rsval(rank, j, i);
    for (long i = 0; i < n; i++) a[i] = -7;
    OK(ax_coll_reduce_scatter(g, axis, big, a, n, AX_DT_F32, AX_OP_SUM));
    expect(AX_COMM_REDUCE_SCATTER, axis, p, n, 4);
    for (long i = 0; i < n; i++) {
        float want = 0;
        for (int j = 0; j < p; j++) want += rsval(member(g, dims, axis, j), me, i);
        if (a[i] != want) {
            CHECK(0, "reduce_scatter %s n=%ld [%ld] = %g, want %g", an, n, i, a[i], want);
            break;
        }
    }

    for (int root = 0; root < p; root++) {
        for (long i = 0; i < n; i++) a[i] = val(rank, i);
        OK(ax_coll_bcast(g, axis, a, n, AX_DT_F32, root));
        expect(AX_COMM_BCAST, axis, p, n, 4);
        int m = member(g, dims, axis, root);
        for (long i = 0; i < n; i++)
            if (a[i] != val(m, i)) {
                CHECK(0, "bcast %s root %d n=%ld [%ld] = %g, want %g", an, root, n, i, a[i],
                      val(m, i));
                break;
            }
    }
    char msg[32];
    snprintf(msg, sizeof msg, "from %d", rank);
    OK(ax_coll_bcast(g, axis, msg, sizeof msg, AX_DT_U8, p - 1));
    expect(AX_COMM_BCAST, axis, p, sizeof msg, 1);
    char want_msg[32];
    snprintf(want_msg, sizeof want_msg, "from %d", member(g, dims, axis, p - 1));
    CHECK(!strcmp(msg, want_msg), "bcast_bytes %s: '%s', want '%s'", an, msg, want_msg);

    OK(ax_barrier(g, axis));
    free(a);
    free(big);
    free(d);
}

/* All three kinds in flight at once on the same axis, completed by polling then waiting. */
static void check_nonblocking(ax_grid_t *g, const int dims[4], ax_axis axis, long n) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis), rank = ax_grid_rank(g);
    const char *an = ax_axis_name(axis);
    float *ar = malloc(sizeof(float) * (n + 1)), *ag_send = malloc(sizeof(float) * (n + 1));
    float *ag = malloc(sizeof(float) * (p * n + 1)), *rs_send = malloc(sizeof(float) * (p * n + 1));
    float *rs = malloc(sizeof(float) * (n + 1));
    for (long i = 0; i < n; i++) ar[i] = ag_send[i] = val(rank, i);
    for (int j = 0; j < p; j++)
        for (long i = 0; i < n; i++) rs_send[j * n + i] = rsval(rank, j, i);
    ax_req r[3];
    OK(ax_coll_iallreduce(g, axis, ar, n, AX_DT_F32, AX_OP_SUM, &r[0]));
    OK(ax_coll_iallgather(g, axis, ag_send, n, ag, AX_DT_F32, &r[1]));
    OK(ax_coll_ireduce_scatter(g, axis, rs_send, rs, n, AX_DT_F32, AX_OP_SUM, &r[2]));
    expect(AX_COMM_ALLREDUCE, axis, p, n, 4);
    expect(AX_COMM_ALLGATHER, axis, p, n, 4);
    expect(AX_COMM_REDUCE_SCATTER, axis, p, n, 4);
    /* poll a while (as a compute loop would), then wait for the rest */
    for (int spin = 0; spin < 1000; spin++) {
        int done = ax_test(&r[0]) & ax_test(&r[1]) & ax_test(&r[2]);
        if (done) break;
    }
    for (int k = 2; k >= 0; k--) OK(ax_wait(&r[k]));
    CHECK(ax_test(&r[0]) == 1, "test after wait");
    OK(ax_wait(&r[0])); /* waiting twice is harmless */

    for (long i = 0; i < n; i++) {
        float want = 0;
        for (int j = 0; j < p; j++) want += val(member(g, dims, axis, j), i);
        if (ar[i] != want) {
            CHECK(0, "iallreduce %s n=%ld [%ld] = %g, want %g", an, n, i, ar[i], want);
            break;
        }
    }
    for (int j = 0; j < p; j++) {
        int m = member(g, dims, axis, j);
        for (long i = 0; i < n; i++)
            if (ag[j * n + i] != val(m, i)) {
                CHECK(0, "iallgather %s n=%ld block %d [%ld]", an, n, j, i);
                j = p;
                break;
            }
    }
    for (long i = 0; i < n; i++) {
        float want = 0;
        for (int j = 0; j < p; j++) want += rsval(member(g, dims, axis, j), me, i);
        if (rs[i] != want) {
            CHECK(0, "ireduce_scatter %s n=%ld [%ld] = %g, want %g", an, n, i, rs[i], want);
            break;
        }
    }
    free(ar);
    free(ag_send);
    free(ag);
    free(rs_send);
    free(rs);
}

/* ---- typed collectives: every ax_dtype and ax_redop against a serial reference ----
 * Element i of rank r is tval(t, r, i): small integers (exact in every type, bf16 included:
 * sums stay below 256) plus a type-specific offset that a wrong transport type would destroy
 * (2^26 + small is not a float, 2^40 + small not a float either, 2^59 + small not a double).
 * The reference reduces the same integers in int64 in coordinate order. */
static int64_t toff(ax_dtype t) {
    return t == AX_DT_I32   ? (int64_t)1 << 26
           : t == AX_DT_F64 ? (int64_t)1 << 40
           : t == AX_DT_U64 ? (int64_t)1 << 59
                            : 0;
}
static int64_t tval(ax_dtype t, int rank, long i) {
    int64_t base = (rank * 7 + i) % 13 + rank % 8;  /* 0..19 */
    if (t != AX_DT_U8 && t != AX_DT_U64) base -= 6; /* signed types see negatives */
    return base + toff(t);
}
static void tput(ax_dtype t, void *buf, long i, int64_t v) {
    switch (t) {
    case AX_DT_F32:
        ((float *)buf)[i] = (float)v;
        break;
    case AX_DT_F64:
        ((double *)buf)[i] = (double)v;
        break;
    case AX_DT_BF16:
        ((uint16_t *)buf)[i] = ax_f32_to_bf16((float)v);
        break;
    case AX_DT_I32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case AX_DT_U64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    default:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    }
}
static int64_t tget(ax_dtype t, const void *buf, long i) {
    switch (t) {
    case AX_DT_F32:
        return (int64_t)((const float *)buf)[i];
    case AX_DT_F64:
        return (int64_t)((const double *)buf)[i];
    case AX_DT_BF16:
        return (int64_t)ax_bf16_to_f32(((const uint16_t *)buf)[i]);
    case AX_DT_I32:
        return ((const int32_t *)buf)[i];
    case AX_DT_U64:
        return (int64_t)((const uint64_t *)buf)[i];
    default:
        return ((const uint8_t *)buf)[i];
    }
}
static int64_t tref(ax_redop op, int64_t acc, int64_t v, int first) {
    if (first) return v;
    return op == AX_OP_SUM ? acc + v : op == AX_OP_MAX ? (v > acc ? v : acc) : (v < acc ? v : acc);
}
/* op over the axis of tval(t, member j, idx) */
static int64_t treduce(const ax_grid_t *g, const int dims[4], ax_axis axis, ax_dtype t, ax_redop op,
                       long idx) {
    int p = ax_grid_dim(g, axis);
    int64_t acc = 0;
    for (int j = 0; j < p; j++) acc = tref(op, acc, tval(t, member(g, dims, axis, j), idx), j == 0);
    return acc;
}

static void check_typed(ax_grid_t *g, const int dims[4], ax_axis axis, long n) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis), rank = ax_grid_rank(g);
    const char *an = ax_axis_name(axis);
    for (int ti = 0; ti < AX_DT_COUNT; ti++) {
        ax_dtype t = (ax_dtype)ti;
        const char *tn = ax_dtype_name(t);
        int e = ax_dtype_size(t);
        char *a = malloc((size_t)e * (size_t)(p * n + 1)),
             *b = malloc((size_t)e * (size_t)(p * n + 1));
        for (int oi = 0; oi < AX_OP_COUNT; oi++) {
            ax_redop op = (ax_redop)oi;
            const char *on = ax_redop_name(op);
            /* blocking all-reduce */
            for (long i = 0; i < n; i++) tput(t, a, i, tval(t, rank, i));
            OK(ax_coll_allreduce(g, axis, a, n, t, op));
            expect(AX_COMM_ALLREDUCE, axis, p, n, e);
            for (long i = 0; i < n; i++)
                if (tget(t, a, i) != treduce(g, dims, axis, t, op, i)) {
                    CHECK(0, "allreduce(%s, %s) %s n=%ld [%ld] = %lld, want %lld", on, tn, an, n, i,
                          (long long)tget(t, a, i), (long long)treduce(g, dims, axis, t, op, i));
                    break;
                }
            /* non-blocking all-reduce, driven by ax_req_progress */
            ax_req r;
            for (long i = 0; i < n; i++) tput(t, a, i, tval(t, rank, i));
            OK(ax_coll_iallreduce(g, axis, a, n, t, op, &r));
            expect(AX_COMM_ALLREDUCE, axis, p, n, e);
            for (int spin = 0; spin < 100 && r.active; spin++) OK(ax_req_progress(&r));
            OK(ax_wait(&r));
            for (long i = 0; i < n; i++)
                if (tget(t, a, i) != treduce(g, dims, axis, t, op, i)) {
                    CHECK(0, "iallreduce(%s, %s) %s n=%ld [%ld]", on, tn, an, n, i);
                    break;
                }
            /* reduce-scatter (the ring): block k of rank r holds tval(r, k*n + i) */
            for (long i = 0; i < p * n; i++) tput(t, a, i, tval(t, rank, i));
            if (oi % 2 == 0) {
                OK(ax_coll_reduce_scatter(g, axis, a, b, n, t, op));
            } else {
                OK(ax_coll_ireduce_scatter(g, axis, a, b, n, t, op, &r));
                while (!ax_test(&r)) {
                }
                OK(ax_wait(&r));
            }
            expect(AX_COMM_REDUCE_SCATTER, axis, p, n, e);
            for (long i = 0; i < n; i++)
                if (tget(t, b, i) != treduce(g, dims, axis, t, op, me * n + i)) {
                    CHECK(0, "reduce_scatter(%s, %s) %s n=%ld [%ld] = %lld, want %lld", on, tn, an,
                          n, i, (long long)tget(t, b, i),
                          (long long)treduce(g, dims, axis, t, op, me * n + i));
                    break;
                }
        }
        /* all-gather (blocking, then non-blocking in place) */
        for (long i = 0; i < n; i++) tput(t, a, i, tval(t, rank, i));
        OK(ax_coll_allgather(g, axis, a, n, b, t));
        expect(AX_COMM_ALLGATHER, axis, p, n, e);
        ax_req r;
        for (long i = 0; i < n; i++) tput(t, a, me * n + i, tval(t, rank, i));
        OK(ax_coll_iallgather(g, axis, a + (size_t)me * n * e, n, a, t, &r));
        OK(ax_wait(&r));
        expect(AX_COMM_ALLGATHER, axis, p, n, e);
        for (int j = 0; j < p; j++) {
            int m = member(g, dims, axis, j);
            for (long i = 0; i < n; i++)
                if (tget(t, b, j * n + i) != tval(t, m, i) ||
                    tget(t, a, j * n + i) != tval(t, m, i)) {
                    CHECK(0, "allgather(%s) %s n=%ld block %d [%ld]", tn, an, n, j, i);
                    j = p;
                    break;
                }
        }
        /* broadcast from the last coordinate */
        for (long i = 0; i < n; i++) tput(t, a, i, tval(t, rank, i));
        OK(ax_coll_bcast(g, axis, a, n, t, p - 1));
        expect(AX_COMM_BCAST, axis, p, n, e);
        for (long i = 0; i < n; i++)
            if (tget(t, a, i) != tval(t, member(g, dims, axis, p - 1), i)) {
                CHECK(0, "bcast(%s) %s n=%ld [%ld]", tn, an, n, i);
                break;
            }
        /* all-to-all: block j of rank r = tval(r, j*n + i) goes to coordinate j */
        for (long i = 0; i < p * n; i++) tput(t, a, i, tval(t, rank, i));
        OK(ax_coll_alltoall(g, axis, a, n, b, t));
        expect(AX_COMM_ALLTOALL, axis, p, n, e);
        for (int j = 0; j < p; j++) {
            int m = member(g, dims, axis, j);
            for (long i = 0; i < n; i++)
                if (tget(t, b, j * n + i) != tval(t, m, me * n + i)) {
                    CHECK(0, "alltoall(%s) %s n=%ld block %d [%ld]", tn, an, n, j, i);
                    j = p;
                    break;
                }
        }
        free(a);
        free(b);
    }
}

/* all-to-all with uneven counts (memscan's pair exchange): coordinate i sends (i + j) % 3 + k
 * elements to coordinate j, each encoding (sender, receiver, index) in a u64 above 2^53 */
static void check_alltoallv(ax_grid_t *g, const int dims[4], ax_axis axis, int k) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis);
    int *sc = malloc(sizeof(int) * p), *sd = malloc(sizeof(int) * p);
    int *rc = malloc(sizeof(int) * p), *rd = malloc(sizeof(int) * p);
    int st = 0, rt = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = rc[j] = (me + j) % 3 + k;
        sd[j] = st + j; /* gaps between blocks: displacements are honoured */
        rd[j] = rt + 2 * j;
        st += sc[j];
        rt += rc[j];
    }
    size_t ns = (size_t)st + (size_t)p, nr = (size_t)rt + 2 * (size_t)p;
    uint64_t *s = calloc(ns, 8), *r = calloc(nr, 8);
    double sent = 0;
    for (int j = 0; j < p; j++) {
        for (int i = 0; i < sc[j]; i++)
            s[sd[j] + i] = ((uint64_t)1 << 62) | ((uint64_t)me << 40) | ((uint64_t)j << 20) | i;
        if (j != me) sent += 8.0 * sc[j];
    }
    OK(ax_coll_alltoallv(g, axis, s, sc, sd, r, rc, rd, AX_DT_U64));
    g_expect_calls[AX_COMM_ALLTOALL][axis]++;
    g_expect_bytes[AX_COMM_ALLTOALL][axis] += sent;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < rc[j]; i++) {
            uint64_t want = ((uint64_t)1 << 62) | ((uint64_t)j << 40) | ((uint64_t)me << 20) | i;
            if (r[rd[j] + i] != want) {
                CHECK(0, "alltoallv %s from %d [%d] = %llx, want %llx", ax_axis_name(axis), j, i,
                      (unsigned long long)r[rd[j] + i], (unsigned long long)want);
                j = p;
                break;
            }
        }
    (void)dims;
    free(sc), free(sd), free(rc), free(rd), free(s), free(r);
}

/* Shared segments along an axis (lib/dist/shm.h): each rank writes its own, page-aligned and
 * zeroed, and reads every other's after a barrier; a 1-rank axis says unsupported. All ranks
 * of these tests run on one host. */
static void check_shm(ax_grid_t *g, ax_axis axis) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis);
    const size_t n = 3000; /* u64: not a whole number of pages */
    ax_shm *s = NULL;
    ax_status st = ax_shm_create(g, axis, n * sizeof(uint64_t), &s);
    if (p == 1) {
        CHECK(st == AX_ERR_UNSUPPORTED, "shm over 1-rank %s: status %d", ax_axis_name(axis), st);
        return;
    }
    CHECK(st == AX_OK, "shm over %s: %s", ax_axis_name(axis), ax_error_msg());
    if (st != AX_OK) return;
    CHECK(ax_shm_all_local(s) && ax_shm_ranks(s) == p, "shm over %s: %d of %d ranks here",
          ax_axis_name(axis), ax_shm_ranks(s), p);
    uint64_t *mine = ax_shm_base(s, ax_shm_index(s, me));
    CHECK(((uintptr_t)mine & 4095) == 0, "shm over %s: segment not page-aligned",
          ax_axis_name(axis));
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= mine[i] == 0;
    CHECK(zero, "shm over %s: segment not zeroed", ax_axis_name(axis));
    for (size_t i = 0; i < n; i++) mine[i] = ((uint64_t)me << 32) | i;
    OK(ax_barrier(g, axis));
    for (int r = 0; r < p; r++) {
        const uint64_t *o = ax_shm_base(s, ax_shm_index(s, r));
        for (size_t i = 0; i < n; i++)
            if (o[i] != (((uint64_t)r << 32) | i)) {
                CHECK(0, "shm over %s: rank %d's [%zu] reads %llx", ax_axis_name(axis), r, i,
                      (unsigned long long)o[i]);
                break;
            }
    }
    OK(ax_barrier(g, axis)); /* no rank frees while another reads */
    ax_shm_free(s);
}

/* send/recv around the ring (even coordinates send first), and the status agreement */
static void check_p2p_agree(ax_grid_t *g, ax_axis axis) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis);
    int32_t out[5], in[5] = {0};
    for (int i = 0; i < 5; i++) out[i] = (me << 16) | i;
    if (p > 1) {
        int next = (me + 1) % p, prev = (me + p - 1) % p;
        if (me % 2 == 0) {
            OK(ax_coll_send(g, axis, out, 5, AX_DT_I32, next, 3));
            OK(ax_coll_recv(g, axis, in, 5, AX_DT_I32, prev, 3));
        } else {
            OK(ax_coll_recv(g, axis, in, 5, AX_DT_I32, prev, 3));
            OK(ax_coll_send(g, axis, out, 5, AX_DT_I32, next, 3));
        }
        expect(AX_COMM_SEND, axis, p, 5, 4);
        for (int i = 0; i < 5; i++)
            CHECK(in[i] == ((prev << 16) | i), "recv %s [%d] = %d", ax_axis_name(axis), i, in[i]);
    }
    ax_status s = ax_coll_send(g, axis, out, 5, AX_DT_I32, me, 3); /* to itself: local error */
    CHECK(s == AX_ERR_ARG, "send to self -> %s", ax_status_str(s));
    ax_error_clear();
    /* coordinate 0 failed with an I/O error: every rank returns it */
    s = ax_coll_agree(g, axis, me == 0 ? AX_ERR_IO : AX_OK, "agree test");
    expect(AX_COMM_ALLREDUCE, axis, p, 1, 8);
    CHECK(s == AX_ERR_IO, "agree %s -> %s", ax_axis_name(axis), ax_status_str(s));
    if (me != 0)
        CHECK(strstr(ax_error_msg(), "another rank failed") != NULL, "agree message: %s",
              ax_error_msg());
    ax_error_clear();
}

/* The world grid (memscan's): made locally over MPI_COMM_WORLD, every rank along DATA, BATCH and
 * WORLD; u64 sums above 2^53 stay exact; freeing it leaves MPI_COMM_WORLD alone. */
static void check_world_grid(int size) {
    for (int rep = 0; rep < 2; rep++) {
        ax_grid_t *w = NULL;
        OK(ax_grid_create_world(&w));
        if (!w) return;
        CHECK(ax_grid_size(w) == size && ax_grid_dim(w, AX_AXIS_DATA) == size &&
                  ax_grid_dim(w, AX_AXIS_X) == 1 && ax_grid_dim(w, AX_AXIS_Z) == 1 &&
                  ax_grid_coord(w, AX_AXIS_BATCH) == g_rank && ax_grid_uses_mpi(w) == (size > 1),
              "world grid %s", ax_grid_spec(w));
        const ax_axis axes[3] = {AX_AXIS_DATA, AX_AXIS_BATCH, AX_AXIS_WORLD};
        for (int i = 0; i < 3; i++) {
            uint64_t v = ((uint64_t)1 << 60) + (uint64_t)g_rank;
            OK(ax_coll_allreduce(w, axes[i], &v, 1, AX_DT_U64, AX_OP_SUM));
            uint64_t want = ((uint64_t)size << 60) + (uint64_t)(size * (size - 1) / 2);
            CHECK(v == want, "world grid u64 sum over %s = %llx", ax_axis_name(axes[i]),
                  (unsigned long long)v);
        }
        ax_comm_stats s;
        ax_comm_stats_get(w, &s);
        CHECK(s.calls[AX_COMM_ALLREDUCE][AX_AXIS_WORLD] == 1 &&
                  s.bytes[AX_COMM_ALLREDUCE][AX_AXIS_DATA] ==
                      ax_comm_volume(AX_COMM_ALLREDUCE, size, 1, 8),
              "world grid stats");
        ax_grid_free(w);
    }
}

/* Requests on different axes in flight together, as the overlapped backward pass does:
 * the dX all-reduce over Y, the dW reduce-scatter over Z and the next weight gather over Z. */
static void check_cross_axis(ax_grid_t *g, const int dims[4], long n) {
    int py = ax_grid_dim(g, AX_AXIS_Y), pz = ax_grid_dim(g, AX_AXIS_Z), rank = ax_grid_rank(g);
    float *y = malloc(sizeof(float) * n), *zs = malloc(sizeof(float) * pz * n);
    float *zr = malloc(sizeof(float) * n), *xg = malloc(sizeof(float) * pz * n);
    for (long i = 0; i < n; i++) y[i] = val(rank, i);
    for (long i = 0; i < pz * n; i++) zs[i] = val(rank, i);
    for (long i = 0; i < n; i++) xg[ax_grid_coord(g, AX_AXIS_Z) * n + i] = sval(rank, i);
    ax_req r[3];
    OK(ax_coll_iallreduce(g, AX_AXIS_Y, y, n, AX_DT_F32, AX_OP_SUM, &r[0]));
    OK(ax_coll_ireduce_scatter(g, AX_AXIS_Z, zs, zr, n, AX_DT_F32, AX_OP_SUM, &r[1]));
    OK(ax_coll_iallgather(g, AX_AXIS_Z, xg + ax_grid_coord(g, AX_AXIS_Z) * n, n, xg, AX_DT_F32,
                          &r[2]));
    expect(AX_COMM_ALLREDUCE, AX_AXIS_Y, py, n, 4);
    expect(AX_COMM_REDUCE_SCATTER, AX_AXIS_Z, pz, n, 4);
    expect(AX_COMM_ALLGATHER, AX_AXIS_Z, pz, n, 4);
    while (!(ax_test(&r[0]) & ax_test(&r[1]) & ax_test(&r[2]))) {
    }
    for (int k = 0; k < 3; k++) OK(ax_wait(&r[k]));
    int zc = ax_grid_coord(g, AX_AXIS_Z);
    for (long i = 0; i < n; i++) {
        float wy = 0, wz = 0;
        for (int j = 0; j < py; j++) wy += val(member(g, dims, AX_AXIS_Y, j), i);
        for (int j = 0; j < pz; j++) wz += val(member(g, dims, AX_AXIS_Z, j), zc * n + i);
        if (y[i] != wy || zr[i] != wz) {
            CHECK(0, "cross-axis [%ld]: y %g/%g z %g/%g", i, y[i], wy, zr[i], wz);
            break;
        }
        int bad = 0;
        for (int j = 0; j < pz; j++)
            if (xg[j * n + i] != sval(member(g, dims, AX_AXIS_Z, j), i)) bad = 1;
        if (bad) {
            CHECK(0, "cross-axis in-place iallgather [%ld]", i);
            break;
        }
    }
    free(y);
    free(zs);
    free(zr);
    free(xg);
}

/* Two reduce-scatters in flight on one axis, with rank-dependent polling in between: ring
 * steps of different requests must never match each other's messages. */
static void check_two_rings(ax_grid_t *g, const int dims[4], ax_axis axis, long n) {
    int p = ax_grid_dim(g, axis), me = ax_grid_coord(g, axis), rank = ax_grid_rank(g);
    float *s1 = malloc(sizeof(float) * p * n), *s2 = malloc(sizeof(float) * p * n);
    float *r1 = malloc(sizeof(float) * n), *r2 = malloc(sizeof(float) * n);
    for (int j = 0; j < p; j++)
        for (long i = 0; i < n; i++) {
            s1[j * n + i] = rsval(rank, j, i);
            s2[j * n + i] = -rsval(rank, j, i + 5);
        }
    ax_req a, b;
    OK(ax_coll_ireduce_scatter(g, axis, s1, r1, n, AX_DT_F32, AX_OP_SUM, &a));
    if (rank % 2 == 0)
        for (int k = 0; k < 200; k++) ax_test(&a);
    OK(ax_coll_ireduce_scatter(g, axis, s2, r2, n, AX_DT_F32, AX_OP_SUM, &b));
    expect(AX_COMM_REDUCE_SCATTER, axis, p, n, 4);
    expect(AX_COMM_REDUCE_SCATTER, axis, p, n, 4);
    if (rank % 3 == 0)
        while (!ax_test(&b)) {
        }
    OK(ax_wait(&b));
    OK(ax_wait(&a));
    for (long i = 0; i < n; i++) {
        float w1 = 0, w2 = 0;
        for (int j = 0; j < p; j++) {
            int m = member(g, dims, axis, j);
            w1 += rsval(m, me, i);
            w2 -= rsval(m, me, i + 5);
        }
        if (r1[i] != w1 || r2[i] != w2) {
            CHECK(0, "two rings on %s [%ld]: %g/%g %g/%g", ax_axis_name(axis), i, r1[i], w1, r2[i],
                  w2);
            break;
        }
    }
    free(s1);
    free(s2);
    free(r1);
    free(r2);
}

static void check_errors(ax_grid_t *g, const int dims[4]) {
    float a[4] = {0};
    ax_error_clear();
    ax_status s = ax_coll_bcast(g, AX_AXIS_X, a, 4, AX_DT_F32,
                                dims[1]); /* root out of range: local, no hang */
    CHECK(s == AX_ERR_ARG && strstr(ax_error_msg(), "root"), "bad root -> %s: %s", ax_status_str(s),
          ax_error_msg());
    expect(AX_COMM_BCAST, AX_AXIS_X, dims[1], 4, 4); /* counted before validation */
    ax_error_clear();
    int wrong[4] = {dims[0] + 1, dims[1], dims[2], dims[3]};
    ax_grid_t *g2 = (ax_grid_t *)1;
    s = ax_grid_create(wrong, &g2);
    const char *m = ax_error_msg();
    char need[32], have[32];
    snprintf(need, sizeof need, "%d", wrong[0] * dims[1] * dims[2] * dims[3]);
    snprintf(have, sizeof have, "%d", ax_grid_size(g));
    CHECK(s == AX_ERR_ARG && g2 == NULL && strstr(m, need) && strstr(m, have) &&
              strstr(m, "--grid"),
          "size mismatch -> %s: %s", ax_status_str(s), m);
    ax_error_clear();
}

static void check_stats(ax_grid_t *g) {
    ax_comm_stats s;
    ax_comm_stats_get(g, &s);
    for (int k = 0; k < AX_COMM_KINDS; k++)
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            CHECK(s.calls[k][a] == g_expect_calls[k][a], "calls[%s][%s] = %ld, want %ld",
                  ax_comm_kind_name((ax_comm_kind)k), ax_axis_name((ax_axis)a), s.calls[k][a],
                  g_expect_calls[k][a]);
            double want = g_expect_bytes[k][a], got = s.bytes[k][a];
            CHECK(got <= want * (1 + 1e-12) && got >= want * (1 - 1e-12),
                  "bytes[%s][%s] = %.17g, want %.17g", ax_comm_kind_name((ax_comm_kind)k),
                  ax_axis_name((ax_axis)a), got, want);
        }
    CHECK(s.wait_s_total >= 0 && s.test_s >= 0, "times");
    if (ax_grid_size(g) > 1) CHECK(s.wait_s_total > 0, "wait time is counted");
}

/* lib/dist/overlap.h on a real grid: overlap is on, so an all-reduce and a reduce-scatter stay
 * in flight across a chunked compute (which gets ceil(n / chunk) contiguous calls, with
 * progress between them) and are right after the wait; the world axis spans every rank. */
static long g_chunks, g_next;
static void chunk_fn(void *arg, long b, long e) {
    (void)arg;
    CHECK(b == g_next && e > b, "chunk [%ld, %ld) after %ld", b, e, g_next);
    g_next = e;
    g_chunks++;
}

static void check_overlap(ax_grid_t *g) {
    int p = ax_grid_size(g), me = ax_grid_rank(g);
    ax_overlap *ov = NULL;
    OK(ax_overlap_create(g, 1, 2, &ov));
    if (!ov) return;
    CHECK(ax_overlap_enabled(ov) == (p > 1), "overlap enabled %d on %d ranks",
          ax_overlap_enabled(ov), p);
    enum { n = 1000 };
    float *ar = malloc(n * sizeof *ar), *rs = malloc((size_t)p * n * sizeof *rs),
          *out = malloc(n * sizeof *out);
    for (long i = 0; i < n; i++) ar[i] = (float)(me + 1);
    for (long i = 0; i < (long)p * n; i++) rs[i] = (float)(i / n + me);
    OK(ax_overlap_allreduce(ov, 0, AX_AXIS_WORLD, ar, n, AX_DT_F32, AX_OP_SUM));
    OK(ax_overlap_reduce_scatter(ov, 1, AX_AXIS_WORLD, rs, out, n, AX_DT_F32, AX_OP_SUM));
    g_chunks = g_next = 0;
    ax_overlap_compute(ov, 1000, 256, chunk_fn, NULL);
    CHECK(g_chunks == (p > 1 ? 4 : 1) && g_next == 1000, "%ld chunks up to %ld", g_chunks, g_next);
    OK(ax_overlap_wait_all(ov));
    CHECK(ax_overlap_in_flight(ov) == 0, "slots left in flight");
    float want_ar = (float)p * (p + 1) / 2, want_rs = (float)p * me + (float)p * (p - 1) / 2;
    for (long i = 0; i < n; i++) {
        CHECK(ar[i] == want_ar, "overlap allreduce[%ld] = %g, want %g", i, ar[i], want_ar);
        CHECK(out[i] == want_rs, "overlap reduce-scatter[%ld] = %g, want %g", i, out[i], want_rs);
        if (ar[i] != want_ar || out[i] != want_rs) break;
    }
    /* a failure injected on every rank fails the issue everywhere and leaves no slot busy */
    ax_comm_inject_failure(g, AX_COMM_ALLREDUCE, AX_AXIS_WORLD, 0);
    ax_status st = ax_overlap_allreduce(ov, 0, AX_AXIS_WORLD, ar, n, AX_DT_F32, AX_OP_SUM);
    CHECK(st == AX_ERR_MPI && strstr(ax_error_msg(), "over the world axis failed"),
          "injected failure: %d %s", (int)st, ax_error_msg());
    ax_error_clear();
    CHECK(ax_overlap_in_flight(ov) == 0, "a failed issue left a slot busy");
    OK(ax_overlap_allreduce(ov, 0, AX_AXIS_WORLD, ar, n, AX_DT_F32, AX_OP_SUM));
    OK(ax_overlap_wait(ov, 0));
    ax_overlap_free(ov);
    /* auto (the training default): every rank of these tests runs on this one host, so every
     * axis of more than one rank falls back to blocking collectives and says why; the compute
     * then runs in one piece */
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        CHECK(ax_grid_axis_hosts(g, (ax_axis)a) == 1, "axis %s spans %d hosts, want 1",
              ax_axis_name((ax_axis)a), ax_grid_axis_hosts(g, (ax_axis)a));
    CHECK(ax_grid_local_ranks(g) == p, "%d local ranks, want %d", ax_grid_local_ranks(g), p);
    OK(ax_overlap_create(g, AX_OVERLAP_AUTO, 2, &ov));
    if (!ov) return;
    CHECK(!ax_overlap_enabled(ov), "auto overlap on with every rank on one host");
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        const char *why = ax_overlap_axis_why(ov, (ax_axis)a);
        int multi = ax_grid_dim(g, (ax_axis)a) > 1;
        CHECK(!ax_overlap_axis_on(ov, (ax_axis)a) &&
                  strstr(why, multi ? "share one host" : "one rank"),
              "auto, axis %s of %d ranks: %s", ax_axis_name((ax_axis)a), ax_grid_dim(g, (ax_axis)a),
              why);
    }
    for (long i = 0; i < n; i++) ar[i] = (float)(me + 1);
    OK(ax_overlap_allreduce(ov, 0, AX_AXIS_WORLD, ar, n, AX_DT_F32, AX_OP_SUM));
    g_chunks = g_next = 0;
    ax_overlap_compute(ov, 1000, 256, chunk_fn, NULL);
    CHECK(g_chunks == 1 && g_next == 1000, "auto: %ld chunks up to %ld", g_chunks, g_next);
    OK(ax_overlap_wait(ov, 0));
    CHECK(ar[0] == want_ar && ar[n - 1] == want_ar, "auto allreduce = %g, want %g", ar[0], want_ar);
    ax_overlap_free(ov);
    free(ar), free(rs), free(out);
}

int main(int argc, char **argv) {
    const char *spec = "1x1x1x1";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--grid") && i + 1 < argc)
            spec = argv[++i];
        else {
            fprintf(stderr, "usage: mpirun -np N %s --grid DxXxYxZ\n", argv[0]);
            return 2;
        }
    }
    if (ax_mpi_start(&argc, &argv) != AX_OK) {
        fprintf(stderr, "mpi_comm: %s\n", ax_error_msg());
        return 1;
    }
    g_rank = ax_mpi_world_rank();
    int dims[4];
    ax_grid_t *g = NULL;
    if (ax_grid_parse(spec, dims) != AX_OK || ax_grid_create(dims, &g) != AX_OK) {
        fprintf(stderr, "mpi_comm: %s\n", ax_error_msg());
        ax_mpi_abort(1);
    }

    check_layout(g, dims);
    ax_comm_stats_reset(g);
    const long sizes[] = {0, 1, 7, 1000, 65537};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            check_blocking(g, dims, (ax_axis)a, sizes[si]);
            check_nonblocking(g, dims, (ax_axis)a, sizes[si]);
        }
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        check_typed(g, dims, (ax_axis)a, 1);
        check_typed(g, dims, (ax_axis)a, 1001);
        check_alltoallv(g, dims, (ax_axis)a, 0);
        check_alltoallv(g, dims, (ax_axis)a, 5);
        check_p2p_agree(g, (ax_axis)a);
        check_shm(g, (ax_axis)a);
    }
    check_world_grid(ax_grid_size(g));
    check_cross_axis(g, dims, 4099);
    for (int a = 0; a < AX_AXIS_COUNT; a++) check_two_rings(g, dims, (ax_axis)a, 30001);
    check_errors(g, dims);
    check_stats(g);
    check_overlap(g);

    /* create/free repeatedly: communicators are released */
    for (int i = 0; i < 3; i++) {
        ax_grid_t *g2 = NULL;
        OK(ax_grid_create(dims, &g2));
        ax_grid_free(g2);
    }

    int total = g_fail;
    if (ax_mpi_active()) MPI_Allreduce(&g_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        if (total == 0)
            printf("mpi_comm %s: ok\n", spec);
        else
            printf("mpi_comm %s: FAILED (%d failed checks over %d ranks)\n", spec, total,
                   ax_grid_size(g));
        fflush(stdout);
    }
    ax_grid_free(g);
    ax_mpi_stop();
    return total == 0 ? 0 : 1;
}
