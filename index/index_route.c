/* Serving one saved index from any number of ranks: rank r of R answers
 * the windows whose tag (hash bits 32..63) lies in [r 2^32 / R, (r + 1) 2^32 / R). A version-3
 * file partitions its entries by the tag's top bits, so that range is a run of whole
 * partitions (R a power of two up to 2^part_bits; else a partition may be shared by two
 * ranks): each rank maps the file but touches only its partitions' pages of the table.
 * Queries go to their server in one all-to-all per round and the answers come back in a
 * second, so every rank gets its own queries' answers in its order. */
#include "index/hash.h"
#include "index/index_impl.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* windows per rank per round: bounds the buffers (and keeps MPI's int counts small) */
#define ROUTE_ROUND 65536

static int server_of(uint64_t h, int ranks) {
    return (int)(((uint64_t)ax_ms_key_of(h).tag * (uint64_t)ranks) >> 32);
}

int ax_memscan_index_server(const ax_memscan_index_t *idx, const int32_t *window, int ranks) {
    const ax_memscan_info *in = &idx->info;
    return server_of(ax_ms_hash(window, (int)in->n, in->seed, (int)in->hash_bits), ranks);
}

typedef struct {
    int *sc, *sd, *rc, *rd; /* [R] each: counts and displacements in windows */
    int *xc, *xd, *yc, *yd; /* [R] each: the same scaled to elements for one exchange */
    int *dest;              /* [round] server of each window */
    int *order;             /* [round] window i goes to send slot order[i] */
    int32_t *stok, *rtok;   /* windows out (by server), windows in */
    uint64_t *sans, *rans;  /* answers: (count, first) pairs */
    size_t cap_in;          /* windows rtok/sans can hold */
} route_buf;

static void route_free(route_buf *b) {
    free(b->sc);
    free(b->dest);
    free(b->order);
    free(b->stok);
    free(b->rtok);
    free(b->sans);
    free(b->rans);
}

/* One round: windows[0..k) of this rank (k may be 0) answered through their servers. */
static ax_status route_round(const ax_memscan_index_t *idx, ax_grid_t *g, route_buf *b,
                             const int32_t *windows, size_t k, uint32_t *counts, uint64_t *first,
                             uint8_t *damaged) {
    const int R = ax_grid_dim(g, AX_AXIS_WORLD), n = (int)idx->info.n;
    memset(b->sc, 0, sizeof *b->sc * (size_t)R);
    for (size_t i = 0; i < k; i++) {
        b->dest[i] = ax_memscan_index_server(idx, windows + i * (size_t)n, R);
        b->sc[b->dest[i]]++;
    }
    for (int p = 0, s = 0; p < R; p++) b->sd[p] = s, s += b->sc[p];
    for (size_t i = 0; i < k; i++) {
        int slot = b->sd[b->dest[i]]++;
        b->order[i] = slot;
        memcpy(b->stok + (size_t)slot * (size_t)n, windows + i * (size_t)n, sizeof(int32_t) * n);
    }
    for (int p = 0, s = 0; p < R; p++) b->sd[p] = s, s += b->sc[p];
    ax_status st = ax_coll_alltoall(g, AX_AXIS_WORLD, b->sc, 1, b->rc, AX_DT_I32);
    if (st != AX_OK) return st;
    size_t in = 0;
    for (int p = 0; p < R; p++) b->rd[p] = (int)in, in += (size_t)b->rc[p];
    if (in > b->cap_in) { /* this rank serves more than a round's share: grow */
        int32_t *nt = realloc(b->rtok, sizeof *nt * in * (size_t)n);
        if (nt) b->rtok = nt;
        uint64_t *na = nt ? realloc(b->sans, sizeof *na * 2 * in) : NULL;
        if (na) b->sans = na;
        st = nt && na ? AX_OK : ax_errorf(AX_ERR_NOMEM, "memscan: out of memory routing lookups");
        if (st == AX_OK) b->cap_in = in;
    }
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan routed lookup");
    if (st != AX_OK) return st;
    /* windows to their servers: counts in tokens */
    int *sc = b->xc, *sd = b->xd, *rc = b->yc, *rd = b->yd;
    for (int p = 0; p < R; p++)
        sc[p] = b->sc[p] * n, sd[p] = b->sd[p] * n, rc[p] = b->rc[p] * n, rd[p] = b->rd[p] * n;
    st = ax_coll_alltoallv(g, AX_AXIS_WORLD, b->stok, sc, sd, b->rtok, rc, rd, AX_DT_I32);
    if (st != AX_OK) return st;
    for (size_t j = 0; j < in; j++) { /* the count, and bit 32 when damage was met */
        uint32_t c = 0;
        uint64_t f = 0, met = ax_memscan_index_damage_met(idx);
        ax_memscan_index_lookup(idx, b->rtok + j * (size_t)n, &c, &f);
        b->sans[2 * j] = c | (uint64_t)(ax_memscan_index_damage_met(idx) != met) << 32;
        b->sans[2 * j + 1] = f;
    }
    /* answers back: the reverse exchange, two u64 per window */
    for (int p = 0; p < R; p++)
        sc[p] = 2 * b->rc[p], sd[p] = 2 * b->rd[p], rc[p] = 2 * b->sc[p], rd[p] = 2 * b->sd[p];
    st = ax_coll_alltoallv(g, AX_AXIS_WORLD, b->sans, sc, sd, b->rans, rc, rd, AX_DT_U64);
    if (st != AX_OK) return st;
    for (size_t i = 0; i < k; i++) {
        uint64_t a = b->rans[2 * (size_t)b->order[i]];
        counts[i] = (uint32_t)a;
        first[i] = b->rans[2 * (size_t)b->order[i] + 1];
        if (damaged) damaged[i] = (uint8_t)(a >> 32 & 1);
    }
    return AX_OK;
}

