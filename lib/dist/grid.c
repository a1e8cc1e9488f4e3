#include "lib/dist/grid.h"
#include "lib/dist/comm_transport.h"
#include "lib/dist/grid_mpi.h"
#include "lib/dist/mpienv.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a host staging buffer (ax_grid_stage_acquire_) */
typedef struct {
    void *p;
    size_t cap;
    int used;
} stage_buf;

struct ax_grid {
    int dims[4];   /* {Gdata, Gx, Gy, Gz} */
    int coords[4]; /* {d, x, y, z} */
    int rank, size;
    int mpi;                         /* communicators below are valid */
    int borrowed;                    /* comm[] are MPI_COMM_WORLD/SELF: never freed */
    MPI_Comm comm[AX_AXIS_COUNT];    /* rank in comm[a] == coordinate along a */
    ax_comm_stats stats;             /* mutated by lib/dist/comm.c through ax_grid_stats_ */
    unsigned tag_seq[AX_AXIS_COUNT]; /* ring collectives issued per axis (message tags) */
    int has_mem;                     /* mem is set: buffers may be device memory */
    ax_comm_memory mem;
    stage_buf *stage; /* one per request in flight together (plus a blocking call), grown */
    int n_stage;
    void *ext; /* a transport's state (lib/dist/comm_nccl.c), freed by ext_free */
    void (*ext_free)(void *);
    int hosts[AX_AXIS_COUNT]; /* hosts (shared-memory domains) each axis spans; 0 = not known */
    int local_ranks;          /* world ranks on this rank's host; 0 = not known */
    char spec[64];
};

/* Not public (lib/dist/comm_transport.h): lib/dist/comm.c updates the counters of the grid it
 * communicates on. */
ax_comm_stats *ax_grid_stats_(ax_grid_t *g) {
    return &g->stats;
}

/* Not public: a message tag for the next ring collective on `axis`. Every rank issues
 * collectives in the same order, so the sequence agrees across ranks, and requests in flight
 * together never match each other's messages. */
int ax_grid_next_tag_(ax_grid_t *g, ax_axis axis) {
    return 1 + (int)(g->tag_seq[axis]++ % 32000u); /* MPI guarantees tags up to 32767 */
}

/* Not public: the transport that moves this grid's bytes; MPI for every grid with
 * communicators (an NCCL transport would be chosen here, per grid). */
const ax_transport *ax_grid_transport_(const ax_grid_t *g) {
    return g->mpi ? ax_transport_mpi() : NULL;
}

static void stage_free_all(ax_grid_t *g) {
    for (int i = 0; i < g->n_stage; i++)
        if (g->stage[i].p) g->mem.host_free(g->mem.user, g->stage[i].p);
    free(g->stage);
    g->stage = NULL;
    g->n_stage = 0;
}

void ax_grid_set_memory(ax_grid_t *g, const ax_comm_memory *mem) {
    if (!g) return;
    if (g->has_mem) stage_free_all(g);
    g->has_mem = mem != NULL;
    if (mem) g->mem = *mem;
}

const ax_comm_memory *ax_grid_memory(const ax_grid_t *g) {
    return g && g->has_mem ? &g->mem : NULL;
}

void *ax_grid_ext_(const ax_grid_t *g) {
    return g->ext;
}

void ax_grid_set_ext_(ax_grid_t *g, void *ext, void (*free_fn)(void *)) {
    g->ext = ext;
    g->ext_free = free_fn;
}

