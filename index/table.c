#include "index/table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t buckets_for(uint64_t expect) {
    double slots = (double)expect / AX_MS_LOAD + 2 * AX_MS_BUCKET;
    uint64_t nb = (uint64_t)ceil(slots / AX_MS_BUCKET);
    return nb < 2 ? 2 : nb;
}

/* Thread CPU seconds: a populate piece's cost, which other processes' load disturbs less. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* populate pieces, and the slowest huge-page rate kept (bytes per CPU second; 4 KB pages
 * populate at a few 1e9, huge pages at ~1e10 when the system has them at hand). A piece is
 * two huge pages: the system's fast ones can run out in the middle of a large allocation, and
 * the slow piece that shows it costs little when pieces are small. */
#define POPULATE_PIECE ((size_t)4 << 20)
#define HUGE_MIN_RATE 2e9

static void populate(char *p, size_t bytes) {
    int done = 0;
#ifdef MADV_POPULATE_WRITE
    done = madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
#endif
    if (!done)
        for (size_t off = 0; off < bytes; off += 4096) ((volatile char *)p)[off] = 0;
}

void *ax_ms_alloc_populated(size_t bytes) {
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    int huge = 0;
#ifdef MADV_HUGEPAGE
    huge = madvise(p, bytes, MADV_HUGEPAGE) == 0;
#endif
    for (size_t off = 0; off < bytes; off += POPULATE_PIECE) {
        size_t m = bytes - off < POPULATE_PIECE ? bytes - off : POPULATE_PIECE;
        double t0 = thread_cpu();
        populate(p + off, m);
#ifdef MADV_NOHUGEPAGE
        /* Huge pages are cheaper to fault in and to address, except where the system must
         * first get them back: on a VM whose host reclaims the guest's free 2 MB blocks, a
         * fresh process's huge pages came at ~0.5 GB/s (1.2-2.1 s for a 736 MB table) where
         * 4 KB pages come at 3-4 GB/s. So the first slow piece turns them off for the rest. */
        if (huge && m == POPULATE_PIECE && off + m < bytes &&
            (double)m < HUGE_MIN_RATE * (thread_cpu() - t0)) {
            madvise(p + off + m, bytes - off - m, MADV_NOHUGEPAGE);
            huge = 0;
        }
#endif
    }
    return p;
}

/* The table's buckets come zeroed (empty) from ax_ms_alloc_populated and go back to the system
 * on free; huge pages cut TLB misses on random probes. The pages are faulted in now, in order:
 * a page fault taken inside the insert loop costs far more, and prefetches to unmapped pages
 * are dropped. One spare bucket at the end lets prefetches look one bucket past any home. */
static ax_status alloc_buckets(uint64_t nb, ax_ms_bucket **out) {
    if (nb > (1ULL << 32))
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "memscan: %llu buckets needed on one rank (limit 2^32); use more ranks",
                         (unsigned long long)nb);
    size_t bytes = (size_t)(nb + 1) * sizeof(ax_ms_bucket);
    void *p = ax_ms_alloc_populated(bytes);
    if (!p)
        return ax_errorf(AX_ERR_NOMEM,
                         "memscan: cannot allocate a %.1f GB table (%s); use more ranks or "
                         "machines",
                         (double)bytes / 1e9, strerror(errno));
    *out = p;
    return AX_OK;
}

ax_status ax_ms_table_init(ax_ms_table *t, uint64_t expect) {
    memset(t, 0, sizeof *t);
    t->nb = buckets_for(expect);
    AX_CHECK(alloc_buckets(t->nb, &t->b));
    t->n_grow = (uint64_t)(AX_MS_LOAD_MAX * (double)(t->nb * AX_MS_BUCKET));
    return AX_OK;
}

void ax_ms_table_free(ax_ms_table *t) {
    if (t->b) munmap(t->b, (size_t)(t->nb + 1) * sizeof(ax_ms_bucket));
    memset(t, 0, sizeof *t);
}

size_t ax_ms_table_bytes(const ax_ms_table *t) {
    return (size_t)(t->nb + 1) * sizeof(ax_ms_bucket);
}

ax_status ax_ms_table_resize(ax_ms_table *t, uint64_t expect) {
    if (expect < t->n) expect = t->n;
    ax_ms_table nt;
    AX_CHECK(ax_ms_table_init(&nt, expect));
    /* old entries come out in bucket order, i.e. roughly in home order of the new table too,
     * so the rehash streams through memory */
    for (uint64_t b = 0; b < t->nb; b++)
        for (int j = 0; j < AX_MS_BUCKET; j++)
            if (t->b[b].val[j]) {
                ax_ms_key k = {t->b[b].tag[j], ax_ms_slot_ext(&t->b[b], j)};
                ax_ms_table_put_new(&nt, k, t->b[b].val[j]);
            }
    ax_ms_table_free(t);
    *t = nt;
    return AX_OK;
}
