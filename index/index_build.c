/* Building the memscan index: a sizing pass (HyperLogLog of the distinct windows), then rounds
 * of hashing a fixed number of window starts per rank and routing (hash, position) pairs to
 * their owner ranks with an all-to-all (lib/dist/comm.h, over a world grid, so its bytes are
 * counted like training's), each owner counting them into its table. */
#include "index/hash.h"
#include "index/hll.h"
#include "index/index_impl.h"
#include "lib/dist/comm.h"
#include "lib/dist/shm.h"
#include "lib/core/status.h"

#include "lib/core/log.h"
#include "lib/core/progress.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

/* this thread's CPU seconds: phase times for the debug log that a loaded machine disturbs less */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The windows starting in [s, e) of one rank's slice, visited as segments of consecutive starts
 * inside one document (so a window never crosses a document boundary). */
typedef struct {
    const ax_axd_t *ds;
    const uint64_t *off;
    uint64_t n_docs, d, e;
    int n;
} seg_iter;

static void seg_begin(seg_iter *it, const ax_axd_t *ds, int n, uint64_t s, uint64_t e) {
    it->ds = ds;
    it->off = ax_axd_doc_offsets(ds);
    it->n_docs = ax_axd_n_docs(ds);
    it->n = n;
    it->e = e;
    it->d = s < e ? ax_axd_doc_of(ds, s) : it->n_docs;
}

/* next segment of window starts [*a, *b); 0 when done */
static int seg_next(seg_iter *it, uint64_t s, uint64_t *a, uint64_t *b) {
    while (it->d < it->n_docs && it->off[it->d] < it->e) {
        uint64_t d = it->d++;
        uint64_t start = it->off[d], end = ax_ms_doc_text_end(it->ds, d);
        if (end - start < (uint64_t)it->n) continue;
        uint64_t last = end - (uint64_t)it->n + 1; /* one past the last window start */
        uint64_t lo = start > s ? start : s, hi = last < it->e ? last : it->e;
        if (lo < hi) {
            *a = lo;
            *b = hi;
            return 1;
        }
    }
    return 0;
}

/* Rounds a rank's segment holds (shm_round): one being hashed, one its owners take, one
 * whose owners may still be taking it */
#define SHM_SLOTS 3

/* A rank's segment for the exchange through shared memory (shm_round). Its counters are
 * written by it alone and read by the others (acquire/release); a slot's round is published
 * by `hashed` and released by every owner's `consumed`. */
typedef struct {
    uint64_t *hashed;           /* rounds it has published */
    uint64_t *consumed;         /* rounds whose pairs it has taken from every rank */
    uint64_t *flags[SHM_SLOTS]; /* its stop (1) and error (2) bits as of the slot's round */
    int *count[SHM_SLOTS], *displ[SHM_SLOTS]; /* P each: its pairs for each owner, where */
    uint64_t *pairs[SHM_SLOTS]; /* round_windows wire pairs (wire_pair), grouped by owner */
} shm_view;

typedef struct {
    ax_memscan_index_t *idx;
    const ax_axd_t *ds;
    ax_ms_pair_fn sink; /* routing only (ax_ms_route_pairs): arriving pairs go here */
    void *sink_ctx;
    ax_grid_t *g; /* the world grid (idx->grid); rank, size along AX_AXIS_WORLD */
    int rank, size, active;
    int n, bits;
    uint64_t seed, B, lo, hi;
    int32_t *tok;     /* B + n - 1 tokens */
    ax_ms_pair *pair; /* B: this round's windows (on the wire: wire_pair, or pairs) */
    uint32_t *owner;  /* B: their owners, when packed on more than 2 ranks */
    ax_ms_pair *send; /* B: the same, grouped by owner */
    ax_ms_pair *recv; /* recv_cap + P */
    uint64_t *chunk;  /* R regions of rcap packed pairs (pack_pair) waiting to be counted */
    uint64_t *stage;  /* R cache lines: each region's pairs on their way to the chunk */
    int pb;           /* bits of a position in a packed pair */
    uint32_t *rfill;  /* R: pairs in each region */
    uint64_t recv_cap, rcap;
    uint64_t rper;  /* the pairs per region the chunk is sized for (rcap adds the spread) */
    int rb;         /* R = 2^rb regions */
    double t_flush; /* CPU seconds counting chunks (debug log) */
    int *sc, *sd, *rc, *rd, *scount, *sdispl, *rcount; /* P each */
    /* Ranks all on one host (shm_alloc): every rank's segment (shm_round) */
    ax_shm *shm;
    shm_view *sv; /* P */
} builder;

/* u64 elements of one ax_ms_pair on the wire */
#define U64_PER_PAIR ((int)(sizeof(ax_ms_pair) / sizeof(uint64_t)))
_Static_assert(sizeof(ax_ms_pair) == 2 * sizeof(uint64_t), "ax_ms_pair is (hash, position)");

/* The in-memory build sends a pair as one u64: the hash bits the owner's table uses (26..63,
 * in place) over the window's offset from the start of its sender's round (< round_windows
 * <= 2^26, check_opts). Half the bytes of (hash, position), on the node and on the network;
 * the receiver knows each sender's round start (its slice start + round x round_windows). The
 * routing for the spilled build keeps whole pairs (its partitions use the low hash bits). */
#define WIRE_OFF_BITS 26
#define WIRE_OFF_MASK ((1ULL << WIRE_OFF_BITS) - 1)
static inline uint64_t wire_pair(uint64_t h, uint64_t off) {
    return (h & ~WIRE_OFF_MASK) | off;
}

/* pass 1: windows in this rank's slice, and a sketch of their distinct count */
static void sizing_pass(builder *bd, ax_ms_hll *hll, uint64_t *n_windows) {
    const ax_axd_t *ds = bd->ds;
    *n_windows = 0;
    for (uint64_t s = bd->lo; s < bd->hi; s += bd->B) {
        uint64_t e = s + bd->B < bd->hi ? s + bd->B : bd->hi;
        seg_iter it;
        seg_begin(&it, ds, bd->n, s, e);
        uint64_t a, b;
        while (seg_next(&it, s, &a, &b)) {
            ax_axd_tokens(ds, a, b - a + (uint64_t)bd->n - 1, bd->tok);
            ax_ms_hll_add_windows(hll, bd->tok, b - a, bd->n);
            *n_windows += b - a;
        }
    }
}

