/* Forward and backward of the 4D-parallel model. Every kernel comes from ops.h and every
 * collective from the layer helpers in model_linear.c; this file only wires them together. */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"

/* Weight groups in forward order: 0 = embedding, 1..L = layers, L+1 = final norm (+ head).
 * With overlap, group g+1 is gathered while group g computes (OAG). */
static void group_tensors(const ax_model_t *m, int g, int *ts, int *n) {
    int L = m->cfg.n_layers;
    *n = 0;
    if (g == 0) {
        ts[(*n)++] = m->t_wte;
        if (m->t_wpe >= 0) ts[(*n)++] = m->t_wpe;
    } else if (g <= L) {
        for (int s = 0; s < L_SLOTS; s++)
            if (LT(m, g - 1, s) >= 0) ts[(*n)++] = LT(m, g - 1, s);
    } else if (g == L + 1) {
        ts[(*n)++] = m->t_normf;
        if (m->t_normfb >= 0) ts[(*n)++] = m->t_normfb;
        if (m->t_head != m->t_wte) ts[(*n)++] = m->t_head;
    }
}

static void gather_group(ax_model_t *m, int g, int begin) {
    int ts[L_SLOTS], n;
    if (m->stream && g >= 1 && g <= m->cfg.n_layers) { /* a layer: into its slot, every pass */
        begin ? stream_gather_begin(m, g - 1) : stream_gather_end(m, g - 1);
        return;
    }
    if (!m->stale || g > m->cfg.n_layers + 1) return;
    group_tensors(m, g, ts, &n);
    for (int i = 0; i < n; i++) begin ? tp_gather_begin(m, ts[i]) : tp_gather_end(m, ts[i]);
}

static const float *W(const ax_model_t *m, int t) {
    return m->tp[t].full;
}

/* Layer l's forward for B sequences from its input acts[l].res. whole = 0 stops before the down
 * projection: the backward's recomputation (activation checkpointing) needs every activation
 * but the layer's output, which the layer above already consumed. */
static void layer_forward(ax_model_t *m, int l, int B, int whole) {
    const ax_model_config *c = &m->cfg;
    int T = m->T, Cx = m->Cx, Cy = m->Cy, Hy = m->Hy, D = c->dim / c->n_heads;
    int N = B * T, L = c->n_layers, Hky = m->Hky;
    long Q3 = (long)Cy + 2L * m->Ky; /* a qkv row: [q (Hy heads) | k (Hky) | v (Hky)] */
    int rd = model_rotary_dim(c), par = c->parallel_residual;
    layer_acts *a = &m->acts[l];
    tp_norm_forward(m, LT(m, l, L_NORM1), LT(m, l, L_NORM1B), a->ln1, a->mean1, a->rstd1, a->res,
                    N);
    tp_linear_forward_gin(m, LT(m, l, L_WQKV), a->qkv, a->ln1, N);
    tp_bias_forward(m, LT(m, l, L_BQKV), a->qkv, N);
    if (rd) {
        ax_rope_partial_forward(m->ctx, a->qkv, m->rope_cos, m->rope_sin, B, T, Hy, D, rd, Q3);
        ax_rope_partial_forward(m->ctx, a->qkv + Cy, m->rope_cos, m->rope_sin, B, T, Hky, D, rd,
                                Q3);
    }
    ax_attention_forward_gqa(m->ctx, a->atty, a->att, a->qkv, B, T, Cy, Hy, Hky);
    /* res_mid: the attention branch; sequential adds the residual into it, parallel adds
     * both branches and the residual at the end (HF's mlp + attn + x) */
    tp_linear_forward(m, LT(m, l, L_WO), a->res_mid, a->atty, N);
    tp_bias_forward(m, LT(m, l, L_BO), a->res_mid, N);
    if (!par) ax_accumulate(m->ctx, a->res_mid, a->res, (long)N * Cx);
    tp_norm_forward(m, LT(m, l, L_NORM2), LT(m, l, L_NORM2B), a->ln2, a->mean2, a->rstd2,
                    par ? a->res : a->res_mid, N);
    tp_linear_forward_gin(m, LT(m, l, L_WUP), a->h, a->ln2, N);
    tp_bias_forward(m, LT(m, l, L_BUP), a->h, N);
    tp_mlp_act_forward(m, a->hs, a->h, N);
    if (!whole) return;
    float *res_out = l + 1 < L ? m->acts[l + 1].res : m->res_final;
    tp_linear_forward_gin(m, LT(m, l, L_WDOWN), res_out, a->hs, N);
    tp_bias_forward(m, LT(m, l, L_BDOWN), res_out, N);
    ax_accumulate(m->ctx, res_out, a->res_mid, (long)N * Cx);
    if (par) ax_accumulate(m->ctx, res_out, a->res, (long)N * Cx);
}

