/* KV-cached incremental decoding on the 4D grid: block.c's forward for one position
 * of B sequences, with each layer's rotated keys and values kept for the positions before.
 * The layer-0 activation buffers serve as scratch (decoding has no backward). */
#include "lib/model/tp_linear.h"
#include "lib/backend/ops.h"
#include "lib/model/sample.h"
#include "lib/core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the tensors a decoding step multiplies: every layer's four matrices and the LM head */
static int packed_tensors(const ax_model_t *m, int *t) {
    static const int slots[] = {L_WQKV, L_WO, L_WUP, L_WDOWN};
    int n = 0;
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int s = 0; s < 4; s++)
            if (LT(m, l, slots[s]) >= 0) t[n++] = LT(m, l, slots[s]);
    t[n++] = m->t_head;
    return n;
}

/* Decoding's packed weights (model_internal.h): one block sized for every multiplied tensor,
 * once per model. Where it cannot be had (a backend without packing, a bf16 model, out of
 * memory) decoding multiplies the gathered blocks as they are: the same results to rounding,
 * not the same bits. */
static void pack_alloc(ax_model_t *m) {
    if (m->dec_pack_tried) return;
    m->dec_pack_tried = 1;
    if (!ax_matmul_packs(m->ctx) || m->gin16) return;
    int *t = ax_host_alloc(m->ctx, sizeof(int) * (size_t)(4 * m->cfg.n_layers + 1));
    m->dec_pack = ax_host_alloc(m->ctx, sizeof(void *) * (size_t)m->n_tensors);
    if (!t || !m->dec_pack) goto fail;
    int n = packed_tensors(m, t);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const tp_tensor *p = &m->tp[t[i]];
        total += (ax_matmul_pack_bytes(m->ctx, (int)p->cols_l, (int)p->rows_l) + 63) / 64 * 64;
    }
    m->dec_pack_arena = ax_dev_alloc(m->ctx, total);
    if (!m->dec_pack_arena) {
        AX_WARN("decoding: no memory for packed weights (%.0f MB): multiplying them unpacked, "
                "slower",
                (double)total / 1e6);
        goto fail;
    }
    char *at = m->dec_pack_arena;
    for (int i = 0; i < n; i++) {
        const tp_tensor *p = &m->tp[t[i]];
        m->dec_pack[t[i]] = at;
        at += (ax_matmul_pack_bytes(m->ctx, (int)p->cols_l, (int)p->rows_l) + 63) / 64 * 64;
    }
    m->pack_gen = m->wgen - 1; /* made at the first step */
    ax_host_free(m->ctx, t);
    return;
fail:
    ax_host_free(m->ctx, t), ax_host_free(m->ctx, m->dec_pack);
    m->dec_pack = NULL;
}

/* the packed copies from the gathered blocks, when the weights changed since they were made */
static void pack_refresh(ax_model_t *m) {
    if (!m->dec_pack_arena || m->pack_gen == m->wgen) return;
    for (int t = 0; t < m->n_tensors; t++)
        if (m->dec_pack[t]) {
            const tp_tensor *p = &m->tp[t];
            ax_matmul_pack(m->ctx, m->dec_pack[t], p->full, (int)p->cols_l, (int)p->rows_l);
        }
    m->pack_gen = m->wgen;
}

