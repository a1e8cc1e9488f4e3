/* The single-rank Llama-style model: parameter layout, activations, forward and backward.
 * Every kernel comes from ops.h; this file only wires them together. */
#include "lib/model.h"
#include "lib/ops.h"
#include "lib/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* per-layer tensor slots, in slab order */
enum { L_NORM1, L_WQKV, L_WO, L_NORM2, L_WUP, L_WDOWN, L_COUNT };

typedef struct {
    float *res;     /* [N,C] residual stream entering the layer */
    float *ln1;     /* [N,C] */
    float *rstd1;   /* [N] */
    float *qkv;     /* [N,3C] q,k rotated in place */
    float *att;     /* [B,H,T,T] */
    float *atty;    /* [N,C] attention output before the out-projection */
    float *res_mid; /* [N,C] after the attention residual */
    float *ln2;     /* [N,C] */
    float *rstd2;   /* [N] */
    float *h;       /* [N,2F] gate | up */
    float *hs;      /* [N,F] swiglu output */
} layer_acts;

struct ax_model {
    ax_model_config cfg;
    int B, T; /* allocated micro-batch */
    int cur_B;
    int n_tensors;
    ax_tensor_info *tensors;
    int64_t n_params;
    float *params, *grads;
    /* tensor indices */
    int t_wte, t_normf, t_head, t_layer0;
    /* activations */
    layer_acts *acts;
    float *res_final; /* [N,C] output of the last layer */
    float *lnf, *rstdf;
    float *logits;              /* [N,V], becomes dlogits */
    float *losses;              /* [N] */
    float *rope_cos, *rope_sin; /* [T, D/2] */
    /* backward scratch */
    float *dres, *dln, *dbig, *dh, *dqkv, *att_scratch;
    const int32_t *last_inputs;
    int32_t *inputs_copy;
    int have_grad_logits;
};

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
                         "--dim %d is not divisible by --heads %d; pick dim = heads x "
                         "head size",
                         c->dim, c->n_heads);
    if ((c->dim / c->n_heads) % 2)
        return ax_errorf(AX_ERR_ARG,
                         "head size --dim/--heads = %d must be even for rotary "
                         "positions",
                         c->dim / c->n_heads);
    if (!(c->rope_theta > 1.0f) || !(c->norm_eps > 0.0f))
        return ax_errorf(AX_ERR_ARG, "rope theta (%g) must be > 1 and norm eps (%g) > 0",
                         c->rope_theta, c->norm_eps);
    return AX_OK;
}

int64_t ax_model_config_n_params(const ax_model_config *c) {
    int64_t C = c->dim, F = c->ffn, V = c->vocab;
    int64_t per_layer = C + 3 * C * C + C * C + C + 2 * F * C + C * F;
    return V * C + c->n_layers * per_layer + C + (c->tie_embeddings ? 0 : V * C);
}

double ax_model_flops_per_token(const ax_model_config *c, int T) {
    /* the input embedding is a lookup, not a matmul; with tied weights its matrix is the
     * LM head, which is a matmul and so counts */
    int64_t untied_embedding = c->tie_embeddings ? 0 : (int64_t)c->vocab * c->dim;
    double matmul_params = (double)(ax_model_config_n_params(c) - untied_embedding);
    return 6.0 * matmul_params + 12.0 * c->n_layers * c->dim * (double)T;
}

