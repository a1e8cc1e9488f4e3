/* axmem plan's bytes per axis against what the runtime counts (ax_comm_stats), exactly: one
 * training step (forward, backward, optimizer) on the grid, with 1 and 2 micro-batches and
 * overlap on and off, and with tied and untied embeddings; the 1-micro-batch step is also
 * looked up in the planner's ranking (ax_plan_rank) for this device count, so the numbers the
 * command prints are the ones checked.
 * Usage: mpirun -np N mpi_plan --grid DxXxYxZ. Verdict reduced over all ranks. */
#include "lib/core/log.h"
#include "lib/core/rng.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model.h"
#include "lib/model/optim.h"
#include "plan/perfmodel.h"
#include "plan/plan_run.h"
#include "tests/mpi/mpi_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BL = 2, T = 16 };

static void compare(const char *what, const ax_comm_stats *got, const ax_step_volume *want) {
    for (int k = 0; k < AX_COMM_KINDS; k++)
        for (int a = 0; a < AX_AXIS_COUNT; a++)
            EXPECT(got->bytes[k][a] == want->bytes[k][a] && got->calls[k][a] == want->calls[k][a],
                   "%s: %s over %s counted %.0f bytes in %ld calls, the plan says %.0f in %ld",
                   what, ax_comm_kind_name((ax_comm_kind)k), ax_axis_name((ax_axis)a),
                   got->bytes[k][a], got->calls[k][a], want->bytes[k][a], want->calls[k][a]);
}

/* one optimizer step of n_micro micro-batches; the counters hold exactly that step */
static void step(ax_grid_t *g, const ax_model_config *c, int n_micro, int overlap, int recompute,
                 ax_comm_stats *out, int64_t *n_local) {
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    ax_model_opts mo = {.overlap = overlap, .device = "cpu", .recompute = recompute};
    EXPECT(ax_model_create_ex(g, c, BL, T, &mo, &m) == AX_OK &&
               ax_optim_create(m, &oc, &o) == AX_OK,
           "model: %s", ax_error_msg());
    if (!m || !o) return;
    ax_model_init(m, 7);
    *n_local = ax_model_n_local(m);
    int32_t in[BL * T], tg[BL * T];
    uint8_t mask[BL * T];
    for (int i = 0; i < BL * T; i++) {
        in[i] = (int32_t)ax_rng_below(1, 0, (uint64_t)i, (uint64_t)c->vocab);
        tg[i] = (int32_t)ax_rng_below(2, 0, (uint64_t)i, (uint64_t)c->vocab);
        mask[i] = 1;
    }
    ax_comm_stats_reset(g);
    ax_model_zero_grad(m);
    for (int mb = 0; mb < n_micro; mb++) {
        ax_model_forward(m, in, tg, mask, BL, 1e-3f, 1);
        ax_model_backward_ex(m, mb == n_micro - 1);
    }
    double gnorm = 0;
    EXPECT(ax_model_status(m) == AX_OK && ax_optim_step(o, m, 1e-3, &gnorm) == AX_OK, "step: %s",
           ax_error_msg());
    ax_comm_stats_get(g, out);
    ax_optim_free(o);
    ax_model_free(m);
}

static void run(ax_grid_t *g, int tie) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 32,
                         .n_heads = 4,
                         .ffn = 48,
                         .vocab = 301, /* not divisible by Gy = 2: the padded shard */
                         .tie_embeddings = tie,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    int dims[4];
    for (int a = 0; a < 4; a++) dims[a] = ax_grid_dim(g, (ax_axis)a);
    int parts = dims[AX_AXIS_DATA] * dims[AX_AXIS_Z], world = ax_grid_size(g);
    ax_plan_machine pm;
    EXPECT(ax_plan_machine_load("h100", &pm) == AX_OK, "machine: %s", ax_error_msg());
    for (int n_micro = 1; n_micro <= 2; n_micro++)
        for (int overlap = 0; overlap <= 2; overlap++) {
            /* overlap 2: overlap on with activation recomputation */
            int rc = overlap == 2, ov = rc ? 1 : overlap;
            ax_comm_stats got;
            int64_t n_local = 0;
            step(g, &c, n_micro, ov, rc, &got, &n_local);
            ax_plan_pred p;
            EXPECT(ax_perfmodel_predict(&c, &pm.m, dims, BL * parts * n_micro, T, n_micro, ov, rc,
                                        &p) == AX_OK,
                   "predict: %s", ax_error_msg());
            char what[96];
            snprintf(what, sizeof what, "grid %s tie %d n_micro %d overlap %d recompute %d",
                     ax_grid_spec(g), tie, n_micro, ov, rc);
            compare(what, &got, &p.vol);
            /* the plan's optimizer-state memory is this rank's slabs: 4 x 4 bytes a float */
            EXPECT(p.mem_state == 16.0 * (double)n_local, "%s: state %.0f bytes, slabs 16 x %lld",
                   what, p.mem_state, (long long)n_local);
            if (n_micro > 1 || rc) continue;
            /* the planner's entry for this grid carries the same bytes */
            ax_plan_result r;
            EXPECT(ax_plan_rank(&c, &pm, world, BL * parts, T, overlap, AX_PLAN_RECOMPUTE_OFF,
                                AX_PLAN_RECOMPUTE_OFF, &r) == AX_OK,
                   "rank: %s", ax_error_msg());
            int found = 0;
            for (int i = 0; i < r.n_best; i++)
                if (!memcmp(r.best[i].dims, dims, sizeof dims)) {
                    found = 1;
                    EXPECT(r.best[i].n_micro == 1, "plan chose %d micro-batches",
                           r.best[i].n_micro);
                    compare(what, &got, &r.best[i].vol);
                }
            EXPECT(found, "grid %s is missing from the plan of %d devices", ax_grid_spec(g), world);
            ax_plan_result_free(&r);
        }
}

int main(int argc, char **argv) {
    ax_log_init();
    const char *spec;
    ax_grid_t *g = mc_start(&argc, &argv, "mpi_plan", &spec);
    if (!g) return 1;
    run(g, 1);
    run(g, 0);
    return mc_finish(g, "mpi_plan", spec);
}