double ax_model_forward(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                        const uint8_t *mask, int B, float dscale, int want_grad) {
    const ax_model_config *c = &m->cfg;
    int T = m->T, Cx = m->Cx, N = B * T, L = c->n_layers;
    m->cur_B = B;
    /* the batch to the backend: the kernels (and the backward's embedding) read these copies */
    ax_copy(m->ctx, m->inputs_copy, inputs, (size_t)N * sizeof(int32_t), AX_COPY_H2D);
    ax_copy(m->ctx, m->targets_copy, targets, (size_t)N * sizeof(int32_t), AX_COPY_H2D);
    if (mask) ax_copy(m->ctx, m->mask_copy, mask, (size_t)N, AX_COPY_H2D);
    if (m->stale) stream_invalidate(m); /* the slots hold the old weights */
    targets = m->targets_copy;
    mask = mask ? m->mask_copy : NULL;

    gather_group(m, 0, 1);
    gather_group(m, 1, 1);
    gather_group(m, 0, 0);
    /* vocabulary-parallel embedding: each Y rank adds the rows it owns */
    ax_embedding_shard_forward(m->ctx, m->acts[0].res, m->inputs_copy, W(m, m->t_wte), N, Cx, m->v0,
                               m->vvalid);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_Y, m->acts[0].res, (long)N * Cx, AX_DT_F32,
                                 AX_OP_SUM));
    /* learned positions: rows 0..T-1 of wpe are one contiguous [T * Cx] row added to each
     * sequence's [T * Cx] (replicated over Y: every Y rank adds it after the all-reduce) */
    if (m->t_wpe >= 0) ax_bias_add(m->ctx, m->acts[0].res, W(m, m->t_wpe), B, T * Cx);
    for (int l = 0; l < L; l++) {
        gather_group(m, l + 2, 1);
        gather_group(m, l + 1, 0);
        layer_forward(m, l, B, 1);
    }
    gather_group(m, L + 1, 0);
    m->stale = 0;
    tp_norm_forward(m, m->t_normf, m->t_normfb, m->lnf, m->meanf, m->rstdf, m->res_final, N);
    tp_linear_forward_gin(m, m->t_head, m->logits, m->lnf, N);

    /* vocabulary-parallel cross-entropy: row max, then {sum exp, target logit}, over Y */
    float *rowmax = m->rowstat, *stats = m->rowstat + N;
    ax_ce_rowmax(m->ctx, rowmax, m->logits, N, m->Vl, m->vvalid);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_Y, rowmax, N, AX_DT_F32, AX_OP_MAX));
    ax_ce_partial(m->ctx, stats, m->logits, rowmax, targets, mask, N, m->Vl, m->vvalid, m->v0);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_Y, stats, 2L * N, AX_DT_F32, AX_OP_SUM));
    double loss = ax_ce_finish(m->ctx, m->losses, want_grad ? m->logits : NULL, m->logits, rowmax,
                               stats, targets, mask, dscale, N, m->Vl, m->vvalid, m->v0);
    m->have_grad_logits = want_grad;
    return loss;
}

