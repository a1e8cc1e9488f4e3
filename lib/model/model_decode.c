/* KV-cached incremental decoding on the 4D grid: the forward of model_step.c for one position
 * of B sequences, with each layer's rotated keys and values kept for the positions before.
 * The layer-0 activation buffers serve as scratch (decoding has no backward). */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ax_status ax_model_decode_begin(ax_model_t *m, int B) {
    if (B < 1 || B > m->B * m->T)
        return ax_errorf(AX_ERR_ARG, "decoding batch %d must be in [1, %d]", B, m->B * m->T);
    if (m->kcache && B <= m->dec_B) return AX_OK; /* positions restart at 0: caches overwritten */
    int L = m->cfg.n_layers, D = m->cfg.dim / m->cfg.n_heads;
    if (!m->kcache) {
        m->kcache = calloc((size_t)L, sizeof(float *));
        m->vcache = calloc((size_t)L, sizeof(float *));
        if (!m->kcache || !m->vcache)
            return ax_errorf(AX_ERR_NOMEM, "out of memory for the KV cache");
    }
    size_t n = (size_t)B * m->Hy * m->T * D;
    for (int l = 0; l < L; l++) {
        free(m->kcache[l]), free(m->vcache[l]);
        m->kcache[l] = malloc(n * sizeof(float));
        m->vcache[l] = malloc(n * sizeof(float));
        if (!m->kcache[l] || !m->vcache[l])
            return ax_errorf(AX_ERR_NOMEM, "out of memory for a KV cache of %d sequences", B);
    }
    free(m->dec_logits);
    m->dec_logits = malloc((size_t)B * m->Vl * sizeof(float));
    if (!m->dec_logits) return ax_errorf(AX_ERR_NOMEM, "out of memory for decoding logits");
    m->dec_B = B;
    return AX_OK;
}

/* qkv[B, 3Cy] -> append k, v at pos into the caches [B, Hy, T, D] */
static void append_kv(ax_model_t *m, int l, const float *qkv, int B, int pos) {
    int Hy = m->Hy, D = m->cfg.dim / m->cfg.n_heads, Cy = m->Cy, T = m->T;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hy; h++) {
            long dst = (((long)b * Hy + h) * T + pos) * D;
            memcpy(m->kcache[l] + dst, qkv + (long)b * 3 * Cy + Cy + (long)h * D,
                   sizeof(float) * D);
            memcpy(m->vcache[l] + dst, qkv + (long)b * 3 * Cy + 2 * Cy + (long)h * D,
                   sizeof(float) * D);
        }
}

void ax_model_decode_step(ax_model_t *m, const int32_t *tokens, int pos) {
    const ax_model_config *c = &m->cfg;
    int B = m->dec_B, Cx = m->Cx, Cy = m->Cy, Fy = m->Fy, Hy = m->Hy, D = c->dim / c->n_heads;
    layer_acts *s = &m->acts[0]; /* scratch */
    /* q: the backward's dqkv buffer [N, 3Cy] is free while decoding and always large enough */
    float *x = m->res_final, *x_mid = s->res_mid, *q = m->dqkv;
    if (m->stale) { /* weights changed since the last gather */
        for (int t = 0; t < m->n_tensors; t++) tp_gather_begin(m, t);
        for (int t = 0; t < m->n_tensors; t++) tp_gather_end(m, t);
        m->stale = 0;
    }
    ax_embedding_shard_forward(x, tokens, m->tp[m->t_wte].full, B, Cx, m->v0, m->vvalid);
    tp_note(m, ax_allreduce_sum(m->grid, AX_AXIS_Y, x, (long)B * Cx));
    const float *cos_t = m->rope_cos + (long)pos * (D / 2),
                *sin_t = m->rope_sin + (long)pos * (D / 2);
    for (int l = 0; l < c->n_layers; l++) {
        tp_rmsnorm_forward(m, LT(m, l, L_NORM1), s->ln1, s->rstd1, x, B);
        tp_linear_forward(m, LT(m, l, L_WQKV), s->qkv, s->ln1, B);
        /* one position per sequence: B "sequences" of length 1 at angle table row pos */
        ax_rope_forward(s->qkv, cos_t, sin_t, B, 1, Hy, D, 3L * Cy);
        ax_rope_forward(s->qkv + Cy, cos_t, sin_t, B, 1, Hy, D, 3L * Cy);
        append_kv(m, l, s->qkv, B, pos);
        /* the query is the first Cy columns of each qkv row: compact it for the kernel */
        for (int b = 0; b < B; b++)
            memcpy(q + (long)b * Cy, s->qkv + (long)b * 3 * Cy, sizeof(float) * Cy);
        ax_attention_decode(s->atty, q, m->kcache[l], m->vcache[l], B, Hy, D, pos + 1, m->T);
        tp_linear_forward(m, LT(m, l, L_WO), x_mid, s->atty, B);
        ax_accumulate(x_mid, x, (long)B * Cx);
        tp_rmsnorm_forward(m, LT(m, l, L_NORM2), s->ln2, s->rstd2, x_mid, B);
        tp_linear_forward(m, LT(m, l, L_WUP), s->h, s->ln2, B);
        ax_swiglu_forward(s->hs, s->h, B, Fy);
        tp_linear_forward(m, LT(m, l, L_WDOWN), x, s->hs, B);
        ax_accumulate(x, x_mid, (long)B * Cx);
    }
    tp_rmsnorm_forward(m, m->t_normf, m->lnf, m->rstdf, x, B);
    tp_linear_forward(m, m->t_head, m->dec_logits, m->lnf, B);
}