ax_status ax_model_decode_begin(ax_model_t *m, int B) {
    if (m->stream)
        return ax_errorf(AX_ERR_ARG, "decoding needs every layer's weights at hand: create the "
                                     "model without stream_z (layer-streamed weights)");
    if (B < 1 || B > m->B * m->T)
        return ax_errorf(AX_ERR_ARG, "decoding batch %d must be in [1, %d]", B, m->B * m->T);
    pack_alloc(m);
    m->dec_logits_ok = 0;
    if (m->dec_arena && B <= m->dec_B) return AX_OK; /* positions restart at 0: overwritten */
    ax_ctx *ctx = m->ctx;
    int L = m->cfg.n_layers, D = m->cfg.dim / m->cfg.n_heads, gy = m->dims[AX_AXIS_Y];
    if (!m->kcache) {
        m->kcache = ax_host_alloc(ctx, (size_t)L * sizeof(float *));
        m->vcache = ax_host_alloc(ctx, (size_t)L * sizeof(float *));
        if (!m->kcache || !m->vcache)
            return ax_errorf(AX_ERR_NOMEM, "out of memory for the KV cache");
    }
    /* one device block: L key and L value caches [B, Hky, T, D] (grouped-query attention keeps
     * only the K/V heads), then logits [B, Vl] and their all-gather over Y [Gy, B, Vl]; every
     * part a multiple of 16 floats (64 bytes) */
    size_t cache = ((size_t)B * m->Hky * m->T * D + 15) / 16 * 16;
    size_t logits = ((size_t)B * m->Vl + 15) / 16 * 16;
    ax_dev_free(ctx, m->dec_arena), ax_host_free(ctx, m->dec_best);
    m->dec_best = NULL;
    m->dec_B = 0;
    float *base = m->dec_arena =
        ax_dev_alloc(ctx, sizeof(float) * (2 * L * cache + logits * (1 + (size_t)gy)));
    if (!base) return ax_errorf(AX_ERR_NOMEM, "out of memory for a KV cache of %d sequences", B);
    for (int l = 0; l < L; l++) {
        m->kcache[l] = base + (size_t)(2 * l) * cache;
        m->vcache[l] = base + (size_t)(2 * l + 1) * cache;
    }
    m->dec_logits = base + 2 * L * cache;
    m->dec_all = m->dec_logits + logits;
    m->dec_best = ax_host_alloc(ctx, sizeof(double) * 3 * (size_t)B);
    if (!m->dec_best) return ax_errorf(AX_ERR_NOMEM, "out of memory for decoding");
    m->dec_B = B;
    return AX_OK;
}

int ax_model_decode_batch(const ax_model_t *m) {
    return m->dec_B;
}

/* One position for every sequence. With logits 0 the last layer stops once its keys and values
 * are cached: its attention and MLP, the final norm and the LM head only feed the logits. */
