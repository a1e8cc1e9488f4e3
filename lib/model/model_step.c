/* The model's forward and backward on the 4D grid, in the order they run: embedding, the blocks
 * (block.c), final norm, LM head and loss, then back. Besides each op's own all-reduce (named
 * at the call) the weights move over Z: with Gz > 1 every tensor is all-gathered from its
 * shards before use, a layer ahead (OAG), and its gradient reduce-scattered back behind the
 * layers below (ORS); the data axis sums the gradients once a step. */
#include "lib/model/tp_linear.h"
#include "lib/backend/ops.h"

static void gather_group(ax_model_t *m, int g, int begin);
static void sync_group(ax_model_t *m, int g, int begin);

double ax_model_forward(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                        const uint8_t *mask, int B, float dscale, int want_grad) {
    int T = m->T, Cx = m->Cx, N = B * T, L = m->cfg.n_layers;
    m->cur_B = B;
    /* the batch to the backend: the kernels (and the backward's embedding) read these copies */
    ax_copy(m->ctx, m->inputs_copy, inputs, (size_t)N * sizeof(int32_t), AX_COPY_H2D);
    ax_copy(m->ctx, m->targets_copy, targets, (size_t)N * sizeof(int32_t), AX_COPY_H2D);
    if (mask) ax_copy(m->ctx, m->mask_copy, mask, (size_t)N, AX_COPY_H2D);
    if (m->stale) stream_invalidate(m); /* the slots hold the old weights */
    targets = m->targets_copy;
    mask = mask ? m->mask_copy : NULL;

    /* weight groups: 0 the embedding, 1..L the blocks, L + 1 the final norm and head; group
     * g + 1's gather is in flight while group g computes */
    gather_group(m, 0, 1);
    gather_group(m, 1, 1);
    gather_group(m, 0, 0);
    /* vocabulary-parallel embedding: each Y rank adds the rows it owns */
    ax_embedding_shard_forward(m->ctx, m->acts[0].res, m->inputs_copy, m->tp[m->t_wte].full, N, Cx,
                               m->v0, m->vvalid);
    tp_allreduce_sum(m, AX_AXIS_Y, m->acts[0].res, (long)N * Cx);
    /* learned positions: rows 0..T-1 of wpe are one contiguous [T * Cx] row added to each
     * sequence's [T * Cx] (replicated over Y: every Y rank adds it after the all-reduce) */
    if (m->t_wpe >= 0) ax_bias_add(m->ctx, m->acts[0].res, m->tp[m->t_wpe].full, B, T * Cx);
    for (int l = 0; l < L; l++) {
        gather_group(m, l + 2, 1);
        gather_group(m, l + 1, 0);
        block_forward(m, l, B, 1);
    }
    gather_group(m, L + 1, 0);
    m->stale = 0;
    tp_norm_forward(m, m->t_normf, m->t_normfb, m->lnf, m->meanf, m->rstdf, m->res_final, N);
    tp_col_forward(m, m->t_head, m->logits, m->lnf, m->gin16, N); /* all-reduce over X */

    /* vocabulary-parallel cross-entropy: row max, then {sum exp, target logit}, over Y */
    float *rowmax = m->rowstat, *stats = m->rowstat + N;
    ax_ce_rowmax(m->ctx, rowmax, m->logits, N, m->Vl, m->vvalid);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_Y, rowmax, N, AX_DT_F32, AX_OP_MAX));
    ax_ce_partial(m->ctx, stats, m->logits, rowmax, targets, mask, N, m->Vl, m->vvalid, m->v0);
    tp_allreduce_sum(m, AX_AXIS_Y, stats, 2L * N);
    double loss = ax_ce_finish(m->ctx, m->losses, want_grad ? m->logits : NULL, m->logits, rowmax,
                               stats, targets, mask, dscale, N, m->Vl, m->vvalid, m->v0);
    m->have_grad_logits = want_grad;
    return loss;
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
     * CPU): their sums of squares are taken then, from cache. Same bits either way: the same
     * kernel on the same block. */
    m->gss_early = last_micro && m->dims[AX_AXIS_DATA] == 1 && m->dims[AX_AXIS_Z] == 1 &&
                   !m->stream && !m->ctx->be->is_device;
    for (int i = 0; i < m->n_tensors; i++) m->tp[i].gss_ok = 0; /* this pass adds to them */
    int B = m->cur_B, N = B * m->T, L = m->cfg.n_layers;
    /* dres: the gradient of the residual stream. A parallel-residual block builds its input's
     * gradient in a second buffer (block_backward), which then takes dres's place. */
    float *dres = m->dres, *dacc = m->cfg.parallel_residual ? m->dres2 : m->dres;

    /* LM head (dlogits are in logits) and final norm */
    tp_col_backward(m, m->t_head, m->dln, m->logits, 0, m->lnf, m->gin16, N); /* over Y */
    ax_zero(m->ctx, dres, (size_t)N * m->Cx * sizeof(float));
    tp_norm_backward(m, m->t_normf, m->t_normfb, dres, m->dln, m->res_final, m->meanf, m->rstdf, N);
    if (last_micro) sync_group(m, L + 1, 1); /* ORS: over Z, behind the blocks' backward */

    for (int l = L - 1; l >= 0; l--) {
        /* streamed weights: layer l - 1's gather runs behind this layer; this one's gradient
         * slot waits for layer l + 2's reduce-scatter to leave it */
        if (l > 0) stream_gather_begin(m, l - 1);
        stream_gather_end(m, l);
        stream_grad_begin(m, l);
        block_backward(m, l, B, dres, dacc);
        if (dacc != dres) { /* parallel: the input's gradient goes on down from dacc */
            float *tmp = dres;
            dres = dacc, dacc = tmp;
        }
        /* ORS (streamed: every micro-batch, the slot is reused) */
        if (m->stream)
            stream_grad_sync(m, l);
        else if (last_micro)
            sync_group(m, l + 1, 1);
    }
    ax_embedding_shard_backward(m->ctx, m->tp[m->t_wte].gfull, dres, m->inputs_copy, N, m->Cx,
                                m->v0, m->vvalid);
    /* learned positions: column sums of dres viewed as [B, T * Cx] (see the forward) */
    if (m->t_wpe >= 0) ax_bias_backward(m->ctx, m->tp[m->t_wpe].gfull, dres, B, m->T * m->Cx);
    model_grads_settle(m); /* every dw_first tensor was written above: a no-op, kept as a guard */
    m->have_grad_logits = 0;
    m->gss_early = 0;
    stream_grad_end(m); /* the bottom layers' reduce-scatters, behind the embedding's backward */
    if (!last_micro) return;
    sync_group(m, 0, 1); /* the embedding's reduce-scatter; then every one is waited for */
    for (int l = L - 1; l >= 0 && !m->stream; l--) sync_group(m, l + 1, 0);
    sync_group(m, L + 1, 0);
    sync_group(m, 0, 0);
    /* data parallel: the replicas' gradients summed once per step */
    if (m->gc16 && m->dims[AX_AXIS_DATA] > 1)
        gradcomm_data_allreduce(m);
    else
        tp_allreduce_sum(m, AX_AXIS_DATA, m->grads, (long)m->n_local);
}

