/* The bf16 weight cache of bf16 contexts (docs/backends.md, "Precision").
 *
 * A bf16 GEMM rounds both fp32 operands to bf16 first (gemm.c). Activations change between
 * GEMMs and go through the two staging slots; weights do not, so converting them at every GEMM
 * (forward, dX, every decoding step) reads 4 bytes and writes 2 per weight for nothing. lib/model
 * declares the device ranges that hold parameters (the table's params_range: the slab, the
 * Z-gathered `full` blocks); a GEMM operand inside one is kept here as a bf16 copy, keyed by
 * pointer, rows, columns and leading dimension (a block of an entry is served from it, as the
 * slots do), within a byte budget (LRU eviction).
 *
 * Validity: each range has a write stamp drawn from one process-wide counter, renewed whenever
 * something may have written into the range (ax_cuda_bf16_invalidate: the table's ops' outputs,
 * copies, zeroing, unmap, cuBLAS outputs, NCCL receive buffers; every kernel launched outside
 * a table op renews all of them). An entry converted under stamp s is valid while its range
 * still has s: the stamp is read before the conversion is enqueued and renewed after a write
 * is enqueued, so a copy converted before a write is never taken for one after it. Withdrawn
 * or re-declared ranges get new stamps, so a reused address never matches an old entry.
 *
 * Check mode (AXMEM_CUDA_BF16_CHECK=1): every hit is compared with a fresh conversion of its
 * source (host copies of both); a difference is a stale copy, a failure naming the operand. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/cuda/cuda.h"
#include "lib/core/log.h"

/* ---- parameter ranges, process-wide ---- */
typedef struct {
    const char *p;
    size_t bytes;
    unsigned long stamp;
    const ax_ctx *owner; /* withdrawn when this context goes */
} prange;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static prange *g_r;
static int g_nr, g_capr; /* g_nr also read without the lock: 0 means nothing to do */
static unsigned long g_stamp;
static int g_skip; /* test-only: invalidation ignored */

static int overlaps(const prange *r, const char *p, size_t bytes) {
    return p < r->p + r->bytes && r->p < p + (bytes ? bytes : 1);
}

/* the stamp of the range holding [p, p + bytes), 0 when none; *total = declared bytes */
static unsigned long range_stamp(const void *p, size_t bytes, size_t *total) {
    unsigned long s = 0;
    size_t t = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nr; i++) {
        const prange *r = &g_r[i];
        t += r->bytes;
        if ((const char *)p >= r->p && (const char *)p + bytes <= r->p + r->bytes) s = r->stamp;
    }
    pthread_mutex_unlock(&g_mu);
    if (total) *total = t;
    return s;
}

/* g_nr changes under the lock but is also read without it (atomic stores and loads) */
static void remove_at(int i) {
    g_r[i] = g_r[g_nr - 1];
    __atomic_store_n(&g_nr, g_nr - 1, __ATOMIC_RELEASE);
}

void ax_cuda_params_range(ax_ctx *ctx, const void *p, size_t bytes) {
    if (!p) return;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nr;) /* withdraw, and drop whatever the new range overlaps */
        if (g_r[i].p == (const char *)p || (bytes && overlaps(&g_r[i], p, bytes)))
            remove_at(i);
        else
            i++;
    if (bytes) {
        if (g_nr == g_capr) {
            int cap = g_capr ? 2 * g_capr : 64;
            prange *r = realloc(g_r, (size_t)cap * sizeof *r);
            if (!r) { /* not declared: its operands are staged, as without the cache */
                pthread_mutex_unlock(&g_mu);
                return;
            }
            g_r = r, g_capr = cap;
        }
        g_r[g_nr] = (prange){(const char *)p, bytes, ++g_stamp, ctx};
        __atomic_store_n(&g_nr, g_nr + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_mu);
}

void ax_cuda_params_freed(const void *p) {
    if (!__atomic_load_n(&g_nr, __ATOMIC_ACQUIRE) || !p) return;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nr; i++)
        if (g_r[i].p == (const char *)p) {
            remove_at(i);
            break;
        }
    pthread_mutex_unlock(&g_mu);
}