/* Counting pairs into the table. In arrival order every insert would wait on a DRAM miss once
 * the table outgrows the cache. So each pair goes, as it is hashed (or received), into the
 * region of the chunk for the table region its home bucket lies in (by the top hash bits: the
 * home bucket is monotone in the tag, so a region is a contiguous run of buckets, small enough
 * to stay in L2); when a region of the chunk is full, or at the end, the chunk is counted region
 * by region: a table region's lines come from memory about once per chunk, streamed in while
 * the region before is counted, and the inserts hit cache. The order of inserts changes
 * neither the counts nor the first occurrences (a minimum).
 *
 * A pair waits in the chunk packed in 8 bytes: the table needs only hash bits 26..63 (tag and
 * ext), of which the region already gives the top rb, and positions below 2^pb (pb: the bits
 * of the dataset's token count), so (38 - rb) + pb <= 64 bits hold it; rb is raised to make it
 * fit (pb <= 40: rb <= 14). Half the bytes of (hash, position): twice the pairs per chunk of
 * the same memory, so half the passes over the table and half the chunk traffic. */
static inline uint64_t pack_pair(const builder *bd, uint64_t h, uint64_t pos) {
    uint64_t low = (h >> 26) & ((1ULL << (38 - bd->rb)) - 1);
    return low << bd->pb | pos;
}
/* the hash (bits 26..63; the rest 0) and position of a packed pair of region r (rb and pb
 * as values, so the counting loop keeps them in registers) */
static inline uint64_t unpack_hash(int rb, int pb, uint64_t r, uint64_t q) {
    return ((r << (38 - rb)) | q >> pb) << 26;
}
static inline uint64_t unpack_pos(int pb, uint64_t q) {
    return q & ((1ULL << pb) - 1);
}

/* how far ahead of the insert the home bucket is prefetched */
#define PREFETCH 16
/* most pairs a chunk holds (8 bytes each; 128 MB), whatever the dataset: counting costs about
 * the same per pair with smaller chunks (more passes over the table, each sparser; measured at
 * 100M tokens), and fresh pages cost (the system zeroes them) */
#define CHUNK_MAX ((uint64_t)1 << 24)
/* buckets per region (64 bytes each): half of L2, so the region and the pairs streaming
 * through stay resident together */
#define REGION_BUCKETS 8192
#define REGION_BITS_MAX 12 /* unless packing needs more */
/* stream the next region in only if its pairs would touch at least 1 / STREAM_MIN of its lines */
#define STREAM_MIN 2

/* a key match: the tokens decide; kept out of line so the hot loop keeps its registers */
__attribute__((noinline, cold)) static int merge_if_equal(ax_memscan_index_t *idx, uint64_t *v,
                                                          uint64_t pos) {
    uint64_t p0 = ax_ms_val_pos(*v);
    if (!ax_ms_window_eq_ds(idx->ds, p0, pos, (int)idx->info.n)) return 0;
    uint64_t c = ax_ms_val_count(*v);
    if (c < AX_MS_COUNT_MAX) {
        int from = ax_memscan_hist_bucket(c), to = ax_memscan_hist_bucket(c + 1);
        idx->hist_moved[from]--;
        idx->hist_moved[to]++;
        c++;
        idx->n_saturated_built += c == AX_MS_COUNT_MAX;
    }
    *v = ax_ms_val(pos < p0 ? pos : p0, c);
    /* the edge for the occurrence lists (index/occ.h) */
    if (idx->n_edge == idx->cap_edge) {
        uint64_t cap = idx->cap_edge ? 2 * idx->cap_edge : 1024;
        ax_ms_edge *ne = realloc(idx->edge, sizeof *ne * (size_t)cap);
        if (!ne) {
            idx->edge_oom = 1;
            return 1;
        }
        idx->edge = ne;
        idx->cap_edge = cap;
    }
    idx->edge[idx->n_edge++] = (ax_ms_edge){p0, pos};
    return 1;
}

/* a tag match (a repeated window, or rarely two windows sharing 32 hash bits): the ext bits
 * and then the tokens decide; 1 if merged */
__attribute__((noinline)) static int merge_tags(ax_memscan_index_t *idx, ax_ms_bucket *bk,
                                                unsigned tm, ax_ms_key k, uint64_t pos) {
    for (; tm; tm &= tm - 1) {
        int j = __builtin_ctz(tm);
        if (ax_ms_slot_ext(bk, j) == k.ext && merge_if_equal(idx, &bk->val[j], pos)) return 1;
    }
    return 0;
}

/* The insert's hot path is a new window: no tag in its home bucket matches, and it takes the
 * first free slot (a bucket's occupied slots come first). The table's buckets and size come
 * in as values: read through t, every store to a bucket (a u64 that might alias them) would
 * force them to be read again. Returns 1 when the window is new (the caller counts it). */
static inline int count_one(ax_memscan_index_t *idx, ax_ms_bucket *tb, uint64_t nb, uint64_t h,
                            uint64_t pos) {
    ax_ms_key k = ax_ms_key_of(h);
    uint64_t b = ((uint64_t)k.tag * nb) >> 32; /* ax_ms_home */
    for (;;) {
        ax_ms_bucket *bk = &tb[b];
        unsigned occ = 0, tm = 0;
#if defined(__AVX512F__) && defined(__AVX512VL__)
        /* the 5 values and the 5 tags in two masked vector loads: far fewer instructions
         * than 10 scalar compares, in the build's hottest loop */
        occ = _mm512_mask_test_epi64_mask(0x1f, _mm512_maskz_loadu_epi64(0x1f, bk->val),
                                          _mm512_set1_epi64(-1));
        tm = _mm256_mask_cmpeq_epi32_mask(0x1f, _mm256_maskz_loadu_epi32(0x1f, bk->tag),
                                          _mm256_set1_epi32((int)k.tag));
#else
        for (int j = 0; j < AX_MS_BUCKET; j++) {
            occ |= (unsigned)(bk->val[j] != 0) << j;
            tm |= (unsigned)(bk->tag[j] == k.tag) << j;
        }
#endif
        tm &= occ;
        if (__builtin_expect(tm != 0, 0) && merge_tags(idx, bk, tm, k, pos)) return 0;
        if (occ != (1u << AX_MS_BUCKET) - 1) {
            ax_ms_slot_set(bk, __builtin_ctz(~occ), k, ax_ms_val(pos, 1));
            return 1;
        }
        if (++b == nb) b = 0;
    }
}

/* PAIRS_PER_LINE pairs of a region's staging line, written to the chunk as one cache line that
 * bypasses the cache: a plain store to one of thousands of region tails would first read its
 * line from memory (it is long evicted), doubling the traffic and stalling the hashing */
#define PAIRS_PER_LINE 8
static inline void stream_line(uint64_t *dst, const uint64_t *line) {
#if defined(__AVX512F__)
    _mm512_stream_si512((void *)dst, _mm512_load_si512((const void *)line));
#elif defined(__SSE2__)
    for (int i = 0; i < 4; i++)
        _mm_stream_si128((__m128i *)dst + i, _mm_load_si128((const __m128i *)line + i));
#else
    memcpy(dst, line, 64);
#endif
}

/* The m packed pairs of region r counted into the table, while no insert can make it grow (the
 * caller checks): no test for growth per pair, the prefetches split from the tail, and the
 * next region streamed in (lines pf..pf_end, step per pair). Returns how many windows were
 * new. */
