/* An imported Hugging Face model (Llama, Mistral, GPT-NeoX, GPT-2) on a grid: rank 0 imports
 * each fixture of tests/fixtures/hf (scripts/make_hf_fixtures.py), every rank loads the
 * checkpoint onto the grid and runs the fixture's token ids; each rank's vocabulary slice of the
 * logits must match transformers' (max relative error < 1e-4), as on one rank. Usage (from the
 * repository root): mpirun -np N mpi_hf --grid DxXxYxZ. */
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model_io.h"
#include "tests/mpi/mpi_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FB = 2, FT = 12 };

static void *slurp(const char *dir, const char *name, size_t want) {
    char path[512], *d = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ax_read_file(path, &d, &n) != AX_OK || n != want) {
        EXPECT(0, "%s: cannot read %zu bytes: %s", path, want, ax_error_msg());
        free(d);
        return NULL;
    }
    return d;
}

/* kv_heads: 0 imports the K/V heads as they are, else model import --kv-heads kv_heads */
static void check(ax_grid_t *g, const char *name, const char *work, int kv_heads) {
    char src[256], ck[512], step[600];
    snprintf(src, sizeof src, "tests/fixtures/hf/%s", name);
    snprintf(ck, sizeof ck, "%s/%s-kv%d", work, name, kv_heads);
    snprintf(step, sizeof step, "%s/step-000000", ck);
    ax_status st = ax_grid_rank(g) == 0 ? ax_hf_import(src, ck, kv_heads, NULL, 0) : AX_OK;
    EXPECT(ax_coll_agree(g, AX_AXIS_WORLD, st, "import") == AX_OK, "%s: import: %s", name,
           ax_error_msg());
    if (failures) return;
    ax_ckpt_t *c = NULL;
    ax_model_config cfg;
    ax_model_t *m = NULL;
    int32_t *ids = slurp(src, "ids.i32", sizeof(int32_t) * FB * FT);
    EXPECT(ids && ax_ckpt_open(step, &c) == AX_OK && ax_model_config_from_ckpt(c, &cfg) == AX_OK,
           "%s: %s", step, ax_error_msg());
    if (failures) goto out;
    int parts = ax_grid_dim(g, AX_AXIS_BATCH), bc = ax_grid_coord(g, AX_AXIS_BATCH);
    int bl = FB / parts > 0 ? FB / parts : 1, row0 = (bc * bl) % FB; /* 4 parts: rows repeat */
    int kv = cfg.n_kv_heads ? cfg.n_kv_heads : cfg.n_heads, gy = ax_grid_dim(g, AX_AXIS_Y);
    if (kv % gy) { /* whole K/V heads per Y rank: such a grid is refused, naming both */
        ax_status st = ax_model_create_on(g, &cfg, bl, FT, 1, &m);
        EXPECT(st == AX_ERR_ARG && strstr(ax_error_msg(), "--grid") &&
                   strstr(ax_error_msg(), "kv-heads"),
               "%s on %s: %d K/V heads over Y = %d must be refused naming --grid and kv-heads, "
               "got %d: %s",
               name, ax_grid_spec(g), kv, gy, (int)st, ax_error_msg());
        ax_error_clear();
        /* ... and loads once imported with every K/V head copied for its group (--kv-heads H) */
        if (!kv_heads && !failures) check(g, name, work, cfg.n_heads);
        goto out;
    }
    EXPECT(ax_model_create_on(g, &cfg, bl, FT, 1, &m) == AX_OK, "%s", ax_error_msg());
    if (failures) goto out;
    EXPECT(ax_model_load_blob(m, c, "params", ax_model_slab(m, AX_SLAB_PARAMS)) == AX_OK, "%s",
           ax_error_msg());
    uint8_t mask[FB * FT];
    memset(mask, 1, sizeof mask);
    ax_model_forward(m, ids + row0 * FT, ids + row0 * FT, mask, bl, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m, &v0, &valid, &Vl);
    float *got = malloc(sizeof(float) * bl * FT * Vl);
    float *ref = slurp(src, "logits.f32", sizeof(float) * FB * FT * cfg.vocab);
    EXPECT(got && ref && ax_model_read_logits(m, got) == AX_OK, "%s: logits", name);
    if (got && ref && !failures) {
        double e = 0, s = 0;
        for (int r = 0; r < bl * FT; r++)
            for (int v = 0; v < valid; v++) {
                double a = got[(size_t)r * Vl + v],
                       b = ref[((size_t)row0 * FT + r) * cfg.vocab + v0 + v];
                e = fmax(e, fabs(a - b)), s = fmax(s, fabs(b));
            }
        EXPECT(e / s < 1e-4, "%s on %s: max relative error %g (vocab [%d, %d))", name,
               ax_grid_spec(g), e / s, v0, v0 + valid);
    }
    free(got), free(ref);
out:
    free(ids);
    ax_model_free(m);
    ax_ckpt_free(c);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *spec;
    ax_grid_t *g = mc_start(&argc, &argv, "mpi_hf", &spec);
    if (!g) return 1;
    /* one scratch directory for all ranks: rank 0 makes it and sends its name */
    char work[128] = "/tmp/ax_mpi_hf_XXXXXX";
    if (ax_grid_rank(g) == 0 && !mkdtemp(work)) work[0] = 0;
    ax_coll_bcast(g, AX_AXIS_WORLD, work, sizeof work, AX_DT_U8, 0);
    EXPECT(work[0], "cannot make a scratch directory");
    /* GPT-NeoX: parallel and sequential residual, partial rotary, layer-norm biases over X;
     * GPT-2: learned positions, transposed Conv1D weights, tied head */
    const char *names[] = {"llama_tied_gqa", "llama_untied_sharded",    "mistral_gqa_bf16",
                           "neox_parallel",  "neox_sequential_sharded", "gpt2_tied",
                           "gpt2_gelu_bf16", "neox_tied_tanh_fullrot",  "gpt2_untied",
                           "llama_bias_gqa"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names) && !failures; i++)
        check(g, names[i], work, 0);
    ax_barrier(g, AX_AXIS_WORLD);
    if (ax_grid_rank(g) == 0 && work[0]) ax_rm_rf(work);
    return mc_finish(g, "mpi_hf", spec);
}
