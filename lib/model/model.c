/* Model construction: the global tensor table, how each tensor is split over the grid, the
 * local slabs, counter-based initialisation and the global <-> local copies checkpoints use.
 * Forward and backward are in model_step.c and block.c, the parallel linears in tp_linear.c. */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"
#include "lib/core/rng.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

ax_status ax_model_config_check(const ax_model_config *c) {
    if (c->n_layers < 1 || c->n_layers > 1024)
        return ax_errorf(AX_ERR_ARG, "--layers %d is out of range [1, 1024]", c->n_layers);
    if (c->dim < 2 || c->n_heads < 1 || c->ffn < 1 || c->vocab < 257)
        return ax_errorf(AX_ERR_ARG,
                         "model shape is impossible: --dim %d --heads %d --ffn %d --vocab %d "
                         "(need dim >= 2, heads >= 1, ffn >= 1, vocab >= 257)",
                         c->dim, c->n_heads, c->ffn, c->vocab);
    if (c->dim % c->n_heads)
        return ax_errorf(AX_ERR_ARG,
                         "--dim %d is not divisible by --heads %d; pick dim = heads x head size",
                         c->dim, c->n_heads);
    if ((unsigned)c->norm > AX_NORM_LAYER || (unsigned)c->mlp > AX_MLP_GELU_TANH ||
        (unsigned)c->pos > AX_POS_LEARNED || (c->bias != 0 && c->bias != 1) ||
        (c->parallel_residual != 0 && c->parallel_residual != 1))
        return ax_errorf(AX_ERR_ARG,
                         "architecture fields out of range: norm %d, mlp %d, pos %d, bias %d, "
                         "parallel-residual %d (see --norm, --mlp, --pos, --bias, "
                         "--parallel-residual)",
                         (int)c->norm, (int)c->mlp, (int)c->pos, c->bias, c->parallel_residual);
    int D = c->dim / c->n_heads;
    if (c->n_kv_heads < 0 || c->n_kv_heads > c->n_heads ||
        (c->n_kv_heads && c->n_heads % c->n_kv_heads))
        return ax_errorf(AX_ERR_ARG,
                         "--kv-heads %d must divide --heads %d (grouped-query attention: each K/V "
                         "head serves heads / kv-heads query heads); 0 = one per head",
                         c->n_kv_heads, c->n_heads);
    if (c->pos == AX_POS_LEARNED) {
        if (c->rotary_dim)
            return ax_errorf(AX_ERR_ARG,
                             "--rotary-dim %d with --pos learned: learned positions have no "
                             "rotary; drop --rotary-dim or use --pos rope",
                             c->rotary_dim);
        if (c->max_pos < 1 || c->max_pos > (1 << 20))
            return ax_errorf(AX_ERR_ARG,
                             "--pos learned needs --max-pos in [1, %d] (rows of the position "
                             "table), not %d",
                             1 << 20, c->max_pos);
    } else if (c->rotary_dim) {
        if (c->rotary_dim < 0 || c->rotary_dim % 2 || c->rotary_dim > D)
            return ax_errorf(AX_ERR_ARG,
                             "--rotary-dim %d must be even and in [2, head size %d] (--dim %d / "
                             "--heads %d); 0 rotates the whole head",
                             c->rotary_dim, D, c->dim, c->n_heads);
    } else if (D % 2) {
        return ax_errorf(AX_ERR_ARG,
                         "head size --dim/--heads = %d must be even for rotary positions", D);
    }
    if (!(c->rope_theta > 1.0f) || !(c->norm_eps > 0.0f))
        return ax_errorf(AX_ERR_ARG, "rope theta (%g) must be > 1 and norm eps (%g) > 0",
                         c->rope_theta, c->norm_eps);
    return AX_OK;
}

ax_status ax_model_config_check_grid(const ax_model_config *c, const int dims[4]) {
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y];
    if (c->dim % gx)
        return ax_errorf(AX_ERR_ARG,
                         "--dim %d does not split over Gx = %d (grid %dx%dx%dx%d); "
                         "pick a dim divisible by Gx",
                         c->dim, gx, dims[0], dims[1], dims[2], dims[3]);
    if (c->n_heads % gy)
        return ax_errorf(AX_ERR_ARG,
                         "--heads %d do not split over Gy = %d (grid %dx%dx%dx%d); "
                         "heads are divided among the Y ranks",
                         c->n_heads, gy, dims[0], dims[1], dims[2], dims[3]);
    if (model_kv_heads(c) % gy)
        return ax_errorf(AX_ERR_ARG,
                         "kv-heads %d (--kv-heads, or the checkpoint's \"kv-heads\") do not split "
                         "over Gy = %d (--grid %dx%dx%dx%d): each Y rank holds whole K/V heads "
                         "with their query groups; pick a --grid whose Y divides %d",
                         model_kv_heads(c), gy, dims[0], dims[1], dims[2], dims[3],
                         model_kv_heads(c));
    if (c->ffn % gy)
        return ax_errorf(AX_ERR_ARG, "--ffn %d does not split over Gy = %d (grid %dx%dx%dx%d)",
                         c->ffn, gy, dims[0], dims[1], dims[2], dims[3]);
    return AX_OK;
}

