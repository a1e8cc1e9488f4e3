/* Layer weights streamed over Z (AxoNN's depth axis as it runs at scale, ZeRO-3's schedule):
 * instead of every layer's gathered block living for the whole step, layer l's blocks live in
 * slot l % 2 of two layer-sized buffers. The forward gathers layer l + 1 into the other slot
 * while layer l computes; the backward gathers layer l - 1 while layer l computes (the two top
 * layers are still in place when it starts, the two bottom ones when the next micro-batch
 * starts); each layer's gradient block is reduce-scattered into the shard as soon as its
 * backward ends, behind the layers below. Gathered memory falls from every layer's blocks to two
 * layers'; the price is up to two gathers a layer per micro-batch and a reduce-scatter a layer
 * per micro-batch (plan/perfmodel.c counts them). docs/grid.md. */
#include "lib/backend/ops.h"
#include "lib/model/tp_linear.h"

void stream_invalidate(ax_model_t *m) {
    m->slot_layer[0] = m->slot_layer[1] = -1;
}

void stream_gather_begin(ax_model_t *m, int l) {
    int s = l % 2, ts[L_SLOTS];
    if (!m->stream || m->slot_layer[s] == l) return;
    int n = model_layer_tensors(m, l, ts);
    for (int i = 0; i < n; i++) tp_gather_begin(m, ts[i]);
    m->slot_layer[s] = l;
    m->slot_pending[s] = 1;
}

void stream_gather_end(ax_model_t *m, int l) {
    int s = l % 2, ts[L_SLOTS];
    if (!m->stream || !m->slot_pending[s] || m->slot_layer[s] != l) return;
    int n = model_layer_tensors(m, l, ts);
    for (int i = 0; i < n; i++) tp_gather_end(m, ts[i]);
    m->slot_pending[s] = 0;
}

/* the reduce-scatter from gradient slot s done; added into the slab when it landed in rstmp */
static void rs_end(ax_model_t *m, int s) {
    int l = m->slot_rs_layer[s], ts[L_SLOTS];
    if (l < 0) return;
    int n = model_layer_tensors(m, l, ts);
    for (int i = 0; i < n; i++) {
        tp_tensor *p = &m->tp[ts[i]];
        tp_grad_sync_end(m, ts[i]);
        if (m->slot_rs_acc[s])
            ax_accumulate(m->ctx, m->grads + p->shard_off, p->rs_tmp, (long)p->shard_n);
    }
    m->slot_rs_layer[s] = -1;
}

void stream_grad_begin(ax_model_t *m, int l) {
    if (!m->stream) return;
    int s = l % 2;
    rs_end(m, s); /* layer l + 2's gradients leave the slot first */
    ax_zero(m->ctx, m->gslot[s], (size_t)m->slot_block * sizeof(float));
}

void stream_grad_sync(ax_model_t *m, int l) {
    if (!m->stream) return;
    int s = l % 2, ts[L_SLOTS], n = model_layer_tensors(m, l, ts);
    /* the first micro-batch's sum is the gradient (the slab was zeroed): straight into it, so
     * one micro-batch gives the bits of the kept-blocks schedule; later ones add */
    m->slot_rs_acc[s] = m->micro > 0;
    for (int i = 0; i < n; i++) {
        tp_tensor *p = &m->tp[ts[i]];
        tp_grad_sync_begin_to(m, ts[i], m->micro > 0 ? p->rs_tmp : m->grads + p->shard_off);
    }
    m->slot_rs_layer[s] = l;
}

void stream_grad_end(ax_model_t *m) {
    if (!m->stream) return;
    rs_end(m, 0);
    rs_end(m, 1);
    m->micro++;
}

ax_status stream_alloc(ax_model_t *m) {
    int ts[L_SLOTS], n = model_layer_tensors(m, 0, ts), gz = m->dims[AX_AXIS_Z];
    m->slot_block = m->slot_shard = 0;
    for (int i = 0; i < n; i++) {
        m->slot_block += m->tp[ts[i]].shard_n * gz;
        m->slot_shard += m->tp[ts[i]].shard_n;
    }
    for (int s = 0; s < 2; s++) {
        size_t fb = (size_t)(m->slot_block > 0 ? m->slot_block : 1) * sizeof(float);
        size_t sb = (size_t)(m->slot_shard > 0 ? m->slot_shard : 1) * sizeof(float);
        m->wslot[s] = ax_dev_alloc(m->ctx, fb);
        m->gslot[s] = ax_dev_alloc(m->ctx, fb);
        m->rstmp[s] = ax_dev_alloc(m->ctx, sb);
        if (m->gin16) m->wslot16[s] = ax_dev_alloc(m->ctx, fb / 2);
        if (!m->wslot[s] || !m->gslot[s] || !m->rstmp[s] || (m->gin16 && !m->wslot16[s]))
            return AX_ERR_NOMEM;
        m->slot_layer[s] = m->slot_rs_layer[s] = -1;
        m->slot_pending[s] = 0;
    }
    /* every layer has the same tensors with the same shapes: the same offsets in its slot */
    for (int l = 0; l < m->cfg.n_layers; l++) {
        int64_t fo = 0, so = 0;
        n = model_layer_tensors(m, l, ts);
        for (int i = 0; i < n; i++) {
            tp_tensor *p = &m->tp[ts[i]];
            p->full = m->wslot[l % 2] + fo;
            p->gfull = m->gslot[l % 2] + fo;
            p->rs_tmp = m->rstmp[l % 2] + so;
            if (m->gin16 && p->gemm) p->full16 = m->wslot16[l % 2] + fo;
            fo += p->shard_n * gz, so += p->shard_n;
        }
    }
    return AX_OK;
}

void stream_free(ax_model_t *m) {
    for (int s = 0; s < 2; s++) {
        ax_dev_free(m->ctx, m->wslot[s]), ax_dev_free(m->ctx, m->gslot[s]);
        ax_dev_free(m->ctx, m->rstmp[s]), ax_dev_free(m->ctx, m->wslot16[s]);
        m->wslot[s] = m->gslot[s] = m->rstmp[s] = NULL;
        m->wslot16[s] = NULL;
    }
}