const float *ax_model_decode_logits(const ax_model_t *m) {
    return m->dec_logits;
}

ax_status ax_model_decode_argmax(ax_model_t *m, int32_t *out) {
    int B = m->dec_B;
    /* per sequence: (best value, -best id) maximised over Y ranks; the id as a double is exact */
    double *best = malloc(sizeof(double) * 2 * (size_t)B);
    if (!best) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (int b = 0; b < B; b++) {
        const float *row = m->dec_logits + (long)b * m->Vl;
        int arg = 0;
        for (int j = 1; j < m->vvalid; j++)
            if (row[j] > row[arg]) arg = j;
        best[2 * b] = m->vvalid > 0 ? row[arg] : -INFINITY;
        best[2 * b + 1] = -(double)(m->v0 + arg);
    }
    ax_status st = AX_OK;
    if (m->dims[AX_AXIS_Y] > 1) {
        /* two passes: the max value, then the lowest id holding it */
        double *mx = malloc(sizeof(double) * (size_t)B);
        if (!mx) st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        for (int b = 0; st == AX_OK && b < B; b++) mx[b] = best[2 * b];
        if (st == AX_OK) st = ax_allreduce_max_f64(m->grid, AX_AXIS_Y, mx, B);
        for (int b = 0; st == AX_OK && b < B; b++)
            mx[b] = best[2 * b] == mx[b] ? best[2 * b + 1] : -INFINITY;
        if (st == AX_OK) st = ax_allreduce_max_f64(m->grid, AX_AXIS_Y, mx, B);
        for (int b = 0; st == AX_OK && b < B; b++) best[2 * b + 1] = mx[b];
        free(mx);
    }
    for (int b = 0; st == AX_OK && b < B; b++) out[b] = (int32_t)(-best[2 * b + 1]);
    free(best);
    return st;
}

ax_status ax_model_decode_full_logits(ax_model_t *m, float *out) {
    int B = m->dec_B, Vl = m->Vl, V = m->cfg.vocab, gy = m->dims[AX_AXIS_Y];
    float *all = malloc(sizeof(float) * (size_t)B * Vl * gy);
    if (!all) return ax_errorf(AX_ERR_NOMEM, "out of memory gathering logits");
    ax_status st = ax_allgather(m->grid, AX_AXIS_Y, m->dec_logits, (long)B * Vl, all);
    /* all = gy blocks of [B, Vl]: interleave into rows of the global vocabulary */
    for (int b = 0; st == AX_OK && b < B; b++)
        for (int y = 0; y < gy; y++) {
            int v0 = y * Vl, n = V - v0 < Vl ? V - v0 : Vl;
            if (n > 0)
                memcpy(out + (long)b * V + v0, all + ((long)y * B + b) * Vl, sizeof(float) * n);
        }
    free(all);
    return st;
}