int64_t ax_model_config_n_params(const ax_model_config *c) {
    int64_t C = c->dim, F = c->ffn, V = c->vocab, U = model_up_rows(c);
    int ln = c->norm == AX_NORM_LAYER, b = c->bias != 0;
    int64_t norm = ln ? 2 * C : C;
    int64_t Q3 = C + 2 * (int64_t)model_kv_heads(c) * (C / c->n_heads); /* rows of wqkv */
    int64_t per_layer = 2 * norm + Q3 * C + C * C + U * C + C * F + (b ? Q3 + C + U + C : 0);
    int64_t wpe = c->pos == AX_POS_LEARNED ? (int64_t)c->max_pos * C : 0;
    return V * C + wpe + c->n_layers * per_layer + norm + (c->tie_embeddings ? 0 : V * C);
}

double ax_model_flops_per_token(const ax_model_config *c, int T) {
    /* the input embedding is a lookup, not a matmul; with tied weights its matrix is the LM
     * head, which is a matmul and so counts */
    int64_t untied_embedding = c->tie_embeddings ? 0 : (int64_t)c->vocab * c->dim;
    int64_t wpe = c->pos == AX_POS_LEARNED ? (int64_t)c->max_pos * c->dim : 0; /* a lookup too */
    double matmul_params = (double)(ax_model_config_n_params(c) - untied_embedding - wpe);
    return 6.0 * matmul_params + 12.0 * c->n_layers * c->dim * (double)T;
}

static void add_tensor(ax_model_t *m, const char *name, tp_kind kind, int groups,
                       const int64_t *group_g, int64_t rows, int64_t cols) {
    int i = m->n_tensors++, vec = kind == TP_VEC || kind == TP_YVEC;
    ax_tensor_info *t = &m->info[i];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = vec ? 1 : 2;
    t->shape[0] = vec ? cols : rows;
    t->shape[1] = vec ? 1 : cols;
    t->numel = rows * cols;
    t->offset = m->n_params;
    m->n_params += t->numel;

    tp_tensor *p = &m->tp[i];
    int gx = m->dims[AX_AXIS_X], gy = m->dims[AX_AXIS_Y], gz = m->dims[AX_AXIS_Z];
    p->kind = kind;
    p->groups = groups;
    for (int g = 0; g < 3; g++) p->group_g[g] = group_g[g];
    p->rows_g = rows;
    p->cols_g = cols;
    switch (kind) {
    case TP_NORMAL:
        p->rows_l = rows / gy, p->cols_l = cols / gx;
        break;
    case TP_TRANSPOSED:
        p->rows_l = rows / gx, p->cols_l = cols / gy;
        break;
    case TP_VEC:
        p->rows_l = 1, p->cols_l = cols / gx;
        break;
    case TP_VOCAB:
        p->rows_l = m->Vl, p->cols_l = cols / gx;
        break;
    case TP_YVEC:
        p->rows_l = 1, p->cols_l = cols / gy;
        break;
    case TP_ROWS:
        p->rows_l = rows, p->cols_l = cols / gx;
        break;
    }
    p->block_n = p->rows_l * p->cols_l;
    p->shard_n = (p->block_n + gz - 1) / gz;
    p->shard_off = m->n_local;
    m->n_local += p->shard_n;
}

/* Global index of local row (TP_YVEC: entry) r of a tensor split over Y in row groups: each group
 * of G rows gives this rank its rows [y G/Gy, (y+1) G/Gy), the groups' slices one after another. */
static int64_t group_global(const ax_model_t *m, const tp_tensor *p, int64_t r) {
    int64_t gy = m->dims[AX_AXIS_Y], goff = 0;
    for (int g = 0; g < p->groups; g++) {
        int64_t per = p->group_g[g] / gy;
        if (r < per || g == p->groups - 1) return goff + m->y * per + r;
        r -= per, goff += p->group_g[g];
    }
    return -1; /* unreachable: groups >= 1 */
}

/* Global row-major index of element b of this rank's block, or -1 for vocabulary padding. */
int64_t model_global_index(const ax_model_t *m, const tp_tensor *p, int64_t b) {
    int64_t r = b / p->cols_l, c = b % p->cols_l, gr, gc;
    switch (p->kind) {
    case TP_NORMAL:
        gr = group_global(m, p, r);
        gc = m->x * p->cols_l + c;
        break;
    case TP_TRANSPOSED:
        gr = m->x * p->rows_l + r;
        gc = m->y * p->cols_l + c;
        break;
    case TP_VEC:
        gr = 0;
        gc = m->x * p->cols_l + c;
        break;
    case TP_YVEC:
        gr = 0;
        gc = group_global(m, p, c);
        break;
    case TP_ROWS:
        gr = r;
        gc = m->x * p->cols_l + c;
        break;
    default: /* TP_VOCAB */
        gr = m->v0 + r;
        gc = m->x * p->cols_l + c;
        if (gr >= p->rows_g) return -1;
        break;
    }
    return gr * p->cols_g + gc;
}

static float *falloc(ax_model_t *m, int64_t n) {
    return ax_dev_alloc(m->ctx, (size_t)(n > 0 ? n : 1) * sizeof(float));
}

/* Every activation buffer is a slice of one device block (as the slabs are): one allocation
 * through the backend, 64-byte aligned slices. */
#define ACT_ALIGN 64
typedef struct {
    void **slot;
    size_t bytes;
} act_slot;

