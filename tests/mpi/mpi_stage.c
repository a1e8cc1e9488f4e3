/* MPI driver for device-memory staging in lib/dist/comm.c (ax_comm_memory): run under
 * `mpirun -np N mpi_stage --grid DxXxYxZ`. A fake "device" (one mmap'd arena that is PROT_NONE
 * except inside the hook's copies, so any host access to it by the front end or the MPI
 * transport faults) stands in for GPU memory. Every collective on every axis runs twice, on a
 * grid without a hook with host buffers and on a grid with the hook with device buffers, and
 * the results must be byte-identical; the hook's copies must have been used (counted), and
 * size-1 axes must copy device to device. The verdict is reduced over all ranks.
 *
 * Built with AX_STAGE_NCCL by the CUDA emulator (tests/cuda/emu/run.sh, with lib/dist's NCCL
 * transport on the emulator's NCCL stand-in): the arena is emulated device memory, --comm is
 * nccl, and device buffers must go through NCCL instead (no staging copy on axes of more than
 * one rank, NCCL operations counted), with the same byte-identical results. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef AX_STAGE_NCCL
#include <nccl.h> /* the emulator's stand-in: ax_emu_open/close, ax_emu_nccl_calls */
#endif

#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "tests/mpi/mpi_verdict.h"

/* ---- the fake device: a guarded arena with a bump allocator ---- */
enum { ARENA = 8 << 20 };
static char *g_arena;
static size_t g_used;
static long g_copies[3], g_allocs; /* to_host, from_host, dev_copy; staging allocations */

#ifdef AX_STAGE_NCCL
static void dev_open(void) {
    ax_emu_open();
}
static void dev_close(void) {
    ax_emu_close();
}
#else
static void dev_open(void) {
    mprotect(g_arena, ARENA, PROT_READ | PROT_WRITE);
}
static void dev_close(void) {
    mprotect(g_arena, ARENA, PROT_NONE);
}
#endif
static void *dev_alloc(size_t bytes) {
    void *p = g_arena + g_used;
    g_used += (bytes + 63) / 64 * 64;
    if (g_used > ARENA) abort();
    return p;
}
static int f_is_device(void *u, const void *p) {
    (void)u;
    return (const char *)p >= g_arena && (const char *)p < g_arena + ARENA;
}
static ax_status f_copy(int kind, void *dst, const void *src, size_t bytes) {
    g_copies[kind]++;
    dev_open();
    memmove(dst, src, bytes);
    dev_close();
    return AX_OK;
}
static ax_status f_to_host(void *u, void *h, const void *d, size_t n) {
    (void)u;
    CHECK(!f_is_device(0, h) && f_is_device(0, d), "to_host direction");
    return f_copy(0, h, d, n);
}
static ax_status f_from_host(void *u, void *d, const void *h, size_t n) {
    (void)u;
    CHECK(f_is_device(0, d) && !f_is_device(0, h), "from_host direction");
    return f_copy(1, d, h, n);
}
static ax_status f_dev_copy(void *u, void *d, const void *s, size_t n) {
    (void)u;
    CHECK(f_is_device(0, d) && f_is_device(0, s), "dev_copy direction");
    return f_copy(2, d, s, n);
}
static void *f_host_alloc(void *u, size_t n) {
    (void)u;
    g_allocs++;
    return calloc(1, n);
}
static void f_host_free(void *u, void *p) {
    (void)u;
    free(p);
}

/* a device buffer holding host[n] / host[n] <- a device buffer */
static float *to_dev(const float *h, long n) {
    float *d = dev_alloc((size_t)n * sizeof(float));
    dev_open();
    memcpy(d, h, (size_t)n * sizeof(float));
    dev_close();
    return d;
}
static int same(const float *host, const float *dev, long n) {
    dev_open();
    int eq = memcmp(host, dev, (size_t)n * sizeof(float)) == 0;
    dev_close();
    return eq;
}

