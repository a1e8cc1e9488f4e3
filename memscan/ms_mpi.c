#include "memscan/ms_mpi.h"
#include "lib/core/stop.h"

#include <mpi.h>
#include <stdlib.h>

ax_ms_world ax_ms_world_get(void) {
    ax_ms_world w = {0, 0, 1};
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    if (init) MPI_Finalized(&fin);
    if (!init || fin) return w;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    w.active = w.size > 1;
    return w;
}

int ax_ms_allreduce_u64(const ax_ms_world *w, uint64_t *v, int n, int op_max) {
    if (!w->active) return 0;
    ax_stall_begin("allreduce(u64)", "world"); /* the stalled-rank watchdog, lib/core/stop.h */
    int rc =
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, op_max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    ax_stall_end();
    return rc == MPI_SUCCESS ? 0 : -1;
}

int ax_ms_allreduce_max_u8(const ax_ms_world *w, uint8_t *v, int n) {
    if (!w->active) return 0;
    ax_stall_begin("allreduce(u8)", "world");
    int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT8_T, MPI_MAX, MPI_COMM_WORLD);
    ax_stall_end();
    return rc == MPI_SUCCESS ? 0 : -1;
}

ax_status ax_ms_agree(const ax_ms_world *w, ax_status st, const char *what) {
    if (!w->active) return st;
    uint64_t v = (uint64_t)st;
    if (ax_ms_allreduce_u64(w, &v, 1, 1) != 0)
        return ax_errorf(AX_ERR_MPI, "%s: MPI_Allreduce failed", what);
    if (v != AX_OK && st == AX_OK)
        return ax_errorf((ax_status)v, "%s: another rank failed (see its message)", what);
    return (ax_status)v;
}
