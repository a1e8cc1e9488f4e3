#include "lib/dist/shm.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid_mpi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>

#define PAGE 4096

struct ax_shm {
    MPI_Comm node; /* the axis's ranks on this host */
    MPI_Win win;
    int n;       /* ranks here */
    int *index;  /* axis coordinate -> index here, or -1 */
    char **base; /* n segments, page-aligned */
    int all_local;
};

static ax_status unsupported(const char *what) {
    return ax_errorf(AX_ERR_UNSUPPORTED, "shared memory between ranks: %s", what);
}

static char *page_up(void *p) {
    return (char *)(((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
}

/* Where MPI keeps the window's file (Open MPI's default for shared windows); its free space
 * must hold the host's segments twice over, as other jobs use it too. 1 when it does or when
 * it cannot be read (nothing to go by). */
static int room_in_dev_shm(size_t bytes_here) {
    struct statvfs v;
    if (statvfs("/dev/shm", &v) != 0) return 1;
    return (double)v.f_bavail * (double)v.f_frsize >= 2.0 * (double)bytes_here;
}

/* creation on this rank; what was made is left in s, freed after the ranks agree (freeing a
 * window is collective) */
static ax_status create_local(ax_grid_t *g, ax_axis axis, size_t bytes, ax_shm *s) {
    MPI_Comm comm = ax_grid_mpi_comm(g, axis);
    int P = ax_grid_dim(g, axis);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &s->node) != MPI_SUCCESS)
        return unsupported("cannot group the ranks by host");
    int me = 0;
    MPI_Comm_size(s->node, &s->n);
    MPI_Comm_rank(s->node, &me);
    s->index = malloc(sizeof(int) * (size_t)P);
    s->base = calloc((size_t)s->n, sizeof *s->base);
    int *coords = malloc(sizeof(int) * (size_t)s->n);
    if (!s->index || !s->base || !coords) {
        free(coords);
        return unsupported("out of memory");
    }
    int coord = ax_grid_coord(g, axis);
    if (MPI_Allgather(&coord, 1, MPI_INT, coords, 1, MPI_INT, s->node) != MPI_SUCCESS) {
        free(coords);
        return unsupported("cannot exchange coordinates");
    }
    for (int c = 0; c < P; c++) s->index[c] = -1;
    for (int i = 0; i < s->n; i++) s->index[coords[i]] = i;
    free(coords);
    s->all_local = s->n == P;
    /* the same answer on every rank of the host (one file system), so all or none go on */
    if (!room_in_dev_shm((size_t)s->n * (bytes + PAGE)))
        return unsupported("/dev/shm has too little room");
    /* noncontiguous: each segment starts on its own page, so no two ranks write one page */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *mine = NULL;
    int rc = MPI_Win_allocate_shared((MPI_Aint)(bytes + PAGE), 1, info, s->node, &mine, &s->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        s->win = MPI_WIN_NULL;
        return unsupported("the system refused a shared segment");
    }
    MPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN);
    for (int i = 0; i < s->n; i++) {
        MPI_Aint sz = 0;
        int disp = 0;
        void *b = NULL;
        if (MPI_Win_shared_query(s->win, i, &sz, &disp, &b) != MPI_SUCCESS ||
            (size_t)sz < bytes + PAGE)
            return unsupported("cannot find another rank's segment");
        s->base[i] = page_up(b);
    }
#ifdef MADV_POPULATE_WRITE
    /* a page /dev/shm cannot give fails here, not as SIGBUS on first write */
    if (bytes && madvise(s->base[me], bytes, MADV_POPULATE_WRITE) != 0)
        return unsupported("cannot fault in the segment's pages");
#endif
    return AX_OK;
}

ax_status ax_shm_create(ax_grid_t *g, ax_axis axis, size_t bytes, ax_shm **out) {
    *out = NULL;
    if (!ax_grid_uses_mpi(g) || ax_grid_dim(g, axis) < 2) return unsupported("one rank only");
    ax_shm *s = calloc(1, sizeof *s);
    ax_status st = AX_OK;
    if (s) {
        s->node = MPI_COMM_NULL;
        s->win = MPI_WIN_NULL;
        st = create_local(g, axis, bytes, s);
    } else {
        st = unsupported("out of memory");
    }
    int ok = st == AX_OK, all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ax_grid_mpi_comm(g, axis)) != MPI_SUCCESS)
        all = 0;
    if (!all) {
        ax_shm_free(s);
        return ok ? unsupported("another rank could not map its segment") : st;
    }
    *out = s;
    return AX_OK;
}

void ax_shm_free(ax_shm *s) {
    if (!s) return;
    if (s->win != MPI_WIN_NULL) MPI_Win_free(&s->win);
    if (s->node != MPI_COMM_NULL) MPI_Comm_free(&s->node);
    free(s->index);
    free(s->base);
    free(s);
}

int ax_shm_ranks(const ax_shm *s) {
    return s->n;
}
int ax_shm_all_local(const ax_shm *s) {
    return s->all_local;
}
int ax_shm_index(const ax_shm *s, int coord) {
    return s->index[coord];
}
void *ax_shm_base(const ax_shm *s, int index) {
    return s->base[index];
}
