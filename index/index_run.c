/* `axmem memscan index` as a library call (index/index_run.h). */
#include "index/index_run.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"
#include "lib/dist/comm.h"
#include "lib/dist/mpienv.h"

#include <string.h>

ax_status ax_index_run(const char *data, const char *out, const ax_memscan_build_opts *opts,
                       uint64_t mem_limit, ax_index_run_result *r) {
    memset(r, 0, sizeof *r);
    ax_memscan_build_opts o = *opts;
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    double t0 = ax_now();
    ax_status st = ax_axd_open(data, 1, &ds);
    { /* nobody enters the build alone */
        ax_grid_t *world = NULL;
        ax_status ws = ax_grid_create_world(&world);
        st = ws != AX_OK ? ws : ax_coll_agree(world, AX_AXIS_WORLD, st, "memscan index");
        ax_grid_free(world);
    }
    /* each rank holds its share of the windows; a share over the limit spills (collective:
     * every rank sees the same dataset and limit, so decides alike) */
    if (st == AX_OK && ax_memscan_windows_of(ds, o.n) / (uint64_t)ax_mpi_world_size() >
                           mem_limit / AX_MEMSCAN_BYTES_PER_WINDOW) {
        r->spilled = 1;
        st = ax_memscan_index_build_bounded(ds, &o, mem_limit, out, &r->info);
        r->build_s = ax_now() - t0;
        ax_axd_free(ds);
        return st;
    }
    o.mem_limit = mem_limit; /* rank 0 gathers the shards in memory when this allows */
    if (st == AX_OK) st = ax_memscan_index_build(ds, &o, &idx);
    r->build_s = ax_now() - t0;
    if (st == AX_OK) st = ax_memscan_index_save(idx, out, o.stop);
    if (st == AX_OK) {
        ax_comm_stats cs;
        ax_memscan_index_comm_stats(idx, &cs);
        AX_DEBUG("memscan index: sent %.1f MB to other ranks (%.1f MB exchanging windows)",
                 ax_comm_stats_bytes_total(&cs) / 1e6,
                 cs.bytes[AX_COMM_ALLTOALL][AX_AXIS_WORLD] / 1e6);
        r->info = *ax_memscan_index_info(idx);
        r->table_bytes = (double)ax_memscan_index_table_bytes_all(idx);
        r->occ_bytes = (double)ax_memscan_index_occ_bytes_all(idx);
    }
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return st;
}
