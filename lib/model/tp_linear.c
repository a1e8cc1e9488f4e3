/* The tensor-parallel linear kinds of tp_linear.h: GEMMs on the local block, the all-reduce
 * that completes each, and the weights' and gradients' movement over Z. */
#include "lib/model/tp_linear.h"
#include "lib/backend/ops.h"

/* leading dimension of a GEMM input [N, cols] in elements: bf16 storage pads its rows */
static long in_ld(int in16, long cols) {
    return in16 ? ax_bf16_ld(cols) : cols;
}

/* out[N, rows_l] = in[N, cols_l] W^T, then summed over the ranks of `axis` (which split the
 * inputs) */
static void linear_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N,
                           ax_axis axis) {
    tp_tensor *p = &m->tp[t];
    const void *pack = m->decoding && m->dec_pack && !in16 ? m->dec_pack[t] : NULL;
    if (pack)
        ax_matmul_forward_packed(m->ctx, out, in, pack, N, (int)p->cols_l, (int)p->rows_l);
    else if (p->full16) /* a bf16 model: the weight's bf16 copy */
        ax_gemm_mixed(m->ctx, 'N', 'T', N, p->rows_l, p->cols_l, 1.0f, in, in16,
                      in_ld(in16, p->cols_l), p->full16, 1, p->cols_l, 0.0f, out, p->rows_l);
    else
        ax_matmul_forward(m->ctx, out, in, p->full, N, (int)p->cols_l, (int)p->rows_l);
    tp_allreduce_sum(m, axis, out, (long)N * p->rows_l);
}

void tp_col_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N) {
    linear_forward(m, t, out, in, in16, N, AX_AXIS_X);
}
void tp_row_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N) {
    linear_forward(m, t, out, in, in16, N, AX_AXIS_Y);
}

/* rows of dW per GEMM chunk while an all-reduce is in flight: small enough to give the
 * transport progress often, large enough to keep the GEMM efficient */
#define DW_CHUNK_ROWS 256

typedef struct {
    ax_model_t *m;
    tp_tensor *p;
    const void *dout, *in;
    int dout16, in16, N;
} dw_job;

/* column r0 of a row-major matrix, fp32 or bf16 storage */
static const void *column(const void *x, int x16, long r0) {
    return x16 ? (const void *)((const uint16_t *)x + r0) : (const void *)((const float *)x + r0);
}

/* gfull rows [r0, r1) += dout[:, r0:r1]^T in; = when gfull is stale (lazy zeroing) */
static void dw_rows(void *arg, long r0, long r1) {
    const dw_job *j = arg;
    int n = (int)j->p->rows_l, k = (int)j->p->cols_l;
    float beta = j->p->g_stale ? 0.0f : 1.0f;
    if (j->in16 || j->dout16)
        ax_gemm_mixed(j->m->ctx, 'T', 'N', r1 - r0, k, j->N, 1.0f, column(j->dout, j->dout16, r0),
                      j->dout16, in_ld(j->dout16, n), j->in, j->in16, in_ld(j->in16, k), beta,
                      j->p->gfull + r0 * k, k);
    else
        ax_gemm(j->m->ctx, 'T', 'N', (int)(r1 - r0), k, j->N, 1.0f, (const float *)j->dout + r0, n,
                j->in, k, beta, j->p->gfull + r0 * k, k);
}

/* din[N, cols_l] = dout W, all-reduced over `axis` (the ranks that split the outputs) while
 * gfull += dout^T in is computed in chunks (OAR) */
static void linear_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16,
                            const void *in, int in16, int N, ax_axis axis) {
    tp_tensor *p = &m->tp[t];
    int n = (int)p->rows_l, k = (int)p->cols_l;
    if (p->full16)
        ax_gemm_mixed(m->ctx, 'N', 'N', N, k, n, 1.0f, dout, dout16, in_ld(dout16, n), p->full16, 1,
                      k, 0.0f, din, k);
    else /* the dX half of matmul_backward, writing instead of accumulating */
        ax_gemm(m->ctx, 'N', 'N', N, k, n, 1.0f, dout, n, p->full, k, 0.0f, din, k);
    tp_note(m, ax_overlap_allreduce(m->ov, OV_OAR, axis, din, (long)N * k, AX_DT_F32, AX_OP_SUM));
    if (m->dp_pass) { /* DP-SGD's norm pass: the per-example norms instead of dW */
        dp_linear_norms(m, t, dout, dout16, in, in16, N);
        tp_note(m, ax_overlap_wait(m->ov, OV_OAR));
        return;
    }
    dw_job job = {m, p, dout, in, dout16, in16, N};
    ax_overlap_compute(m->ov, n, DW_CHUNK_ROWS, dw_rows, &job);
    p->g_stale = 0; /* every row written */
    /* final now (a tied LM head's embedding scatter comes later): sum its squares while the
     * block is in cache */
    if (m->gss_early && p->dw_first && t != m->t_wte) {
        p->gss = ax_sum_squares(m->ctx, p->gfull, (long)p->shard_n);
        p->gss_ok = 1;
    }
    tp_note(m, ax_overlap_wait(m->ov, OV_OAR));
}

void tp_col_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16, const void *in,
                     int in16, int N) {
    linear_backward(m, t, din, dout, dout16, in, in16, N, AX_AXIS_Y);
}
void tp_row_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16, const void *in,
                     int in16, int N) {
    linear_backward(m, t, din, dout, dout16, in, in16, N, AX_AXIS_X);
}

void tp_gather_begin(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    if (m->dims[AX_AXIS_Z] == 1) return; /* full is the slab itself */
    tp_note(m, ax_overlap_allgather(m->ov, ov_gather(t), AX_AXIS_Z, m->params + p->shard_off,
                                    p->shard_n, p->full, AX_DT_F32));
}

void tp_gather_end(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    tp_note(m, ax_overlap_wait(m->ov, ov_gather(t)));
    if (m->dims[AX_AXIS_Z] > 1 && p->full16) /* the GEMMs' bf16 copy of the block that landed */
        ax_to_bf16(m->ctx, p->full16, p->full, (long)(p->shard_n * m->dims[AX_AXIS_Z]));
}

void tp_grad_sync_begin(ax_model_t *m, int t) {
    tp_grad_sync_begin_to(m, t, m->grads + m->tp[t].shard_off);
}

void tp_grad_sync_begin_to(ax_model_t *m, int t, float *recv) {
    tp_tensor *p = &m->tp[t];
    if (m->dims[AX_AXIS_Z] == 1) return; /* gfull is the slab itself */
    if (m->gc16) {
        gradcomm_scatter_begin(m, t, recv);
        return;
    }
    tp_note(m, ax_overlap_reduce_scatter(m->ov, ov_scatter(t), AX_AXIS_Z, p->gfull, recv,
                                         p->shard_n, AX_DT_F32, AX_OP_SUM));
}

void tp_grad_sync_end(ax_model_t *m, int t) {
    tp_note(m, ax_overlap_wait(m->ov, ov_scatter(t)));
    if (m->gc16) gradcomm_scatter_end(m, t);
}