static uint64_t count_region(ax_memscan_index_t *idx, ax_ms_bucket *tb, uint64_t nb,
                             const uint64_t *p, size_t m, int rb, int pb, uint64_t r, uint64_t pf,
                             uint64_t pf_end, uint64_t step) {
    uint64_t added = 0;
    size_t i = 0;
    for (; i + PREFETCH < m; i++) {
        uint64_t ph = unpack_hash(rb, pb, r, p[i + PREFETCH]);
        const ax_ms_bucket *hb = &tb[((ph >> 32) * nb) >> 32];
        __builtin_prefetch(hb, 1, 1);
        __builtin_prefetch(hb + 1, 1, 1); /* a full home sends the insert on */
        if (pf < pf_end) {                /* step is 1 or 2 (flush_chunk) */
            __builtin_prefetch(&tb[pf], 1, 3);
            __builtin_prefetch(&tb[pf + step - 1], 1, 3);
            pf += step;
        }
        added +=
            (uint64_t)count_one(idx, tb, nb, unpack_hash(rb, pb, r, p[i]), unpack_pos(pb, p[i]));
    }
    for (; i < m; i++)
        added +=
            (uint64_t)count_one(idx, tb, nb, unpack_hash(rb, pb, r, p[i]), unpack_pos(pb, p[i]));
    return added;
}

/* counts every pair of the chunk into the table, region by region, and empties it */
static ax_status flush_chunk(builder *bd) {
    double t0 = cpu_now();
    ax_ms_table *t = &bd->idx->t;
    const int rb = bd->rb, pb = bd->pb;
    size_t R = (size_t)1 << rb;
    /* the table's fields in registers for the loop (see count_one); t->n is written back */
    ax_ms_bucket *tb = t->b;
    uint64_t nb = t->nb, n = t->n, n_grow = t->n_grow;
#if defined(__SSE2__)
    _mm_sfence(); /* the streamed lines before they are read */
#endif
    for (size_t r = 0; r < R; r++) {
        uint64_t *p = bd->chunk + r * bd->rcap;
        size_t m = bd->rfill[r], tail = m % PAIRS_PER_LINE;
        bd->rfill[r] = 0;
        /* the region's last pairs, still in its staging line */
        memcpy(p + (m - tail), bd->stage + PAIRS_PER_LINE * r, sizeof *p * tail);
        /* While region r is counted, the next region's buckets are streamed into cache in
         * address order (what the hardware prefetcher and DRAM do best), so its inserts find
         * their lines there; only when it has enough pairs to touch most of its lines. */
        uint64_t pf = 0, pf_end = 0, step = 0;
        if (r + 1 < R && m) {
            int sh = 32 - rb;
            pf = ax_ms_home(t, (uint32_t)((r + 1) << sh));
            pf_end = (r + 2 < R ? ax_ms_home(t, (uint32_t)((r + 2) << sh)) : nb) + 1;
            if ((uint64_t)bd->rfill[r + 1] * STREAM_MIN < pf_end - pf) pf_end = pf;
            step = (pf_end - pf + m - 1) / m;
        }
        if (n + m < n_grow) {       /* no insert can grow the table: the lean loop */
            if (step > 2) step = 2; /* only when this region has far fewer pairs than the next */
            n += count_region(bd->idx, tb, nb, p, m, rb, pb, r, pf, pf_end, step);
            continue;
        }
        for (size_t i = 0; i < m; i++) {
            if (i + PREFETCH < m) { /* ax_ms_prefetch, on the local copies */
                uint64_t ph = unpack_hash(rb, pb, r, p[i + PREFETCH]);
                const ax_ms_bucket *hb = &tb[((ph >> 32) * nb) >> 32];
                __builtin_prefetch(hb, 1, 1);
                __builtin_prefetch(hb + 1, 1, 1); /* a full home sends the insert on */
            }
            for (uint64_t k = 0; k < step && pf < pf_end; k++) __builtin_prefetch(&tb[pf++], 1, 3);
            n += (uint64_t)count_one(bd->idx, tb, nb, unpack_hash(rb, pb, r, p[i]),
                                     unpack_pos(pb, p[i]));
            if (n >= n_grow) {
                t->n = n;
                AX_CHECK(ax_ms_table_resize(t, n + n / 3));
                tb = t->b;
                nb = t->nb;
                n_grow = t->n_grow;
                pf = pf_end = 0;
            }
        }
    }
    t->n = n;
    bd->t_flush += cpu_now() - t0;
    return AX_OK;
}

/* adds a pair to the chunk, counting the chunk first when the pair's region is full */
static inline ax_status put_pair(builder *bd, uint64_t h, uint64_t pos) {
    size_t r = (size_t)((h >> 1) >> (63 - bd->rb)); /* top rb bits; 0 when rb = 0 */
    uint32_t f = bd->rfill[r];
    if (f == bd->rcap) {
        AX_CHECK(flush_chunk(bd));
        f = 0;
    }
    uint64_t *line = bd->stage + PAIRS_PER_LINE * r;
    line[f % PAIRS_PER_LINE] = pack_pair(bd, h, pos);
    bd->rfill[r] = f + 1;
    if (f % PAIRS_PER_LINE == PAIRS_PER_LINE - 1)
        stream_line(bd->chunk + r * bd->rcap + (f + 1 - PAIRS_PER_LINE), line);
    return AX_OK;
}

/* a pair this rank owns: counted here (or handed to the routing sink) without travelling */
static inline ax_status deliver(builder *bd, uint64_t h, uint64_t pos) {
    return bd->sink ? bd->sink(bd->sink_ctx, h, pos) : put_pair(bd, h, pos);
}

#define HASH_BATCH 256
/* Hashes the windows starting in [s, e). Alone (dst NULL) every pair goes straight into the
 * chunk; on several ranks the pairs this rank owns are delivered at once and the others go to
 * dst (room for bd->B), *m getting how many: with P ranks 1/P of the pairs skip the grouping,
 * the exchange's copies and the receive buffer. */
