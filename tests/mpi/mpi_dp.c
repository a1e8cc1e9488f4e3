/* DP-SGD's model side on the 4D grid against the single-rank model, in one program (every rank
 * also runs the serial reference on the whole global batch): for the Llama (tied), GPT-NeoX
 * (untied) and GPT-2 (tied) architectures, with activation recomputation and, with Z > 1, layer
 * weights streamed over Z, three DP steps (ax_model_dp_micro over goldfish-masked rows and an
 * all-padding row, two micro-batches a step on the grid and one on the reference, then
 * ax_model_dp_noise and AdamW): each example's gradient norm (relative 1e-5), the loss and every
 * parameter after the steps (1e-4 of the tensor's scale) must agree.
 * Usage: mpirun -np N mpi_dp --grid DxXxYxZ. Verdict reduced over all ranks. */
#include "lib/core/log.h"
#include "lib/core/rng.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model.h"
#include "lib/model/optim.h"
#include "tests/mpi/mpi_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 8, T = 16, STEPS = 3 };
static const char *g_what = "";
static void what_context(FILE *f) {
    fprintf(f, " %s", g_what);
}

/* 0 Llama (tied), 1 GPT-NeoX (untied), 2 GPT-2 (tied); vocab 301 pads the Y shards */
static ax_model_config cfg(int arch) {
    ax_model_config c = {.n_layers = 3,
                         .dim = 32,
                         .n_heads = 4,
                         .ffn = 48,
                         .vocab = 301,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    if (arch) c.norm = AX_NORM_LAYER, c.bias = 1;
    if (arch == 1)
        c.mlp = AX_MLP_GELU, c.parallel_residual = 1, c.rotary_dim = 2, c.tie_embeddings = 0;
    if (arch == 2) c.mlp = AX_MLP_GELU_TANH, c.pos = AX_POS_LEARNED, c.max_pos = T;
    return c;
}

/* goldfish-like masks (1 target in 5 dropped), row 5 all padding, row 2 repeating its tokens */
static void batch(int step, int32_t *in, int32_t *tg, uint8_t *mask) {
    for (int i = 0; i < B * T; i++) {
        in[i] = (int32_t)ax_rng_below(3, (uint64_t)step, (uint64_t)i, 301);
        tg[i] = (int32_t)ax_rng_below(4, (uint64_t)step, (uint64_t)i, 301);
        mask[i] = (uint8_t)(ax_rng_below(5, (uint64_t)step, (uint64_t)i, 5) != 0 && i / T != 5);
        if (i / T == 2 && i % 2) in[i] = in[i - 1];
    }
}

static void run(ax_grid_t *g, int arch, int recompute, int stream) {
    ax_model_config c = cfg(arch);
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bl = B / parts, bc = ax_grid_coord(g, AX_AXIS_BATCH);
    ax_model_t *ref = NULL, *par = NULL;
    ax_optim_t *oref = NULL, *opar = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 0.0f}; /* no global-norm clip in DP */
    ax_model_opts opts = {
        .overlap = 1, .device = "cpu", .recompute = recompute, .stream_z = stream};
    if (ax_model_create(&c, B, T, &ref) || ax_model_create_ex(g, &c, bl, T, &opts, &par) ||
        ax_optim_create(ref, &oc, &oref) || ax_optim_create(par, &oc, &opar)) {
        EXPECT(0, "setup: %s", ax_error_msg());
        return;
    }
    ax_model_init(ref, 9);
    ax_model_init(par, 9);
    mc_perturb(ref), mc_perturb(par);
    int32_t in[B * T], tg[B * T];
    uint8_t mask[B * T];
    const float clip = 0.5f, scale = 1.0f / B, sigma = 1.0f;
    for (int step = 0; step < STEPS; step++) {
        batch(step, in, tg, mask);
        float nref[B], npar[B];
        ax_model_zero_grad(ref);
        double lr_ = ax_model_dp_micro(ref, in, tg, mask, B, clip, scale, 1, nref);
        EXPECT(ax_model_dp_noise(ref, sigma * clip * scale, 5, step) == AX_OK, "noise: %s",
               ax_error_msg());
        /* the grid: this rank's rows, as two micro-batches of half of them */
        ax_model_zero_grad(par);
        long off = (long)bc * bl * T, h = bl / 2;
        double lp =
            ax_model_dp_micro(par, in + off, tg + off, mask + off, (int)h, clip, scale, 0, npar);
        lp += ax_model_dp_micro(par, in + off + h * T, tg + off + h * T, mask + off + h * T,
                                (int)(bl - h), clip, scale, 1, npar + h);
        EXPECT(ax_model_status(par) == AX_OK, "dp_micro: %s", ax_error_msg());
        EXPECT(ax_model_dp_noise(par, sigma * clip * scale, 5, step) == AX_OK, "noise: %s",
               ax_error_msg());
        ax_coll_allreduce(g, AX_AXIS_BATCH, &lp, 1, AX_DT_F64, AX_OP_SUM);
        EXPECT(fabs(lp - lr_) <= 1e-5 * fabs(lr_), "step %d loss %.8f vs single-rank %.8f", step,
               lp, lr_);
        for (int b = 0; b < bl; b++) {
            double want = nref[bc * bl + b];
            EXPECT(fabs(npar[b] - want) <= 1e-5 * want, "step %d row %d norm %.8g vs %.8g", step,
                   bc * bl + b, (double)npar[b], want);
        }
        if (step == 0 && bc == 0) EXPECT(nref[5] == 0 && nref[0] > 0, "padding row's norm");
        double gr = 0, gp = 0;
        EXPECT(ax_optim_step(oref, ref, 1e-2, &gr) == AX_OK, "step: %s", ax_error_msg());
        EXPECT(ax_optim_step(opar, par, 1e-2, &gp) == AX_OK, "step: %s", ax_error_msg());
        EXPECT(fabs(gp - gr) <= 1e-5 * gr, "step %d noised gradient norm %.8g vs %.8g", step, gp,
               gr);
    }
    const ax_tensor_info *ts = ax_model_tensors(ref);
    for (int i = 0; i < ax_model_n_tensors(ref); i++) {
        float *gl = malloc((size_t)ts[i].numel * sizeof(float));
        float *pr = malloc((size_t)ts[i].numel * sizeof(float));
        EXPECT(!ax_model_gather_tensor(par, i, ax_model_slab(par, AX_SLAB_PARAMS), gl) &&
                   !ax_model_read_params(ref, pr, ts[i].offset, ts[i].numel),
               "read: %s", ax_error_msg());
        double worst = 0, sc = 0;
        for (long k = 0; k < ts[i].numel; k++)
            worst = fmax(worst, fabs(gl[k] - pr[k])), sc = fmax(sc, fabs(pr[k]));
        EXPECT(worst <= 1e-4 * sc, "after %d DP steps %s differs by %g (scale %g)", STEPS,
               ts[i].name, worst, sc);
        free(gl), free(pr);
    }
    ax_optim_free(oref), ax_optim_free(opar);
    ax_model_free(ref), ax_model_free(par);
}

int main(int argc, char **argv) {
    ax_log_init();
    mc_context = what_context;
    const char *spec;
    ax_grid_t *g = mc_start(&argc, &argv, "mpi_dp", &spec);
    if (!g) return 1;
    static const char *names[] = {"llama", "neox", "gpt2"};
    int gz = ax_grid_dim(g, AX_AXIS_Z);
    for (int arch = 0; arch < 3; arch++)
        for (int mode = 0; mode < (gz > 1 ? 3 : 2); mode++) {
            char what[64];
            snprintf(what, sizeof what, "%s %s%s", spec, names[arch],
                     mode == 1   ? " recompute"
                     : mode == 2 ? " z-gather layer"
                                 : "");
            g_what = what;
            run(g, arch, mode == 1, mode == 2);
        }
    return mc_finish(g, "mpi_dp", spec);
}
