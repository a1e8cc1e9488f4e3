/* The 4D process grid (AxoNN): World = Gdata x Gx x Gy x Gz.
 *
 * rank = ((d*Gz + z)*Gy + y)*Gx + x   (X innermost, so X groups are neighbouring ranks)
 *
 * Each axis has a communicator whose rank equals the coordinate along that axis, so
 * "block i" of an all-gather or reduce-scatter always belongs to coordinate i.
 * A serial grid (1x1x1x1 without MPI) is fully functional: every collective is a local
 * copy or a no-op (lib/dist/comm.h). */
#pragma once
#include "lib/core/status.h"

/* The first four values index dims[] (spec order "DxXxYxZ"). */
typedef enum {
    AX_AXIS_DATA = 0,  /* data parallel replicas (Gdata ranks sharing (x, y, z)) */
    AX_AXIS_X = 1,     /* tensor parallel, input/hidden dim of a normal layer (Gx) */
    AX_AXIS_Y = 2,     /* tensor parallel, output dim of a normal layer; heads (Gy) */
    AX_AXIS_Z = 3,     /* ZeRO-3 weight sharding, also splits the batch (Gz) */
    AX_AXIS_BATCH = 4, /* the Gdata*Gz ranks sharing (x, y): the batch is split over them;
                          coordinate d*Gz + z */
    AX_AXIS_WORLD = 5, /* every rank; coordinate = rank */
    AX_AXIS_COUNT = 6,
} ax_axis;

typedef struct ax_grid ax_grid_t;

/* Parses "DxXxYxZ" (e.g. "2x2x2x1"; each a positive integer) into dims = {D, X, Y, Z}.
 * AX_ERR_ARG with a message naming --grid and the text on anything else. */
ax_status ax_grid_parse(const char *spec, int dims[4]);

/* Builds the grid and its axis communicators. Without MPI (ax_mpi_active() == 0) the product
 * must be 1; with MPI the world size must equal the product. Collective over MPI_COMM_WORLD. */
ax_status ax_grid_create(const int dims[4], ax_grid_t **out);
ax_status ax_grid_create_serial(ax_grid_t **out); /* 1x1x1x1; never touches MPI */
/* Every rank along DATA (and BATCH, WORLD): a Px1x1x1 grid over MPI_COMM_WORLD when MPI is
 * initialised (by anyone: ax_mpi_start or a test driver's MPI_Init) with P > 1 ranks, else
 * serial. Local, not collective (it borrows MPI_COMM_WORLD), so any rank may make one at any
 * time: memscan's index build, save and lookups communicate over it. */
ax_status ax_grid_create_world(ax_grid_t **out);
void ax_grid_free(ax_grid_t *g); /* accepts NULL; collective when MPI is used (not world grids) */

int ax_grid_dim(const ax_grid_t *g, ax_axis axis);   /* ranks along axis (BATCH: Gdata*Gz) */
int ax_grid_coord(const ax_grid_t *g, ax_axis axis); /* 0..dim-1 (BATCH: d*Gz + z) */
int ax_grid_rank(const ax_grid_t *g);                /* world rank */
int ax_grid_size(const ax_grid_t *g);                /* world size = product of dims */
const char *ax_grid_spec(const ax_grid_t *g);        /* "DxXxYxZ" */
int ax_grid_uses_mpi(const ax_grid_t *g);            /* 0 for a serial grid */
/* Placement, measured by ax_grid_create (MPI_Comm_split_type SHARED): how many hosts the ranks
 * of `axis` span (1 for a serial grid), and how many world ranks share this rank's host.
 * 0 = not known (ax_grid_create_world grids, which are made without a collective). */
int ax_grid_axis_hosts(const ax_grid_t *g, ax_axis axis);
int ax_grid_local_ranks(const ax_grid_t *g);
const char *ax_axis_name(ax_axis axis); /* "data","x","y","z","batch","world" */

/* The layout formula, for planners and tests (no grid needed).
 * coords = {d, x, y, z}. */
int ax_grid_rank_of(const int dims[4], const int coords[4]);
void ax_grid_coords_of(const int dims[4], int rank, int coords[4]);