void *ax_grid_stage_acquire_(ax_grid_t *g, size_t bytes) {
    if (!g->has_mem) return NULL;
    int pick = -1;
    for (int i = 0; i < g->n_stage; i++) { /* a free buffer big enough, else any free one */
        if (g->stage[i].used) continue;
        if (g->stage[i].cap >= bytes) {
            pick = i;
            break;
        }
        if (pick < 0) pick = i;
    }
    if (pick < 0) { /* every buffer is held by a request in flight: one more */
        stage_buf *more = realloc(g->stage, (size_t)(g->n_stage + 1) * sizeof *more);
        if (!more) return NULL;
        g->stage = more;
        pick = g->n_stage++;
        g->stage[pick] = (stage_buf){NULL, 0, 0};
    }
    if (g->stage[pick].cap < bytes) {
        if (g->stage[pick].p) g->mem.host_free(g->mem.user, g->stage[pick].p);
        size_t cap = bytes < 4096 ? 4096 : bytes;
        g->stage[pick].p = g->mem.host_alloc(g->mem.user, cap);
        g->stage[pick].cap = g->stage[pick].p ? cap : 0;
        if (!g->stage[pick].p) return NULL;
    }
    g->stage[pick].used = 1;
    return g->stage[pick].p;
}

void ax_grid_stage_release_(ax_grid_t *g, void *p) {
    if (!p) return;
    for (int i = 0; i < g->n_stage; i++)
        if (g->stage[i].p == p) g->stage[i].used = 0;
}

ax_status ax_grid_parse(const char *spec, int dims[4]) {
    if (!spec) return ax_errorf(AX_ERR_ARG, "--grid is missing; give DxXxYxZ, e.g. --grid 2x2x2x1");
    const char *p = spec;
    for (int i = 0; i < 4; i++) {
        if (i > 0) {
            if (*p != 'x' && *p != 'X') goto bad;
            p++;
        }
        /* plain decimal only: "010" (octal to some tools) and signs or spaces are typos */
        if (!isdigit((unsigned char)*p) || (*p == '0' && isdigit((unsigned char)p[1]))) goto bad;
        errno = 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (errno || v < 1 || v > 65536) goto bad;
        dims[i] = (int)v;
        p = end;
    }
    if (*p) goto bad;
    long long prod = (long long)dims[0] * dims[1] * dims[2] * dims[3];
    if (prod > INT_MAX / 2)
        return ax_errorf(AX_ERR_ARG, "--grid %s has %lld ranks, too many; use a smaller grid", spec,
                         prod);
    return AX_OK;
bad:
    return ax_errorf(AX_ERR_ARG,
                     "--grid '%s' is not DxXxYxZ (four positive integers joined by 'x': data, X, "
                     "Y, Z), e.g. --grid 2x2x2x1",
                     spec);
}

int ax_grid_rank_of(const int dims[4], const int c[4]) {
    /* X innermost: ((d*Gz + z)*Gy + y)*Gx + x */
    return ((c[0] * dims[3] + c[3]) * dims[2] + c[2]) * dims[1] + c[1];
}

void ax_grid_coords_of(const int dims[4], int rank, int c[4]) {
    c[1] = rank % dims[1];
    rank /= dims[1];
    c[2] = rank % dims[2];
    rank /= dims[2];
    c[3] = rank % dims[3];
    c[0] = rank / dims[3];
}

static void free_comms(ax_grid_t *g) {
    if (!g->mpi || g->borrowed) return;
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        if (g->comm[a] != MPI_COMM_NULL) MPI_Comm_free(&g->comm[a]);
}

/* Per axis, how many hosts its ranks span: ranks that can share memory
 * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) are one host; each host's first rank counts 1.
 * Collective over every axis communicator (ax_grid_create is collective anyway). The overlap
 * schedule reads it (lib/dist/overlap.c): an axis inside one host talks through shared memory,
 * copied by the ranks' own cores. */
static int measure_placement(ax_grid_t *g) {
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        MPI_Comm node = MPI_COMM_NULL;
        int rc = MPI_Comm_split_type(g->comm[a], MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        if (rc != MPI_SUCCESS) return rc;
        int r = 0, n = 0;
        MPI_Comm_rank(node, &r);
        MPI_Comm_size(node, &n);
        MPI_Comm_free(&node);
        int first = r == 0;
        rc = MPI_Allreduce(&first, &g->hosts[a], 1, MPI_INT, MPI_SUM, g->comm[a]);
        if (rc != MPI_SUCCESS) return rc;
        if (a == AX_AXIS_WORLD) g->local_ranks = n;
    }
    return MPI_SUCCESS;
}