static void fill(float *x, long n, int salt) {
    for (long i = 0; i < n; i++) x[i] = (float)((g_rank * 7 + salt * 3 + i) % 23) - 11.0f;
}

/* one axis: every collective on host buffers (grid H) and device buffers (grid D) */
static void check_axis(ax_grid_t *H, ax_grid_t *D, ax_axis axis, long n) {
    int p = ax_grid_dim(H, axis), me = ax_grid_coord(H, axis);
    const char *an = ax_axis_name(axis);
    long big = n * p;
    float *h = calloc((size_t)big, sizeof(float)), *h2 = calloc((size_t)big, sizeof(float));
    long c0[3] = {g_copies[0], g_copies[1], g_copies[2]};
#ifdef AX_STAGE_NCCL
    long n0 = ax_emu_nccl_calls();
#endif

    fill(h, n, 1);
    float *d = to_dev(h, n);
    OK(ax_coll_allreduce(H, axis, h, n, AX_DT_F32, AX_OP_SUM));
    OK(ax_coll_allreduce(D, axis, d, n, AX_DT_F32, AX_OP_SUM));
    CHECK(same(h, d, n), "allreduce over %s", an);

    fill(h, n, 2); /* allgather, out of place and in place */
    float *ds = to_dev(h, n), *dr = to_dev(h2, big);
    OK(ax_coll_allgather(H, axis, h, n, h2, AX_DT_F32));
    OK(ax_coll_allgather(D, axis, ds, n, dr, AX_DT_F32));
    CHECK(same(h2, dr, big), "allgather over %s", an);
    fill(h2, big, 3);
    float *dip = to_dev(h2, big);
    OK(ax_coll_allgather(H, axis, h2 + me * n, n, h2, AX_DT_F32));
    OK(ax_coll_allgather(D, axis, dip + me * n, n, dip, AX_DT_F32));
    CHECK(same(h2, dip, big), "in-place allgather over %s", an);

    fill(h2, big, 4); /* reduce-scatter */
    float *dsend = to_dev(h2, big), *drecv = to_dev(h, n);
    OK(ax_coll_reduce_scatter(H, axis, h2, h, n, AX_DT_F32, AX_OP_SUM));
    OK(ax_coll_reduce_scatter(D, axis, dsend, drecv, n, AX_DT_F32, AX_OP_SUM));
    CHECK(same(h, drecv, n), "reduce-scatter over %s", an);

    fill(h, n, 5); /* bcast from the last coordinate */
    float *db = to_dev(h, n);
    OK(ax_coll_bcast(H, axis, h, n, AX_DT_F32, p - 1));
    OK(ax_coll_bcast(D, axis, db, n, AX_DT_F32, p - 1));
    CHECK(same(h, db, n), "bcast over %s", an);

    fill(h2, big, 6); /* alltoall */
    float *da = to_dev(h2, big), *dar = dev_alloc((size_t)big * sizeof(float));
    float *har = calloc((size_t)big, sizeof(float));
    OK(ax_coll_alltoall(H, axis, h2, n, har, AX_DT_F32));
    OK(ax_coll_alltoall(D, axis, da, n, dar, AX_DT_F32));
    CHECK(same(har, dar, big), "alltoall over %s", an);

    /* alltoallv: coordinate r gets r%3+1 elements from everyone, a gap of 1 between blocks */
    int *sc = calloc((size_t)p, sizeof(int)), *sd = calloc((size_t)p, sizeof(int));
    int *rc = calloc((size_t)p, sizeof(int)), *rd = calloc((size_t)p, sizeof(int));
    int so = 0, ro = 0;
    for (int r = 0; r < p; r++) {
        sc[r] = r % 3 + 1, sd[r] = so, so += sc[r];
        rc[r] = me % 3 + 1, rd[r] = ro, ro += rc[r] + 1;
    }
    float *hvs = calloc((size_t)so, sizeof(float)), *hv = calloc((size_t)ro, sizeof(float));
    fill(hvs, so, 7);
    fill(hv, ro, 8); /* the gaps must keep these */
    float *dvs = to_dev(hvs, so), *dvr = to_dev(hv, ro);
    OK(ax_coll_alltoallv(H, axis, hvs, sc, sd, hv, rc, rd, AX_DT_F32));
    OK(ax_coll_alltoallv(D, axis, dvs, sc, sd, dvr, rc, rd, AX_DT_F32));
    CHECK(same(hv, dvr, ro), "alltoallv over %s", an);

    if (p > 1) { /* a ring of sends: even coordinates send first */
        int next = (me + 1) % p, prev = (me + p - 1) % p;
        fill(h, n, 9);
        float *dp = to_dev(h, n), *dq = dev_alloc((size_t)n * sizeof(float));
        float *hq = calloc((size_t)n, sizeof(float));
        for (int pass = 0; pass < 2; pass++) {
            ax_grid_t *g = pass ? D : H;
            const float *s = pass ? dp : h;
            float *r = pass ? dq : hq;
            if (me % 2 == 0) {
                OK(ax_coll_send(g, axis, s, n, AX_DT_F32, next, 3));
                OK(ax_coll_recv(g, axis, r, n, AX_DT_F32, prev, 3));
            } else {
                OK(ax_coll_recv(g, axis, r, n, AX_DT_F32, prev, 3));
                OK(ax_coll_send(g, axis, s, n, AX_DT_F32, next, 3));
            }
        }
        CHECK(same(hq, dq, n), "send/recv over %s", an);
        free(hq);
    }

    /* non-blocking, three in flight together, progressed then waited */
    fill(h, n, 10);
    fill(h2, big, 11);
    float *nd = to_dev(h, n), *ngs = to_dev(h, n), *ngr = dev_alloc((size_t)big * sizeof(float));
    float *nrs = to_dev(h2, big), *nrr = dev_alloc((size_t)n * sizeof(float));
    float *hg = calloc((size_t)big, sizeof(float)), *hr = calloc((size_t)n, sizeof(float));
    float *ha = calloc((size_t)n, sizeof(float));
    memcpy(ha, h, (size_t)n * sizeof(float));
    for (int pass = 0; pass < 2; pass++) {
        ax_grid_t *g = pass ? D : H;
        ax_req q[3];
        OK(ax_coll_iallreduce(g, axis, pass ? nd : ha, n, AX_DT_F32, AX_OP_SUM, &q[0]));
        OK(ax_coll_iallgather(g, axis, pass ? ngs : h, n, pass ? ngr : hg, AX_DT_F32, &q[1]));
        OK(ax_coll_ireduce_scatter(g, axis, pass ? nrs : h2, pass ? nrr : hr, n, AX_DT_F32,
                                   AX_OP_SUM, &q[2]));
        for (int k = 0; k < 50; k++) ax_test(&q[k % 3]);
        for (int k = 0; k < 3; k++) OK(ax_wait(&q[k]));
    }
    CHECK(same(ha, nd, n), "iallreduce over %s", an);
    CHECK(same(hg, ngr, big), "iallgather over %s", an);
    CHECK(same(hr, nrr, n), "ireduce_scatter over %s", an);
    long th = g_copies[0] - c0[0], fh = g_copies[1] - c0[1], dd = g_copies[2] - c0[2];
    if (p == 1) /* the size-1 shortcuts copy on the device, never through the host */
        CHECK(dd == 6 && th == 0 && fh == 0,
              "size-1 %s: %ld device, %ld to-host, %ld from-host "
              "copies (want 6, 0, 0)",
              an, dd, th, fh);
#ifdef AX_STAGE_NCCL
    else /* every call on NCCL (a group for each all-to-all), none staged */
        CHECK(ax_emu_nccl_calls() - n0 == 12 && th == 0 && fh == 0 && dd == 0,
              "%s: %ld NCCL operations (want 12), %ld to-host, %ld from-host, %ld device copies",
              an, ax_emu_nccl_calls() - n0, th, fh, dd);
#else
    else /* every call staged: in for all but recv (and a non-root bcast), out for all but send */
        CHECK(th >= 10 && fh >= 11 && dd == 0, "%s: %ld to-host, %ld from-host, %ld device copies",
              an, th, fh, dd);
#endif
    free(h), free(h2), free(har), free(hv), free(hvs), free(hg), free(hr), free(ha);
    free(sc), free(sd), free(rc), free(rd);
}