static void add_tensor(ax_model_t *m, const char *name, int ndim, int64_t d0, int64_t d1) {
    ax_tensor_info *t = &m->tensors[m->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim > 1 ? d1 : 1;
    t->numel = ndim > 1 ? d0 * d1 : d0;
    t->offset = m->n_params;
    m->n_params += t->numel;
}

static float *falloc(int64_t n) {
    /* 64-byte aligned for AVX-512 loads */
    size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

ax_status ax_model_create(const ax_model_config *c, int B, int T, ax_model_t **out) {
    *out = NULL;
    AX_CHECK(ax_model_config_check(c));
    if (B < 1 || T < 1)
        return ax_errorf(AX_ERR_ARG, "batch %d and sequence length %d must be >= 1", B, T);
    ax_model_t *m = calloc(1, sizeof *m);
    if (!m) return ax_errorf(AX_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *c;
    m->B = B;
    m->T = T;
    int L = c->n_layers;
    int64_t C = c->dim, F = c->ffn, V = c->vocab, N = (int64_t)B * T, H = c->n_heads;
    m->tensors = calloc((size_t)(L * L_COUNT + 3), sizeof *m->tensors);
    m->acts = calloc((size_t)L, sizeof *m->acts);
    if (!m->tensors || !m->acts) goto oom;

    char name[64];
    m->t_wte = m->n_tensors;
    add_tensor(m, "wte", 2, V, C);
    m->t_layer0 = m->n_tensors;
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "layers.%d.attn_norm", l);
        add_tensor(m, name, 1, C, 0);
        snprintf(name, sizeof name, "layers.%d.wqkv", l);
        add_tensor(m, name, 2, 3 * C, C);
        snprintf(name, sizeof name, "layers.%d.wo", l);
        add_tensor(m, name, 2, C, C);
        snprintf(name, sizeof name, "layers.%d.mlp_norm", l);
        add_tensor(m, name, 1, C, 0);
        snprintf(name, sizeof name, "layers.%d.w_up", l);
        add_tensor(m, name, 2, 2 * F, C);
        snprintf(name, sizeof name, "layers.%d.w_down", l);
        add_tensor(m, name, 2, C, F);
    }
    m->t_normf = m->n_tensors;
    add_tensor(m, "final_norm", 1, C, 0);
    m->t_head = m->t_wte;
    if (!c->tie_embeddings) {
        m->t_head = m->n_tensors;
        add_tensor(m, "lm_head", 2, V, C);
    }

    m->params = falloc(m->n_params);
    m->grads = falloc(m->n_params);
    if (!m->params || !m->grads) goto oom;
    memset(m->grads, 0, (size_t)m->n_params * sizeof(float));

    /* activations: one allocation per buffer keeps the code plain; sizes are small next to
     * the parameter slabs for the shapes we train */
    for (int l = 0; l < L; l++) {
        layer_acts *a = &m->acts[l];
        a->res = falloc(N * C);
        a->ln1 = falloc(N * C);
        a->rstd1 = falloc(N);
        a->qkv = falloc(N * 3 * C);
        a->att = falloc(B * H * T * T);
        a->atty = falloc(N * C);
        a->res_mid = falloc(N * C);
        a->ln2 = falloc(N * C);
        a->rstd2 = falloc(N);
        a->h = falloc(N * 2 * F);
        a->hs = falloc(N * F);
        if (!a->res || !a->ln1 || !a->rstd1 || !a->qkv || !a->att || !a->atty || !a->res_mid ||
            !a->ln2 || !a->rstd2 || !a->h || !a->hs)
            goto oom;
    }
    int64_t big = C > F ? C : F; /* dbig holds d(hs) [N,F] or d(atty) [N,C] */
    m->res_final = falloc(N * C);
    m->lnf = falloc(N * C);
    m->rstdf = falloc(N);
    m->logits = falloc(N * V);
    m->losses = falloc(N);
    int D = (int)(C / H);
    m->rope_cos = falloc((int64_t)T * D / 2);
    m->rope_sin = falloc((int64_t)T * D / 2);
    m->dres = falloc(N * C);
    m->dln = falloc(N * C);
    m->dbig = falloc(N * big);
    m->dh = falloc(N * 2 * F);
    m->dqkv = falloc(N * 3 * C);
    m->att_scratch = falloc(B * H * T * T);
    m->inputs_copy = malloc((size_t)N * sizeof(int32_t));
    if (!m->res_final || !m->lnf || !m->rstdf || !m->logits || !m->losses || !m->rope_cos ||
        !m->rope_sin || !m->dres || !m->dln || !m->dbig || !m->dh || !m->dqkv || !m->att_scratch ||
        !m->inputs_copy)
        goto oom;
    ax_rope_table(m->rope_cos, m->rope_sin, T, D, c->rope_theta);
    *out = m;
    return AX_OK;
oom:
    ax_model_free(m);
    return ax_errorf(AX_ERR_NOMEM,
                     "out of memory allocating a model of %lld parameters for batch %d x %d; "
                     "use a smaller model, --batch or --micro-batch",
                     (long long)ax_model_config_n_params(c), B, T);
}

void ax_model_free(ax_model_t *m) {
    if (!m) return;
    for (int l = 0; m->acts && l < m->cfg.n_layers; l++) {
        layer_acts *a = &m->acts[l];
        free(a->res), free(a->ln1), free(a->rstd1), free(a->qkv), free(a->att), free(a->atty);
        free(a->res_mid), free(a->ln2), free(a->rstd2), free(a->h), free(a->hs);
    }
    free(m->acts);
    free(m->tensors);
    free(m->params), free(m->grads);
    free(m->res_final), free(m->lnf), free(m->rstdf), free(m->logits), free(m->losses);
    free(m->rope_cos), free(m->rope_sin);
    free(m->dres), free(m->dln), free(m->dbig), free(m->dh), free(m->dqkv), free(m->att_scratch);
    free(m->inputs_copy);
    free(m);
}

const ax_model_config *ax_model_config_of(const ax_model_t *m) {
    return &m->cfg;
}
int64_t ax_model_n_params(const ax_model_t *m) {
    return m->n_params;
}
float *ax_model_params(ax_model_t *m) {
    return m->params;
}
float *ax_model_grads(ax_model_t *m) {
    return m->grads;
}
int ax_model_n_tensors(const ax_model_t *m) {
    return m->n_tensors;
}
const ax_tensor_info *ax_model_tensors(const ax_model_t *m) {
    return m->tensors;
}
int ax_model_tensor_decays(const ax_model_t *m, int i) {
    return m->tensors[i].ndim == 2;
}
const float *ax_model_logits(const ax_model_t *m) {
    return m->logits;
}
const float *ax_model_losses(const ax_model_t *m) {
    return m->losses;
}

void ax_model_zero_grad(ax_model_t *m) {
    memset(m->grads, 0, (size_t)m->n_params * sizeof(float));
}

void ax_model_init(ax_model_t *m, uint64_t seed) {
    /* GPT-2 init: N(0, 0.02); projections into the residual stream scaled by 1/sqrt(2L) so
     * the stream's variance does not grow with depth */
    float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)m->cfg.n_layers);
    for (int i = 0; i < m->n_tensors; i++) {
        ax_tensor_info *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 1) {
            for (int64_t j = 0; j < t->numel; j++) p[j] = 1.0f;
            continue;
        }
        int is_proj = strstr(t->name, ".wo") || strstr(t->name, ".w_down");
        ax_rng_fill_normal(p, t->numel, is_proj ? proj_std : std, seed, (uint64_t)i, 0);
    }
}