ax_status ax_grid_create(const int dims[4], ax_grid_t **out) {
    *out = NULL;
    long long prod = 1;
    for (int i = 0; i < 4; i++) {
        if (dims[i] < 1)
            return ax_errorf(AX_ERR_ARG, "--grid dimension %d is %d; every dimension must be >= 1",
                             i, dims[i]);
        prod *= dims[i];
    }
    char spec[64];
    snprintf(spec, sizeof spec, "%dx%dx%dx%d", dims[0], dims[1], dims[2], dims[3]);
    if (!ax_mpi_active()) {
        if (prod != 1)
            return ax_errorf(AX_ERR_ARG,
                             "--grid %s needs %lld MPI ranks; launch with mpirun -np %lld axmem "
                             "... (or use --grid 1x1x1x1 for a serial run)",
                             spec, prod, prod);
    } else if (ax_mpi_world_size() != prod) {
        return ax_errorf(AX_ERR_ARG,
                         "--grid %s needs %lld MPI ranks but %d were launched; run mpirun -np "
                         "%lld, or pick a grid whose product is %d",
                         spec, prod, ax_mpi_world_size(), prod, ax_mpi_world_size());
    }

    AX_CHECK(ax_grid_create_serial(out));
    ax_grid_t *g = *out;
    if (!ax_mpi_active()) return AX_OK;
    *out = NULL;
    memcpy(g->dims, dims, sizeof g->dims);
    memcpy(g->spec, spec, sizeof g->spec);
    g->rank = ax_mpi_world_rank();
    g->size = (int)prod;
    ax_grid_coords_of(dims, g->rank, g->coords);

    g->mpi = 1;
    const int *c = g->coords, *D = dims;
    /* color = the coordinates the group shares, key = coordinate along the axis, so the rank
     * within the communicator equals the coordinate. */
    int color[4], key[4];
    color[AX_AXIS_DATA] = (c[3] * D[2] + c[2]) * D[1] + c[1];
    color[AX_AXIS_X] = (c[0] * D[3] + c[3]) * D[2] + c[2];
    color[AX_AXIS_Y] = (c[0] * D[3] + c[3]) * D[1] + c[1];
    color[AX_AXIS_Z] = (c[0] * D[2] + c[2]) * D[1] + c[1];
    for (int a = 0; a < 4; a++) key[a] = c[a];
    for (int a = 0; a < 4; a++) {
        if (MPI_Comm_split(MPI_COMM_WORLD, color[a], key[a], &g->comm[a]) != MPI_SUCCESS) goto fail;
    }
    if (MPI_Comm_split(MPI_COMM_WORLD, c[2] * D[1] + c[1], c[0] * D[3] + c[3],
                       &g->comm[AX_AXIS_BATCH]) != MPI_SUCCESS)
        goto fail;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g->comm[AX_AXIS_WORLD]) != MPI_SUCCESS) goto fail;
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        MPI_Comm_set_errhandler(g->comm[a], MPI_ERRORS_RETURN);
        int r = -1, s = 0;
        MPI_Comm_rank(g->comm[a], &r);
        MPI_Comm_size(g->comm[a], &s);
        int want_r = ax_grid_coord(g, (ax_axis)a), want_s = ax_grid_dim(g, (ax_axis)a);
        if (r != want_r || s != want_s) {
            free_comms(g);
            free(g);
            return ax_errorf(AX_ERR_INTERNAL,
                             "grid %s: %s communicator has rank %d of %d, expected %d of %d", spec,
                             ax_axis_name((ax_axis)a), r, s, want_r, want_s);
        }
    }
    if (measure_placement(g) != MPI_SUCCESS) goto fail;
    *out = g;
    return AX_OK;
fail:
    free_comms(g);
    free(g);
    return ax_errorf(AX_ERR_MPI, "MPI_Comm_split failed building the %s grid communicators", spec);
}

