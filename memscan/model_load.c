#include "memscan/model_load.h"
#include "lib/core/fsutil.h"
#include "lib/model/model_io.h"

#include <stdio.h>
#include <string.h>

static ax_status open_ckpt(const char *dir, ax_ckpt_t **ck) {
    char path[4200];
    AX_CHECK(ax_ckpt_resolve(dir, "--ckpt", path, sizeof path));
    return ax_ckpt_open(path, ck);
}

ax_status ax_ms_model_open(const char *dir, const char *grid_spec, const char *device, int batch,
                           int T, ax_ms_model *out) {
    memset(out, 0, sizeof *out);
    int dims[4];
    ax_status st;
    AX_CHECK_GOTO(open_ckpt(dir, &out->ck), fail);
    AX_CHECK_GOTO(ax_model_config_from_ckpt(out->ck, &out->cfg), fail);
    AX_CHECK_GOTO(ax_grid_parse(grid_spec, dims), fail);
    AX_CHECK_GOTO(ax_grid_create(dims, &out->grid), fail);
    /* decoding runs up to B x T sequences at once */
    /* scans run forwards and decode: no gradient slab */
    ax_model_opts mo = {.overlap = 1, .device = device, .inference = 1};
    AX_CHECK_GOTO(
        ax_model_create_ex(out->grid, &out->cfg, (batch + T - 1) / T, T, &mo, &out->model), fail);
    AX_CHECK_GOTO(ax_model_load_blob(out->model, out->ck, "params",
                                     ax_model_slab(out->model, AX_SLAB_PARAMS)),
                  fail);
    return AX_OK;
fail:
    ax_ms_model_close(out);
    return st;
}

void ax_ms_model_close(ax_ms_model *m) {
    ax_model_free(m->model);
    ax_grid_free(m->grid);
    ax_ckpt_free(m->ck);
    memset(m, 0, sizeof *m);
}

ax_status ax_ms_ckpt_open(const char *dir, ax_ckpt_t **out) {
    *out = NULL;
    return open_ckpt(dir, out);
}