static int alloc_acts(ax_model_t *m) {
    int64_t N = (int64_t)m->B * m->T, T = m->T, Cx = m->Cx, Cy = m->Cy, Fy = m->Fy;
    int64_t Q3 = Cy + 2 * (int64_t)m->Ky;    /* a qkv row: [q | k | v], K/V Ky wide each */
    int64_t att = (int64_t)m->B * m->Hy * T; /* the attention's row logsumexp: linear in T */
    int D = m->cfg.dim / m->cfg.n_heads, L = m->cfg.n_layers, n = 0;
    int64_t NL = m->cfg.norm == AX_NORM_LAYER ? N : 0, NP = m->cfg.parallel_residual ? N * Cx : 0;
    act_slot *slots = ax_host_alloc(m->ctx, sizeof(act_slot) * ((size_t)L * 13 + 19));
    if (!slots) return 0;
#define ACT(p, count) (slots[n++] = (act_slot){(void **)&(p), (size_t)(count) * sizeof *(p)})
        /* a GEMM-only activation [N, cols]: bf16 storage with padded rows, or fp32 */
#define ACT_GIN(p, cols)                                                                           \
    (slots[n++] = (act_slot){&(p), m->gin16 ? (size_t)N * (size_t)ax_bf16_ld(cols) * 2             \
                                            : (size_t)N * (size_t)(cols) * sizeof(float)})
    for (int l = 0; l < L; l++) {
        layer_acts *a = &m->acts[l];
        ACT(a->res, N * Cx);
        if (m->recompute && l > 0) continue; /* shares acts[0]'s, below */
        ACT_GIN(a->ln1, Cx), ACT(a->rstd1, N), ACT(a->qkv, N * Q3);
        ACT(a->att, att), ACT(a->atty, N * Cy), ACT(a->res_mid, N * Cx), ACT_GIN(a->ln2, Cx);
        ACT(a->rstd2, N), ACT(a->h, N * 2 * Fy), ACT_GIN(a->hs, Fy);
        ACT(a->mean1, NL), ACT(a->mean2, NL);
    }
    ACT(m->res_final, N * Cx), ACT_GIN(m->lnf, Cx), ACT(m->rstdf, N), ACT(m->logits, N * m->Vl);
    ACT(m->meanf, NL), ACT(m->dres2, NP);
    ACT(m->losses, N), ACT(m->rowstat, 3 * N), ACT(m->rope_cos, T * D / 2);
    ACT(m->rope_sin, T * D / 2), ACT(m->dres, N * Cx), ACT(m->dln, N * Cx);
    ACT(m->dbig, N * (Fy > Cy ? Fy : Cy)), ACT(m->dqkv, N * Q3);
    slots[n++] = (act_slot){&m->dh, m->dh16 ? (size_t)N * (size_t)ax_bf16_ld(2 * Fy) * 2
                                            : (size_t)N * 2 * Fy * sizeof(float)};
    ACT(m->att_scratch, att), ACT(m->inputs_copy, N), ACT(m->targets_copy, N);
    ACT(m->mask_copy, N);
#undef ACT
#undef ACT_GIN
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (slots[i].bytes + ACT_ALIGN - 1) / ACT_ALIGN * ACT_ALIGN;
    char *base = m->act_arena = ax_dev_alloc(m->ctx, total);
    m->act_bytes = total;
    for (int i = 0; base && i < n; i++) {
        *slots[i].slot = base;
        base += (slots[i].bytes + ACT_ALIGN - 1) / ACT_ALIGN * ACT_ALIGN;
    }
    ax_host_free(m->ctx, slots);
    for (int l = 1; m->recompute && l < L; l++) { /* one working set for every layer */
        float *res = m->acts[l].res;
        m->acts[l] = m->acts[0];
        m->acts[l].res = res;
    }
    return m->act_arena != NULL;
}

static void build_tensor(void *u, const tensor_spec *s) {
    ax_model_t *m = u;
    int *global[] = {[G_WTE] = &m->t_wte,
                     [G_WPE] = &m->t_wpe,
                     [G_NORMF] = &m->t_normf,
                     [G_NORMFB] = &m->t_normfb,
                     [G_HEAD] = &m->t_head};
    if (s->layer >= 0)
        m->lt[s->layer * L_SLOTS + s->slot] = m->n_tensors;
    else
        *global[s->slot] = m->n_tensors;
    m->tp[m->n_tensors].init = s->init;
    add_tensor(m, s->name, s->kind, s->groups, s->group_g, s->rows, s->cols);
}

static void build_tensors(ax_model_t *m) {
    m->t_wpe = m->t_normfb = m->t_head = -1;
    for (int i = 0; i < m->cfg.n_layers * L_SLOTS; i++) m->lt[i] = -1;
    model_tensor_specs(&m->cfg, build_tensor, m);
    if (m->t_head < 0) m->t_head = m->t_wte; /* tied */
}

ax_status ax_model_create_on(ax_grid_t *g, const ax_model_config *c, int B, int T, int overlap,
                             ax_model_t **out) {
    return ax_model_create_dev(g, c, B, T, overlap, "cpu", out);
}

/* lib/backend/cuda's column sums (bias and LayerNorm gradients) over more than 256 rows keep one
 * partial row per 256-row chunk: chunks x the widest column count */
static size_t colsum_bytes(int64_t rows, int64_t cols) {
    int64_t chunks = (rows + 255) / 256;
    return chunks > 1 ? sizeof(float) * (size_t)(chunks * cols) : 0;
}

