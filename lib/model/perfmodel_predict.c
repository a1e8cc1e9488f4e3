/* Step-time prediction for one grid: compute from the model's FLOPs, communication from the
 * same byte counts the runtime's counters see (ax_perfmodel_step_phases), overlap as the model
 * schedules it (OAR, ORS, OAG), memory as lib/model/model.c allocates it. */
#include "lib/model/perfmodel.h"
#include "lib/model/model_internal.h"

static int axis_size(const int dims[4], ax_axis axis) {
    if (axis == AX_AXIS_BATCH) return dims[AX_AXIS_DATA] * dims[AX_AXIS_Z];
    if (axis == AX_AXIS_WORLD) return dims[0] * dims[1] * dims[2] * dims[3];
    return dims[axis];
}

int ax_perfmodel_axis_level(const int dims[4], ax_axis axis, int devices_per_node) {
    /* rank = ((d*Gz + z)*Gy + y)*Gx + x: a group of axis a is p ranks at stride s; every group
     * lies in one node when the span s*p tiles the node. BATCH spans D and Z, so everything
     * inside it: the world. */
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    long span = axis == AX_AXIS_X   ? gx
                : axis == AX_AXIS_Y ? (long)gx * gy
                : axis == AX_AXIS_Z ? (long)gx * gy * gz
                                    : (long)axis_size(dims, AX_AXIS_WORLD);
    if (axis_size(dims, axis) == 1) return AX_LEVEL_NODE;
    return span <= devices_per_node && devices_per_node % span == 0 ? AX_LEVEL_NODE : AX_LEVEL_NET;
}

/* ring steps (messages) per call: allreduce 2(p-1), allgather and reduce-scatter p-1 */
static double ring_steps(int kind, int p) {
    return kind == AX_COMM_ALLREDUCE ? 2.0 * (p - 1) : (double)(p - 1);
}

/* seconds of one phase's communication on one axis */
static double phase_time(const ax_step_volume *v, const int dims[4], ax_axis axis,
                         const ax_machine *mach, int level) {
    int p = axis_size(dims, axis);
    if (p == 1) return 0;
    double t = 0, scale = mach->elem_bytes / 4.0; /* counters count 4-byte elements */
    for (int k = 0; k < AX_COMM_KINDS; k++) {
        /* the two 8-byte scalars (gradient norm) keep their size whatever the elements are */
        double s = axis == AX_AXIS_WORLD ? 1.0 : scale;
        t += v->bytes[k][axis] * s / mach->bw[level] +
             (double)v->calls[k][axis] * ring_steps(k, p) * mach->lat[level];
    }
    return t;
}

static double min2(double a, double b) {
    return a < b ? a : b;
}

/* Memory as model.c and optim.c allocate it (bytes per device): the parameter, gradient and
 * two AdamW slabs of the rank's ZeRO shard; with Gz > 1 the gathered blocks and their gradient
 * accumulators; the activation arena for B sequences of T. */
typedef struct {
    const int *dims;
    double local, full; /* this rank's shards and blocks, summed over the tensors */
} blocks_sum;
static void sum_block(void *u, const tensor_spec *s) {
    blocks_sum *b = u;
    int64_t block = model_spec_block(s, b->dims), gz = b->dims[AX_AXIS_Z];
    b->local += (double)((block + gz - 1) / gz); /* whole elements a shard */
    b->full += (double)block;
}

static void memory(const ax_model_config *c, const int dims[4], int B, int T, int eb,
                   ax_plan_pred *o) {
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    double Cx = c->dim / gx, Cy = c->dim / gy, Fy = c->ffn / gy, L = c->n_layers;
    double Vl = (c->vocab + gy - 1) / gy, Hy = c->n_heads / gy, D = c->dim / c->n_heads;
    /* grouped-query attention: the qkv row holds Cy query and 2 Ky key/value columns */
    double Q3 = Cy + 2.0 * ((c->n_kv_heads ? c->n_kv_heads : c->n_heads) / gy) * D;
    blocks_sum bs = {dims, 0, 0}; /* every tensor of the table, as model.c allocates them */
    model_tensor_specs(c, sum_block, &bs);
    double local = bs.local, full = bs.full;
    /* 16 bytes per parameter: fp32 params, grads, m, v (bf16 training with fp32 master weights
     * and moments needs the same 2 + 2 + 4 + 4 + 4) */
    o->mem_state = 16.0 * local;
    o->mem_gathered = gz > 1 ? 2.0 * eb * full : 0;
    double N = (double)B * T, att = (double)B * Hy * T; /* per-row logsumexp (blocked attention) */
    double per_layer = N * (4 * Cx + 2 + Q3 + Cy + 3 * Fy) + att;
    double rest = N * (4 * Cx + 5 + Vl + (Fy > Cy ? Fy : Cy) + 2 * Fy + Q3) + T * D + att;
    o->mem_acts = eb * (L * per_layer + rest) + 3 * N * 4 + 64.0 * (11 * L + 17);
    o->mem_total = o->mem_state + o->mem_gathered + o->mem_acts;
}