static ax_status hash_round(builder *bd, uint64_t s, uint64_t e, ax_ms_pair *dst, size_t *m) {
    const ax_axd_t *ds = bd->ds;
    size_t k = 0;
    seg_iter it;
    seg_begin(&it, ds, bd->n, s, e);
    uint64_t a, b;
    /* HASH_BATCH hashes first, then their pairs: placed one per hash, each store to a region's
     * staging line (an L2 miss) waited behind the next XXH3 call; in a tight loop the misses of
     * a batch overlap */
    uint64_t hb[HASH_BATCH];
    if (dst) memset(bd->scount, 0, sizeof(int) * (size_t)bd->size);
    while (seg_next(&it, s, &a, &b)) {
        ax_axd_tokens(ds, a, b - a + (uint64_t)bd->n - 1, bd->tok);
        for (uint64_t i0 = 0; i0 < b - a; i0 += HASH_BATCH) {
            uint64_t nb = b - a - i0 < HASH_BATCH ? b - a - i0 : HASH_BATCH;
            for (uint64_t j = 0; j < nb; j++)
                hb[j] = ax_ms_hash(bd->tok + i0 + j, bd->n, bd->seed, bd->bits);
            if (!dst) {
                for (uint64_t j = 0; j < nb; j++) AX_CHECK(put_pair(bd, hb[j], a + i0 + j));
                continue;
            }
            /* split without a branch per pair: which rank owns a hash is a coin toss that
             * a predictor would get wrong half the time on 2 ranks */
            uint16_t mine[HASH_BATCH], other[HASH_BATCH];
            int nm = 0, no = 0;
            for (uint64_t j = 0; j < nb; j++) {
                int is_mine = ax_ms_owner(hb[j], bd->size) == bd->rank;
                mine[nm] = other[no] = (uint16_t)j;
                nm += is_mine;
                no += !is_mine;
            }
            for (int q = 0; q < nm; q++) AX_CHECK(deliver(bd, hb[mine[q]], a + i0 + mine[q]));
            if (bd->sink) {
                for (int q = 0; q < no; q++) {
                    uint64_t h = hb[other[q]];
                    bd->scount[ax_ms_owner(h, bd->size)]++;
                    dst[k++] = (ax_ms_pair){h, a + i0 + other[q]};
                }
                continue;
            }
            uint64_t *w = (uint64_t *)dst;
            for (int q = 0; q < no; q++) {
                uint64_t h = hb[other[q]];
                int o = ax_ms_owner(h, bd->size);
                bd->scount[o]++;
                if (bd->owner) bd->owner[k] = (uint32_t)o;
                w[k++] = wire_pair(h, a + i0 + other[q] - s);
            }
        }
    }
    if (m) *m = k;
    return AX_OK;
}

/* A barrier whose waiting ranks sleep: a non-blocking allreduce of nothing, tested every
 * 200 us. MPI's blocking collectives poll, so a rank done with its share of a round would spin
 * a core that the ranks still hashing need when ranks share cores (mpirun --oversubscribe, or
 * other load). */
ax_status ax_ms_calm_sync(ax_grid_t *g) {
    int32_t x = 0;
    ax_req req;
    memset(&req, 0, sizeof req);
    AX_CHECK(ax_coll_iallreduce(g, AX_AXIS_WORLD, &x, 1, AX_DT_I32, AX_OP_MAX, &req));
    while (!ax_test(&req)) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return ax_wait(&req);
}

/* 1 when this rank's chunk, once this round's `incoming` pairs are in, could not take another
 * round: then every rank counts its chunk after this round, together. Left to put_pair, a
 * full region makes one rank count its chunk (~0.15 s at 100M tokens) mid-round while the
 * others wait for it, and then they do the same in turn. */
static uint64_t chunk_nearly_full(const builder *bd, uint64_t incoming) {
    if (bd->sink || !bd->chunk) return 0;
    uint64_t R = (uint64_t)1 << bd->rb, fill = incoming;
    for (uint64_t r = 0; r < R; r++) fill += bd->rfill[r];
    return fill + bd->B > R * bd->rper;
}

/* where rank r's round `round` starts: the windows it sent are offsets from here (wire_pair) */
static uint64_t sender_round_start(const builder *bd, int r, uint64_t round) {
    uint64_t T = ax_axd_n_tokens(bd->ds), P = (uint64_t)bd->size;
    return T * (uint64_t)r / P + round * bd->B;
}

/* Waits until *p >= v, another rank's counter: checks for up to WAIT_SPIN seconds (small rounds
 * are often a few microseconds apart), then naps between checks (ranks may share cores: a
 * spinning rank would take the core of the one it waits for). Marked for the stalled-rank
 * watchdog (lib/core/stop.h) as the MPI waits are: a rank killed or stopped mid-build would
 * otherwise leave the others waiting here for ever. */