/* Kernel scratch the model's ops need (lib/backend/cpu: the gradient norm's per-chunk partials,
 * one row of scores per thread in decoding attention, the blocked attention's per-thread tiles;
 * lib/backend/cuda: N + 1 doubles of row losses in ce_finish, the column sums' partials),
 * reserved once at creation. The ops run one at a time, so the arena is the largest of them. */
static size_t scratch_bytes(const ax_model_t *m) {
    int nt = omp_get_max_threads(), D = m->cfg.dim / m->cfg.n_heads;
    int64_t N = (int64_t)m->B * m->T, wide = m->Cx;
    if (m->cfg.bias) {
        int64_t up = model_up_rows(&m->cfg) / m->dims[AX_AXIS_Y];
        int64_t q3 = m->Cy + 2 * (int64_t)m->Ky;
        wide = q3 > wide ? q3 : wide;
        wide = up > wide ? up : wide;
    }
    size_t arch = m->cfg.bias || m->cfg.norm == AX_NORM_LAYER ? colsum_bytes(N, wide) : 0;
    size_t wpe = m->cfg.pos == AX_POS_LEARNED ? colsum_bytes(m->B, (int64_t)m->T * m->Cx) : 0;
    size_t need[6] = {sizeof(double) * (size_t)(m->n_local / 32768 + 1),
                      sizeof(float) * (size_t)((m->T + 15) / 16 * 16) * (size_t)nt,
                      ax_attention_workspace(m->ctx, m->B, m->T, m->Cy / D, D, nt),
                      sizeof(double) * ((size_t)m->B * (size_t)m->T + 1),
                      arch,
                      wpe};
    size_t most = 0;
    for (int i = 0; i < 6; i++) most = need[i] > most ? need[i] : most;
    return most;
}

/* How the grid's collectives reach this model's device memory (lib/dist/comm.h, ax_comm_memory):
 * the context's copies, ordered on its stream; to_host waits, so the host sees the data. */
static int mem_is_device(void *u, const void *p) {
    return ((ax_ctx *)u)->be->is_device(p);
}
static ax_status mem_to_host(void *u, void *host, const void *dev, size_t bytes) {
    ax_copy(u, host, dev, bytes, AX_COPY_D2H);
    ax_sync(u);
    return ax_ctx_status(u);
}
static ax_status mem_from_host(void *u, void *dev, const void *host, size_t bytes) {
    ax_copy(u, dev, host, bytes, AX_COPY_H2D);
    return ax_ctx_status(u);
}
static ax_status mem_dev_copy(void *u, void *dst, const void *src, size_t bytes) {
    ax_copy(u, dst, src, bytes, AX_COPY_D2D);
    return ax_ctx_status(u);
}
static void *mem_host_alloc(void *u, size_t bytes) {
    return ax_host_alloc(u, bytes);
}
static void mem_host_free(void *u, void *p) {
    ax_host_free(u, p);
}

ax_status ax_model_create_dev(ax_grid_t *g, const ax_model_config *c, int B, int T, int overlap,
                              const char *device, ax_model_t **out) {
    ax_model_opts o = {.overlap = overlap, .device = device};
    return ax_model_create_ex(g, c, B, T, &o, out);
}

