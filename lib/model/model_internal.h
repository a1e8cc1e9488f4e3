/* Private to lib/model*.c: the sharded tensor layout and the activation buffers. */
#pragma once
#include "lib/backend/backend.h"
#include "lib/dist/comm.h"
#include "lib/dist/overlap.h"
#include "lib/model/model.h"

/* How a global tensor is split (docs/grid.md). */
typedef enum {
    TP_NORMAL,     /* column-parallel [n, k]: rows (outputs) over Y in `groups` groups
                    * (group_g), cols over X (tp_linear.h) */
    TP_TRANSPOSED, /* row-parallel [n, k]: rows over X, cols (inputs) over Y */
    TP_VEC,        /* [C]: over X, replicated over Y (norm weights) */
    TP_VOCAB,      /* column-parallel [V, C]: rows over Y padded to ceil(V/Gy)*Gy, cols over X */
    TP_YVEC,       /* [n]: over Y in `groups` groups (group_g), replicated over X (the bias of a
                    * column-parallel layer: split like the rows it belongs to) */
    TP_ROWS,       /* [n, k]: every row, cols over X, replicated over Y (learned positions) */
} tp_kind;

/* How a tensor starts (ax_model_init). */
typedef enum { INIT_NORMAL, INIT_PROJ, INIT_ONE, INIT_ZERO } tp_init;

typedef struct {
    tp_kind kind;
    int groups;             /* TP_NORMAL row groups: 3 for [q|k|v], 2 for [gate|up] */
    int64_t group_g[3];     /* global rows (TP_YVEC: entries) of each group; each splits over Y
                             * on its own (GQA's [q|k|v] groups differ in size) */
    int64_t rows_g, cols_g; /* global shape */
    int64_t rows_l, cols_l; /* this rank's block */
    int64_t block_n;        /* rows_l * cols_l */
    int64_t shard_n;        /* ceil(block_n / Gz): this rank's ZeRO shard */
    int64_t shard_off;      /* offset of the shard in the local slabs */
    float *full;            /* gathered block [rows_l, cols_l] (= the slab when Gz == 1) */
    /* bf16 models (gin16): the bf16 copy of `full` the GEMMs read, for the GEMMs' weights
     * (gemm): within params16 when Gz == 1 (AdamW writes it with the masters), else its own
     * block, converted as each gather lands (tp_gather_end); NULL otherwise */
    uint16_t *full16;
    int gemm;      /* a weight the GEMMs read: the layers' four matrices and the LM head */
    float *gfull;  /* gradient block, reduce-scattered into the slab (Gz > 1) */
    float *rs_tmp; /* streamed layer tensors only (below): where a micro-batch after the first
                    * reduce-scatters its gradient before adding it into the slab */
    /* --grad-comm bf16 (model_gradcomm.c): the block rounded to bf16 [shard_n * Gz], then the
     * received shard [shard_n]; rs16_out, where that shard goes once the reduce-scatter is
     * waited for (NULL: none in flight) */
    uint16_t *rs16;
    float *rs16_out;
    tp_init init;
    /* lazy gradient zeroing: dw_first, the first write of gfull in every backward is a dW GEMM
     * over the whole block (the layers' matrices, the LM head); g_stale, gfull was left
     * unzeroed by ax_model_zero_grad, so that GEMM overwrites it (beta = 0) */
    int dw_first, g_stale;
    /* the gradient's sum of squares (gss_ok: taken in the backward right after its final write,
     * while the block was still in cache; ax_model_grad_sumsq uses it instead of a new pass) */
    double gss;
    int gss_ok;
} tp_tensor;

/* per-layer tensor slots; the slab order is the interface's (docs/training.md "Architectures"):
 * attn_norm, [attn_norm_bias], wqkv, [bqkv], wo, [bo], mlp_norm, [mlp_norm_bias], w_up, [b_up],
 * w_down, [b_down]. Slots a configuration lacks map to tensor -1. */