void ax_cuda_bf16_invalidate(const void *p, size_t bytes) {
    if (!p || !__atomic_load_n(&g_nr, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&g_mu);
    if (!g_skip)
        for (int i = 0; i < g_nr; i++)
            if (overlaps(&g_r[i], p, bytes)) g_r[i].stamp = ++g_stamp;
    pthread_mutex_unlock(&g_mu);
}

void ax_cuda_bf16_invalidate_all(void) {
    if (!__atomic_load_n(&g_nr, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&g_mu);
    if (!g_skip)
        for (int i = 0; i < g_nr; i++) g_r[i].stamp = ++g_stamp;
    pthread_mutex_unlock(&g_mu);
}

void ax_cuda_bf16_test_skip(int on) {
    pthread_mutex_lock(&g_mu);
    g_skip = on;
    pthread_mutex_unlock(&g_mu);
}

/* ---- a context's cache ---- */
ax_status ax_cuda_wcache_init(ax_cuda_wcache *w) {
    memset(w, 0, sizeof *w);
    w->budget = -1;
    const char *e = getenv("AXMEM_CUDA_BF16_CACHE");
    if (e && *e) {
        char *end = NULL;
        double mb = strtod(e, &end);
        if (end == e || *end || !(mb >= 0) || mb > 1e9)
            return ax_errorf(AX_ERR_ARG,
                             "AXMEM_CUDA_BF16_CACHE=%s is not a size in MB; give the bf16 weight "
                             "cache's budget in MB (0 turns it off), or unset it for the default",
                             e);
        w->budget = mb * 1048576.0;
    }
    e = getenv("AXMEM_CUDA_BF16_CHECK");
    w->check = e && *e && strcmp(e, "0") != 0;
    return AX_OK;
}

void ax_cuda_wcache_fini(ax_ctx *ctx, ax_cuda_wcache *w) {
    if (w->hits || w->misses || w->over)
        AX_DEBUG("cuda: bf16 weight cache: %d entries, %.1f MiB, %ld hits, %ld misses (%ld "
                 "after writes), %ld evictions, %ld operands over the budget%s",
                 w->n, (double)w->bytes / 1048576.0, w->hits, w->misses, w->refills, w->evictions,
                 w->over, w->check ? ", every hit checked" : "");
    for (int i = 0; i < w->n; i++)
        if (w->e[i].buf) cudaFree(w->e[i].buf);
    if (w->chk) cudaFree(w->chk);
    free(w->e);
    memset(w, 0, sizeof *w);
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nr;)
        if (g_r[i].owner == ctx)
            remove_at(i);
        else
            i++;
    pthread_mutex_unlock(&g_mu);
}

void ax_cuda_bf16_cache_stats(ax_ctx *ctx, long out[7]) {
    const ax_cuda_ctx *c = ctx->impl;
    const ax_cuda_wcache *w = &c->wc;
    long v[7] = {w->hits, w->misses, w->refills, w->evictions, w->over, w->n, (long)w->bytes};
    memcpy(out, v, sizeof v);
}

/* the budget in bytes: AXMEM_CUDA_BF16_CACHE, or half the declared bytes (their bf16 size)
 * plus an eighth and 16 MiB of slack (row padding, blocks cached apart from their matrix) */
static double budget_of(const ax_cuda_wcache *w, size_t declared) {
    if (w->budget >= 0) return w->budget;
    return (double)declared / 2 + (double)declared / 8 + 16.0 * 1048576.0;
}

/* Check mode: the hit's bytes (rows of pld bf16 at p) against src converted afresh. */
static void check_hit(ax_ctx *ctx, ax_cuda_wcache *w, const float *src, long rows, long cols,
                      long ld, const char *what, const uint16_t *p, long pld) {
    long fld = ax_cuda_bf16_ld(cols);
    size_t need = (size_t)rows * (size_t)fld, span = (size_t)((rows - 1) * pld + cols);
    if (need > w->chk_cap) {
        if (w->chk) cudaFree(w->chk);
        w->chk = NULL, w->chk_cap = 0;
        if (cudaMalloc(&w->chk, need * 2) != cudaSuccess) {
            cudaGetLastError();
            w->chk = NULL;
            ax_cuda_fail("AXMEM_CUDA_BF16_CHECK: out of device memory for %zu bytes", need * 2);
            return;
        }
        w->chk_cap = need;
    }
    uint16_t *fresh = malloc(need * 2), *held = malloc(span * 2);
    if (!fresh || !held) {
        free(fresh), free(held);
        ax_cuda_fail("AXMEM_CUDA_BF16_CHECK: out of host memory for %zu bytes", need * 2);
        return;
    }
    ax_cuda_to_bf16(ctx, w->chk, fld, src, rows, cols, ld);
    ax_cuda_d2h_sync(ctx, fresh, w->chk, need * 2);
    ax_cuda_d2h_sync(ctx, held, p, span * 2);
    for (long r = 0; r < rows; r++)
        for (long c = 0; c < cols; c++)
            if (fresh[r * fld + c] != held[r * pld + c]) {
                ax_cuda_fail("stale bf16 weight copy: %s at %p [%ld x %ld, ld %ld] differs from "
                             "its source at row %ld, column %ld (cached 0x%04x, fresh 0x%04x): "
                             "something wrote the parameter range without "
                             "ax_cuda_bf16_invalidate",
                             what, (const void *)src, rows, cols, ld, r, c, held[r * pld + c],
                             fresh[r * fld + c]);
                free(fresh), free(held);
                return;
            }
    free(fresh), free(held);
}

/* frees entry i's copy and removes it */
static void evict(ax_cuda_wcache *w, int i) {
    cudaFree(w->e[i].buf); /* waits for the GEMMs reading it: only when over the budget */
    w->bytes -= w->e[i].cap * 2;
    w->e[i] = w->e[--w->n];
    w->evictions++;
}

int ax_cuda_wcache_release(ax_cuda_wcache *w) {
    int n = 0;
    for (int i = 0; i < w->n;)
        if (w->e[i].used != w->tick) /* not an operand of the GEMM being set up */
            evict(w, i), n++;
        else
            i++;
    return n;
}

int ax_cuda_wcache_get(ax_ctx *ctx, ax_cuda_wcache *w, const float *src, long rows, long cols,
                       long ld, const char *what, const void **p, long *pld) {
    if (w->budget == 0 || !__atomic_load_n(&g_nr, __ATOMIC_ACQUIRE)) return 0;
    size_t declared = 0, extent = (size_t)((rows - 1) * ld + cols) * sizeof(float);
    unsigned long stamp = range_stamp(src, extent, &declared);
    if (!stamp) return 0; /* an activation: the slots */
    int same = -1;        /* an entry of exactly this operand, stale */
    for (int i = 0; i < w->n; i++) {
        ax_cuda_wentry *e = &w->e[i];
        if (e->ld != ld || src < e->src) continue;
        long off = (long)(src - e->src), r = off / ld, col = off % ld;
        if (r + rows > e->rows || col + cols > e->cols) continue;
        if (e->stamp != stamp) {
            if (!off && e->rows == rows && e->cols == cols) same = i;
            continue;
        }
        e->used = w->tick;
        *pld = ax_cuda_bf16_ld(e->cols);
        *p = (const uint16_t *)e->buf + r * *pld + col;
        w->hits++;
        if (w->check) check_hit(ctx, w, src, rows, cols, ld, what, *p, *pld);
        return 1;
    }
    size_t need = (size_t)rows * (size_t)ax_cuda_bf16_ld(cols);
    if (same < 0) { /* a new entry: room within the budget, then its memory */
        double budget = budget_of(w, declared);
        if ((double)need * 2 > budget) {
            w->over++;
            return 0;
        }
        while ((double)(w->bytes + need * 2) > budget) {
            int lru = -1; /* never an entry this GEMM already took (used == tick) */
            for (int i = 0; i < w->n; i++)
                if (w->e[i].used != w->tick && (lru < 0 || w->e[i].used < w->e[lru].used)) lru = i;
            if (lru < 0) {
                w->over++;
                return 0;
            }
            evict(w, lru);
        }
        if (w->n == w->cap) {
            int cap = w->cap ? 2 * w->cap : 64;
            ax_cuda_wentry *e = realloc(w->e, (size_t)cap * sizeof *e);
            if (!e) return 0;
            w->e = e, w->cap = cap;
        }
        void *buf = NULL;
        if (cudaMalloc(&buf, need * 2) != cudaSuccess) {
            cudaGetLastError(); /* no room on the device: staged as without the cache */
            w->over++;
            return 0;
        }
        same = w->n++;
        w->e[same] = (ax_cuda_wentry){buf, need, src, rows, cols, ld, 0, 0};
        w->bytes += need * 2;
    } else {
        w->refills++;
    }
    ax_cuda_wentry *e = &w->e[same];
    ax_cuda_to_bf16(ctx, e->buf, ax_cuda_bf16_ld(cols), src, rows, cols, ld);
    e->stamp = stamp; /* read before the conversion was enqueued */
    e->used = w->tick;
    w->misses++;
    *p = e->buf;
    *pld = ax_cuda_bf16_ld(cols);
    return 1;
}