static float *P(ax_model_t *m, int t) {
    return m->params + m->tensors[t].offset;
}
static float *G(ax_model_t *m, int t) {
    return m->grads + m->tensors[t].offset;
}
static int LT(const ax_model_t *m, int l, int slot) {
    return m->t_layer0 + l * L_COUNT + slot;
}

double ax_model_forward(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                        const uint8_t *mask, int B, float dscale, int want_grad) {
    const ax_model_config *c = &m->cfg;
    int T = m->T, C = c->dim, F = c->ffn, V = c->vocab, H = c->n_heads, D = C / H;
    int N = B * T;
    m->cur_B = B;
    memcpy(m->inputs_copy, inputs, (size_t)N * sizeof(int32_t));

    ax_embedding_forward(m->acts[0].res, inputs, P(m, m->t_wte), N, C);
    for (int l = 0; l < c->n_layers; l++) {
        layer_acts *a = &m->acts[l];
        float *res_out = l + 1 < c->n_layers ? m->acts[l + 1].res : m->res_final;
        ax_rmsnorm_forward(a->ln1, a->rstd1, a->res, P(m, LT(m, l, L_NORM1)), N, C, c->norm_eps);
        ax_matmul_forward(a->qkv, a->ln1, P(m, LT(m, l, L_WQKV)), N, C, 3 * C);
        ax_rope_forward(a->qkv, m->rope_cos, m->rope_sin, B, T, H, D, 3L * C);
        ax_rope_forward(a->qkv + C, m->rope_cos, m->rope_sin, B, T, H, D, 3L * C);
        ax_attention_forward(a->atty, a->att, a->qkv, B, T, C, H);
        /* res_mid = res + atty Wo^T (the GEMM writes into res_mid, then the residual adds) */
        ax_matmul_forward(a->res_mid, a->atty, P(m, LT(m, l, L_WO)), N, C, C);
        ax_accumulate(a->res_mid, a->res, (long)N * C);
        ax_rmsnorm_forward(a->ln2, a->rstd2, a->res_mid, P(m, LT(m, l, L_NORM2)), N, C,
                           c->norm_eps);
        ax_matmul_forward(a->h, a->ln2, P(m, LT(m, l, L_WUP)), N, C, 2 * F);
        ax_swiglu_forward(a->hs, a->h, N, F);
        ax_matmul_forward(res_out, a->hs, P(m, LT(m, l, L_WDOWN)), N, F, C);
        ax_accumulate(res_out, a->res_mid, (long)N * C);
    }
    ax_rmsnorm_forward(m->lnf, m->rstdf, m->res_final, P(m, m->t_normf), N, C, c->norm_eps);
    ax_matmul_forward(m->logits, m->lnf, P(m, m->t_head), N, C, V);
    double loss = ax_crossentropy_forward_backward(m->losses, want_grad ? m->logits : NULL,
                                                   m->logits, targets, mask, dscale, N, V);
    m->have_grad_logits = want_grad;
    return loss;
}