/* more requests in flight together than any fixed pool would hold: each holds its own buffer */
static void check_many(ax_grid_t *H, ax_grid_t *D) {
    enum { K = 40, N = 5 };
    float h[K][N];
    float *d[K];
    ax_req qh[K], qd[K];
    for (int k = 0; k < K; k++) {
        fill(h[k], N, k);
        d[k] = to_dev(h[k], N);
        OK(ax_coll_iallreduce(H, AX_AXIS_WORLD, h[k], N, AX_DT_F32, AX_OP_SUM, &qh[k]));
        OK(ax_coll_iallreduce(D, AX_AXIS_WORLD, d[k], N, AX_DT_F32, AX_OP_SUM, &qd[k]));
    }
    for (int k = K - 1; k >= 0; k--) {
        OK(ax_wait(&qh[k]));
        OK(ax_wait(&qd[k]));
    }
    for (int k = 0; k < K; k++) CHECK(same(h[k], d[k], N), "request %d of %d in flight", k, K);
}

int main(int argc, char **argv) {
    const char *spec = "1x1x1x1";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--grid")) spec = argv[i + 1];
    if (ax_mpi_start(&argc, &argv) != AX_OK) {
        fprintf(stderr, "mpi_stage: %s\n", ax_error_msg());
        return 1;
    }
    g_rank = ax_mpi_world_rank();
#ifdef AX_STAGE_NCCL
    void *arena = NULL;
    if (cudaMalloc(&arena, ARENA) != cudaSuccess) return 2;
    g_arena = arena;
    OK(ax_comm_select("nccl"));
#else
    g_arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_arena == MAP_FAILED) return 2;
    OK(ax_comm_select("mpi")); /* the host-staged path, also in builds with NCCL */
