/* Gradients reduced in bf16 (ax_model_opts.grad_comm_bf16, train --grad-comm bf16): the Z
 * reduce-scatters of the gradient blocks and the data-parallel all-reduce of the shards move
 * bf16, half the bytes of fp32, as AxoNN and Megatron-LM reduce gradients at scale. Each
 * tensor's block is rounded to bf16 into a staging buffer, reduce-scattered in bf16 (every
 * partial sum rounded to bf16: lib/dist's combine, NCCL's own on the device), and the shard
 * widened back into the fp32 slab when the reduce-scatter is waited for; the all-reduce does the
 * same over the whole slab. Parameters, moments and the update stay fp32. Staging: half a
 * float per gradient-block element (Z > 1; two layers' worth with --z-gather layer, whose
 * slots the layers share) plus half the slab (D > 1). */
#include "lib/backend/ops.h"
#include "lib/model/model_internal.h"

/* bf16 elements tensor t stages: its block (Gz shards) then the received shard */
static int64_t staged(const ax_model_t *m, int t) {
    return m->tp[t].shard_n * (m->dims[AX_AXIS_Z] + 1);
}

/* the tensor whose staging t shares: a streamed layer's the same slot of the layer two below
 * (its reduce-scatter is waited for before the slot is used again: stream_grad_begin) */
static int owner(const ax_model_t *m, int t, const int *layer_of, const int *slot_of) {
    int l = layer_of[t];
    return (m->stream && l >= 2) ? LT(m, l % 2, slot_of[t]) : t;
}

ax_status gradcomm_alloc(ax_model_t *m) {
    int gz = m->dims[AX_AXIS_Z], n = m->n_tensors, L = m->cfg.n_layers;
    if (m->dims[AX_AXIS_DATA] > 1 && !(m->gc_data = ax_dev_alloc(m->ctx, 2 * (size_t)m->n_local)))
        return AX_ERR_NOMEM;
    if (m->gc_data) m->gc_bytes = 2 * (size_t)m->n_local;
    if (gz == 1) return AX_OK;
    int *layer_of = ax_host_alloc(m->ctx, 2 * (size_t)n * sizeof(int)), *slot_of = layer_of + n;
    if (!layer_of) return AX_ERR_NOMEM;
    for (int t = 0; t < n; t++) layer_of[t] = -1;
    for (int l = 0; l < L; l++)
        for (int s = 0; s < L_SLOTS; s++)
            if (LT(m, l, s) >= 0) layer_of[LT(m, l, s)] = l, slot_of[LT(m, l, s)] = s;
    int64_t total = 0;
    for (int t = 0; t < n; t++)
        if (owner(m, t, layer_of, slot_of) == t) total += staged(m, t);
    m->gc_arena = ax_dev_alloc(m->ctx, 2 * (size_t)(total > 0 ? total : 1));
    m->gc_bytes += 2 * (size_t)total;
    if (m->gc_arena) {
        int64_t off = 0;
        for (int t = 0; t < n; t++) /* owners come first: a layer below comes earlier */
            if (owner(m, t, layer_of, slot_of) == t)
                m->tp[t].rs16 = m->gc_arena + off, off += staged(m, t);
            else
                m->tp[t].rs16 = m->tp[owner(m, t, layer_of, slot_of)].rs16;
    }
    ax_host_free(m->ctx, layer_of);
    return m->gc_arena ? AX_OK : AX_ERR_NOMEM;
}

void gradcomm_free(ax_model_t *m) {
    ax_dev_free(m->ctx, m->gc_data), ax_dev_free(m->ctx, m->gc_arena);
    m->gc_data = m->gc_arena = NULL;
    m->gc_bytes = 0;
}

void gradcomm_scatter_begin(ax_model_t *m, int t, float *recv) {
    tp_tensor *p = &m->tp[t];
    int gz = m->dims[AX_AXIS_Z];
    ax_to_bf16(m->ctx, p->rs16, p->gfull, p->shard_n * gz);
    p->rs16_out = recv;
    tp_note(m, ax_overlap_reduce_scatter(m->ov, ov_scatter(t), AX_AXIS_Z, p->rs16,
                                         p->rs16 + p->shard_n * gz, p->shard_n, AX_DT_BF16,
                                         AX_OP_SUM));
}

void gradcomm_scatter_end(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    if (!p->rs16_out) return;
    ax_from_bf16(m->ctx, p->rs16_out, p->rs16 + p->shard_n * m->dims[AX_AXIS_Z], p->shard_n);
    p->rs16_out = NULL;
}

void gradcomm_data_allreduce(ax_model_t *m) {
    long n = (long)m->n_local;
    ax_to_bf16(m->ctx, m->gc_data, m->grads, n);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_DATA, m->gc_data, n, AX_DT_BF16, AX_OP_SUM));
    ax_from_bf16(m->ctx, m->grads, m->gc_data, n);
}
