/* Step-time prediction for one grid: compute from the model's FLOPs, communication from the
 * same byte counts the runtime's counters see (ax_perfmodel_step_phases), overlap as the model
 * schedules it (OAR, ORS, OAG), memory as lib/model/model.c allocates it. */
#include "plan/perfmodel.h"
#include "lib/model/model_io.h"

#include "lib/dist/overlap.h"

#include <stdio.h>
#include <string.h>

static int axis_size(const int dims[4], ax_axis axis) {
    if (axis == AX_AXIS_BATCH) return dims[AX_AXIS_DATA] * dims[AX_AXIS_Z];
    if (axis == AX_AXIS_WORLD) return dims[0] * dims[1] * dims[2] * dims[3];
    return dims[axis];
}

/* A group of `axis` is p ranks at stride s: rank = ((d*Gz + z)*Gy + y)*Gx + x, X innermost;
 * BATCH (D and Z) at stride Gx Gy. */
static int axis_stride(const int dims[4], ax_axis axis) {
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    return axis == AX_AXIS_Y       ? gx
           : axis == AX_AXIS_Z     ? gx * gy
           : axis == AX_AXIS_DATA  ? gx * gy * gz
           : axis == AX_AXIS_BATCH ? gx * gy
                                   : 1;
}

int ax_perfmodel_axis_hosts(const int dims[4], ax_axis axis, int devices_per_node) {
    /* every group lies in one node when the span s*p of the groups' blocks tiles the node
     * (BATCH and WORLD: the world), or when the whole job fits in one node (ranks fill nodes
     * in world-rank order) */
    long p = axis_size(dims, axis), s = axis_stride(dims, axis),
         world = axis_size(dims, AX_AXIS_WORLD);
    long span = axis == AX_AXIS_BATCH || axis == AX_AXIS_WORLD ? world : s * p;
    long n = devices_per_node > 0 ? devices_per_node : 1;
    if (p == 1 || world <= n || (span <= n && n % span == 0)) return 1;
    /* else some group crosses a node boundary; report the first group's hosts (ranks 0, s, ..,
     * (p-1)s: one node each when s >= n, else consecutive nodes), at least 2 */
    long h = s >= n ? p : (p - 1) * s / n + 1;
    return h < 2 ? 2 : (int)h;
}

int ax_perfmodel_axis_level(const int dims[4], ax_axis axis, int devices_per_node) {
    return ax_perfmodel_axis_hosts(dims, axis, devices_per_node) == 1 ? AX_LEVEL_NODE
                                                                      : AX_LEVEL_NET;
}

int ax_perfmodel_overlap_axis(const ax_machine *mach, const int dims[4], ax_axis axis, int mode,
                              char *why, size_t cap) {
    int world = axis_size(dims, AX_AXIS_WORLD), n = mach->devices_per_node;
    int local = n > 0 && n < world ? n : world; /* ranks on a (full) host */
    int threads = mach->threads_per_device > 0 ? mach->threads_per_device : 1;
    int ranks = axis_size(dims, axis), hosts = ax_perfmodel_axis_hosts(dims, axis, n);
    int nccl = mach->transport == AX_TRANSPORT_NCCL;
    int on =
        ax_overlap_decide(mode, ranks, hosts, local, threads, mach->cores_per_node, nccl, why, cap);
    /* the plan prices the rule's answer; a run may turn such an axis on after timing it */
    if (why && ax_overlap_measurable(mode, axis, ranks, hosts, local, threads, mach->cores_per_node,
                                     nccl)) {
        size_t len = strlen(why);
        snprintf(why + len, cap - len, "; a run times both schedules first and keeps the faster");
    }
    return on;
}

/* ring steps (messages) per call: allreduce 2(p-1), allgather and reduce-scatter p-1 */
static double ring_steps(int kind, int p) {
    return kind == AX_COMM_ALLREDUCE ? 2.0 * (p - 1) : (double)(p - 1);
}

/* bytes per communicated (and gathered) element: axmem's CUDA engine moves fp32 */
static int comm_bytes(const ax_machine *mach) {
    return mach->axmem_cuda ? 4 : mach->elem_bytes;
}

