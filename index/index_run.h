/* `axmem memscan index` as a library call: open the dataset on every rank, build its index (in
 * memory, or spilling hash partitions to disk when a rank's share of the windows needs more
 * than mem_limit) and write INDEX and INDEX.json. The command (index/cmd_index.c) parses the
 * flags and prints the summary. */
#pragma once
#include "index/index.h"

typedef struct {
    ax_memscan_info info; /* of the index written (every rank) */
    int spilled;          /* built under mem_limit, spilling to disk */
    double build_s;       /* the build (spilled: the build and the save) */
    double table_bytes;   /* in memory: the table over all ranks, and the occurrence lists */
    double occ_bytes;
} ax_index_run_result;

/* Collective over the MPI world; o->stop and o->progress as the caller sets them. */
ax_status ax_index_run(const char *data, const char *out, const ax_memscan_build_opts *o,
                       uint64_t mem_limit, ax_index_run_result *r);
