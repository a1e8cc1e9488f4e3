/* Training-step throughput of the 4D-parallel model on a grid (run under mpirun). With
 * bench/grid_scaling.sh it compares 2 ranks x 1 thread against 1 rank x 2 threads for the
 * same model and global batch: the single-rank rate measured in the same script is the
 * ceiling. Usage: bench_grid --grid DxXxYxZ [--overlap 0|1|2] [--steps N] [--batch B]
 *                  [--recompute 0|1] [--z-gather step|layer] [--grad-comm fp32|bf16]
 *   --overlap: lib/dist/overlap.h's modes: 0 off, 1 forced on every axis, 2 auto (per axis; as
 *              in axmem train, a one-host axis is timed both ways first and keeps the faster:
 *              those trial steps run before the timed ones and say on stderr what they chose)
 *   --recompute, --z-gather, --grad-comm: as axmem train's (ax_model_opts)
 * Prints one line: "bench_grid GRID overlap=O tokens/s=R step_s=S comm_wait_s=W used=AXIS:on|off"
 * (used: what the schedule did on each axis of more than one rank). */
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/overlap.h"
#include "lib/dist/overlap_trial.h"
#include "lib/core/log.h"
#include "lib/model/model.h"
#include "lib/dist/mpienv.h"
#include "lib/model/optim.h"
#include "lib/core/rng.h"
#include "lib/core/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_fail(void) {
    fprintf(stderr, "bench_grid: %s\n", ax_error_msg());
    ax_mpi_abort(2);
}

/* one optimizer step of the whole model: tokens = the global batch's, for the loss scale */
static void one_step(ax_model_t *m, ax_optim_t *o, const int32_t *in, const int32_t *tg,
                     const uint8_t *mask, int bl, int tokens) {
    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, bl, 1.0f / (float)tokens, 1);
    ax_model_backward(m);
    double gn;
    if (ax_optim_step(o, m, 1e-4, &gn) != AX_OK) bench_fail();
}

int main(int argc, char **argv) {
    ax_log_init();
    if (ax_mpi_start(&argc, &argv) != AX_OK) return 1;
    const char *spec = "1x1x1x1";
    int overlap = 1, steps = 8, B = 8, T = 128, recompute = 0, stream = 0, gc16 = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--grid"))
            spec = argv[i + 1];
        else if (!strcmp(argv[i], "--overlap"))
            overlap = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--recompute"))
            recompute = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--z-gather"))
            stream = !strcmp(argv[i + 1], "layer");
        else if (!strcmp(argv[i], "--grad-comm"))
            gc16 = !strcmp(argv[i + 1], "bf16");
    }
    int dims[4];
    ax_grid_t *g = NULL;
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    /* "small"-class model: big enough that GEMMs dominate, small enough for 2 cores */
    ax_model_config c = {.n_layers = 4,
                         .dim = 512,
                         .n_heads = 8,
                         .ffn = 1376,
                         .vocab = 8192,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    if (ax_grid_parse(spec, dims) || ax_grid_create(dims, &g)) {
        fprintf(stderr, "bench_grid: %s\n", ax_error_msg());
        ax_mpi_abort(2);
    }
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts;
    ax_model_opts mo = {.overlap = overlap,
                        .device = "cpu",
                        .recompute = recompute,
                        .stream_z = stream,
                        .grad_comm_bf16 = gc16};
    if (B % parts || ax_model_create_ex(g, &c, bl, T, &mo, &m) || ax_optim_create(m, &oc, &o)) {
        fprintf(stderr, "bench_grid: %s\n", ax_error_msg());
        ax_mpi_abort(2);
    }
    ax_model_init(m, 1);
    int N = bl * T;
    int32_t *in = malloc((size_t)N * 4), *tg = malloc((size_t)N * 4);
    uint8_t *mask = malloc((size_t)N);
    int bc = ax_grid_coord(g, AX_AXIS_BATCH);
    for (int i = 0; i < N; i++) {
        in[i] = (int32_t)ax_rng_below(1, 0, (uint64_t)(bc * N + i), (uint64_t)c.vocab);
        tg[i] = (int32_t)ax_rng_below(1, 1, (uint64_t)(bc * N + i), (uint64_t)c.vocab);
        mask[i] = 1;
    }
    /* --overlap 2 does what axmem train does by default: the one-host axes' trial steps first
     * (lib/dist/overlap_trial.h), untimed here, then the steps with the schedule they chose */
    ax_overlap_trial tr;
    ax_overlap_trial_init(&tr, g, ax_model_overlap(m), overlap, 1L << 30);
    while (ax_overlap_trial_active(&tr)) {
        int settled;
        double t0 = ax_now();
        if (ax_overlap_trial_before(&tr) != AX_OK) bench_fail();
        one_step(m, o, in, tg, mask, bl, B * T);
        if (ax_overlap_trial_after(&tr, ax_now() - t0, &settled) != AX_OK) bench_fail();
        if (settled >= 0 && ax_grid_rank(g) == 0)
            fprintf(stderr, "bench_grid %s: overlap on axis %s: %s\n", spec,
                    ax_axis_name((ax_axis)settled),
                    ax_overlap_axis_why(ax_model_overlap(m), (ax_axis)settled));
    }
    double *times = malloc(sizeof(double) * (size_t)steps), wait = 0;
    for (int s = -1; s < steps; s++) { /* step -1 warms up */
        ax_barrier(g, AX_AXIS_WORLD);
        ax_comm_stats_reset(g);
        double t0 = ax_now();
        one_step(m, o, in, tg, mask, bl, B * T);
        ax_barrier(g, AX_AXIS_WORLD);
        if (s < 0) continue;
        times[s] = ax_now() - t0;
        ax_comm_stats st;
        ax_comm_stats_get(g, &st);
        wait += st.wait_s_total;
    }
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    double med = times[steps / 2];
    if (ax_grid_rank(g) == 0) {
        printf("bench_grid %s overlap=%d tokens/s=%.0f step_s=%.4f comm_wait_s=%.4f used=", spec,
               overlap, B * T / med, med, wait / steps);
        for (int a = AX_AXIS_DATA, first = 1; a <= AX_AXIS_Z; a++) {
            if (ax_grid_dim(g, (ax_axis)a) < 2) continue;
            int on = ax_overlap_axis_on(ax_model_overlap(m), (ax_axis)a);
            printf("%s%s:%s", first ? "" : ",", ax_axis_name((ax_axis)a), on ? "on" : "off");
            first = 0;
        }
        printf("\n");
    }
    free(in), free(tg), free(mask), free(times);
    ax_optim_free(o);
    ax_model_free(m);
    ax_grid_free(g);
    ax_mpi_stop();
    return 0;
}
