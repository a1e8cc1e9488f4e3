/* REFERENCE versions of the model's two DP-SGD functions (declared in train/train_dp.h, the
 * contract between the model and training), simple and slow, written only from the public
 * model API so the training side can be built and tested: each example's gradient comes from a
 * backward of that example alone (batch of one, reduced over the whole grid), its norm from
 * ax_model_grad_sumsq. One forward and backward per example; the noise on data and Z grids
 * only (X = Y = 1). To be replaced by lib/model's own implementation: delete this file. */
#include "lib/backend/backend.h"
#include "lib/dist/comm.h"
#include "lib/core/rng.h"
#include "lib/model/model.h"

#include <math.h>

double ax_model_dp_micro(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                         const uint8_t *mask, int B, float clip, float scale, int last_micro,
                         float *norms);
ax_status ax_model_dp_noise(ax_model_t *m, double std, uint64_t seed, int64_t step);

/* the key of the noise of (seed, step): tensor i, element j then index it */
#define DP_REF_NOISE_KEY 0x6e6f6973652d7265ULL

double ax_model_dp_micro(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                         const uint8_t *mask, int B, float clip, float scale, int last_micro,
                         float *norms) {
    (void)last_micro; /* every example below is reduced over the grid on its own */
    ax_ctx *ctx = ax_model_ctx(m);
    ax_grid_t *g = ax_model_grid(m);
    int Bm, T;
    ax_model_shape(m, &Bm, &T);
    int P = ax_grid_dim(g, AX_AXIS_BATCH), part = ax_grid_coord(g, AX_AXIS_BATCH);
    int64_t n = ax_model_n_local(m), rows = (int64_t)P * B;
    size_t nb = (size_t)n * sizeof(float);
    float *acc = ax_host_alloc(ctx, nb), *one = ax_host_alloc(ctx, nb);
    double *count = ax_host_alloc(ctx, (size_t)rows * sizeof(double));
    int32_t *pad = ax_host_alloc(ctx, (size_t)T * sizeof(int32_t));
    uint8_t *nomask = ax_host_alloc(ctx, (size_t)T);
    double loss = 0;
    if (!acc || !one || !count || !pad || !nomask) {
        loss = NAN; /* the step diverges and stops */
        goto out;
    }
    for (int t = 0; t < T; t++) pad[t] = 0, nomask[t] = 0;
    /* every rank learns which rows of the global micro-batch hold an example */
    for (int64_t k = 0; k < rows; k++) count[k] = 0;
    for (int j = 0; j < B; j++) {
        for (int t = 0; t < T; t++) count[(int64_t)part * B + j] += mask[(size_t)j * T + t] != 0;
        if (norms) norms[j] = 0;
    }
    if (ax_coll_allreduce(g, AX_AXIS_BATCH, count, rows, AX_DT_F64, AX_OP_SUM) != AX_OK) {
        loss = NAN;
        goto out;
    }
    /* the running sum of the step so far */
    if (ax_model_read_grads(m, acc, 0, n) != AX_OK) loss = NAN;
    for (int64_t k = 0; k < rows && !isnan(loss); k++) {
        if (count[k] == 0) continue;
        int mine = k / B == part, j = (int)(k % B);
        const size_t o = (size_t)j * T;
        ax_model_zero_grad(m);
        double l = ax_model_forward(m, mine ? inputs + o : pad, mine ? targets + o : pad,
                                    mine ? mask + o : nomask, 1, (float)(1.0 / count[k]), 1);
        if (mine) loss += l;
        ax_model_backward_ex(m, 1);
        double ss = 0;
        if (ax_model_grad_sumsq(m, &ss) != AX_OK || ax_model_read_grads(m, one, 0, n) != AX_OK) {
            loss = NAN;
            break;
        }
        double norm = sqrt(ss), f = norm > clip ? clip / norm : 1.0;
        if (mine && norms) norms[j] = (float)norm;
        for (int64_t e = 0; e < n; e++) acc[e] += (float)(scale * f) * one[e];
    }
    /* the slab handle settles lazily zeroed blocks and drops cached norms: writable */
    ax_copy(ctx, (void *)ax_model_slab(m, AX_SLAB_GRADS), acc, nb, AX_COPY_H2D);
out:
    ax_host_free(ctx, acc), ax_host_free(ctx, one), ax_host_free(ctx, count);
    ax_host_free(ctx, pad), ax_host_free(ctx, nomask);
    return loss;
}

ax_status ax_model_dp_noise(ax_model_t *m, double std, uint64_t seed, int64_t step) {
    ax_grid_t *g = ax_model_grid(m);
    if (ax_grid_dim(g, AX_AXIS_X) > 1 || ax_grid_dim(g, AX_AXIS_Y) > 1)
        return ax_errorf(AX_ERR_ARG, "the reference DP-SGD noise runs on data and Z grids only "
                                     "(X = Y = 1)");
    ax_ctx *ctx = ax_model_ctx(m);
    int64_t n = ax_model_n_local(m);
    size_t nb = (size_t)n * sizeof(float);
    float *grad = ax_host_alloc(ctx, nb);
    if (!grad) return ax_errorf(AX_ERR_NOMEM, "out of memory for the DP-SGD noise");
    ax_status st = ax_model_read_grads(m, grad, 0, n);
    uint64_t key = ax_rng_u64(seed, DP_REF_NOISE_KEY, (uint64_t)step);
    const ax_tensor_info *info = ax_model_tensors(m);
    int z = ax_grid_coord(g, AX_AXIS_Z);
    for (int i = 0; i < ax_model_n_tensors(m) && st == AX_OK; i++) {
        int64_t off, cnt;
        ax_model_local_range(m, i, &off, &cnt);
        /* X = Y = 1: the block is the global tensor, row-major; this rank holds shard z */
        for (int64_t e = 0; e < cnt; e++) {
            int64_t j = (int64_t)z * cnt + e;
            if (j < info[i].numel)
                grad[off + e] += (float)(std * ax_rng_normal(key, (uint64_t)i, (uint64_t)j));
        }
    }
    if (st == AX_OK) ax_copy(ctx, (void *)ax_model_slab(m, AX_SLAB_GRADS), grad, nb, AX_COPY_H2D);
    ax_host_free(ctx, grad);
    return st == AX_OK ? ax_ctx_status(ctx) : st;
}
