/* memscan index internals shared by the build, file and lookup code. */
#pragma once
#include "memscan/index.h"
#include "memscan/occ.h"
#include "memscan/table.h"
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
    ax_ms_occ occ;              /* positions of the windows that occur more than once */
    /* build only: merge edges (memscan/occ.h), turned into occ once every pair is counted */
    ax_ms_edge *edge;
    uint64_t n_edge, cap_edge;
    int edge_oom;
};

/* Occurrences of the window whose table entry is (first, count): its list, or first alone. */
static inline uint64_t ax_ms_index_occ(const ax_memscan_index_t *idx, uint64_t first,
                                       uint32_t count, const uint64_t **list) {
    if (count < 2) {
        *list = NULL;
        return count;
    }
    return ax_ms_occ_find(&idx->occ, first, list);
}

/* A window hash and where the window starts (global token position): the unit of exchange. */
typedef struct {
    uint64_t h, pos;
} ax_ms_pair;

/* The occurrence-list sizes implied by the histogram: every window occurring more than once
 * has a list of all its positions. */
static inline void ax_ms_occ_info(ax_memscan_info *in) {
    in->n_dup = in->n_distinct - in->hist[0];
    in->n_dup_pos = in->n_windows - in->hist[0];
}

/* Fills the histogram, distinct and saturated counts of info from this process's table. */
void ax_ms_local_stats(const ax_memscan_index_t *idx, ax_memscan_info *info);