/* seconds of one phase's communication on one axis */
static double phase_time(const ax_step_volume *v, const int dims[4], ax_axis axis,
                         const ax_machine *mach, int level) {
    int p = axis_size(dims, axis);
    if (p == 1) return 0;
    double t = 0, scale = comm_bytes(mach) / 4.0; /* counters count 4-byte elements */
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
    double local, full;             /* this rank's shards and blocks, summed over the tensors */
    double global_full;             /* the blocks of the tensors outside the layers */
    double layer_full, layer_shard; /* layer 0's (every layer's are the same) */
} blocks_sum;
static void sum_block(void *u, int layer, int64_t block) {
    blocks_sum *b = u;
    int64_t gz = b->dims[AX_AXIS_Z];
    double shard = (double)((block + gz - 1) / gz); /* whole elements a shard */
    b->local += shard;
    b->full += (double)(shard * gz);
    if (layer < 0) b->global_full += (double)(shard * gz);
    if (layer == 0) b->layer_full += (double)(shard * gz), b->layer_shard += shard;
}

static double ceil8(double cols) { /* a bf16 row's elements (ax_bf16_ld) */
    return (double)(((long)cols + 7) & ~7L);
}

static void memory(const ax_model_config *c, const ax_machine *mach, const int dims[4], int B,
                   int T, int n_micro, int flags, ax_plan_pred *o) {
    int recompute = flags & AX_PERF_RECOMPUTE, cuda = mach->axmem_cuda;
    int eb = cuda ? 4 : mach->elem_bytes; /* activations and gathered blocks */
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y], gz = dims[AX_AXIS_Z];
    double Cx = c->dim / gx, Cy = c->dim / gy, Fy = c->ffn / gy, L = c->n_layers;
    double Vl = (c->vocab + gy - 1) / gy, Hy = c->n_heads / gy, D = c->dim / c->n_heads;
    /* grouped-query attention: the qkv row holds Cy query and 2 Ky key/value columns */
    double Q3 = Cy + 2.0 * ((c->n_kv_heads ? c->n_kv_heads : c->n_heads) / gy) * D;
    blocks_sum bs = {dims, 0, 0, 0, 0, 0}; /* every tensor of the table, as model.c allocates */
    ax_model_rank_blocks(c, dims, sum_block, &bs);
    double local = bs.local, full = bs.full;
    /* 16 bytes per parameter: fp32 params, grads, m, v (bf16 training with fp32 master weights
     * and moments needs the same 2 + 2 + 4 + 4 + 4) */
    o->mem_state = 16.0 * local;
    /* gathered weights and gradient blocks; streamed: the global tensors' and two layer slots
     * of each, and two slots of a layer's shards (fp32) where later micro-batches land */
    o->mem_gathered =
        gz == 1       ? 0
        : o->stream_z ? 2.0 * eb * (bs.global_full + 2 * bs.layer_full) + 2 * 4.0 * bs.layer_shard
                      : 2.0 * eb * full;
    double N = (double)B * T, att = (double)B * Hy * T; /* per-row logsumexp (blocked attention) */
    double per_layer = N * (4 * Cx + 2 + Q3 + Cy + 3 * Fy) + att;
    double rest = N * (4 * Cx + 5 + Vl + (Fy > Cy ? Fy : Cy) + 2 * Fy + Q3) + T * D + att;
    /* recompute: every layer keeps its input res, one working set serves them all */
    double layers = recompute ? L * N * Cx + (per_layer - N * Cx) : L * per_layer;
    o->mem_acts = eb * (layers + rest) + 3 * N * 4 + 64.0 * (11 * L + 17);
    o->mem_device = 0;
    if (cuda) {
        /* ln1, ln2 and hs of every layer (one working set with recompute) and lnf in bf16
         * storage: 2 bytes an element, rows padded to 8, instead of eb (model.c: gin16) */
        double sets = recompute ? 1 : L;
        o->mem_acts -= sets * N * (eb * (2 * Cx + Fy) - 2 * (2 * ceil8(Cx) + ceil8(Fy))) +
                       N * (eb * Cx - 2 * ceil8(Cx));
        /* SwiGLU without biases: the backward's dh [N, 2 Fy] too (model.c: dh16) */
        if (c->mlp == AX_MLP_SWIGLU && !c->bias)
            o->mem_acts -= N * (eb * 2 * Fy - 2 * ceil8(2 * Fy));
        /* the bf16 weight cache: a bf16 copy of every weight the GEMMs read from a declared
         * range (the slab; with Z > 1 the gathered blocks instead, but a streamed layer's slots,
         * which are not declared), within its budget of 5/8 of the declared fp32 bytes + 16 MiB */
        double gemm_w = gz == 1 ? local : o->stream_z ? bs.global_full : full;
        double declared = 4 * (local + (gz == 1 ? 0 : o->stream_z ? bs.global_full : full));
        o->mem_device += min2(2 * gemm_w, declared * 5 / 8 + 16 * 1048576.0);
        /* two staging slots, grown to the largest operands staged (dlogits [N, Vl]; dh, the
         * qkv gradient or the attention output); the blocked attention's S and dP blocks
         * (together at most 2 x 256 MiB: ops_attention.cu) */
        double big = 2 * Fy > Q3 ? 2 * Fy : Q3;
        o->mem_device += 2 * N * (ceil8(Vl) + ceil8(big));
        o->mem_device += 2 * min2(4 * att * T, 256 * 1048576.0);
    }
    if (flags & AX_PERF_GRAD_BF16) { /* model_gradcomm.c's staging: 2 bytes an element */
        if (dims[AX_AXIS_DATA] > 1) o->mem_device += 2 * local;
        if (gz > 1)
            o->mem_device +=
                o->stream_z
                    ? 2.0 * (bs.global_full * (gz + 1) / gz + 2 * (bs.layer_full + bs.layer_shard))
                    : 2.0 * (full + local);
    }
    o->mem_total = o->mem_state + o->mem_gathered + o->mem_acts + o->mem_device;

    /* Bytes the memory-bound passes move in a step (stream_bytes), counted from the ops, not
     * measured: AdamW's seven streams over the rank's shard (params, grads, m, v read; params,
     * m, v written) and the gradient norm's read, 32 bytes a parameter; per token and layer the
     * elementwise ops' activations, forward: the two RMSNorms (in, out), rotary on q and k (4/3
     * of a multi-head qkv row, read and written), attention's qkv in and output out, the two
     * residual adds (2 in, 1 out), SwiGLU (2 Fy in, Fy out): 10 Cx + 7/3 Q3 + Cy + 3 Fy;
     * backward: the norms' two passes and the residual gradients (16 Cx), rotary, attention's
     * qkv, output gradient and dqkv, SwiGLU's 5 Fy: 16 Cx + 10/3 Q3 + Cy + 5 Fy; recomputation
     * repeats L - 1 layers' forward; and the cross-entropy's four fp32 passes over the [N, Vl]
     * logits (row max, sum of exps, gradient read and written). What the CPU op timings showed
     * (GPT-2-124M, T = 64, AVX-512 Xeon VM, 2026-12-02): norms, SwiGLU, rotary and adds 14 ms,
     * cross-entropy 9.5, AdamW 75, the norm's read 22, of a 0.78 s step. */
    double fwd = 10 * Cx + 7.0 / 3 * Q3 + Cy + 3 * Fy, bwd = 16 * Cx + 10.0 / 3 * Q3 + Cy + 5 * Fy;
    double acts = N * L * (fwd + bwd + (recompute ? fwd * (L - 1) / L : 0));
    o->stream_bytes = 32.0 * local + n_micro * (eb * acts + 16.0 * N * Vl);
    o->memory_s = mach->mem_bw > 0 ? o->stream_bytes / mach->mem_bw : 0;
}

