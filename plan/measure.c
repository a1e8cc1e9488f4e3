/* `axmem plan --measure`: this machine's profile. The GEMM rate of ax_sgemm (oneDNN) on two
 * square sizes gives the large-GEMM rate and the half-rate dimension (rate(n) = R n / (n + h));
 * under mpirun, timed all-reduces between the ranks give the intra-node bandwidth (large
 * messages) and latency (8 bytes). Each takes the best of a few repetitions (the least
 * disturbed on a shared machine), the slowest rank's. */
#include "plan/plan_run.h"

#include "lib/backend/cpu/cpu.h"
#include "lib/core/timer.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the fastest of n: on a shared machine the best repetition is the one least disturbed */
static double best(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[0];
}

/* FLOP/s of an n x n x n GEMM, the best of reps after a warm-up */
static ax_status gemm_rate(long n, int reps, double *out) {
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
    float *c = malloc(sizeof(float) * n * n);
    double t[16];
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return ax_errorf(AX_ERR_NOMEM, "plan --measure: out of memory for a %ld GEMM", n);
    }
    for (long i = 0; i < n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f, c[i] = 0;
    ax_sgemm('N', 'T', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    for (int r = 0; r < reps; r++) {
        double t0 = ax_now();
        ax_sgemm('N', 'T', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        t[r] = ax_now() - t0;
    }
    *out = 2.0 * n * n * n / best(t, reps);
    free(a), free(b), free(c);
    return AX_OK;
}

/* bytes/s of a 64 MB memcpy, the best of 5 */
static ax_status copy_rate(double *out) {
    size_t n = 64u << 20;
    char *a = malloc(n), *b = malloc(n);
    double t[5];
    if (!a || !b) {
        free(a), free(b);
        return ax_errorf(AX_ERR_NOMEM, "plan --measure: out of memory for a 64 MB copy");
    }
    memset(a, 1, n), memset(b, 0, n);
    for (int r = 0; r < 5; r++) {
        double t0 = ax_now();
        memcpy(b, a, n);
        t[r] = ax_now() - t0;
    }
    *out = (double)n / best(t, 5);
    free(a), free(b);
    return AX_OK;
}

/* bytes/s of AdamW's seven streams (ax_cpu_adamw_update over n parameters, 28 bytes each),
 * the best of 5 after a warm-up: the rate the plan prices its memory-bound passes at */
static ax_status stream_rate(long n, double *out) {
    float *p = malloc(sizeof(float) * n), *gr = malloc(sizeof(float) * n);
    float *mo = malloc(sizeof(float) * n), *v = malloc(sizeof(float) * n);
    double t[5];
    if (!p || !gr || !mo || !v) {
        free(p), free(gr), free(mo), free(v);
        return ax_errorf(AX_ERR_NOMEM, "plan --measure: out of memory for %ld parameters", n);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) p[i] = 0.01f * (float)(i % 7), gr[i] = 1e-3f, mo[i] = v[i] = 0;
    ax_cpu_adamw_update(NULL, p, NULL, gr, mo, v, n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1);
    for (int r = 0; r < 5; r++) {
        double t0 = ax_now();
        ax_cpu_adamw_update(NULL, p, NULL, gr, mo, v, n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f,
                            r + 2);
        t[r] = ax_now() - t0;
    }
    *out = 28.0 * (double)n / best(t, 5);
    free(p), free(gr), free(mo), free(v);
    return AX_OK;
}

/* seconds per all-reduce of n floats over the world: the best of reps, the slowest rank's */
static ax_status allreduce_time(ax_grid_t *g, long n, int reps, double *out) {
    float *buf = calloc((size_t)n, sizeof(float));
    double t[16];
    if (!buf) return ax_errorf(AX_ERR_NOMEM, "plan --measure: out of memory for %ld floats", n);
    ax_status st = ax_coll_allreduce(g, AX_AXIS_WORLD, buf, n, AX_DT_F32, AX_OP_SUM);
    for (int r = 0; st == AX_OK && r < reps; r++) {
        double t0 = ax_now();
        st = ax_coll_allreduce(g, AX_AXIS_WORLD, buf, n, AX_DT_F32, AX_OP_SUM);
        t[r] = ax_now() - t0;
    }
    free(buf);
    AX_CHECK(st);
    double m = best(t, reps);
    AX_CHECK(ax_coll_allreduce(g, AX_AXIS_WORLD, &m, 1, AX_DT_F64, AX_OP_MAX));
    *out = m;
    return AX_OK;
}

ax_status ax_plan_measure(const ax_plan_machine *base, double budget_s, ax_plan_machine *out) {
    *out = *base;
    ax_machine *m = &out->m;
    double t0 = ax_now();
    ax_grid_t *g = NULL;
    AX_CHECK(ax_grid_create_world(&g));
    int p = ax_grid_dim(g, AX_AXIS_WORLD);
    /* GEMM: a large and a small square size, every rank at once (they share the node); the
     * slowest rank's rates */
    double rates[2] = {0, 0};
    long nb = budget_s < 5 ? 768 : 1536, ns = 192;
    ax_status st = gemm_rate(nb, 7, &rates[0]);
    if (st == AX_OK) st = gemm_rate(ns, 15, &rates[1]);
    if (st == AX_OK) st = ax_coll_allreduce(g, AX_AXIS_WORLD, rates, 2, AX_DT_F64, AX_OP_MIN);
    if (st != AX_OK) {
        ax_grid_free(g);
        return st;
    }
    /* memory-bound passes: AdamW over 16M parameters (256 MB, past the caches), every rank at
     * once (they share the memory), the slowest rank's */
    double sbw = 0;
    st = stream_rate(16l << 20, &sbw);
    if (st == AX_OK) st = ax_coll_allreduce(g, AX_AXIS_WORLD, &sbw, 1, AX_DT_F64, AX_OP_MIN);
    if (st != AX_OK) {
        ax_grid_free(g);
        return st;
    }
    m->mem_bw = sbw;
    double big = rates[0], small = rates[1];
    /* rate(n) = R n / (n + h): two sizes give R and h */
    double ratio = small / big; /* = ns (nb + h) / (nb (ns + h)) */
    double h = ratio < 1 ? (ns * nb - ratio * nb * ns) / (ratio * nb - ns) : 0;
    if (!(h > 0)) h = 0;
    m->gemm_flops = big * (nb + h) / nb, m->gemm_half_dim = h;
    m->peak_flops = m->gemm_flops;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m->mem_bytes = (double)pages * page / (p > 0 ? p : 1);
    m->elem_bytes = 4;
    m->overlap = 0; /* ranks sharing cores: MPI progresses only inside calls */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->devices_per_node = cores > 0 ? (int)cores : 1;
    /* for the per-axis overlap rule: MPI on the host (shared memory inside this node), with
     * this node's cores and the threads a rank computes with here */
    m->transport = AX_TRANSPORT_HOST;
    m->cores_per_node = cores > 0 ? (int)cores : 0;
    m->threads_per_device = omp_get_max_threads();
    /* without a second rank: the shared-memory transport is bounded by a copy; 2 us a message */
    char what[160];
    double cbw = 0;
    st = copy_rate(&cbw);
    if (st != AX_OK) {
        ax_grid_free(g);
        return st;
    }
    m->bw[AX_LEVEL_NODE] = m->bw[AX_LEVEL_NET] = cbw;
    m->lat[AX_LEVEL_NODE] = m->lat[AX_LEVEL_NET] = 2e-6;
    snprintf(what, sizeof what,
             "serial run: network = memory copy %.1f GB/s, 2 us a message (run under mpirun -np 2 "
             "to measure the all-reduce)",
             cbw / 1e9);
    if (p > 1) {
        /* latency: 8-byte all-reduce (2 (p-1) ring steps); bandwidth: 16 MB, minus latency */
        double tl = 0, tb = 0;
        long n = 4l << 20;
        st = allreduce_time(g, 2, 15, &tl);
        if (st == AX_OK) st = allreduce_time(g, n, 5, &tb);
        if (st != AX_OK) {
            ax_grid_free(g);
            return st;
        }
        double steps = 2.0 * (p - 1);
        m->lat[AX_LEVEL_NODE] = tl / steps;
        double bytes = ax_comm_volume(AX_COMM_ALLREDUCE, p, n, 4);
        double tx = tb - steps * m->lat[AX_LEVEL_NODE];
        m->bw[AX_LEVEL_NODE] = bytes / (tx > 0 ? tx : tb);
        m->bw[AX_LEVEL_NET] = m->bw[AX_LEVEL_NODE], m->lat[AX_LEVEL_NET] = m->lat[AX_LEVEL_NODE];
        snprintf(what, sizeof what, "all-reduce between %d ranks on this node", p);
    }
    ax_grid_free(g);
    snprintf(out->source, sizeof out->source,
             "axmem plan --measure (%.1f s): fp32 ax_sgemm (oneDNN) %ldx%ld at %.1f GFLOP/s and "
             "%ldx%ld at %.1f GFLOP/s, this process' threads; AdamW's 7 streams at %.1f GB/s; %s",
             ax_now() - t0, nb, nb, big / 1e9, ns, ns, small / 1e9, sbw / 1e9, what);
    return AX_OK;
}