#define WAIT_SPIN 20e-6
static void wait_until(const uint64_t *p, uint64_t v) {
    if (__atomic_load_n(p, __ATOMIC_ACQUIRE) >= v) return;
    ax_stall_begin("memscan index round", "world");
    double t0 = ax_now();
    for (unsigned spin = 1; __atomic_load_n(p, __ATOMIC_ACQUIRE) < v; spin++) {
#if defined(__SSE2__)
        _mm_pause();
#endif
        if (spin % 64 == 0 && ax_now() - t0 > WAIT_SPIN) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
    ax_stall_end();
}

/* With shared memory: before round k is hashed into its slot, every owner has taken the round
 * that used the slot before (k - SHM_SLOTS) */
static void shm_slot_free(builder *bd, uint64_t k) {
    if (k < SHM_SLOTS) return;
    for (int r = 0; r < bd->size; r++) wait_until(bd->sv[r].consumed, k - SHM_SLOTS + 1);
}

/* The end of round k with the ranks all on one host (k == rounds: only the last round to take).
 * Round k goes out by being published in this rank's segment (its pairs for others were hashed
 * into its slot on 2 ranks, or are grouped there now from bd->pair, m of them); then this rank
 * takes its share of round k-1 from every segment, in place. No rank waits for the others at
 * every round: only one more than a round ahead waits (the ranks' speeds wander by 2-12 ms in
 * a ~35 ms round, one then the other, which the per-round barrier of exchange_round paid for in
 * full), and nothing is copied but into the chunk. Each rank counts its chunk when it is nearly
 * full (the others run on meanwhile). *flags: in = this rank's stop/error bits for round k, out
 * = round k-1's OR over ranks: all ranks see the same and stop at the same round. */
static ax_status shm_round(builder *bd, uint64_t k, uint64_t rounds, size_t m, uint64_t *flags) {
    const int P = bd->size, me = bd->rank;
    shm_view *mine = &bd->sv[me];
    if (k < rounds) {
        int j = (int)(k % SHM_SLOTS), acc = 0;
        for (int r = 0; r < P; r++) {
            mine->count[j][r] = bd->scount[r];
            mine->displ[j][r] = acc;
            acc += bd->scount[r];
        }
        if (P > 2) { /* grouped by owner into the slot */
            memcpy(bd->sd, mine->displ[j], sizeof(int) * (size_t)P);
            const uint64_t *w = (const uint64_t *)bd->pair;
            for (size_t i = 0; i < m; i++) mine->pairs[j][bd->sd[bd->owner[i]]++] = w[i];
        }
        *mine->flags[j] = *flags;
        __atomic_store_n(mine->hashed, k + 1, __ATOMIC_RELEASE);
    }
    *flags = 0;
    if (k == 0) return AX_OK;
    uint64_t q = k - 1; /* the round to take */
    int j = (int)(q % SHM_SLOTS);
    for (int r = 0; r < P; r++) wait_until(bd->sv[r].hashed, q + 1);
    for (int r = 0; r < P; r++) *flags |= *bd->sv[r].flags[j];
    if (*flags) return AX_OK;
    ax_status st = AX_OK;
    for (int r = 0; r < P && st == AX_OK; r++) {
        if (r == me) continue;
        const shm_view *v = &bd->sv[r];
        const uint64_t *w = v->pairs[j] + v->displ[j][me];
        uint64_t start = sender_round_start(bd, r, q);
        for (int i = 0; i < v->count[j][me] && st == AX_OK; i++)
            st = put_pair(bd, w[i] & ~WIRE_OFF_MASK, start + (w[i] & WIRE_OFF_MASK));
    }
    __atomic_store_n(mine->consumed, q + 1, __ATOMIC_RELEASE);
    /* the next round brings about B pairs (this rank's own and the others'); 2B of room */
    if (st == AX_OK && chunk_nearly_full(bd, bd->B)) st = flush_chunk(bd);
    return st;
}

/* Routes this round's pairs to their owners and counts what arrives. If one owner would
 * receive more than recv_cap pairs (a window repeated all over this round), the exchange is
 * split into K slices so receive memory stays bounded. *flags: in = this rank's stop/error
 * bits, out = the OR over ranks (checked before any data moves, so all ranks agree).
 * m: this round's pairs for other ranks, in bd->pair (bd->scount of them per owner; packed
 * as wire_pair unless routing to a sink). */
static ax_status exchange_round(builder *bd, uint64_t round, size_t m, uint64_t *flags) {
    int P = bd->size;
    const int packed = bd->sink == NULL, words = packed ? 1 : U64_PER_PAIR;
    AX_CHECK(ax_ms_calm_sync(bd->g)); /* ranks meet here sleeping, then exchange */
    int acc = 0;                      /* bd->scount: pairs per owner, counted by hash_round */
    for (int r = 0; r < P; r++) {
        bd->sdispl[r] = acc;
        acc += bd->scount[r];
    }
    /* grouped by owner; with one other rank (or all pairs for one owner) they already are */
    void *send = bd->pair;
    int first_owner = P <= 2 || !m ? 0 : packed ? (int)bd->owner[0] : ax_ms_owner(bd->pair[0].h, P);
    if (P > 2 && m && (size_t)bd->scount[first_owner] != m) {
        memcpy(bd->sd, bd->sdispl, sizeof(int) * (size_t)P);
        if (packed) {
            const uint64_t *w = (const uint64_t *)bd->pair;
            uint64_t *out = (uint64_t *)bd->send;
            for (size_t i = 0; i < m; i++) out[bd->sd[bd->owner[i]]++] = w[i];
        } else {
            for (size_t i = 0; i < m; i++)
                bd->send[bd->sd[ax_ms_owner(bd->pair[i].h, P)]++] = bd->pair[i];
        }
        send = bd->send;
    }
    AX_CHECK(ax_coll_alltoall(bd->g, AX_AXIS_WORLD, bd->scount, 1, bd->rcount, AX_DT_I32));
    uint64_t in = 0;
    for (int r = 0; r < P; r++) in += (uint64_t)bd->rcount[r];
    uint64_t red[3] = {in, *flags, chunk_nearly_full(bd, in)};
    AX_CHECK(ax_coll_allreduce(bd->g, AX_AXIS_WORLD, red, 3, AX_DT_U64, AX_OP_MAX));
    *flags = red[1];
    if (*flags) return AX_OK;
    uint64_t K = (red[0] + bd->recv_cap - 1) / bd->recv_cap;
    if (K < 1) K = 1;
    if (K > 1)
        AX_DEBUG("memscan index: an owner receives %llu pairs this round: %llu exchanges",
                 (unsigned long long)red[0], (unsigned long long)K);
    ax_status st = AX_OK;
    for (uint64_t k = 0; k < K; k++) {
        int racc = 0;
        for (int r = 0; r < P; r++) {
            uint64_t c = (uint64_t)bd->scount[r], rcv = (uint64_t)bd->rcount[r];
            bd->sc[r] = (int)(c * (k + 1) / K - c * k / K);
            bd->sd[r] = bd->sdispl[r] + (int)(c * k / K);
            bd->rc[r] = (int)(rcv * (k + 1) / K - rcv * k / K);
            bd->rd[r] = racc;
            racc += bd->rc[r];
        }
        /* counts in u64 elements (`words` per pair); at most 2 (recv_cap + P) <= 2^28 + 2P,
         * well inside an int */
        for (int r = 0; r < P; r++) bd->sc[r] *= words, bd->sd[r] *= words;
        for (int r = 0; r < P; r++) bd->rc[r] *= words, bd->rd[r] *= words;
        AX_CHECK(ax_coll_alltoallv(bd->g, AX_AXIS_WORLD, send, bd->sc, bd->sd, bd->recv, bd->rc,
                                   bd->rd, AX_DT_U64));
        /* keep exchanging after a local failure so no rank is left waiting; report it after */
        if (!packed) {
            for (int i = 0; i < racc && st == AX_OK; i++)
                st = deliver(bd, bd->recv[i].h, bd->recv[i].pos);
            continue;
        }
        const uint64_t *w = (const uint64_t *)bd->recv;
        for (int r = 0; r < P && st == AX_OK; r++) {
            uint64_t start = sender_round_start(bd, r, round);
            for (int i = bd->rd[r]; i < bd->rd[r] + bd->rc[r] && st == AX_OK; i++)
                st = put_pair(bd, w[i] & ~WIRE_OFF_MASK, start + (w[i] & WIRE_OFF_MASK));
        }
    }
    if (st == AX_OK && red[2]) st = flush_chunk(bd);
    return st;
}

static size_t align_to(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

/* a rank's segment laid out from base (page-aligned; NULL: only the size); returns its bytes */
static size_t shm_layout(const builder *bd, char *base, shm_view *v) {
    size_t P = (size_t)bd->size, off = 128; /* the two counters, a cache line each */
    size_t meta = align_to(sizeof(uint64_t) + 2 * sizeof(int) * P, 64);
    size_t pairs = align_to(off + SHM_SLOTS * meta, 4096);
    if (base) {
        v->hashed = (uint64_t *)base;
        v->consumed = (uint64_t *)(base + 64);
        for (int j = 0; j < SHM_SLOTS; j++) {
            char *m = base + off + (size_t)j * meta;
            v->flags[j] = (uint64_t *)m;
            v->count[j] = (int *)(m + sizeof(uint64_t));
            v->displ[j] = v->count[j] + P;
            v->pairs[j] = (uint64_t *)(base + pairs + (size_t)j * sizeof(uint64_t) * bd->B);
        }
    }
    return pairs + SHM_SLOTS * sizeof(uint64_t) * bd->B;
}

/* Several ranks all on this host (and messages_only off): their segments (shm_round).
 * Collective; where shared memory cannot be had, the pairs go as MPI messages (exchange_round),
 * as between hosts. */
static void shm_alloc(builder *bd, int messages_only) {
    if (!bd->active || bd->sink || messages_only) return;
    size_t P = (size_t)bd->size;
    ax_shm *shm = NULL;
    ax_status st = ax_shm_create(bd->g, AX_AXIS_WORLD, shm_layout(bd, NULL, NULL), &shm);
    int ok = st == AX_OK && ax_shm_all_local(shm);
    bd->sv = ok ? calloc(P, sizeof *bd->sv) : NULL;
    int32_t good = ok && bd->sv;
    /* all ranks take the same path */
    if (ax_coll_allreduce(bd->g, AX_AXIS_WORLD, &good, 1, AX_DT_I32, AX_OP_MIN) != AX_OK) good = 0;
    if (!good) {
        AX_DEBUG("memscan index: pairs go as MPI messages (%s)",
                 st != AX_OK ? ax_error_msg() : "ranks on several hosts");
        ax_shm_free(shm);
        free(bd->sv);
        bd->sv = NULL;
        return;
    }
    bd->shm = shm;
    for (size_t r = 0; r < P; r++)
        shm_layout(bd, ax_shm_base(shm, ax_shm_index(shm, (int)r)), &bd->sv[r]);
    /* every segment came zeroed (no round published or taken), seen by all before any round */
    ax_ms_calm_sync(bd->g);
}

/* The chunk buffers: faulted in up front (as the table is): 4 KB page faults taken while
 * hashing into a fresh buffer cost about as much as the hashing. */
static void *big_alloc(size_t bytes) {
    return ax_ms_alloc_populated(bytes);
}

static void big_free(void *p, size_t bytes) {
    if (p) munmap(p, bytes);
}

static void builder_free(builder *bd) {
    free(bd->tok);
    free(bd->pair);
    free(bd->owner);
    free(bd->send);
    free(bd->recv);
    big_free(bd->chunk, sizeof(uint64_t) * (bd->rcap << bd->rb));
    free(bd->stage);
    free(bd->rfill);
    free(bd->sc);
    free(bd->sd);
    free(bd->rc);
    free(bd->rd);
    free(bd->scount);
    free(bd->sdispl);
    free(bd->rcount);
    ax_shm_free(bd->shm);
    free(bd->sv);
}

static ax_status builder_alloc(builder *bd) {
    size_t P = (size_t)bd->size;
    bd->tok = malloc(sizeof(int32_t) * (bd->B + (uint64_t)bd->n));
    int ok = bd->tok != NULL;
    if (bd->active) {
        bd->recv_cap = 2 * bd->B;
        bd->pair = malloc(sizeof(ax_ms_pair) * bd->B);
        bd->send = malloc(sizeof(ax_ms_pair) * bd->B);
        bd->recv = malloc(sizeof(ax_ms_pair) * (bd->recv_cap + P));
        int **arrs[] = {&bd->sc, &bd->sd, &bd->rc, &bd->rd, &bd->scount, &bd->sdispl, &bd->rcount};
        for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) {
            *arrs[i] = calloc(P, sizeof(int));
            ok = ok && *arrs[i];
        }
        if (!bd->sink && P > 2) {
            bd->owner = malloc(sizeof(uint32_t) * bd->B);
            ok = ok && bd->owner;
        }
        ok = ok && bd->pair && bd->send && bd->recv;
    }
    return ok ? AX_OK
              : ax_errorf(AX_ERR_NOMEM,
                          "memscan index: out of memory for round buffers (%llu "
                          "windows per round; lower it)",
                          (unsigned long long)bd->B);
}

/* The chunk for a table of about nb buckets: regions of about REGION_BUCKETS buckets, each with
 * room for its share of `want` pairs (or of `expect`, the pairs this rank will count, when
 * fewer) plus a margin for the spread of a uniform hash. A region filling early (a window
 * repeated very often) only counts the chunk sooner. */
static ax_status chunk_alloc(builder *bd, uint64_t expect, uint64_t nb, uint64_t want) {
    int rb = 0;
    while (rb < REGION_BITS_MAX && (nb >> rb) > REGION_BUCKETS) rb++;
    int pb = 1; /* positions < the dataset's tokens */
    while (pb < 40 && (ax_axd_n_tokens(bd->ds) >> pb) != 0) pb++;
    if (rb < pb - 26) rb = pb - 26; /* (38 - rb) + pb <= 64 */
    bd->pb = pb;
    /* The chunk is counted when it could not take the next rounds (about B pairs each), so its
     * share of the pairs is sized as an even part of them plus that room: counting a chunk
     * streams the whole table through the cache (~0.1 s at 100M tokens), a last chunk with few
     * pairs costs as much as a full one, and so does a fourth of 16M pairs where three of 16.1M
     * do (48.3M pairs a rank on 2 ranks). Within `want` plus the room. */
    uint64_t parts = want ? (expect + want - 1) / want : 1;
    if (parts >= 2)
        want = (expect + parts - 1) / parts + 2 * bd->B;
    else if (want > expect)
        want = expect;
    uint64_t per = (want >> rb) + 1;
    bd->rb = rb;
    bd->rper = per;
    bd->rcap = per + 4 * (uint64_t)sqrt((double)per) + 16;
    bd->rcap = (bd->rcap + PAIRS_PER_LINE - 1) / PAIRS_PER_LINE * PAIRS_PER_LINE; /* lines */
    bd->rfill = calloc((size_t)1 << rb, sizeof(uint32_t));
    bd->stage = aligned_alloc(64, sizeof(uint64_t) * PAIRS_PER_LINE << rb);
    bd->chunk = big_alloc(sizeof(uint64_t) * (bd->rcap << rb));
    return bd->rfill && bd->stage && bd->chunk
               ? AX_OK
               : ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory for a %.0f MB chunk",
                           (double)(sizeof(uint64_t) * (bd->rcap << rb)) / 1e6);
}