ax_status ax_model_create_ex(ax_grid_t *g, const ax_model_config *c, int B, int T,
                             const ax_model_opts *opts, ax_model_t **out) {
    *out = NULL;
    int overlap = opts->overlap;
    const char *device = opts->device ? opts->device : "cpu";
    AX_CHECK(ax_model_config_check(c));
    int dims[4];
    for (int a = 0; a < 4; a++) dims[a] = ax_grid_dim(g, (ax_axis)a);
    AX_CHECK(ax_model_config_check_grid(c, dims));
    if (B < 1 || T < 1)
        return ax_errorf(AX_ERR_ARG, "batch %d and sequence length %d must be >= 1", B, T);
    if (c->pos == AX_POS_LEARNED && T > c->max_pos)
        return ax_errorf(AX_ERR_ARG,
                         "sequence length %d exceeds the %d learned positions (--max-pos); use a "
                         "shorter --seq-len",
                         T, c->max_pos);
    if (opts->inference && opts->stream_z)
        return ax_errorf(AX_ERR_ARG, "an inference model does not stream its weights over Z "
                                     "(ax_model_opts: inference with stream_z)");
    if (opts->inference && opts->grad_comm_bf16)
        return ax_errorf(AX_ERR_ARG, "an inference model has no gradients to reduce "
                                     "(ax_model_opts: inference with grad_comm_bf16)");
    ax_ctx *ctx = NULL;
    AX_CHECK(ax_ctx_open(device, 0, &ctx)); /* "cuda:bf16": --device and --precision */
    const ax_backend *be = ctx->be;
    ax_model_t *m = ax_host_alloc(ctx, sizeof *m);
    if (!m) {
        ax_ctx_free(ctx);
        return ax_errorf(AX_ERR_NOMEM, "out of memory creating the model");
    }
    m->ctx = ctx;
    m->cfg = *c;
    m->grid = g;
    if (be->is_device) { /* device buffers reach the collectives: they stage through the host */
        ax_comm_memory mem = {ctx,          mem_is_device,  mem_to_host,   mem_from_host,
                              mem_dev_copy, mem_host_alloc, mem_host_free, ctx->stream};
        ax_grid_set_memory(g, &mem);
    }
    for (int a = 0; a < 4; a++) m->dims[a] = dims[a];
    m->x = ax_grid_coord(g, AX_AXIS_X);
    m->y = ax_grid_coord(g, AX_AXIS_Y);
    m->z = ax_grid_coord(g, AX_AXIS_Z);
    m->B = B;
    m->T = T;
    m->recompute = opts->recompute != 0;
    m->inference = opts->inference != 0;
    int gx = dims[AX_AXIS_X], gy = dims[AX_AXIS_Y];
    m->Cx = c->dim / gx;
    m->Cy = c->dim / gy;
    m->Hy = c->n_heads / gy;
    m->Hky = model_kv_heads(c) / gy;
    m->Ky = m->Hky * (c->dim / c->n_heads);
    m->Fy = c->ffn / gy;
    m->Vp = (c->vocab + gy - 1) / gy * gy;
    m->Vl = m->Vp / gy;
    m->v0 = m->y * m->Vl;
    m->vvalid = c->vocab - m->v0 < m->Vl ? c->vocab - m->v0 : m->Vl;
    int L = c->n_layers, n_specs = model_tensor_specs(c, NULL, NULL);
    m->info = ax_host_alloc(ctx, (size_t)n_specs * sizeof *m->info);
    m->tp = ax_host_alloc(ctx, (size_t)n_specs * sizeof *m->tp);
    m->acts = ax_host_alloc(ctx, (size_t)L * sizeof *m->acts);
    m->lt = ax_host_alloc(ctx, (size_t)L * L_SLOTS * sizeof *m->lt);
    if (!m->info || !m->tp || !m->acts || !m->lt) goto oom;
    build_tensors(m);
    for (int l = 0; l < L; l++) { /* the GEMMs' weights */
        static const int gemm_slots[] = {L_WQKV, L_WO, L_WUP, L_WDOWN};
        for (int s = 0; s < 4; s++)
            if (LT(m, l, gemm_slots[s]) >= 0) m->tp[LT(m, l, gemm_slots[s])].gemm = 1;
    }
    m->tp[m->t_head].gemm = 1;

    m->params = falloc(m, m->n_local);
    m->grads = m->inference ? NULL : falloc(m, m->n_local);
    if (!m->params || (!m->inference && !m->grads)) goto oom;
    int gz = dims[AX_AXIS_Z];
    /* bf16 contexts on CUDA: the GEMMs read bf16 copies of the weights (tp_tensor.full16) and
     * the norms' and MLP outputs are stored in bf16 */
    m->gin16 = ax_bf16_acts(ctx);
    if (m->gin16 && gz == 1 && !(m->params16 = ax_dev_alloc(ctx, (size_t)m->n_local * 2))) goto oom;
    m->stream = opts->stream_z && gz > 1;
    if (m->stream && stream_alloc(m) != AX_OK) goto oom; /* the layers' blocks: two slots */
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        if (p->rs_tmp) continue; /* a streamed layer tensor: its blocks are slots */
        if (gz == 1) {           /* the block is the shard: compute straight on the slabs */
            p->full = m->params + p->shard_off;
            p->gfull = m->inference ? NULL : m->grads + p->shard_off;
            if (m->params16 && p->gemm) p->full16 = m->params16 + p->shard_off;
        } else if (!(p->full = falloc(m, p->shard_n * gz)) ||
                   (!m->inference && !(p->gfull = falloc(m, p->shard_n * gz))) ||
                   (m->gin16 && p->gemm &&
                    !(p->full16 = ax_dev_alloc(ctx, (size_t)(p->shard_n * gz) * 2)))) {
            goto oom;
        }
    }
    m->gc16 = opts->grad_comm_bf16 && !m->inference;
    if (m->gc16 && gradcomm_alloc(m) != AX_OK) goto oom;
    /* lazy zeroing (ax_model_zero_grad): the tensors whose gradient a dW GEMM writes first
     * (a tied LM head's: before the embedding's scatter) */
    for (int i = 0; i < m->n_tensors; i++) m->tp[i].dw_first = m->tp[i].gemm && !m->tp[i].rs_tmp;
    m->dh16 = m->gin16 && c->mlp == AX_MLP_SWIGLU && !c->bias; /* dh read by GEMMs only */
    if (!alloc_acts(m) || ax_ctx_reserve(ctx, scratch_bytes(m)) != AX_OK) goto oom;
    if (ax_overlap_create(g, overlap, ov_slots(m->n_tensors), &m->ov) != AX_OK) goto oom;
    int rd = model_rotary_dim(c); /* the table [T, rd/2]: only the rotating dims */
    if (rd) ax_rope_table(ctx, m->rope_cos, m->rope_sin, T, rd, c->rope_theta);
    model_weights_changed(m);
    *out = m;
    return AX_OK;
oom:
    ax_model_free(m);
    return ax_errorf(AX_ERR_NOMEM,
                     "out of memory allocating a model of %lld parameters for batch %d x %d; use "
                     "a smaller model, --micro-batch, --recompute (activations), --z-gather layer "
                     "with Z > 1 (gathered weights), or more ranks (axmem plan says which fits)",
                     (long long)ax_model_config_n_params(c), B, T);
}