void ax_model_backward(ax_model_t *m) {
    if (!m->have_grad_logits) return; /* forward ran without want_grad: nothing to do */
    const ax_model_config *c = &m->cfg;
    int B = m->cur_B, T = m->T, C = c->dim, F = c->ffn, V = c->vocab, H = c->n_heads, D = C / H;
    int N = B * T;
    long NC = (long)N * C;
    float *dres = m->dres, *dln = m->dln;

    /* LM head and final norm: dres = d(res_final) */
    memset(dln, 0, (size_t)NC * sizeof(float));
    ax_matmul_backward(dln, G(m, m->t_head), m->logits, m->lnf, P(m, m->t_head), N, C, V);
    memset(dres, 0, (size_t)NC * sizeof(float));
    ax_rmsnorm_backward(dres, G(m, m->t_normf), dln, m->res_final, P(m, m->t_normf), m->rstdf, N,
                        C);

    for (int l = c->n_layers - 1; l >= 0; l--) {
        layer_acts *a = &m->acts[l];
        /* MLP branch: res_out = res_mid + hs Wdown^T; dres flows to res_mid unchanged */
        float *dhs = m->dbig;
        memset(dhs, 0, (size_t)N * F * sizeof(float));
        ax_matmul_backward(dhs, G(m, LT(m, l, L_WDOWN)), dres, a->hs, P(m, LT(m, l, L_WDOWN)), N, F,
                           C);
        memset(m->dh, 0, (size_t)N * 2 * F * sizeof(float));
        ax_swiglu_backward(m->dh, dhs, a->h, N, F);
        memset(dln, 0, (size_t)NC * sizeof(float));
        ax_matmul_backward(dln, G(m, LT(m, l, L_WUP)), m->dh, a->ln2, P(m, LT(m, l, L_WUP)), N, C,
                           2 * F);
        ax_rmsnorm_backward(dres, G(m, LT(m, l, L_NORM2)), dln, a->res_mid, P(m, LT(m, l, L_NORM2)),
                            a->rstd2, N, C);

        /* attention branch: res_mid = res + atty Wo^T */
        float *datty = m->dbig;
        memset(datty, 0, (size_t)NC * sizeof(float));
        ax_matmul_backward(datty, G(m, LT(m, l, L_WO)), dres, a->atty, P(m, LT(m, l, L_WO)), N, C,
                           C);
        memset(m->dqkv, 0, (size_t)N * 3 * C * sizeof(float));
        ax_attention_backward(m->dqkv, m->att_scratch, datty, a->qkv, a->att, B, T, C, H);
        ax_rope_backward(m->dqkv, m->rope_cos, m->rope_sin, B, T, H, D, 3L * C);
        ax_rope_backward(m->dqkv + C, m->rope_cos, m->rope_sin, B, T, H, D, 3L * C);
        memset(dln, 0, (size_t)NC * sizeof(float));
        ax_matmul_backward(dln, G(m, LT(m, l, L_WQKV)), m->dqkv, a->ln1, P(m, LT(m, l, L_WQKV)), N,
                           C, 3 * C);
        ax_rmsnorm_backward(dres, G(m, LT(m, l, L_NORM1)), dln, a->res, P(m, LT(m, l, L_NORM1)),
                            a->rstd1, N, C);
    }
    ax_embedding_backward(G(m, m->t_wte), dres, m->inputs_copy, N, C);
    m->have_grad_logits = 0;
}