ax_status ax_memscan_index_lookup_routed(const ax_memscan_index_t *idx, const int32_t *windows,
                                         size_t k, uint32_t *counts, uint64_t *first,
                                         uint8_t *damaged) {
    const size_t n = idx->info.n;
    ax_grid_t *g = NULL;
    AX_CHECK(ax_grid_create_world(&g));
    const int R = ax_grid_dim(g, AX_AXIS_WORLD);
    if (R == 1) { /* serial: no exchange */
        for (size_t i = 0; i < k; i++) {
            uint64_t met = ax_memscan_index_damage_met(idx);
            counts[i] = 0;
            first[i] = 0;
            ax_memscan_index_lookup(idx, windows + i * n, &counts[i], &first[i]);
            if (damaged) damaged[i] = ax_memscan_index_damage_met(idx) != met;
        }
        ax_grid_free(g);
        return AX_OK;
    }
    route_buf b;
    memset(&b, 0, sizeof b);
    /* a server receives at most R * B windows a round: keep its counts (tokens, and two
     * answers a window) within MPI's int */
    size_t B = ROUTE_ROUND, lim = (size_t)INT_MAX / ((n > 2 ? n : 2) * (size_t)R);
    if (B > lim) B = lim ? lim : 1;
    b.sc = malloc(sizeof(int) * 8 * (size_t)R);
    b.dest = malloc(sizeof *b.dest * B);
    b.order = malloc(sizeof *b.order * B);
    b.stok = malloc(sizeof *b.stok * B * n);
    b.rtok = malloc(sizeof *b.rtok * B * n);
    b.sans = malloc(sizeof *b.sans * 2 * B);
    b.rans = malloc(sizeof *b.rans * 2 * B);
    b.cap_in = B;
    ax_status st = b.sc && b.dest && b.order && b.stok && b.rtok && b.sans && b.rans
                       ? AX_OK
                       : ax_errorf(AX_ERR_NOMEM, "memscan: out of memory routing lookups");
    if (b.sc) {
        b.sd = b.sc + R, b.rc = b.sc + 2 * R, b.rd = b.sc + 3 * R;
        b.xc = b.sc + 4 * R, b.xd = b.sc + 5 * R, b.yc = b.sc + 6 * R, b.yd = b.sc + 7 * R;
    }
    /* every rank runs as many rounds as the rank with the most windows */
    uint64_t rounds = (k + B - 1) / B;
    if ((st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan routed lookup")) == AX_OK)
        st = ax_coll_allreduce(g, AX_AXIS_WORLD, &rounds, 1, AX_DT_U64, AX_OP_MAX);
    for (uint64_t r = 0; st == AX_OK && r < rounds; r++) {
        size_t a = (size_t)r * B, m = a < k ? (k - a < B ? k - a : B) : 0;
        st = m ? route_round(idx, g, &b, windows + a * n, m, counts + a, first + a,
                             damaged ? damaged + a : NULL)
               : route_round(idx, g, &b, NULL, 0, NULL, NULL, NULL); /* serving others only */
    }
    route_free(&b);
    ax_grid_free(g);
    return st;
}