enum {
    L_NORM1,
    L_WQKV,
    L_WO,
    L_NORM2,
    L_WUP,
    L_WDOWN,
    L_NORM1B,
    L_BQKV,
    L_BO,
    L_NORM2B,
    L_BUP,
    L_BDOWN,
    L_SLOTS
};

/* One global tensor of a configuration (lib/model/model_table.c): the single source of the
 * tensor table for the model (model.c) and for converters (model_io.c). layer -1: global. */
typedef struct {
    char name[64];
    tp_kind kind;
    int groups;
    int64_t group_g[3]; /* global size of each row group (TP_NORMAL, TP_YVEC) */
    int64_t rows, cols;
    tp_init init;
    int layer, slot; /* slot: L_* within the layer, or one of the G_* below */
} tensor_spec;
enum { G_WTE, G_WPE, G_NORMF, G_NORMFB, G_HEAD };
/* Calls emit(u, spec) for each tensor of configuration c in slab order (emit NULL: just count);
 * returns the count. */
int model_tensor_specs(const ax_model_config *c, void (*emit)(void *u, const tensor_spec *s),
                       void *u);

/* Elements of tensor s's block on one rank of grid dims (before the ZeRO split over Z); the
 * vocabulary block counts its padding (ceil(V / Gy) rows). What model.c allocates per tensor. */
int64_t model_spec_block(const tensor_spec *s, const int dims[4]);

/* Dims of each head that rotate: 0 with learned positions, else rotary_dim or the head dim. */
static inline int model_rotary_dim(const ax_model_config *c) {
    if (c->pos == AX_POS_LEARNED) return 0;
    return c->rotary_dim ? c->rotary_dim : c->dim / c->n_heads;
}
/* K/V heads (grouped-query attention; n_kv_heads 0 = one per query head). */
static inline int model_kv_heads(const ax_model_config *c) {
    return c->n_kv_heads ? c->n_kv_heads : c->n_heads;
}
/* Rows of w_up: [gate | up] for SwiGLU, one matrix for GELU. */
static inline int model_up_rows(const ax_model_config *c) {
    return c->mlp == AX_MLP_SWIGLU ? 2 * c->ffn : c->ffn;
}
/* ln1, ln2, hs and lnf are read by GEMMs only: on a model with gin16 (a bf16 context whose
 * backend stores them, ax_bf16_acts) they are bf16 storage [N, ax_bf16_ld(cols)], else fp32
 * [N, cols]; either way the GEMMs multiply the same bf16-rounded values (backend.h). */
typedef struct {
    float *res;     /* [N, Cx] residual stream entering the layer */
    void *ln1;      /* [N, Cx] (gin16: bf16) */
    float *rstd1;   /* [N] */
    float *mean1;   /* [N] LayerNorm only */
    float *qkv;     /* [N, Cy + 2 Ky] this rank's heads of q, k (rotated in place), v */
    float *att;     /* [B, Hy, T] attention's saved row logsumexp (backend-private) */
    float *atty;    /* [N, Cy] attention output before the out-projection */
    float *res_mid; /* [N, Cx] after the attention residual */
    void *ln2;      /* [N, Cx] (gin16: bf16) */
    float *rstd2;   /* [N] */
    float *mean2;   /* [N] LayerNorm only */
    float *h;       /* [N, 2 Fy] gate | up (SwiGLU); [N, Fy] (GELU) */
    void *hs;       /* [N, Fy] activation output (gin16: bf16) */
} layer_acts;