static void decode(ax_model_t *m, const int32_t *tokens, int pos, int logits) {
    const ax_model_config *c = &m->cfg;
    int B = m->dec_B, Cx = m->Cx, Cy = m->Cy, Hy = m->Hy, D = c->dim / c->n_heads;
    int Hky = m->Hky, Ky = m->Ky;
    long Q3 = (long)Cy + 2L * Ky; /* a qkv row: [q | k | v] */
    layer_acts *s = &m->acts[0];  /* scratch */
    /* q: the backward's dqkv buffer [N, 3Cy] is free while decoding and always large enough */
    float *x = m->res_final, *x_mid = s->res_mid, *q = m->dqkv;
    if (m->stale) { /* weights changed since the last gather */
        for (int t = 0; t < m->n_tensors; t++) tp_gather_begin(m, t);
        for (int t = 0; t < m->n_tensors; t++) tp_gather_end(m, t);
        m->stale = 0;
    }
    pack_refresh(m);
    m->decoding = 1;
    ax_copy(m->ctx, m->inputs_copy, tokens, (size_t)B * sizeof(int32_t), AX_COPY_H2D);
    ax_embedding_shard_forward(m->ctx, x, m->inputs_copy, m->tp[m->t_wte].full, B, Cx, m->v0,
                               m->vvalid);
    tp_allreduce_sum(m, AX_AXIS_Y, x, (long)B * Cx);
    if (m->t_wpe >= 0) /* learned positions: row pos of wpe to every sequence */
        ax_bias_add(m->ctx, x, m->tp[m->t_wpe].full + (long)pos * Cx, B, Cx);
    int rd = model_rotary_dim(c), par = c->parallel_residual;
    const float *cos_t = m->rope_cos + (long)pos * (rd / 2),
                *sin_t = m->rope_sin + (long)pos * (rd / 2);
    for (int l = 0; l < c->n_layers; l++) {
        const int *w = &m->lt[l * L_SLOTS];
        tp_norm_forward(m, w[L_NORM1], w[L_NORM1B], s->ln1, s->mean1, s->rstd1, x, B);
        tp_col_forward(m, w[L_WQKV], s->qkv, s->ln1, m->gin16, B); /* all-reduce over X */
        tp_bias_forward(m, w[L_BQKV], s->qkv, B);
        if (rd) { /* one position per sequence: B "sequences" of length 1 at angle table row pos */
            ax_rope_partial_forward(m->ctx, s->qkv, cos_t, sin_t, B, 1, Hy, D, rd, Q3);
            ax_rope_partial_forward(m->ctx, s->qkv + Cy, cos_t, sin_t, B, 1, Hky, D, rd, Q3);
        }
        ax_kv_append(m->ctx, m->kcache[l], m->vcache[l], s->qkv + Cy, s->qkv + Cy + Ky, Q3, B, Hky,
                     D, m->T, pos);
        if (!logits && l == c->n_layers - 1) break;
        /* the query is the first Cy columns of each qkv row: compact it for the kernel */
        ax_copy_rows(m->ctx, q, Cy, s->qkv, Q3, B, Cy);
        ax_attention_decode_gqa(m->ctx, s->atty, q, m->kcache[l], m->vcache[l], B, Hy, Hky, D,
                                pos + 1, m->T);
        tp_row_forward(m, w[L_WO], x_mid, s->atty, 0, B); /* all-reduce over Y */
        tp_bias_forward(m, w[L_BO], x_mid, B);
        if (!par) ax_accumulate(m->ctx, x_mid, x, (long)B * Cx);
        tp_norm_forward(m, w[L_NORM2], w[L_NORM2B], s->ln2, s->mean2, s->rstd2, par ? x : x_mid, B);
        tp_col_forward(m, w[L_WUP], s->h, s->ln2, m->gin16, B); /* all-reduce over X */
        tp_bias_forward(m, w[L_BUP], s->h, B);
        tp_mlp_act_forward(m, s->hs, s->h, B);
        /* the layer's output replaces x: the MLP branch goes to a scratch row block first when
         * x is still needed for the parallel residual */
        float *out = par ? s->res : x;
        tp_row_forward(m, w[L_WDOWN], out, s->hs, m->gin16, B); /* all-reduce over Y */
        tp_bias_forward(m, w[L_BDOWN], out, B);
        ax_accumulate(m->ctx, out, x_mid, (long)B * Cx);
        if (par) {
            ax_accumulate(m->ctx, out, x, (long)B * Cx);
            ax_copy(m->ctx, x, out, (size_t)B * Cx * sizeof(float), AX_COPY_D2D);
        }
    }
    m->dec_logits_ok = logits;
    if (logits) {
        tp_norm_forward(m, m->t_normf, m->t_normfb, m->lnf, m->meanf, m->rstdf, x, B);
        tp_col_forward(m, m->t_head, m->dec_logits, m->lnf, m->gin16, B); /* all-reduce over X */
    }
    m->decoding = 0;
}

void ax_model_decode_step(ax_model_t *m, const int32_t *tokens, int pos) {
    decode(m, tokens, pos, 1);
}

void ax_model_decode_feed(ax_model_t *m, const int32_t *tokens, int pos) {
    decode(m, tokens, pos, 0);
}

/* the calls that read the last step's logits */
static ax_status logits_ready(const ax_model_t *m, const char *what) {
    if (m->dec_logits_ok) return AX_OK;
    return ax_errorf(AX_ERR_ARG,
                     "%s: no logits to read: the last decode step was ax_model_decode_feed (or "
                     "none since ax_model_decode_begin); use ax_model_decode_step where the next "
                     "token is chosen",
                     what);
}

const float *ax_model_decode_logits(const ax_model_t *m) {
    return m->dec_logits;
}

