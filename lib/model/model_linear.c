/* The tensor-parallel layers (AxoNN): weight gathers over Z, GEMMs on the local block, the
 * all-reduces over X or Y, gradient reduce-scatters over Z, and the RMSNorm over a hidden
 * dimension split across X. With overlap on, the dX all-reduce runs behind the dW GEMM (OAR),
 * gathers are issued a layer ahead (OAG) and gradient reduce-scatters run behind earlier
 * layers' backward (ORS). */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"

static int dimz(const ax_model_t *m) {
    return m->dims[AX_AXIS_Z];
}

void tp_gather_begin(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    if (dimz(m) == 1) return; /* full is the slab itself */
    const float *shard = m->params + p->shard_off;
    if (m->overlap)
        tp_note(m, ax_coll_iallgather(m->grid, AX_AXIS_Z, shard, p->shard_n, p->full, AX_DT_F32,
                                      &p->gather));
    else
        tp_note(m, ax_coll_allgather(m->grid, AX_AXIS_Z, shard, p->shard_n, p->full, AX_DT_F32));
}

void tp_gather_end(ax_model_t *m, int t) {
    tp_note(m, ax_wait(&m->tp[t].gather));
}

/* normal and vocabulary layers reduce their output over X, transposed ones over Y; the input
 * gradient goes over the other axis */
static ax_axis out_axis(const tp_tensor *p) {
    return p->kind == TP_TRANSPOSED ? AX_AXIS_Y : AX_AXIS_X;
}
static ax_axis in_axis(const tp_tensor *p) {
    return p->kind == TP_TRANSPOSED ? AX_AXIS_X : AX_AXIS_Y;
}

/* out[N, rows_l] = in[N, cols_l] W^T, summed over the input axis's ranks */
void tp_linear_forward(ax_model_t *m, int t, float *out, const float *in, int N) {
    tp_tensor *p = &m->tp[t];
    ax_matmul_forward(m->ctx, out, in, p->full, N, (int)p->cols_l, (int)p->rows_l);
    tp_note(
        m, ax_coll_allreduce(m->grid, out_axis(p), out, (long)N * p->rows_l, AX_DT_F32, AX_OP_SUM));
}

/* rows of dW per GEMM chunk while an all-reduce is in flight: small enough to poll MPI often,
 * large enough to keep the GEMM efficient */
#define DW_CHUNK_ROWS 256

/* Progress every in-flight weight gather and gradient reduce-scatter: Open MPI (and the ring
 * reduce-scatter in comm.c) only move data inside MPI calls. */
static void poll_inflight(ax_model_t *m) {
    for (int i = 0; i < m->n_tensors; i++) {
        if (m->tp[i].gather.active) ax_test(&m->tp[i].gather);
        if (m->tp[i].scatter.active) ax_test(&m->tp[i].scatter);
    }
}

/* din[N, cols_l] (zeroed by the caller) += dout W, then all-reduced; gfull += dout^T in */
void tp_linear_backward(ax_model_t *m, int t, float *din, const float *dout, const float *in,
                        int N) {
    tp_tensor *p = &m->tp[t];
    int n = (int)p->rows_l, k = (int)p->cols_l;
    ax_axis axis = in_axis(p);
    ax_matmul_backward(m->ctx, din, NULL, dout, in, p->full, N, k, n);
    if (!m->overlap || ax_grid_size(m->grid) == 1) {
        tp_note(m, ax_coll_allreduce(m->grid, axis, din, (long)N * k, AX_DT_F32, AX_OP_SUM));
        ax_matmul_backward(m->ctx, NULL, p->gfull, dout, in, p->full, N, k, n);
        return;
    }
    ax_req req = {0};
    tp_note(m, ax_coll_iallreduce(m->grid, axis, din, (long)N * k, AX_DT_F32, AX_OP_SUM, &req));
    for (int r0 = 0; r0 < n; r0 += DW_CHUNK_ROWS) { /* OAR: dW in chunks, MPI polled between */
        int rows = n - r0 < DW_CHUNK_ROWS ? n - r0 : DW_CHUNK_ROWS;
        ax_gemm(m->ctx, 'T', 'N', rows, k, N, 1.0f, dout + r0, n, in, k, 1.0f,
                p->gfull + (long)r0 * k, k);
        ax_test(&req);
        poll_inflight(m); /* ORS: earlier layers' reduce-scatters move meanwhile */
    }
    tp_note(m, ax_wait(&req));
}

void tp_grad_sync_begin(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    if (dimz(m) == 1) return; /* gfull is the slab itself */
    float *shard = m->grads + p->shard_off;
    if (m->overlap)
        tp_note(m, ax_coll_ireduce_scatter(m->grid, AX_AXIS_Z, p->gfull, shard, p->shard_n,
                                           AX_DT_F32, AX_OP_SUM, &p->scatter));
    else
        tp_note(m, ax_coll_reduce_scatter(m->grid, AX_AXIS_Z, p->gfull, shard, p->shard_n,
                                          AX_DT_F32, AX_OP_SUM));
}

void tp_grad_sync_end(ax_model_t *m, int t) {
    tp_note(m, ax_wait(&m->tp[t].scatter));
}

void tp_rmsnorm_forward(ax_model_t *m, int t, float *out, float *rstd, const float *in, int N) {
    float *ss = m->rowstat;
    ax_rmsnorm_sumsq(m->ctx, ss, in, N, m->Cx);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_X, ss, N, AX_DT_F32, AX_OP_SUM));
    ax_rmsnorm_apply(m->ctx, out, rstd, in, m->tp[t].full, ss, N, m->Cx, m->cfg.dim,
                     m->cfg.norm_eps);
}

void tp_rmsnorm_backward(ax_model_t *m, int t, float *din, const float *dout, const float *in,
                         const float *rstd, int N) {
    float *dot = m->rowstat;
    const float *w = m->tp[t].full;
    ax_rmsnorm_backward_dot(m->ctx, dot, dout, in, w, N, m->Cx);
    tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_X, dot, N, AX_DT_F32, AX_OP_SUM));
    ax_rmsnorm_backward_apply(m->ctx, din, m->tp[t].gfull, dout, in, w, rstd, dot, N, m->Cx,
                              m->cfg.dim);
}