struct ax_model {
    ax_model_config cfg;
    ax_ctx *ctx; /* backend, stream, kernel scratch: every op and buffer goes through it */
    ax_grid_t *grid;
    ax_grid_t *own_grid; /* set when ax_model_create made a serial grid */
    int dims[4], x, y, z;
    int B, T, cur_B;
    ax_overlap *ov;   /* in-flight collectives: slots OV_OAR, ov_gather(t), ov_scatter(t) */
    ax_status status; /* first collective failure */
    /* sizes on this rank */
    int Cx, Cy, Hy, Fy, Vp, Vl, v0, vvalid;
    int Hky, Ky; /* this rank's K/V heads and their width Hky * D (= Hy, Cy without GQA) */
    /* tensors */
    int n_tensors;
    ax_tensor_info *info; /* global table */
    tp_tensor *tp;
    int64_t n_params, n_local;
    float *params, *grads;
    uint16_t *params16; /* bf16 models with Gz == 1: params rounded to bf16 (tp_tensor.full16) */
    int t_wte, t_normf, t_head;
    int t_wpe, t_normfb; /* -1 when the configuration has none */
    int *lt;             /* [L * L_SLOTS]: tensor of layer l's slot, or -1 */
    int stale;           /* gathered blocks out of date */
    /* Layer weights streamed over Z (ax_model_opts.stream_z, Gz > 1; model_stream.c): layer l's
     * blocks live in slot l % 2 of wslot (weights) and gslot (gradients), gathered before each
     * use unless the slot still holds them, and its gradients reduce-scattered every micro-batch
     * (rstmp: the landing place after the first). The global tensors keep their own blocks. */
    int stream;
    float *wslot[2], *gslot[2], *rstmp[2];
    uint16_t *wslot16[2]; /* bf16 models: the slots' GEMM weights in bf16 (tp_tensor.full16) */
    int64_t slot_block, slot_shard; /* floats of one layer's blocks and of its shards */
    int slot_layer[2];              /* whose current weights slot s holds (-1: none) */
    int slot_pending[2];            /* a gather into slot s issued, not yet waited for */
    int slot_rs_layer[2];           /* the layer whose reduce-scatter from slot s is in flight */
    int slot_rs_acc[2];             /* ... landing in rstmp (add into the slab when done) */
    int micro;                      /* backward passes since ax_model_zero_grad */
    int gss_early; /* this backward takes final gradients' sums of squares (tp_tensor.gss) */
    /* activations: carved from one device block (act_arena). With recompute every layer has
     * its own res; the rest of acts[l] points at one shared set (acts[0]'s) */
    int recompute;
    /* gradients reduced in bf16 (ax_model_opts.grad_comm_bf16; model_gradcomm.c): gc_data, the
     * slab's bf16 copy for the data all-reduce (D > 1); gc_arena, the tensors' rs16 (Z > 1) */
    int gc16;
    uint16_t *gc_data, *gc_arena;
    size_t gc_bytes; /* both, allocated */
    int inference;   /* no gradients (ax_model_opts.inference): grads and every gfull NULL */
    void *act_arena;
    size_t act_bytes;
    layer_acts *acts;
    int gin16; /* GEMM-only activations in bf16 storage (ax_bf16_acts of ctx, at creation) */
    float *res_final, *rstdf, *meanf;
    void *lnf;      /* [N, Cx] (gin16: bf16) */
    float *logits;  /* [N, Vl], becomes dlogits */
    float *losses;  /* [N] */
    float *rowstat; /* [3N] scratch for norms and cross-entropy */
    float *rope_cos, *rope_sin;
    int32_t *inputs_copy; /* [N] device copies of the step's inputs, targets and mask */
    int32_t *targets_copy;
    uint8_t *mask_copy;
    /* backward scratch */
    float *dres, *dln, *dbig, *dqkv, *att_scratch; /* att_scratch [B, Hy, T] */
    /* [N, 2 Fy] SwiGLU's (GELU's [N, Fy]) input gradient; bf16 storage when dh16: with gin16 a
     * SwiGLU without biases, whose dh only the up projection's GEMMs read */
    void *dh;
    int dh16;
    float *dres2; /* [N, Cx] parallel residual only: the input gradient's accumulator */
    int have_grad_logits;
    /* decoding: one device block (dec_arena) for the caches and logits */
    int dec_B;
    int dec_logits_ok; /* dec_logits hold the last step's (ax_model_decode_feed leaves none) */
    void *dec_arena;
    float **kcache, **vcache; /* per layer [dec_B, Hky, T, D] */
    float *dec_logits;        /* [dec_B, Vl] */
    float *dec_all;           /* [Gy, dec_B, Vl] logits all-gathered over Y */
    double *dec_best;         /* host [3 dec_B]: argmax (value, -id) pairs and a column */
    /* decoding's packed weights (backends with ax_matmul_packs, fp32 models): one device block,
     * tensor t's copy at dec_pack[t] (NULL: multiplied as it is). They are made from the gathered
     * blocks at the first step after a weight write: wgen counts the writes
     * (model_weights_changed), pack_gen is the count the copies were made at. */
    void *dec_pack_arena;
    void **dec_pack;
    unsigned long wgen, pack_gen;
    /* DP-SGD (model_dp.c): in dp_pass the backward computes each example's squared gradient
     * norm, partial to this rank, into dp_sq (host [B]) instead of gradients. Scratch (device),
     * allocated at the first ax_model_dp_micro: dp_s1 [dp_s1_n], dp_s2, dp_s3 [T * T] (the ghost
     * norms' Gram matrices), dp_vec [2 B vec_n] (per-example norm and bias gradients), dp_w [N]
     * (row factors), dp_cid, dp_uid [N] (each example's embedding rows, compacted) */
    int dp_pass;
    double *dp_sq;
    float *dp_s1, *dp_s2, *dp_s3, *dp_vec, *dp_w;
    int64_t dp_s1_n, dp_vec_n;
    int32_t *dp_cid, *dp_uid;
    int32_t *dp_hcid, *dp_huid; /* host [N] copies of dp_cid and dp_uid */
    int *dp_nuniq;              /* host [B]: each example's distinct owned tokens */
    int dec_pack_tried;         /* the block was sized (and allocated if it could be) */
    int decoding;               /* in a decoding step: the linears multiply the packed copies */
};

