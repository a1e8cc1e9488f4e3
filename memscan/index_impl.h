/* memscan index internals shared by the build, file and lookup code. */
#pragma once
#include "memscan/index.h"
#include "memscan/table.h"

struct ax_memscan_index {
    ax_memscan_info info;
    ax_ms_table t;
    const ax_axd_t *ds;         /* borrowed */
    int shard_rank, shard_size; /* 0, 1 unless built on several ranks */
    uint64_t table_bytes_all;   /* over all ranks, after a build (0: use this table's) */
};

/* A window hash and where the window starts (global token position): the unit of exchange. */
typedef struct {
    uint64_t h, pos;
} ax_ms_pair;

/* Fills the histogram, distinct and saturated counts of info from this process's table. */
void ax_ms_local_stats(const ax_memscan_index_t *idx, ax_memscan_info *info);
