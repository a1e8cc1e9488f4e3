/* memscan index internals shared by the build, file and lookup code. */
#pragma once
#include "index/index.h"
#include "index/index_map.h"
#include "index/occ.h"
#include "index/table.h"
#include "lib/dist/grid.h"

struct ax_memscan_index {
    ax_memscan_info info;
    ax_ms_table t;
    const ax_axd_t *ds;         /* borrowed */
    int shard_rank, shard_size; /* 0, 1 unless built on several ranks */
    ax_grid_t *grid;            /* owned: the world grid a build communicated over (its byte counts,
                                   ax_memscan_index_comm_stats); NULL for a loaded index */
    uint64_t table_bytes_all;   /* over all ranks, after a build (0: use this table's) */
    uint64_t occ_bytes_all;     /* the same for the occurrence lists */
    uint64_t mem_limit;         /* the build's ax_memscan_build_opts.mem_limit (0: half the RAM) */
    ax_ms_occ occ;              /* positions of the windows that occur more than once */
    ax_ms_map *map;             /* a version-3 file read in place (then t and occ are empty) */
    /* build only: merge edges (index/occ.h), turned into occ once every pair is counted */
    ax_ms_edge *edge;
    uint64_t n_edge, cap_edge;
    int edge_oom;
    /* build only: the histogram as merges move windows between buckets (every new window
     * starts in bucket 0, so bucket 0 is t.n plus its entry); kept as the table fills so the
     * statistics need no pass over a table of gigabytes */
    int64_t hist_moved[AX_MEMSCAN_HIST];
    uint64_t n_saturated_built;
};

/* ax_memscan_open_counts: adds one to the field at this offset */
void ax_ms_count_open(size_t field_offset);

/* Occurrences of the window whose table entry is (first, count): its list, or first alone. */
static inline uint64_t ax_ms_index_occ(const ax_memscan_index_t *idx, uint64_t first,
                                       uint32_t count, const uint64_t **list) {
    if (count < 2) {
        *list = NULL;
        return count;
    }
    if (idx->map) return ax_ms_map_occ(idx->map, idx->ds, idx->info.n, first, list);
    return ax_ms_occ_find(&idx->occ, first, list);
}

/* A window hash and where the window starts (global token position): the unit of exchange. */
typedef struct {
    uint64_t h, pos;
} ax_ms_pair;

/* Routing without counting (the spilled build on several ranks, index/index_spill.c): every
 * rank hashes the windows of its slice of ds in rounds of round_windows, the all-to-all of the
 * in-memory build sends each pair to its owner (ax_ms_owner), and fn gets every pair this rank
 * owns (in no particular order). Collective over g's world axis; a failure of fn on any rank
 * stops every rank. */
typedef ax_status (*ax_ms_pair_fn)(void *ctx, uint64_t h, uint64_t pos);
ax_status ax_ms_route_pairs(const ax_axd_t *ds, const ax_memscan_build_opts *o, ax_grid_t *g,
                            uint64_t round_windows, ax_ms_pair_fn fn, void *ctx);

/* The occurrence-list sizes implied by the histogram: every window occurring more than once
 * has a list of all its positions. */
static inline void ax_ms_occ_info(ax_memscan_info *in) {
    in->n_dup = in->n_distinct - in->hist[0];
    in->n_dup_pos = in->n_windows - in->hist[0];
}

/* A barrier over g's world axis whose waiting ranks sleep instead of polling (index_build.c). */
ax_status ax_ms_calm_sync(ax_grid_t *g);

/* A build's info before counting: its options, the dataset's identity (path made absolute) and
 * P ranks. */
void ax_ms_fill_info(ax_memscan_info *in, const ax_axd_t *ds, const ax_memscan_build_opts *o,
                     int P);
/* Fills the histogram, distinct and saturated counts of info from what an in-memory build kept
 * while it counted (no pass over the table). */
void ax_ms_built_stats(const ax_memscan_index_t *idx, ax_memscan_info *info);

/* Putting entries in version-3 order: count them per partition (pass 1), place, fill (pass
 * 2, the same entries again), sort each partition by key (tag << 6 | ext). */
typedef struct {
    uint64_t key, val;
} ax_ms_ent;

typedef struct {
    uint32_t part_bits;
    uint64_t n;    /* entries expected */
    uint64_t *dir; /* [2^part_bits + 1]: counts, then starts */
    uint64_t *cur; /* fill cursors */
    ax_ms_ent *ent;
} ax_ms_collect;

ax_status ax_ms_collect_init(ax_ms_collect *c, uint64_t distinct);
ax_status ax_ms_collect_count(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k);
ax_status ax_ms_collect_place(ax_ms_collect *c);
ax_status ax_ms_collect_fill(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k);
void ax_ms_collect_sort(ax_ms_collect *c);
void ax_ms_collect_free(ax_ms_collect *c);

int ax_ms_ent_cmp(const void *x, const void *y); /* by key, then val */
/* Sorts e[0..n) in ax_ms_ent_cmp's order, fast for keys spread over their range (binning on
 * the range's top bin_bits bits, ~log2 n); tmp: n entries, cnt: 2^bin_bits + 1 counters. */
void ax_ms_ent_sort(ax_ms_ent *e, size_t n, ax_ms_ent *tmp, uint32_t *cnt, int bin_bits);

/* Writes a version-3 index (path via path.partial, and path.json) from collected, sorted
 * entries and lists in ascending order of first occurrence. */
ax_status ax_ms_v3_write(const ax_memscan_info *in, const ax_ms_collect *c, const ax_ms_occ *o,
                         const char *path, volatile int *stop);

/* The same from any source: `sections` writes the bytes from the directory to the end of the
 * positions (each section at its layout offset: ax_ms_vw_pad to it, then ax_ms_vw_put); the
 * writer hashes the pages and adds the header, section table and page sums. */
typedef struct ax_ms_vwriter ax_ms_vwriter;
typedef ax_status (*ax_ms_sections_fn)(void *ctx, ax_ms_vwriter *w);
ax_status ax_ms_v3_write_with(const ax_memscan_info *in, ax_ms_sections_fn sections, void *ctx,
                              const char *path, volatile int *stop);
void ax_ms_vw_put(ax_ms_vwriter *w, const void *data, size_t n);
void ax_ms_vw_pad(ax_ms_vwriter *w, uint64_t to);
ax_status ax_ms_vw_status(const ax_ms_vwriter *w);
const ax_ms_v3_layout *ax_ms_vw_layout(const ax_ms_vwriter *w);