/* the parameters were written: gathered blocks (and decoding's packed copies) are stale (their
 * bf16 copies follow: AdamW writes params16 with the masters, model.c refreshes it after
 * any other write (params_written), and a gather converts the block it lands) */
static inline void model_weights_changed(ax_model_t *m) {
    m->stale = 1;
    m->wgen++;
}

static inline int LT(const ax_model_t *m, int l, int slot) {
    return m->lt[l * L_SLOTS + slot];
}

/* Overlap slots (lib/dist/overlap.h): the dX all-reduce behind the dW GEMM (OAR), and per
 * tensor its weight all-gather (OAG) and gradient reduce-scatter (ORS). */
enum { OV_OAR = 0 };
static inline int ov_gather(int t) {
    return 1 + 2 * t;
}
static inline int ov_scatter(int t) {
    return 2 + 2 * t;
}
static inline int ov_slots(int n_tensors) {
    return 1 + 2 * n_tensors;
}

/* record the first failure of a collective issued where no status can be returned */
static inline void tp_note(ax_model_t *m, ax_status s) {
    if (s != AX_OK && m->status == AX_OK) m->status = s;
}
/* buf [n] summed over the ranks of axis, blocking */
static inline void tp_allreduce_sum(ax_model_t *m, ax_axis axis, float *buf, long n) {
    tp_note(m, ax_coll_allreduce(m->grid, axis, buf, n, AX_DT_F32, AX_OP_SUM));
}
/* The tensors of layer l in slot order (the order model.c lays them out in); returns the count. */
static inline int model_layer_tensors(const ax_model_t *m, int l, int *ts) {
    int n = 0;
    for (int s = 0; s < L_SLOTS; s++)
        if (LT(m, l, s) >= 0) ts[n++] = LT(m, l, s);
    return n;
}

/* lib/model/block.c: one transformer block (the linears: tp_linear.h) */
/* Block l's forward for B sequences from acts[l].res into the next block's res. whole = 0 stops
 * before the down projection: the backward's recomputation needs every activation but the
 * output, which the block above already consumed. */
void block_forward(ax_model_t *m, int l, int B, int whole);
/* Block l's backward. dres: the gradient of its output [N, Cx]; its input's gradient is left in
 * dacc. Sequential: dacc == dres, accumulated in place (after the MLP, dres is the gradient of
 * res_mid, the attention's output). Parallel residual: both branches read dres, and their input
 * gradients add up in dacc, which starts as a copy of dres. */