void ax_model_clear_status(ax_model_t *m) {
    m->status = AX_OK;
}

static void zero(ax_model_t *m, float *p, long n) {
    ax_zero(m->ctx, p, (size_t)n * sizeof(float));
}

static void sync_layer(ax_model_t *m, int l, int begin) {
    for (int s = 0; s < L_SLOTS; s++) {
        int t = LT(m, l, s);
        if (t >= 0) begin ? tp_grad_sync_begin(m, t) : tp_grad_sync_end(m, t);
    }
}

void ax_model_backward(ax_model_t *m) {
    ax_model_backward_ex(m, 1);
}

void ax_model_backward_ex(ax_model_t *m, int last_micro) {
    if (m->inference) {
        tp_note(m, model_needs_grads(m, "ax_model_backward"));
        return;
    }
    if (!m->have_grad_logits) { /* forward ran without want_grad: nothing to do */
        model_grads_settle(m);
        return;
    }
    /* The matrices' gradients are final after their dW GEMM of the last micro-batch when
     * nothing reduces them afterwards (Gdata = Gz = 1) and sums on the host cost no sync (the
     * CPU): their sums of squares are taken then, from cache. The slab's pass over 494 MB took
     * ~19 ms of a 1.5 s step (GPT-2-124M shape, B = 4, T = 64, 2 threads). Same bits either
     * way: the same kernel on the same block. */
    m->gss_early = last_micro && m->dims[AX_AXIS_DATA] == 1 && m->dims[AX_AXIS_Z] == 1 &&
                   !m->stream && !m->ctx->be->is_device;
    for (int i = 0; i < m->n_tensors; i++) m->tp[i].gss_ok = 0; /* this pass adds to them */
    const ax_model_config *c = &m->cfg;
    int B = m->cur_B, T = m->T, Cx = m->Cx, Cy = m->Cy, Hy = m->Hy;
    int D = c->dim / c->n_heads, N = B * T, L = c->n_layers, Hky = m->Hky;
    long NC = (long)N * Cx, Q3 = (long)Cy + 2L * m->Ky;
    float *dres = m->dres, *dln = m->dln, *dalt = m->dres2;
    int rd = model_rotary_dim(c), par = c->parallel_residual;

    /* LM head and final norm */
    tp_linear_backward_gin(m, m->t_head, dln, m->logits, m->lnf, N); /* din: written, not += */
    zero(m, dres, NC);
    tp_norm_backward(m, m->t_normf, m->t_normfb, dres, dln, m->res_final, m->meanf, m->rstdf, N);
    if (last_micro) {
        tp_grad_sync_begin(m, m->t_normf);
        if (m->t_normfb >= 0) tp_grad_sync_begin(m, m->t_normfb);
        if (m->t_head != m->t_wte) tp_grad_sync_begin(m, m->t_head);
    }

    for (int l = L - 1; l >= 0; l--) {
        layer_acts *a = &m->acts[l];
        /* streamed weights: layer l - 1's gather runs behind this layer; this one's gradient
         * slot waits for layer l + 2's reduce-scatter to leave it */
        if (l > 0) stream_gather_begin(m, l - 1);
        stream_gather_end(m, l);
        stream_grad_begin(m, l);
        /* recompute: the shared working set still holds the top layer's activations */
        if (m->recompute && l < L - 1) layer_forward(m, l, B, 0);
        /* sequential: the norms' input gradients accumulate into dres itself, which after the
         * MLP branch is the gradient of res_mid. Parallel: both branches take the output's
         * gradient dres, and the input's gradient (dres + both norms') builds up in dacc. */
        float *dacc = dres;
        if (par) {
            dacc = dalt;
            ax_copy(m->ctx, dacc, dres, (size_t)NC * sizeof(float), AX_COPY_D2D);
        }
        /* MLP branch: res_out = res_mid + hs Wdown^T (+ b_down) */
        float *dhs = m->dbig;
        tp_bias_backward(m, LT(m, l, L_BDOWN), dres, N);
        tp_linear_backward_gin(m, LT(m, l, L_WDOWN), dhs, dres, a->hs, N);
        tp_mlp_act_backward(m, dhs, a->h, N);
        tp_bias_backward(m, LT(m, l, L_BUP), m->dh, N); /* only with biases: dh is fp32 then */
        tp_linear_backward_dh(m, LT(m, l, L_WUP), dln, a->ln2, N);
        tp_norm_backward(m, LT(m, l, L_NORM2), LT(m, l, L_NORM2B), dacc, dln,
                         par ? a->res : a->res_mid, a->mean2, a->rstd2, N);

        /* attention branch: res_mid = res + atty Wo^T (+ bo) */
        float *datty = m->dbig;
        tp_bias_backward(m, LT(m, l, L_BO), dres, N);
        tp_linear_backward(m, LT(m, l, L_WO), datty, dres, a->atty, N);
        zero(m, m->dqkv, N * Q3);
        ax_attention_backward_gqa(m->ctx, m->dqkv, m->att_scratch, datty, a->qkv, a->att, a->atty,
                                  B, T, Cy, Hy, Hky);
        if (rd) {
            ax_rope_partial_backward(m->ctx, m->dqkv, m->rope_cos, m->rope_sin, B, T, Hy, D, rd,
                                     Q3);
            ax_rope_partial_backward(m->ctx, m->dqkv + Cy, m->rope_cos, m->rope_sin, B, T, Hky, D,
                                     rd, Q3);
        }
        tp_bias_backward(m, LT(m, l, L_BQKV), m->dqkv, N);
        tp_linear_backward_gin(m, LT(m, l, L_WQKV), dln, m->dqkv, a->ln1, N);
        tp_norm_backward(m, LT(m, l, L_NORM1), LT(m, l, L_NORM1B), dacc, dln, a->res, a->mean1,
                         a->rstd1, N);
        if (par) dalt = dres, dres = dacc; /* the next layer down continues from dacc */
        /* ORS: runs behind the layers below (streamed: every micro-batch, the slot is reused) */
        if (m->stream)
            stream_grad_sync(m, l);
        else if (last_micro)
            sync_layer(m, l, 1);
    }
    ax_embedding_shard_backward(m->ctx, m->tp[m->t_wte].gfull, dres, m->inputs_copy, N, Cx, m->v0,
                                m->vvalid);
    /* learned positions: column sums of dres viewed as [B, T * Cx] (see the forward) */
    if (m->t_wpe >= 0) ax_bias_backward(m->ctx, m->tp[m->t_wpe].gfull, dres, B, T * Cx);
    model_grads_settle(m); /* every dw_first tensor was written above: a no-op, kept as a guard */
    m->have_grad_logits = 0;
    m->gss_early = 0;
    stream_grad_end(m); /* the bottom layers' reduce-scatters, behind the embedding's backward */
    if (!last_micro) return;
    tp_grad_sync_begin(m, m->t_wte);
    if (m->t_wpe >= 0) tp_grad_sync_begin(m, m->t_wpe);
    for (int l = L - 1; l >= 0 && !m->stream; l--) sync_layer(m, l, 0);
    tp_grad_sync_end(m, m->t_normf);
    if (m->t_normfb >= 0) tp_grad_sync_end(m, m->t_normfb);
    if (m->t_wpe >= 0) tp_grad_sync_end(m, m->t_wpe);
    if (m->t_head != m->t_wte) tp_grad_sync_end(m, m->t_head);
    tp_grad_sync_end(m, m->t_wte);
    /* data parallel: the replicas' gradients summed once per step */
    if (m->gc16 && m->dims[AX_AXIS_DATA] > 1)
        gradcomm_data_allreduce(m);
    else
        tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_DATA, m->grads, (long)m->n_local, AX_DT_F32,
                                     AX_OP_SUM));
}
