/* The forward's C = A B^T on oneDNN's matmul primitive (its brgemm kernels), one primitive kept
 * per shape. dnnl_sgemm re-decides its blocking on every call and, for a short A (a few hundred
 * token rows) against a wide weight, runs below its square-GEMM rate; the primitive, built once
 * for the shape, did better on exactly those shapes and worse on every other, so only they
 * come here. */
#include "lib/backend/cpu/cpu.h"

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Measured only on AVX-512, so AVX2 builds keep dnnl_sgemm with gemm.c's column chunks, which
 * were tuned there (ax_sgemm_primitive_enable switches it for tests and bench programs). */
#ifdef __AVX512F__
static int g_enabled = 1;
#else
static int g_enabled = 0;
#endif

int ax_sgemm_primitive_enable(int on) {
    int was = g_enabled;
    g_enabled = on != 0;
    return was;
}

enum { CACHE_SLOTS = 64 }; /* a training run has a dozen shapes; prefill lengths add a few */

typedef struct {
    long m, n, k, lda, ldb, ldc;
    int accumulate;        /* beta = 1 (a sum post-op) rather than 0 */
    dnnl_primitive_t prim; /* NULL: building it failed, this shape goes to dnnl_sgemm */
    dnnl_memory_desc_t a, b, c;
} slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;
static slot g_slots[CACHE_SLOTS];
static int g_used;

static int build(slot *s) {
    /* A [m, k] rows lda apart; B^T is weights [k, n] with B [n, k] rows ldb apart */
    dnnl_dims_t da = {s->m, s->k}, sa = {s->lda, 1};
    dnnl_dims_t db = {s->k, s->n}, sb = {1, s->ldb};
    dnnl_dims_t dc = {s->m, s->n}, sc = {s->ldc, 1};
    if (dnnl_memory_desc_init_by_strides(&s->a, 2, da, dnnl_f32, sa) ||
        dnnl_memory_desc_init_by_strides(&s->b, 2, db, dnnl_f32, sb) ||
        dnnl_memory_desc_init_by_strides(&s->c, 2, dc, dnnl_f32, sc))
        return -1;
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &s->a, &s->b, NULL, &s->c)) return -1;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int bad = dnnl_primitive_attr_create(&attr) != dnnl_success;
    if (!bad && s->accumulate)
        bad = dnnl_post_ops_create(&po) || dnnl_post_ops_append_sum(po, 1.0f) ||
              dnnl_primitive_attr_set_post_ops(attr, po);
    if (!bad) bad = dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL) != dnnl_success;
    if (!bad) bad = dnnl_primitive_create(&s->prim, pd) != dnnl_success;
    if (bad) s->prim = NULL;
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return bad ? -1 : 0;
}

/* the slot for this shape, built on first use; NULL when the cache is full or oneDNN failed */
static slot *lookup(long m, long n, long k, long lda, long ldb, long ldc, int accumulate) {
    for (int i = 0; i < g_used; i++) {
        slot *s = &g_slots[i];
        if (s->m == m && s->n == n && s->k == k && s->lda == lda && s->ldb == ldb &&
            s->ldc == ldc && s->accumulate == accumulate)
            return s->prim ? s : NULL;
    }
    if (g_used == CACHE_SLOTS) return NULL;
    if (!g_engine && (dnnl_engine_create(&g_engine, dnnl_cpu, 0) ||
                      dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags))) {
        g_engine = NULL;
        return NULL;
    }
    slot *s = &g_slots[g_used++];
    *s = (slot){
        .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc, .accumulate = accumulate};
    return build(s) == 0 ? s : NULL;
}

static int execute(slot *s, const float *A, const float *B, float *C) {
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    int bad = dnnl_memory_create(&ma, &s->a, g_engine, (void *)A) ||
              dnnl_memory_create(&mb, &s->b, g_engine, (void *)B) ||
              dnnl_memory_create(&mc, &s->c, g_engine, C);
    if (!bad) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        bad = dnnl_primitive_execute(s->prim, g_stream, 3, args) || dnnl_stream_wait(g_stream);
    }
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    return bad ? -1 : 0;
}

/* The shapes that go to the primitive: the forward's C = A B^T with 128-384 token rows, where
 * it beat dnnl_sgemm on every layer (up to 1.18x, bench/bench_gemm.c); from 512 rows on it was
 * even or slower, and the backward's NN and TN shapes were slower on it. */
int ax_sgemm_primitive_nt(long m, long n, long k, const float *A, long lda, const float *B,
                          long ldb, float beta, float *C, long ldc) {
    if (!g_enabled || (beta != 0.0f && beta != 1.0f)) return -1;
    if (m < AX_CPU_PRIMITIVE_MIN_M || m > AX_CPU_PRIMITIVE_MAX_M || n < 256 || k < 256) return -1;
    pthread_mutex_lock(&g_lock);
    slot *s = lookup(m, n, k, lda, ldb, ldc, beta != 0.0f);
    int r = s ? execute(s, A, B, C) : -1;
    pthread_mutex_unlock(&g_lock);
    return r;
}