void block_backward(ax_model_t *m, int l, int B, float *dres, float *dacc);
/* The configured norm: RMSNorm of weight t, or LayerNorm of weight t and bias tb (mean [N]
 * saved; unused by RMSNorm), into out, a GEMM-only activation (bf16 storage when gin16). The
 * backward accumulates into din. */
void tp_norm_forward(ax_model_t *m, int t, int tb, void *out, float *mean, float *rstd,
                     const float *in, int N);
void tp_norm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout, const float *in,
                      const float *mean, const float *rstd, int N);
/* hs = the MLP activation (SwiGLU or GELU) of h [N, 2 Fy or Fy], into a GEMM-only activation */
void tp_mlp_act_forward(ax_model_t *m, void *hs, const float *h, int N);
/* m->dh = the MLP activation's input gradient from dhs (zeroing it first when fp32) */
void tp_mlp_act_backward(ax_model_t *m, const float *dhs, const float *h, int N);
/* out[N, n] += bias tb (after the layer's all-reduce: added once); nothing when tb < 0 */
void tp_bias_forward(ax_model_t *m, int tb, float *out, int N);
/* bias tb's gradient += column sums of dout[N, n]; nothing when tb < 0 */
void tp_bias_backward(ax_model_t *m, int tb, const float *dout, int N);
/* zeroes the gradient blocks ax_model_zero_grad left stale (before anything reads them) */
void model_grads_settle(const ax_model_t *m);
/* AX_OK, or AX_ERR_ARG naming fn on an inference model (no gradients) */
ax_status model_needs_grads(const ax_model_t *m, const char *fn);

/* lib/model/model_dp.c: the per-example squared norms of the DP pass (m->dp_pass), replacing
 * what the backward would add to the gradients: a linear's (ghost norm or materialised in
 * chunks, whichever is cheaper), a norm's (din still accumulated) and a bias's */
void dp_linear_norms(ax_model_t *m, int t, const void *dout, int dout16, const void *in, int in16,
                     int N);
void dp_norm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout, const float *in,
                      const float *mean, const float *rstd, int N);
void dp_bias_norms(ax_model_t *m, int tb, const float *dout, int N);
void dp_free(ax_model_t *m);
/* Global row-major index of element b of tensor p's block on this rank, or -1 for vocabulary
 * padding (model.c). */
int64_t model_global_index(const ax_model_t *m, const tp_tensor *p, int64_t b);
/* 1 when this rank counts tensor i among the replicas that hold the same values over X or Y
 * (ignoring the data axis): norm weights, row-parallel biases and learned positions at y = 0,
 * column-parallel biases at x = 0, the rest everywhere (model.c) */
int model_owns_xy(const ax_model_t *m, int i);

/* lib/model/model_stream.c: layer weights streamed over Z (m->stream). Each call is a no-op
 * when the model does not stream. */
void stream_invalidate(ax_model_t *m);          /* the parameters changed: no slot is current */
void stream_gather_begin(ax_model_t *m, int l); /* layer l's weights into slot l % 2 */
void stream_gather_end(ax_model_t *m, int l);
void stream_grad_begin(ax_model_t *m, int l); /* slot l % 2's gradients free and zeroed */
void stream_grad_sync(ax_model_t *m, int l);  /* reduce-scatter layer l's gradients (async) */
void stream_grad_end(ax_model_t *m);          /* every reduce-scatter done and added */
ax_status stream_alloc(ax_model_t *m);        /* the slots; points the layer tensors at them */
void stream_free(ax_model_t *m);
/* lib/model/model_gradcomm.c: gradients reduced in bf16 (m->gc16) */
ax_status gradcomm_alloc(ax_model_t *m); /* the staging; after the tensors' blocks exist */
void gradcomm_free(ax_model_t *m);
void gradcomm_scatter_begin(ax_model_t *m, int t, float *recv); /* tensor t's reduce-scatter */
void gradcomm_scatter_end(ax_model_t *m, int t); /* after its wait: the shard into recv */
void gradcomm_data_allreduce(ax_model_t *m);     /* the slab over the data axis */