ax_status ax_model_create(const ax_model_config *c, int B, int T, ax_model_t **out) {
    ax_grid_t *g = NULL;
    AX_CHECK(ax_grid_create_serial(&g));
    ax_status st = ax_model_create_on(g, c, B, T, 0, out);
    if (st != AX_OK) {
        ax_grid_free(g);
        return st;
    }
    (*out)->own_grid = g;
    return AX_OK;
}

void ax_model_free(ax_model_t *m) {
    if (!m) return;
    ax_ctx *ctx = m->ctx;
    if (m->tp && m->dims[AX_AXIS_Z] > 1)
        for (int i = 0; i < m->n_tensors; i++) {
            if (m->tp[i].rs_tmp) continue; /* a slot's, freed below */
            ax_dev_free(ctx, m->tp[i].full), ax_dev_free(ctx, m->tp[i].gfull);
            ax_dev_free(ctx, m->tp[i].full16);
        }
    stream_free(m);
    gradcomm_free(m);
    dp_free(m);
    ax_dev_free(ctx, m->act_arena), ax_dev_free(ctx, m->dec_arena);
    ax_dev_free(ctx, m->dec_pack_arena), ax_host_free(ctx, m->dec_pack);
    ax_dev_free(ctx, m->params), ax_dev_free(ctx, m->grads), ax_dev_free(ctx, m->params16);
    ax_host_free(ctx, m->acts), ax_host_free(ctx, m->info), ax_host_free(ctx, m->tp);
    ax_host_free(ctx, m->lt);
    ax_host_free(ctx, m->kcache), ax_host_free(ctx, m->vcache), ax_host_free(ctx, m->dec_best);
    ax_overlap_free(m->ov);
    const ax_comm_memory *mem = m->grid ? ax_grid_memory(m->grid) : NULL;
    if (mem && mem->user == ctx) ax_grid_set_memory(m->grid, NULL); /* before ctx goes */
    ax_grid_free(m->own_grid);
    ax_host_free(ctx, m);
    ax_ctx_free(ctx);
}

size_t ax_model_activation_bytes(const ax_model_t *m) {
    return m->act_bytes;
}
void ax_model_shape(const ax_model_t *m, int *B, int *T) {
    *B = m->B, *T = m->T;
}
size_t ax_model_grad_comm_bytes(const ax_model_t *m) {
    return m->gc_bytes;
}
int ax_model_bf16_activations(const ax_model_t *m) {
    return m->gin16;
}

const ax_model_config *ax_model_config_of(const ax_model_t *m) {
    return &m->cfg;
}
ax_grid_t *ax_model_grid(const ax_model_t *m) {
    return m->grid;
}
ax_overlap *ax_model_overlap(const ax_model_t *m) {
    return m->ov;
}
ax_ctx *ax_model_ctx(const ax_model_t *m) {
    return m->ctx;
}
int64_t ax_model_n_params(const ax_model_t *m) {
    return m->n_params;
}
int64_t ax_model_n_local(const ax_model_t *m) {
    return m->n_local;
}
ax_slab *ax_model_slab(ax_model_t *m, ax_model_slab_id which) {
    if (which == AX_SLAB_GRADS && m->inference) return NULL;
    if (which == AX_SLAB_GRADS) { /* the caller may write through it */
        model_grads_settle(m);
        for (int i = 0; i < m->n_tensors; i++) m->tp[i].gss_ok = 0;
    }
    return (ax_slab *)(which == AX_SLAB_GRADS ? m->grads : m->params);
}

/* [off, off + n) within a slab of n_local floats; names the caller for the message */
static ax_status slab_range(const ax_model_t *m, const char *fn, int64_t off, int64_t n) {
    if (off >= 0 && n >= 0 && off <= m->n_local && n <= m->n_local - off) return AX_OK;
    return ax_errorf(AX_ERR_ARG, "%s: range [%lld, +%lld) leaves the local slab of %lld floats", fn,
                     (long long)off, (long long)n, (long long)m->n_local);
}

ax_status model_needs_grads(const ax_model_t *m, const char *fn) {
    if (!m->inference) return AX_OK;
    return ax_errorf(AX_ERR_ARG,
                     "%s: this model was created for inference (ax_model_opts.inference: no "
                     "gradients); create it without that option to train",
                     fn);
}

ax_status ax_model_read_params(const ax_model_t *m, float *host, int64_t off, int64_t n) {
    AX_CHECK(slab_range(m, "ax_model_read_params", off, n));
    ax_copy(m->ctx, host, m->params + off, (size_t)n * sizeof(float), AX_COPY_D2H);
    return ax_ctx_status(m->ctx);
}
ax_status ax_model_read_grads(const ax_model_t *m, float *host, int64_t off, int64_t n) {
    AX_CHECK(model_needs_grads(m, "ax_model_read_grads"));
    AX_CHECK(slab_range(m, "ax_model_read_grads", off, n));
    model_grads_settle(m);
    ax_copy(m->ctx, host, m->grads + off, (size_t)n * sizeof(float), AX_COPY_D2H);
    return ax_ctx_status(m->ctx);
}
/* [off, off + n) of the slab was written other than by AdamW: its bf16 copy follows, and the
 * blocks gathered over Z hold the old values */