ax_status ax_perfmodel_predict(const ax_model_config *c, const ax_machine *mach, const int dims[4],
                               int global_batch, int T, int n_micro, int overlap,
                               ax_plan_pred *out) {
    *out = (ax_plan_pred){0};
    for (int a = 0; a < 4; a++) out->dims[a] = dims[a];
    AX_CHECK(ax_model_config_check_grid(c, dims));
    int parts = dims[AX_AXIS_DATA] * dims[AX_AXIS_Z];
    if (n_micro < 1 || global_batch % ((long)parts * n_micro))
        return ax_errorf(AX_ERR_ARG,
                         "--global-batch %d does not split into Gdata x Gz = %d ranks x %d "
                         "micro-batches (grid %dx%dx%dx%d)",
                         global_batch, parts, n_micro, dims[0], dims[1], dims[2], dims[3]);
    int B = global_batch / parts / n_micro, gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y];
    out->B = B, out->n_micro = n_micro;
    double devices = axis_size(dims, AX_AXIS_WORLD);

    /* compute: the matmuls split over X x Y; attention (per head, over Y) repeats on every X
     * rank of a group; the batch splits over D x Z */
    double att = 12.0 * c->n_layers * c->dim * (double)T;
    double per_token = ax_model_flops_per_token(c, T), mat = per_token - att;
    double tokens_local = (double)global_batch * T / parts;
    out->flops_device = tokens_local * (mat / (gx * gy) + att / gy);
    /* a GEMM whose smallest side is k runs at k / (k + k_half) of the large-GEMM rate */
    double k = c->dim / gx;
    if (c->dim / gy < k) k = c->dim / gy;
    if ((double)B * T < k) k = (double)B * T;
    out->gemm_eff = mach->gemm_half_dim > 0 ? k / (k + mach->gemm_half_dim) : 1.0;
    out->compute_s = out->flops_device / (mach->gemm_flops * out->gemm_eff);

    /* communication per axis and phase */
    ax_step_volume ph[3];
    ax_perfmodel_step_phases(c, dims, B, T, n_micro, ph);
    ax_perfmodel_step_volume(c, dims, B, T, n_micro, &out->vol);
    double t[3][AX_AXIS_COUNT];
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        out->level[a] = ax_perfmodel_axis_level(dims, (ax_axis)a, mach->devices_per_node);
        for (int i = 0; i < 3; i++) t[i][a] = phase_time(&ph[i], dims, a, mach, out->level[a]);
        out->comm_s[a] = t[0][a] + t[1][a] + t[2][a];
        out->exposed_s[a] = out->comm_s[a];
    }

    if (overlap) {
        /* compute split: forward 1/3, backward 2/3 of which the dW GEMMs are half */
        double f = mach->overlap, fwd = out->compute_s / 3, dw = out->compute_s / 3;
        double L = c->n_layers;
        /* OAR: backward dX all-reduces (X and Y) behind the dW GEMMs, every micro-batch */
        double bwd_ar = t[1][AX_AXIS_X] + t[1][AX_AXIS_Y];
        double oar = bwd_ar > 0 ? f * min2(bwd_ar, dw) : 0;
        if (bwd_ar > 0) {
            out->exposed_s[AX_AXIS_X] -= oar * t[1][AX_AXIS_X] / bwd_ar;
            out->exposed_s[AX_AXIS_Y] -= oar * t[1][AX_AXIS_Y] / bwd_ar;
        }
        /* ORS and OAG on Z (once per step): a layer's reduce-scatter runs behind the backward
         * of the layers before it, the last one (the embedding) exposed; a layer's gather
         * behind the forward of the layer before it, the first one exposed */
        double ag = 0, rs = 0;
        double zb = ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] +
                    ph[2].bytes[AX_COMM_REDUCE_SCATTER][AX_AXIS_Z];
        if (zb > 0) {
            ag = t[2][AX_AXIS_Z] * ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] / zb;
            rs = t[2][AX_AXIS_Z] - ag;
        }
        double bwd_free = 2 * out->compute_s / 3 / n_micro - oar / n_micro;
        double ors = f * min2(rs * L / (L + 1), bwd_free > 0 ? bwd_free : 0);
        double oag = f * min2(ag * L / (L + 1), fwd / n_micro);
        out->exposed_s[AX_AXIS_Z] -= ors + oag;
        out->hidden_s = oar + ors + oag;
    }
    double comm = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) comm += out->exposed_s[a];
    out->step_s = out->compute_s + comm;
    out->tokens_per_s = (double)global_batch * T / out->step_s;
    double peak = mach->peak_flops > 0 ? mach->peak_flops : mach->gemm_flops;
    out->mfu = per_token * global_batch * T / (out->step_s * devices * peak);

    memory(c, dims, B, T, mach->elem_bytes, out);
    out->fits = out->mem_total <= mach->mem_bytes;
    return AX_OK;
}