/* FLOPs per token the backward's recomputation adds: layers 0..L-2's forward without the down
 * projection (2 per weight of wqkv, wo and w_up; the attention forward's score and value
 * products, a third of ax_model_flops_per_token's 12 L C T) */
/* axmem's CUDA attention (the default kernels, ops_attention.cu: S, P and dP in fp32 blocks
 * through cuBLAS batched GEMMs and softmax passes) is bound by moving those blocks, not by its
 * FLOPs, so `--engine axmem` on a GPU profile prices it in bytes per score element (B x H x T x
 * T a layer) at mem_bw. The bytes are fitted to the one measurement there is, not counted: the
 * ~1B model on an H200 (24 layers, 16 heads of 128, T = 2048, B = 4; 2026-11-30,
 * bench/results/device_profile-2026-11-30-nvidia-h200.txt) spent 53 ms in the attention
 * forward and 86 in the backward, 6.44e9 score elements at the profile's 3.84 TB/s: 31.6 and
 * 51.3 bytes an element (the passes over the fp32 blocks count about 16 and 36: the kernels
 * run at ~0.5-0.7 of the bandwidth). At the GEMM rate (the model's 12 L C T FLOPs a token)
 * the same attention would take 15 ms. Memory-bound, the time does not scale with the head
 * dimension, which the FLOPs do. */