static ax_status agree(builder *bd, ax_status st) {
    return ax_coll_agree(bd->g, AX_AXIS_WORLD, st, "memscan index");
}

static ax_status check_opts(const ax_axd_t *ds, const ax_memscan_build_opts *o) {
    if (o->n < 1 || o->n > AX_MEMSCAN_N_MAX)
        return ax_errorf(AX_ERR_ARG, "memscan index: --n %d is out of range [1, %d]", o->n,
                         AX_MEMSCAN_N_MAX);
    /* the u64 wire format (wire_pair) holds a round offset in WIRE_OFF_BITS bits */
    if (o->round_windows < 1 || o->round_windows > (1u << WIRE_OFF_BITS))
        return ax_errorf(AX_ERR_ARG, "memscan index: round size %llu is out of range [1, 2^26]",
                         (unsigned long long)o->round_windows);
    if (o->hash_bits < 1 || o->hash_bits > 64)
        return ax_errorf(AX_ERR_ARG, "memscan index: hash bits %d out of range [1, 64]",
                         o->hash_bits);
    if (ax_axd_n_tokens(ds) > AX_MS_POS_MAX)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s: %llu tokens; the index addresses at most 2^40 tokens",
                         ax_axd_path(ds), (unsigned long long)ax_axd_n_tokens(ds));
    return AX_OK;
}

