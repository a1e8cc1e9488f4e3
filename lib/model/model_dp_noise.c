/* DP-SGD's Gaussian noise on the reduced gradients (docs/privacy.md "DP-SGD"). Every element's
 * draw is a pure function of (seed, step, global tensor, global element index), the counter-based
 * generator of the initialisation (lib/core/rng.h), so any rank draws the values of its own shard
 * and every grid adds the same noise to the same parameter; replicas (over data, and over X or Y
 * for the tensors replicated there) add the same value to the same reduced gradient, so the noise
 * enters the update once. */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"
#include "lib/core/rng.h"

#include <math.h>

static uint64_t step_key(uint64_t seed, int64_t step) {
    return ax_rng_u64(seed, 0x44502d534744ULL /* "DP-SGD" */, (uint64_t)step);
}

/* the standard-normal stream of tensor i at a step: element j is its draw j (the ziggurat,
 * lib/core/rng.h: one hash per element) */
static uint64_t tensor_key(uint64_t seed, int64_t step, int i) {
    return ax_rng_key(step_key(seed, step), (uint64_t)i);
}

double ax_model_dp_noise_value(uint64_t seed, int64_t step, int i, int64_t j) {
    return ax_rng_gauss(ax_rng_ziggurat_tables(), tensor_key(seed, step, i), (uint64_t)j);
}

/* g[e0 + k] += s * noise of global element base + k, k in [0, n) */
static void add_row(float *g, int64_t e0, int64_t base, int64_t n, const ax_rng_ziggurat *z,
                    uint64_t key, float s) {
    for (int64_t k = 0; k < n; k++) g[e0 + k] += s * ax_rng_gauss(z, key, (uint64_t)(base + k));
}

ax_status ax_model_dp_noise(ax_model_t *m, double std, uint64_t seed, int64_t step) {
    AX_CHECK(model_needs_grads(m, "ax_model_dp_noise"));
    if (!(std >= 0.0) || !isfinite(std))
        return ax_errorf(AX_ERR_ARG, "ax_model_dp_noise: noise std %g is not a finite value >= 0",
                         std);
    model_grads_settle(m);
    const ax_rng_ziggurat *z = ax_rng_ziggurat_tables();
    float s = (float)std;
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        uint64_t key = tensor_key(seed, step, i);
        size_t bytes = (size_t)p->shard_n * sizeof(float);
        float *g = ax_map(m->ctx, m->grads + p->shard_off, bytes, AX_MAP_READ | AX_MAP_WRITE);
        if (!g)
            return ax_errorf(AX_ERR_NOMEM, "out of memory adding DP noise to %s", m->info[i].name);
        /* this shard holds block elements [b0, b1); the rest of it pads the block */
        int64_t b0 = (int64_t)m->z * p->shard_n, b1 = b0 + p->shard_n, cols = p->cols_l;
        if (b1 > p->block_n) b1 = p->block_n;
        if (p->rows_l == 1 || p->kind == TP_YVEC) { /* vectors: element by element */
#pragma omp parallel for schedule(static) if (b1 - b0 >= 16384)
            for (int64_t b = b0; b < b1; b++) {
                int64_t gi = model_global_index(m, p, b);
                if (gi >= 0) add_row(g, b - b0, gi, 1, z, key, s);
            }
        } else if (b1 > b0) { /* matrices: a block row's global indices are consecutive */
            int64_t r0 = b0 / cols, r1 = (b1 - 1) / cols + 1;
#pragma omp parallel for schedule(static)
            for (int64_t r = r0; r < r1; r++) {
                int64_t c0 = r == r0 ? b0 - r * cols : 0, c1 = r == r1 - 1 ? b1 - r * cols : cols;
                int64_t base = model_global_index(m, p, r * cols + c0);
                if (base >= 0) add_row(g, r * cols + c0 - b0, base, c1 - c0, z, key, s);
            }
        }
        ax_unmap(m->ctx, m->grads + p->shard_off, g, bytes, AX_MAP_READ | AX_MAP_WRITE);
        p->gss_ok = 0; /* the sums of squares the backward took are stale */
    }
    return ax_ctx_status(m->ctx);
}
