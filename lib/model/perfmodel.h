/* The performance model's communication volumes: bytes each rank sends per optimizer step,
 * per collective kind and grid axis, for the 4D-parallel model (lib/model*.c). Built from the
 * same per-call formula the counters use (ax_comm_volume), so a measured step must match it
 * exactly; tests/mpi/mpi_model.c checks that on every grid.
 *
 * Scope: what the model issues in one step of n_micro micro-batches of B sequences per rank:
 * weight all-gathers over Z (once per step), forward and backward all-reduces, gradient
 * reduce-scatters over Z and the data all-reduce (last micro-batch), and the gradient-norm
 * all-reduce of the optimizer. The training loop adds two 8-byte all-reduces over BATCH per
 * step (supervised count and loss). */
#pragma once
#include "lib/dist/comm.h"
#include "lib/model/model.h"

typedef struct {
    double bytes[AX_COMM_KINDS][AX_AXIS_COUNT];
    long calls[AX_COMM_KINDS][AX_AXIS_COUNT];
} ax_step_volume;

/* dims = {D, X, Y, Z}; the shape must fit the grid (ax_model_config_check_grid). */
void ax_perfmodel_step_volume(const ax_model_config *c, const int dims[4], int B, int T,
                              int n_micro, ax_step_volume *out);