void ax_ms_fill_info(ax_memscan_info *in, const ax_axd_t *ds, const ax_memscan_build_opts *o,
                     int P) {
    memset(in, 0, sizeof *in);
    in->n = (uint32_t)o->n;
    in->hash_bits = (uint32_t)o->hash_bits;
    in->vocab = ax_axd_vocab_size(ds);
    in->build_ranks = (uint32_t)P;
    in->seed = o->seed;
    in->ds_checksum = ax_axd_checksum(ds);
    in->tok_checksum = ax_axd_tokenizer_checksum(ds);
    in->ds_tokens = ax_axd_n_tokens(ds);
    in->ds_docs = ax_axd_n_docs(ds);
    char *real = realpath(ax_axd_path(ds), NULL);
    snprintf(in->ds_path, sizeof in->ds_path, "%s", real ? real : ax_axd_path(ds));
    free(real);
}

static ax_status run_rounds(builder *bd, uint64_t rounds, const ax_memscan_build_opts *o) {
    ax_progress prog;
    int show = o->progress && bd->rank == 0;
    uint64_t T = ax_axd_n_tokens(bd->idx->ds);
    if (show) ax_progress_begin(&prog, "memscan index: tokens", 0, (long)T);
    ax_status st = AX_OK;
    for (uint64_t k = 0; k < rounds; k++) {
        uint64_t s = bd->lo + k * bd->B, e = s + bd->B;
        if (s > bd->hi) s = bd->hi;
        if (e > bd->hi) e = bd->hi;
        uint64_t flags = (o->stop && *o->stop) ? 1 : 0;
        if (!bd->active) {
            if (flags)
                return ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted; nothing "
                                                     "was written");
            AX_CHECK(hash_round(bd, s, e, NULL, NULL));
        } else if (bd->shm) {
            size_t m = 0;
            shm_slot_free(bd, k);
            /* on 2 ranks the other rank's pairs go straight to the slot (grouped already) */
            ax_ms_pair *dst =
                bd->size == 2 ? (ax_ms_pair *)bd->sv[bd->rank].pairs[k % SHM_SLOTS] : bd->pair;
            ax_status hs = hash_round(bd, s, e, dst, &m);
            if (st == AX_OK) st = hs;
            if (st != AX_OK) flags |= 2;
            ax_status xs = shm_round(bd, k, rounds, m, &flags);
            if (st == AX_OK) st = xs;
            if (flags & 2) return agree(bd, st);
            if (flags & 1)
                return ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted; nothing was "
                                                     "written");
        } else {
            size_t m = 0;
            ax_status hs = hash_round(bd, s, e, bd->pair, &m);
            if (st == AX_OK) st = hs;
            if (st != AX_OK) flags |= 2;
            ax_status xs = exchange_round(bd, k, m, &flags);
            if (xs == AX_ERR_MPI) return xs;
            if (st == AX_OK) st = xs;
            if (flags & 2) return agree(bd, st);
            if (flags & 1)
                return ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted; nothing was "
                                                     "written");
        }
        if (show) {
            /* ranks move in lockstep over equal slices: rank 0's share scales to the total */
            uint64_t done = (k + 1) * bd->B * (uint64_t)bd->size;
            ax_progress_tick(&prog, (long)(done > T ? T : done));
        }
    }
    if (bd->shm && rounds) { /* the last round's pairs */
        uint64_t flags = 0;
        ax_status xs = shm_round(bd, rounds, rounds, 0, &flags);
        if (st == AX_OK) st = xs;
        if (flags & 2) return agree(bd, st);
        if (flags & 1)
            return ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted; nothing was "
                                                 "written");
    }
    if (st == AX_OK) st = flush_chunk(bd);
    if (st == AX_OK && bd->idx->edge_oom)
        st = ax_errorf(AX_ERR_NOMEM,
                       "memscan index: out of memory for occurrence lists (%llu "
                       "repeated windows); use more ranks",
                       (unsigned long long)bd->idx->n_edge);
    if (st == AX_OK) {
        ax_memscan_index_t *idx = bd->idx;
        st = ax_ms_occ_from_edges(idx->edge, idx->n_edge, &idx->occ);
        idx->edge = NULL;
        idx->n_edge = idx->cap_edge = 0;
    }
    if (show) ax_progress_end(&prog);
    return bd->active ? agree(bd, st) : st;
}