void ax_model_clear_status(ax_model_t *m) {
    m->status = AX_OK;
}

/* Weight group g's tensors in slab order: 0 the embedding, 1..L the blocks, L + 1 the final
 * norm and an untied head; returns the count. */
static int group_tensors(const ax_model_t *m, int g, int *ts) {
    int n = 0;
    if (g == 0) {
        ts[n++] = m->t_wte;
        if (m->t_wpe >= 0) ts[n++] = m->t_wpe;
    } else if (g <= m->cfg.n_layers) {
        n = model_layer_tensors(m, g - 1, ts);
    } else if (g == m->cfg.n_layers + 1) {
        ts[n++] = m->t_normf;
        if (m->t_normfb >= 0) ts[n++] = m->t_normfb;
        if (m->t_head != m->t_wte) ts[n++] = m->t_head;
    }
    return n;
}

/* Begins or ends group g's all-gather over Z: a streamed layer's into its slot on every pass,
 * the rest only when the weights changed since the last gather. */
static void gather_group(ax_model_t *m, int g, int begin) {
    int ts[L_SLOTS], n;
    if (m->stream && g >= 1 && g <= m->cfg.n_layers) {
        begin ? stream_gather_begin(m, g - 1) : stream_gather_end(m, g - 1);
        return;
    }
    if (!m->stale) return;
    n = group_tensors(m, g, ts);
    for (int i = 0; i < n; i++) begin ? tp_gather_begin(m, ts[i]) : tp_gather_end(m, ts[i]);
}

/* Begins or ends the reduce-scatter over Z of group g's gradients. */
static void sync_group(ax_model_t *m, int g, int begin) {
    int ts[L_SLOTS], n = group_tensors(m, g, ts);
    for (int i = 0; i < n; i++) begin ? tp_grad_sync_begin(m, ts[i]) : tp_grad_sync_end(m, ts[i]);
}