static void params_written(ax_model_t *m, int64_t off, int64_t n) {
    if (m->params16) ax_to_bf16(m->ctx, m->params16 + off, m->params + off, (long)n);
    model_weights_changed(m);
}
ax_status ax_model_write_params(ax_model_t *m, const float *host, int64_t off, int64_t n) {
    AX_CHECK(slab_range(m, "ax_model_write_params", off, n));
    ax_copy(m->ctx, m->params + off, host, (size_t)n * sizeof(float), AX_COPY_H2D);
    params_written(m, off, n);
    return ax_ctx_status(m->ctx);
}
int ax_model_n_tensors(const ax_model_t *m) {
    return m->n_tensors;
}
const ax_tensor_info *ax_model_tensors(const ax_model_t *m) {
    return m->info;
}
int ax_model_tensor_decays(const ax_model_t *m, int i) {
    return m->info[i].ndim == 2;
}
/* An activation of the last forward, n floats per sequence, copied to the host. */
static ax_status read_act(const ax_model_t *m, const char *fn, const float *act, int64_t per_seq,
                          float *host) {
    if (m->cur_B < 1) return ax_errorf(AX_ERR_ARG, "%s: no forward has run on this model yet", fn);
    ax_copy(m->ctx, host, act, (size_t)(m->cur_B * per_seq) * sizeof(float), AX_COPY_D2H);
    return ax_ctx_status(m->ctx);
}
ax_status ax_model_read_logits(const ax_model_t *m, float *host) {
    return read_act(m, "ax_model_read_logits", m->logits, (int64_t)m->T * m->Vl, host);
}
ax_status ax_model_read_losses(const ax_model_t *m, float *host) {
    return read_act(m, "ax_model_read_losses", m->losses, m->T, host);
}
ax_status ax_model_read_residual(const ax_model_t *m, int l, float *host) {
    if (l < 0 || l > m->cfg.n_layers)
        return ax_errorf(AX_ERR_ARG, "ax_model_read_residual: layer %d is outside [0, %d]", l,
                         m->cfg.n_layers);
    const float *res = l < m->cfg.n_layers ? m->acts[l].res : m->res_final;
    return read_act(m, "ax_model_read_residual", res, (int64_t)m->T * m->Cx, host);
}
ax_status ax_model_status(const ax_model_t *m) {
    return m->status != AX_OK ? m->status : ax_ctx_status(m->ctx);
}

void ax_model_local_range(const ax_model_t *m, int i, int64_t *offset, int64_t *count) {
    *offset = m->tp[i].shard_off;
    *count = m->tp[i].shard_n;
}

void ax_model_vocab_slice(const ax_model_t *m, int *v0, int *valid, int *Vl) {
    *v0 = m->v0;
    *valid = m->vvalid;
    *Vl = m->Vl;
}

/* floats of tensor p's gradient block (gfull): the slab's range, or the Z-gathered block */
static size_t gfull_floats(const ax_model_t *m, const tp_tensor *p) {
    return (size_t)(p->shard_n * m->dims[AX_AXIS_Z]);
}

/* Zeroing is lazy for the tensors whose first write in a backward is a dW GEMM over the whole
 * block (dw_first: the layers' matrices and the LM head, 99% of the floats): that GEMM
 * overwrites instead (beta = 0), saving a write of the whole slab. Whatever is still stale when
 * gradients are read (a forward without want_grad, no backward) is zeroed then
 * (model_grads_settle). */
void ax_model_zero_grad(ax_model_t *m) {
    if (m->inference) {
        tp_note(m, model_needs_grads(m, "ax_model_zero_grad"));
        return;
    }
    int gz = m->dims[AX_AXIS_Z];
    if (gz > 1) /* the slab receives the reduce-scatters; the blocks are zeroed below */
        ax_zero(m->ctx, m->grads, (size_t)m->n_local * sizeof(float));
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        p->gss_ok = 0;
        if (p->dw_first)
            p->g_stale = 1;
        else if (!p->rs_tmp) /* a streamed layer's slot is zeroed before each backward */
            ax_zero(m->ctx, p->gfull, gfull_floats(m, p) * sizeof(float));
    }
    m->micro = 0;
}

void model_grads_settle(const ax_model_t *cm) {
    ax_model_t *m = (ax_model_t *)cm; /* the gradients' value (zero) does not change */
    if (m->inference) return;         /* none */
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        if (!p->g_stale) continue;
        ax_zero(m->ctx, p->gfull, gfull_floats(m, p) * sizeof(float));
        p->g_stale = 0;
    }
}

/* Norm weights, row-parallel biases and learned positions are replicated over Y, column-parallel
 * biases over X, and everything over data: count each value once. */
int model_owns_xy(const ax_model_t *m, int i) {
    tp_kind k = m->tp[i].kind;
    if (k == TP_VEC || k == TP_ROWS) return m->y == 0;
    if (k == TP_YVEC) return m->x == 0;
    return 1;
}

ax_status ax_model_grad_sumsq(ax_model_t *m, double *out) {
    AX_CHECK(model_needs_grads(m, "ax_model_grad_sumsq"));
    double s = 0;
    model_grads_settle(m);
    if (ax_grid_coord(m->grid, AX_AXIS_DATA) == 0)
        for (int i = 0; i < m->n_tensors; i++)
            if (model_owns_xy(m, i))
                s += m->tp[i].gss_ok ? m->tp[i].gss
                                     : ax_sum_squares(m->ctx, m->grads + m->tp[i].shard_off,
                                                      (long)m->tp[i].shard_n);
    AX_CHECK(ax_coll_allreduce(m->grid, AX_AXIS_WORLD, &s, 1, AX_DT_F64, AX_OP_SUM));
    *out = s;
    return AX_OK;
}

