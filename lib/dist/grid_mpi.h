/* The MPI side of the grid, for the MPI transport (lib/dist/comm.c) and for tests and
 * benchmarks that compare against raw MPI. Not part of the backend-neutral API: code above
 * lib/dist uses lib/dist/comm.h. */
#pragma once
#include <mpi.h>

#include "lib/dist/grid.h"

/* The axis communicator (rank in it == coordinate). MPI_COMM_NULL on a serial grid. */
MPI_Comm ax_grid_mpi_comm(const ax_grid_t *g, ax_axis axis);