ax_status ax_memscan_index_build(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                 ax_memscan_index_t **out) {
    *out = NULL;
    AX_CHECK(check_opts(ds, o));
    builder bd;
    memset(&bd, 0, sizeof bd);
    ax_memscan_index_t *idx = calloc(1, sizeof *idx);
    if (!idx) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    ax_ms_count_open(offsetof(ax_memscan_open_counts, built));
    ax_status st = ax_grid_create_world(&idx->grid);
    if (st != AX_OK) {
        free(idx);
        return st;
    }
    bd.g = idx->grid;
    bd.size = ax_grid_dim(bd.g, AX_AXIS_WORLD);
    bd.rank = ax_grid_coord(bd.g, AX_AXIS_WORLD);
    bd.active = bd.size > 1;
    int P = bd.size, r = bd.rank;
    idx->ds = ds;
    bd.ds = ds;
    idx->shard_rank = r;
    idx->shard_size = P;
    idx->mem_limit = o->mem_limit;
    ax_ms_fill_info(&idx->info, ds, o, P);
    bd.idx = idx;
    bd.n = o->n;
    bd.bits = o->hash_bits;
    bd.seed = o->seed;
    bd.B = o->round_windows;
    uint64_t T = ax_axd_n_tokens(ds);
    bd.lo = T * (uint64_t)r / (uint64_t)P; /* T < 2^40, P < 2^24: no overflow */
    bd.hi = T * (uint64_t)(r + 1) / (uint64_t)P;
    double t0 = ax_now();
    st = builder_alloc(&bd);
    st = bd.active ? agree(&bd, st) : st;
    if (st != AX_OK) goto fail;
    shm_alloc(&bd, o->messages_only);

    uint64_t cnt[2];
    double tp[5];
    tp[0] = cpu_now();
    /* sizing: distinct windows over all ranks, so each owner's table starts at its share */
    ax_ms_hll *hll = calloc(1, sizeof *hll);
    if (!hll) {
        st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
        st = bd.active ? agree(&bd, st) : st;
        goto fail;
    }
    sizing_pass(&bd, hll, &cnt[0]);
    tp[1] = cpu_now();
    cnt[1] = (bd.hi - bd.lo + bd.B - 1) / bd.B; /* this rank's rounds */
    st = ax_coll_allreduce(bd.g, AX_AXIS_WORLD, hll->reg, AX_MS_HLL_M, AX_DT_U8, AX_OP_MAX);
    if (st == AX_OK) st = ax_coll_allreduce(bd.g, AX_AXIS_WORLD, &cnt[0], 1, AX_DT_U64, AX_OP_SUM);
    if (st == AX_OK) st = ax_coll_allreduce(bd.g, AX_AXIS_WORLD, &cnt[1], 1, AX_DT_U64, AX_OP_MAX);
    if (st != AX_OK) {
        free(hll);
        goto fail;
    }
    double est = ax_ms_hll_estimate(hll);
    free(hll);
    if (est > (double)cnt[0]) est = (double)cnt[0];
    idx->info.n_windows = cnt[0];
    /* the sketch errs by ~1%: 2% headroom (plus a few sigma of one owner's share) keeps
     * the table from growing while staying near its fill target */
    double share = est / P;
    st = ax_ms_table_init(&idx->t, (uint64_t)(share * 1.02 + 3 * sqrt(share) + 16));
    /* at most half the table's bytes, so the build's peak stays within 1.5x the index */
    uint64_t want = ax_ms_table_bytes(&idx->t) / 2 / sizeof(uint64_t);
    if (want > CHUNK_MAX) want = CHUNK_MAX;
    if (st == AX_OK) st = chunk_alloc(&bd, bd.hi - bd.lo, idx->t.nb, want);
    st = bd.active ? agree(&bd, st) : st;
    if (st != AX_OK) goto fail;
    AX_DEBUG("memscan index: %llu windows, ~%.0f distinct (sketch), %.1f MB table per rank",
             (unsigned long long)cnt[0], est, (double)ax_ms_table_bytes(&idx->t) / 1e6);

    tp[2] = cpu_now();
    st = run_rounds(&bd, cnt[1], o);
    if (st != AX_OK) goto fail;
    tp[3] = cpu_now();

    /* global statistics */
    ax_memscan_info loc = idx->info;
    ax_ms_built_stats(idx, &loc);
    uint64_t v[6 + AX_MEMSCAN_HIST];
    v[0] = loc.n_distinct;
    v[1] = loc.n_saturated;
    v[2] = ax_ms_table_bytes(&idx->t);
    v[3] = idx->occ.n_groups;
    v[4] = idx->occ.n_pos;
    v[5] = ax_ms_occ_bytes(&idx->occ);
    memcpy(v + 6, loc.hist, sizeof loc.hist);
    st = ax_coll_allreduce(bd.g, AX_AXIS_WORLD, v, 6 + AX_MEMSCAN_HIST, AX_DT_U64, AX_OP_SUM);
    if (st != AX_OK) goto fail;
    idx->info.n_distinct = v[0];
    idx->info.n_saturated = v[1];
    idx->table_bytes_all = v[2];
    idx->occ_bytes_all = v[5];
    memcpy(idx->info.hist, v + 6, sizeof idx->info.hist);
    ax_ms_occ_info(&idx->info);
    /* every position of a repeated window is in a list, each such window has one */
    if (v[3] != idx->info.n_dup || v[4] != idx->info.n_dup_pos) {
        st =
            ax_errorf(AX_ERR_INTERNAL,
                      "memscan index: occurrence lists hold %llu windows and %llu positions, "
                      "the table %llu and %llu; please report this",
                      (unsigned long long)v[3], (unsigned long long)v[4],
                      (unsigned long long)idx->info.n_dup, (unsigned long long)idx->info.n_dup_pos);
        goto fail;
    }
    tp[4] = cpu_now();
    AX_DEBUG("memscan index: built in %.2f s; CPU: sizing %.2f s, table %.2f s, hashing %.2f s, "
             "counting %.2f s, lists and statistics %.2f s",
             ax_now() - t0, tp[1] - tp[0], tp[2] - tp[1], tp[3] - tp[2] - bd.t_flush, bd.t_flush,
             tp[4] - tp[3]);
    builder_free(&bd);
    *out = idx;
    return AX_OK;
fail:
    builder_free(&bd);
    ax_memscan_index_free(idx);
    return st;
}

ax_status ax_ms_route_pairs(const ax_axd_t *ds, const ax_memscan_build_opts *o, ax_grid_t *g,
                            uint64_t round_windows, ax_ms_pair_fn fn, void *ctx) {
    AX_CHECK(check_opts(ds, o));
    builder bd;
    memset(&bd, 0, sizeof bd);
    bd.ds = ds;
    bd.sink = fn;
    bd.sink_ctx = ctx;
    bd.g = g;
    bd.size = ax_grid_dim(g, AX_AXIS_WORLD);
    bd.rank = ax_grid_coord(g, AX_AXIS_WORLD);
    bd.active = 1;
    bd.n = o->n;
    bd.bits = o->hash_bits;
    bd.seed = o->seed;
    bd.B = round_windows ? round_windows : 1;
    uint64_t T = ax_axd_n_tokens(ds), P = (uint64_t)bd.size, r = (uint64_t)bd.rank;
    bd.lo = T * r / P;
    bd.hi = T * (r + 1) / P;
    ax_status st = agree(&bd, builder_alloc(&bd));
    uint64_t rounds = (bd.hi - bd.lo + bd.B - 1) / bd.B;
    if (st == AX_OK) st = ax_coll_allreduce(g, AX_AXIS_WORLD, &rounds, 1, AX_DT_U64, AX_OP_MAX);
    ax_status sink_st = AX_OK;
    for (uint64_t k = 0; k < rounds && st == AX_OK; k++) {
        uint64_t s = bd.lo + k * bd.B, e = s + bd.B;
        if (s > bd.hi) s = bd.hi;
        if (e > bd.hi) e = bd.hi;
        size_t m = 0;
        if (sink_st == AX_OK) sink_st = hash_round(&bd, s, e, bd.pair, &m);
        uint64_t flags = (o->stop && *o->stop) ? 1 : 0;
        if (sink_st != AX_OK) flags |= 2;
        ax_status xs = exchange_round(&bd, k, m, &flags);
        if (xs == AX_ERR_MPI) {
            st = xs;
            break;
        }
        if (sink_st == AX_OK) sink_st = xs;
        if (flags & 2) {
            st = agree(&bd, sink_st);
            break;
        }
        if (flags & 1)
            st = ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted; nothing was written");
    }
    if (st == AX_OK) st = agree(&bd, sink_st);
    builder_free(&bd);
    return st;
}
