/* The model a scan probes: a checkpoint found from a run or step directory, loaded onto a grid
 * (memscan probe / generate). */
#pragma once
#include "lib/ckpt/ckpt.h"
#include "lib/dist/grid.h"
#include "lib/model/model.h"

typedef struct {
    ax_ckpt_t *ck;
    ax_grid_t *grid;
    ax_model_t *model;
    ax_model_config cfg;
} ax_ms_model;

/* dir: a step-NNNNNN directory, or a run directory (newest checkpoint in dir/ckpt or dir).
 * The model is sized for decoding `batch` sequences of up to T positions, on the backend named
 * by device ("cpu", or "cuda" in a CUDA build: the --device flag). Collective. */
ax_status ax_ms_model_open(const char *dir, const char *grid_spec, const char *device, int batch,
                           int T, ax_ms_model *out);
void ax_ms_model_close(ax_ms_model *m);
/* The checkpoint dir names (as ax_ms_model_open finds it), without building its model: for the
 * checks a scan makes before it allocates one (memscan/scan_inputs.h). */
ax_status ax_ms_ckpt_open(const char *dir, ax_ckpt_t **out);