#endif
    int dims[4];
    ax_grid_t *H = NULL, *D = NULL;
    OK(ax_grid_parse(spec, dims));
    OK(ax_grid_create(dims, &H));
    OK(ax_grid_create(dims, &D));
    if (H && D) {
        ax_comm_memory mem = {NULL,       f_is_device,  f_to_host,   f_from_host,
                              f_dev_copy, f_host_alloc, f_host_free, NULL};
        ax_grid_set_memory(D, &mem);
        CHECK(ax_grid_memory(D) && !ax_grid_memory(H), "ax_grid_memory");
        for (int a = 0; a < AX_AXIS_COUNT; a++) {
            check_axis(H, D, (ax_axis)a, 37);
            check_axis(H, D, (ax_axis)a, 1);
        }
        check_many(H, D);
        long staged = g_allocs;
        for (int a = 0; a < AX_AXIS_COUNT; a++) check_axis(H, D, (ax_axis)a, 37);
        /* the staging pool is reused: a second round of the same calls allocates nothing */
        CHECK(g_allocs == staged, "staging allocated %ld buffers again", g_allocs - staged);
        ax_grid_set_memory(D, NULL);
        CHECK(!ax_grid_memory(D), "hook cleared");
    }
    ax_grid_free(D);
    ax_grid_free(H);
    int total = g_fail;
    if (ax_mpi_active()) MPI_Allreduce(&g_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf(total ? "mpi_stage %s: %d failures\n" : "mpi_stage %s: ok\n", spec, total);
    ax_mpi_stop();
    return total ? 1 : 0;
}