ax_status ax_model_decode_argmax(ax_model_t *m, int32_t *out) {
    AX_CHECK(logits_ready(m, "ax_model_decode_argmax"));
    int B = m->dec_B;
    /* per sequence: (best value, -best id) maximised over Y ranks; the id as a double is exact */
    double *best = m->dec_best, *mx = m->dec_best + 2 * B;
    ax_argmax_rows(m->ctx, best, m->dec_logits, B, m->Vl, m->vvalid, m->v0);
    if (m->dims[AX_AXIS_Y] > 1) {
        /* two passes: the max value, then the lowest id holding it */
        for (int b = 0; b < B; b++) mx[b] = best[2 * b];
        AX_CHECK(ax_coll_allreduce(m->grid, AX_AXIS_Y, mx, B, AX_DT_F64, AX_OP_MAX));
        for (int b = 0; b < B; b++) mx[b] = best[2 * b] == mx[b] ? best[2 * b + 1] : -INFINITY;
        AX_CHECK(ax_coll_allreduce(m->grid, AX_AXIS_Y, mx, B, AX_DT_F64, AX_OP_MAX));
        for (int b = 0; b < B; b++) best[2 * b + 1] = mx[b];
    }
    for (int b = 0; b < B; b++) out[b] = (int32_t)(-best[2 * b + 1]);
    return AX_OK;
}

/* the reduction of lib/model/sample.h over the vocabulary's Y shards */
static ax_status reduce_y(void *ctx, double *buf, int n, int is_max) {
    ax_model_t *m = ctx;
    return ax_coll_allreduce(m->grid, AX_AXIS_Y, buf, n, AX_DT_F64, is_max ? AX_OP_MAX : AX_OP_SUM);
}

ax_status ax_model_decode_sample(ax_model_t *m, const ax_sample_params *p, const uint64_t *keys,
                                 int32_t *out) {
    int B = m->dec_B, Vl = m->Vl, valid = m->vvalid;
    AX_CHECK(logits_ready(m, "ax_model_decode_sample"));
    AX_CHECK(ax_sample_params_check(p));
    /* the slice comes to the host (B x Vl floats a step, next to the LM head's B x C x Vl
     * multiply-adds): the threshold searches and the Gumbel draw run there, the same code
     * on every backend */
    size_t xb = sizeof(float) * (size_t)B * (size_t)Vl, wb = ax_sample_work_bytes(B, valid);
    float *x = ax_host_alloc(m->ctx, xb);
    void *work = ax_host_alloc(m->ctx, wb);
    ax_status st = AX_OK;
    if (!x || !work) st = ax_errorf(AX_ERR_NOMEM, "out of memory for sampling %d sequences", B);
    if (st == AX_OK) {
        ax_copy(m->ctx, x, m->dec_logits, xb, AX_COPY_D2H);
        ax_sync(m->ctx);
        st = ax_ctx_status(m->ctx);
    }
    if (st == AX_OK)
        st = ax_sample_rows(x, B, Vl, valid, m->v0, m->cfg.vocab, p, keys,
                            m->dims[AX_AXIS_Y] > 1 ? reduce_y : NULL, m, work, out);
    ax_host_free(m->ctx, x), ax_host_free(m->ctx, work);
    return st;
}

ax_status ax_model_decode_full_logits(ax_model_t *m, float *out) {
    AX_CHECK(logits_ready(m, "ax_model_decode_full_logits"));
    int B = m->dec_B, Vl = m->Vl, V = m->cfg.vocab, gy = m->dims[AX_AXIS_Y];
    if (gy == 1) /* a device copy: a size-1 collective would copy on the host */
        ax_copy(m->ctx, m->dec_all, m->dec_logits, (size_t)B * Vl * sizeof(float), AX_COPY_D2D);
    else
        AX_CHECK(ax_coll_allgather(m->grid, AX_AXIS_Y, m->dec_logits, (long)B * Vl, m->dec_all,
                                   AX_DT_F32));
    /* dec_all = gy blocks of [B, Vl]: interleave into rows of the global vocabulary (out is
     * host memory: a device backend's copy_rows writes across) */
    for (int y = 0; y < gy; y++) {
        int v0 = y * Vl, n = V - v0 < Vl ? V - v0 : Vl;
        if (n > 0) ax_copy_rows(m->ctx, out + v0, V, m->dec_all + (long)y * B * Vl, Vl, B, n);
    }
    return AX_OK;
}