#define AX_CUDA_ATTN_FWD_BYTES 31.6
#define AX_CUDA_ATTN_BWD_BYTES 51.3

static double recompute_flops_per_token(const ax_model_config *c, int T) {
    double C = c->dim, D = C / c->n_heads, kv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    double up = c->mlp == AX_MLP_SWIGLU ? 2.0 * c->ffn : c->ffn;
    double weights = C * (C + 2 * kv * D) + C * C + C * up;
    return (c->n_layers - 1) * (2 * weights + 4 * C * (double)T);
}

ax_status ax_perfmodel_predict(const ax_model_config *c, const ax_machine *mach, const int dims[4],
                               int global_batch, int T, int n_micro, int overlap, int flags,
                               ax_plan_pred *out) {
    *out = (ax_plan_pred){0};
    if (mach->grad_bf16 && comm_bytes(mach) == 4) flags |= AX_PERF_GRAD_BF16;
    int recompute = (flags & AX_PERF_RECOMPUTE) != 0;
    out->recompute = recompute;
    out->stream_z = (flags & AX_PERF_STREAM_Z) && dims[AX_AXIS_Z] > 1;
    for (int a = 0; a < 4; a++) out->dims[a] = dims[a];
    AX_CHECK(ax_model_config_check_grid(c, dims));
    if (overlap != AX_OVERLAP_OFF && overlap != AX_OVERLAP_FORCE && overlap != AX_OVERLAP_AUTO)
        return ax_errorf(AX_ERR_ARG, "overlap mode %d: use off (0), force (1) or auto (2)",
                         overlap);
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
    double rate = mach->gemm_flops * out->gemm_eff;
    /* the attention's share: at the GEMM rate, or axmem's CUDA kernels by the bytes they move */
    int att_bytes = mach->axmem_cuda && mach->mem_bw > 0;
    double scores = tokens_local / T * ((double)c->n_heads / gy) * T * (double)T * c->n_layers;
    double att_fwd_s = att_bytes ? scores * AX_CUDA_ATTN_FWD_BYTES / mach->mem_bw
                                 : tokens_local * att / 3 / gy / rate;
    out->attn_s = att_bytes ? att_fwd_s + scores * AX_CUDA_ATTN_BWD_BYTES / mach->mem_bw
                            : tokens_local * att / gy / rate;
    out->compute_s =
        att_bytes ? tokens_local * mat / (gx * gy) / rate + out->attn_s : out->flops_device / rate;
    /* the recomputed forward, split like the forward (it runs in the backward, blocking: no
     * collective hides behind it in this model), with L - 1 layers' attention forward */
    double rf = recompute ? recompute_flops_per_token(c, T) : 0, ratt = 4.0 * c->dim * T;
    double L1 = c->n_layers - 1;
    out->recompute_s =
        !recompute ? 0
        : att_bytes
            ? tokens_local * (rf - L1 * ratt) / (gx * gy) / rate + att_fwd_s * L1 / c->n_layers
            : tokens_local * ((rf - L1 * ratt) / (gx * gy) + L1 * ratt / gy) / rate;

    /* communication per axis and phase */
    ax_step_volume ph[3];
    ax_perfmodel_step_phases(c, dims, B, T, n_micro, flags, ph);
    ax_perfmodel_step_volume(c, dims, B, T, n_micro, flags, &out->vol);
    double t[3][AX_AXIS_COUNT];
    for (int a = 0; a < AX_AXIS_COUNT; a++) {
        out->hosts[a] = ax_perfmodel_axis_hosts(dims, (ax_axis)a, mach->devices_per_node);
        out->level[a] = out->hosts[a] == 1 ? AX_LEVEL_NODE : AX_LEVEL_NET;
        out->overlap_on[a] = ax_perfmodel_overlap_axis(
            mach, dims, (ax_axis)a, overlap, out->overlap_why[a], sizeof out->overlap_why[a]);
        for (int i = 0; i < 3; i++) t[i][a] = phase_time(&ph[i], dims, a, mach, out->level[a]);
        out->comm_s[a] = t[0][a] + t[1][a] + t[2][a];
        out->exposed_s[a] = out->comm_s[a];
    }

    if (overlap != AX_OVERLAP_OFF) {
        /* compute split: forward 1/3, backward 2/3 of which the dW GEMMs are half. Only the
         * axes the runtime overlaps (overlap_on, per axis) hide anything; an axis it leaves
         * blocking stays exposed. With every axis on this is the one-fraction model of before,
         * term for term (an axis of one rank is off but has nothing to hide). */
        double f = mach->overlap, fwd = out->compute_s / 3, dw = out->compute_s / 3;
        double L = c->n_layers;
        int on_x = out->overlap_on[AX_AXIS_X], on_y = out->overlap_on[AX_AXIS_Y];
        /* OAR: backward dX all-reduces (X and Y) behind the dW GEMMs, every micro-batch */
        double bwd_ar = (on_x ? t[1][AX_AXIS_X] : 0) + (on_y ? t[1][AX_AXIS_Y] : 0);
        double oar = bwd_ar > 0 ? f * min2(bwd_ar, dw) : 0;
        if (bwd_ar > 0) {
            if (on_x) out->exposed_s[AX_AXIS_X] -= oar * t[1][AX_AXIS_X] / bwd_ar;
            if (on_y) out->exposed_s[AX_AXIS_Y] -= oar * t[1][AX_AXIS_Y] / bwd_ar;
        }
        /* ORS and OAG on Z (once per step): a layer's reduce-scatter runs behind the backward
         * of the layers before it, the last one (the embedding) exposed; a layer's gather
         * behind the forward of the layer before it, the first one exposed */
        double ag = 0, rs = 0;
        double zb = ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] +
                    ph[2].bytes[AX_COMM_REDUCE_SCATTER][AX_AXIS_Z];
        if (zb > 0 && out->overlap_on[AX_AXIS_Z]) {
            ag = t[2][AX_AXIS_Z] * ph[2].bytes[AX_COMM_ALLGATHER][AX_AXIS_Z] / zb;
            rs = t[2][AX_AXIS_Z] - ag;
        }
        double bwd_free = 2 * out->compute_s / 3 / n_micro - oar / n_micro;
        double ors = f * min2(rs * L / (L + 1), bwd_free > 0 ? bwd_free : 0);
        double oag = f * min2(ag * L / (L + 1), fwd / n_micro);
        if (out->stream_z) { /* every micro-batch: reduce-scatters behind every backward, the
                              * gathers behind whatever compute is left (a layer ahead, in both
                              * passes) */
            ors = f * min2(rs * L / (L + 1), bwd_free > 0 ? n_micro * bwd_free : 0);
            double left = out->compute_s - oar - ors;
            oag = f * min2(ag * L / (L + 1), left > 0 ? left : 0);
        }
        out->exposed_s[AX_AXIS_Z] -= ors + oag;
        out->hidden_s = oar + ors + oag;
    }
    memory(c, mach, dims, B, T, n_micro, flags, out);
    out->fits = out->mem_total <= mach->mem_bytes;

    double comm = 0;
    for (int a = 0; a < AX_AXIS_COUNT; a++) comm += out->exposed_s[a];
    out->step_s = out->compute_s + out->recompute_s + out->memory_s + comm;
    out->tokens_per_s = (double)global_batch * T / out->step_s;
    double peak = mach->peak_flops > 0 ? mach->peak_flops : mach->gemm_flops;
    out->mfu = per_token * global_batch * T / (out->step_s * devices * peak);
    return AX_OK;
}
