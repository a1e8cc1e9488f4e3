/* What the MPI test programs share: EXPECT counts a failure on this rank and says why on stderr
 * ("[rRANK CONTEXT] FAIL: ...", CONTEXT printed by mc_context when the program sets it);
 * mc_start brings up MPI and the grid named by `--grid DxXxYxZ` (1x1x1x1 without it); mc_finish
 * reduces the failures over all ranks, prints "NAME GRID: ok|FAILED" on rank 0 and returns the
 * exit code; mc_perturb moves every parameter off its initial constant. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"
#include "lib/core/status.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model.h"

static int failures;
static void (*mc_context)(FILE *f);

static inline void mc_fail_head(void) {
    fprintf(stderr, "[r%d", ax_mpi_world_rank());
    if (mc_context) mc_context(stderr);
    fputs("] FAIL: ", stderr);
}

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            mc_fail_head();                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* NULL (after saying why) when MPI does not start; aborts on a bad grid */
static inline ax_grid_t *mc_start(int *argc, char ***argv, const char *name, const char **spec) {
    if (ax_mpi_start(argc, argv) != AX_OK) {
        fprintf(stderr, "%s: %s\n", name, ax_error_msg());
        return NULL;
    }
    *spec = *argc == 3 && !strcmp((*argv)[1], "--grid") ? (*argv)[2] : "1x1x1x1";
    int dims[4];
    ax_grid_t *g = NULL;
    if (ax_grid_parse(*spec, dims) || ax_grid_create(dims, &g)) {
        fprintf(stderr, "%s: %s\n", name, ax_error_msg());
        ax_mpi_abort(1);
    }
    return g;
}

static inline int mc_finish(ax_grid_t *g, const char *name, const char *spec) {
    double bad = failures;
    ax_coll_allreduce(g, AX_AXIS_WORLD, &bad, 1, AX_DT_F64, AX_OP_SUM);
    if (ax_grid_rank(g) == 0) printf("%s %s: %s\n", name, spec, bad ? "FAILED" : "ok");
    ax_grid_free(g);
    ax_mpi_stop();
    return bad ? 1 : 0;
}

/* Biases start at 0 and norm weights at 1; perturbing every parameter (the same global values on
 * every model: the perturbation is a function of the global index) makes a bias or norm that is
 * sharded wrongly show in the losses and gradients. */
static inline void mc_perturb(ax_model_t *m) {
    const ax_tensor_info *ts = ax_model_tensors(m);
    ax_slab *slab = ax_model_slab(m, AX_SLAB_PARAMS);
    for (int i = 0; i < ax_model_n_tensors(m); i++) {
        float *gl = malloc((size_t)ts[i].numel * sizeof(float));
        EXPECT(!ax_model_gather_tensor(m, i, slab, gl), "gather: %s", ax_error_msg());
        for (long k = 0; k < ts[i].numel; k++)
            gl[k] += 0.05f * (float)ax_rng_normal(17, (uint64_t)i, (uint64_t)k);
        ax_model_scatter_tensor(m, i, gl, slab);
        free(gl);
    }
}