ax_status ax_grid_create_serial(ax_grid_t **out) {
    *out = NULL;
    ax_grid_t *g = calloc(1, sizeof *g);
    if (!g) return ax_errorf(AX_ERR_NOMEM, "out of memory creating the process grid");
    for (int i = 0; i < 4; i++) g->dims[i] = 1;
    for (int a = 0; a < AX_AXIS_COUNT; a++) g->comm[a] = MPI_COMM_NULL, g->hosts[a] = 1;
    g->local_ranks = 1;
    g->size = 1;
    snprintf(g->spec, sizeof g->spec, "1x1x1x1");
    *out = g;
    return AX_OK;
}

ax_status ax_grid_create_world(ax_grid_t **out) {
    AX_CHECK(ax_grid_create_serial(out));
    int init = 0, fin = 0, size = 1, rank = 0;
    MPI_Initialized(&init); /* legal at any time, even in a forked test */
    if (init) MPI_Finalized(&fin);
    if (!init || fin) return AX_OK;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size <= 1) return AX_OK;
    ax_grid_t *g = *out;
    g->dims[0] = size;
    g->coords[0] = rank;
    g->rank = rank;
    g->size = size;
    g->mpi = g->borrowed = 1;
    /* local, not collective: placement is not measured */
    for (int a = 0; a < AX_AXIS_COUNT; a++) g->hosts[a] = 0;
    g->local_ranks = 0;
    /* DATA, BATCH and WORLD span every rank; X, Y, Z have one (and never reach MPI) */
    for (int a = 0; a < AX_AXIS_COUNT; a++)
        g->comm[a] =
            (a == AX_AXIS_X || a == AX_AXIS_Y || a == AX_AXIS_Z) ? MPI_COMM_SELF : MPI_COMM_WORLD;
    snprintf(g->spec, sizeof g->spec, "%dx1x1x1", size);
    return AX_OK;
}

void ax_grid_free(ax_grid_t *g) {
    if (!g) return;
    /* MPI_Comm_free after MPI_Finalize is erroneous: the communicators died with MPI. */
    if (g->ext_free) g->ext_free(g->ext); /* before the communicators it was made over */
    if (ax_mpi_active()) free_comms(g);
    if (g->has_mem) stage_free_all(g);
    free(g);
}

int ax_grid_dim(const ax_grid_t *g, ax_axis axis) {
    if ((int)axis >= 0 && (int)axis <= AX_AXIS_Z) return g->dims[axis];
    if (axis == AX_AXIS_BATCH) return g->dims[AX_AXIS_DATA] * g->dims[AX_AXIS_Z];
    if (axis == AX_AXIS_WORLD) return g->size;
    return 0;
}

int ax_grid_coord(const ax_grid_t *g, ax_axis axis) {
    if ((int)axis >= 0 && (int)axis <= AX_AXIS_Z) return g->coords[axis];
    if (axis == AX_AXIS_BATCH)
        return g->coords[AX_AXIS_DATA] * g->dims[AX_AXIS_Z] + g->coords[AX_AXIS_Z];
    if (axis == AX_AXIS_WORLD) return g->rank;
    return -1;
}

int ax_grid_rank(const ax_grid_t *g) {
    return g->rank;
}
int ax_grid_size(const ax_grid_t *g) {
    return g->size;
}
const char *ax_grid_spec(const ax_grid_t *g) {
    return g->spec;
}
int ax_grid_uses_mpi(const ax_grid_t *g) {
    return g->mpi;
}
int ax_grid_axis_hosts(const ax_grid_t *g, ax_axis axis) {
    return ((int)axis >= 0 && (int)axis < AX_AXIS_COUNT) ? g->hosts[axis] : 0;
}
int ax_grid_local_ranks(const ax_grid_t *g) {
    return g->local_ranks;
}

const char *ax_axis_name(ax_axis axis) {
    static const char *names[AX_AXIS_COUNT] = {"data", "x", "y", "z", "batch", "world"};
    return ((int)axis >= 0 && (int)axis < AX_AXIS_COUNT) ? names[axis] : "?";
}

MPI_Comm ax_grid_mpi_comm(const ax_grid_t *g, ax_axis axis) {
    if (!g->mpi || (int)axis < 0 || (int)axis >= AX_AXIS_COUNT) return MPI_COMM_NULL;
    return g->comm[axis];
}
