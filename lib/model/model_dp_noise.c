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

double ax_model_dp_noise_value(uint64_t seed, int64_t step, int i, int64_t j) {
    /* the step's key, then the (key, stream = tensor, index) Gaussian of ax_rng_normal */
    uint64_t key = ax_rng_u64(seed, 0x44502d534744ULL /* "DP-SGD" */, (uint64_t)step);
    return ax_rng_normal(key, (uint64_t)i, (uint64_t)j);
}

ax_status ax_model_dp_noise(ax_model_t *m, double std, uint64_t seed, int64_t step) {
    AX_CHECK(model_needs_grads(m, "ax_model_dp_noise"));
    if (!(std >= 0.0) || !isfinite(std))
        return ax_errorf(AX_ERR_ARG, "ax_model_dp_noise: noise std %g is not a finite value >= 0",
                         std);
    model_grads_settle(m);
    uint64_t key = ax_rng_u64(seed, 0x44502d534744ULL, (uint64_t)step);
    float s = (float)std;
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        size_t bytes = (size_t)p->shard_n * sizeof(float);
        float *g = ax_map(m->ctx, m->grads + p->shard_off, bytes, AX_MAP_READ | AX_MAP_WRITE);
        if (!g)
            return ax_errorf(AX_ERR_NOMEM, "out of memory adding DP noise to %s", m->info[i].name);
        int64_t b0 = (int64_t)m->z * p->shard_n;
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < p->shard_n; e++) {
            int64_t b = b0 + e, gi = b < p->block_n ? model_global_index(m, p, b) : -1;
            if (gi >= 0) g[e] += s * ax_rng_normal(key, (uint64_t)i, (uint64_t)gi);
        }
        ax_unmap(m->ctx, m->grads + p->shard_off, g, bytes, AX_MAP_READ | AX_MAP_WRITE);
        p->gss_ok = 0; /* the sums of squares the backward took are stale */
    }
    return ax_ctx_status(m->ctx);
}