void ax_model_init(ax_model_t *m, uint64_t seed) {
    /* GPT-2 init: N(0, 0.02) (embeddings, learned positions, matrices); projections into the
     * residual stream scaled by 1/sqrt(2L) so the stream's variance does not grow with depth.
     * Norm weights start at 1, biases (of layers and LayerNorms) at 0. */
    float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)m->cfg.n_layers);
    for (int i = 0; i < m->n_tensors; i++) {
        tp_tensor *p = &m->tp[i];
        size_t bytes = (size_t)p->shard_n * sizeof(float);
        float *dst = ax_map(m->ctx, m->params + p->shard_off, bytes, AX_MAP_WRITE);
        if (!dst) {
            tp_note(m, ax_errorf(AX_ERR_NOMEM, "out of memory initialising %s", m->info[i].name));
            break;
        }
        float s = p->init == INIT_PROJ ? proj_std : std;
        float constant = p->init == INIT_ONE ? 1.0f : 0.0f;
        int random = p->init == INIT_NORMAL || p->init == INIT_PROJ;
        int64_t b0 = (int64_t)m->z * p->shard_n;
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < p->shard_n; e++) {
            int64_t b = b0 + e, gi = b < p->block_n ? model_global_index(m, p, b) : -1;
            dst[e] = gi < 0    ? 0.0f
                     : !random ? constant
                               : s * ax_rng_normal(seed, (uint64_t)i, (uint64_t)gi);
        }
        ax_unmap(m->ctx, m->params + p->shard_off, dst, bytes, AX_MAP_WRITE);
    }
    params_written(m, 0, m->n_local);
}

ax_status ax_model_gather_tensor(ax_model_t *m, int i, const ax_slab *slab, float *global_out) {
    const float *local = (const float *)slab; /* backend memory: only ops and copies touch it */
    tp_tensor *p = &m->tp[i];
    int64_t numel = m->info[i].numel;
    int gz = m->dims[AX_AXIS_Z];
    float *block = falloc(m, p->shard_n * gz), *global = falloc(m, numel);
    ax_status st = AX_OK;
    if (!block || !global) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory gathering tensor %s", m->info[i].name);
        goto done;
    }
    /* one Z rank: the shard is the block (a device copy: a size-1 collective copies on the host) */
    if (gz == 1)
        ax_copy(m->ctx, block, local + p->shard_off, (size_t)p->shard_n * sizeof(float),
                AX_COPY_D2D);
    else
        AX_CHECK_GOTO(ax_coll_allgather(m->grid, AX_AXIS_Z, local + p->shard_off, p->shard_n, block,
                                        AX_DT_F32),
                      done);
    /* exactly one rank writes each global element; the rest add zeros, so the sum is exact */
    if (ax_grid_coord(m->grid, AX_AXIS_DATA) == 0 && m->z == 0 && model_owns_xy(m, i)) {
        size_t bb = (size_t)(p->shard_n * gz) * sizeof(float), gb = (size_t)numel * sizeof(float);
        const float *hb = ax_map(m->ctx, block, bb, AX_MAP_READ);
        float *hg = ax_map(m->ctx, global, gb, AX_MAP_WRITE);
        if (!hb || !hg)
            st = ax_errorf(AX_ERR_NOMEM, "out of memory gathering tensor %s", m->info[i].name);
        for (int64_t b = 0; st == AX_OK && b < p->block_n; b++) {
            int64_t gi = model_global_index(m, p, b);
            if (gi >= 0) hg[gi] = hb[b];
        }
        if (hb) ax_unmap(m->ctx, block, (void *)hb, bb, AX_MAP_READ);
        if (hg) ax_unmap(m->ctx, global, hg, gb, AX_MAP_WRITE);
        if (st != AX_OK) goto done;
    }
    AX_CHECK_GOTO(
        ax_coll_allreduce(m->grid, AX_AXIS_WORLD, global, (long)numel, AX_DT_F32, AX_OP_SUM), done);
    if (global_out) ax_copy(m->ctx, global_out, global, (size_t)numel * sizeof(float), AX_COPY_D2H);
done:
    ax_dev_free(m->ctx, block);
    ax_dev_free(m->ctx, global);
    return st;
}

void ax_model_scatter_tensor(ax_model_t *m, int i, const float *global, ax_slab *slab) {
    float *local = (float *)slab;
    tp_tensor *p = &m->tp[i];
    int64_t b0 = (int64_t)m->z * p->shard_n;
    size_t bytes = (size_t)p->shard_n * sizeof(float);
    /* global is host memory (a checkpoint blob); the shard is written through a host view */
    float *dst = ax_map(m->ctx, local + p->shard_off, bytes, AX_MAP_WRITE);
    if (!dst) {
        tp_note(m, ax_errorf(AX_ERR_NOMEM, "out of memory loading tensor %s", m->info[i].name));
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < p->shard_n; e++) {
        int64_t b = b0 + e, gi = b < p->block_n ? model_global_index(m, p, b) : -1;
        dst[e] = gi < 0 ? 0.0f : global[gi];
    }
    ax_unmap(m->ctx, local + p->shard_off, dst, bytes, AX_MAP_WRITE);
    if (local == m->params)
        params_written(m, p->shard_off, p->shard_n);
    else
        model_weights_changed(m);
}
