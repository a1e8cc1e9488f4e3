/* The tensor-parallel layers (AxoNN): weight gathers over Z, GEMMs on the local block, the
 * all-reduces over X or Y, gradient reduce-scatters over Z, and the RMSNorm over a hidden
 * dimension split across X (and LayerNorm, biases). The overlapped collectives go through the
 * model's ax_overlap (lib/dist/overlap.h): the dX all-reduce runs behind the dW GEMM (OAR), gathers
 * are issued a layer ahead (OAG, model_step.c) and gradient reduce-scatters run behind earlier
 * layers' backward (ORS); with overlap off the same calls are blocking. */
#include "lib/model/model_internal.h"
#include "lib/backend/ops.h"

static int dimz(const ax_model_t *m) {
    return m->dims[AX_AXIS_Z];
}

void tp_gather_begin(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    if (dimz(m) == 1) return; /* full is the slab itself */
    tp_note(m, ax_overlap_allgather(m->ov, ov_gather(t), AX_AXIS_Z, m->params + p->shard_off,
                                    p->shard_n, p->full, AX_DT_F32));
}

void tp_gather_end(ax_model_t *m, int t) {
    tp_tensor *p = &m->tp[t];
    tp_note(m, ax_overlap_wait(m->ov, ov_gather(t)));
    if (dimz(m) > 1 && p->full16) /* the GEMMs' bf16 copy of the block that landed */
        ax_to_bf16(m->ctx, p->full16, p->full, (long)(p->shard_n * dimz(m)));
}

/* normal and vocabulary layers reduce their output over X, transposed ones over Y; the input
 * gradient goes over the other axis */
static ax_axis out_axis(const tp_tensor *p) {
    return p->kind == TP_TRANSPOSED ? AX_AXIS_Y : AX_AXIS_X;
}
static ax_axis in_axis(const tp_tensor *p) {
    return p->kind == TP_TRANSPOSED ? AX_AXIS_X : AX_AXIS_Y;
}

static void allreduce_sum(ax_model_t *m, ax_axis axis, float *buf, long n) {
    tp_note(m, ax_coll_allreduce(m->grid, axis, buf, n, AX_DT_F32, AX_OP_SUM));
}

/* leading dimension of a GEMM input [N, cols] in elements: bf16 storage pads its rows */
static long in_ld(int in16, long cols) {
    return in16 ? ax_bf16_ld(cols) : cols;
}

/* out[N, rows_l] = in[N, cols_l] W^T (in16: in is bf16 storage), summed over the input axis's
 * ranks */
static void linear_forward(ax_model_t *m, int t, float *out, const void *in, int in16, int N) {
    tp_tensor *p = &m->tp[t];
    if (p->full16) /* a bf16 model: the weight's bf16 copy */
        ax_gemm_mixed(m->ctx, 'N', 'T', N, p->rows_l, p->cols_l, 1.0f, in, in16,
                      in_ld(in16, p->cols_l), p->full16, 1, p->cols_l, 0.0f, out, p->rows_l);
    else
        ax_matmul_forward(m->ctx, out, in, p->full, N, (int)p->cols_l, (int)p->rows_l);
    allreduce_sum(m, out_axis(p), out, (long)N * p->rows_l);
}
void tp_linear_forward(ax_model_t *m, int t, float *out, const float *in, int N) {
    linear_forward(m, t, out, in, 0, N);
}
void tp_linear_forward_gin(ax_model_t *m, int t, float *out, const void *in, int N) {
    linear_forward(m, t, out, in, m->gin16, N);
}
void tp_linear_forward_dec(ax_model_t *m, int t, float *out, const void *in, int gin, int N) {
    tp_tensor *p = &m->tp[t];
    int in16 = gin && m->gin16;
    if (!m->dec_pack || !m->dec_pack[t] || in16) {
        linear_forward(m, t, out, in, in16, N);
        return;
    }
    ax_matmul_forward_packed(m->ctx, out, in, m->dec_pack[t], N, (int)p->cols_l, (int)p->rows_l);
    allreduce_sum(m, out_axis(p), out, (long)N * p->rows_l);
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

/* din[N, cols_l] = dout W (overwritten: no caller zeroes it first), then all-reduced; gfull +=
 * dout^T in (dout16, in16: that operand is bf16 storage). OAR: the all-reduce of din runs while
 * dW is computed in chunks, with progress for it and for every other in-flight gather and
 * reduce-scatter (ORS) between chunks. */
static void linear_backward(ax_model_t *m, int t, float *din, const void *dout, int dout16,
                            const void *in, int in16, int N) {
    tp_tensor *p = &m->tp[t];
    int n = (int)p->rows_l, k = (int)p->cols_l;
    if (p->full16)
        ax_gemm_mixed(m->ctx, 'N', 'N', N, k, n, 1.0f, dout, dout16, in_ld(dout16, n), p->full16, 1,
                      k, 0.0f, din, k);
    else /* the dX half of matmul_backward, writing instead of accumulating */
        ax_gemm(m->ctx, 'N', 'N', N, k, n, 1.0f, dout, n, p->full, k, 0.0f, din, k);
    tp_note(
        m, ax_overlap_allreduce(m->ov, OV_OAR, in_axis(p), din, (long)N * k, AX_DT_F32, AX_OP_SUM));
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
void tp_linear_backward(ax_model_t *m, int t, float *din, const float *dout, const float *in,
                        int N) {
    linear_backward(m, t, din, dout, 0, in, 0, N);
}
void tp_linear_backward_gin(ax_model_t *m, int t, float *din, const float *dout, const void *in,
                            int N) {
    linear_backward(m, t, din, dout, 0, in, m->gin16, N);
}
void tp_linear_backward_dh(ax_model_t *m, int t, float *din, const void *in, int N) {
    linear_backward(m, t, din, m->dh, m->dh16, in, m->gin16, N);
}

void tp_mlp_act_backward(ax_model_t *m, const float *dhs, const float *h, int N) {
    int Fy = m->Fy, tanh = m->cfg.mlp == AX_MLP_GELU_TANH;
    if (m->dh16) { /* written, not accumulated: nothing to zero */
        ax_swiglu_backward_bf16(m->ctx, m->dh, dhs, h, N, Fy);
        return;
    }
    int w = m->cfg.mlp == AX_MLP_SWIGLU ? 2 * Fy : Fy;
    ax_zero(m->ctx, m->dh, (size_t)N * w * sizeof(float));
    if (m->cfg.mlp == AX_MLP_SWIGLU)
        ax_swiglu_backward(m->ctx, m->dh, dhs, h, N, Fy);
    else
        ax_gelu_backward(m->ctx, m->dh, dhs, h, N, Fy, tanh);
}

void tp_mlp_act_forward(ax_model_t *m, void *hs, const float *h, int N) {
    int Fy = m->Fy, swiglu = m->cfg.mlp == AX_MLP_SWIGLU, tanh = m->cfg.mlp == AX_MLP_GELU_TANH;
    if (m->gin16)
        swiglu ? ax_swiglu_forward_bf16(m->ctx, hs, h, N, Fy)
               : ax_gelu_forward_bf16(m->ctx, hs, h, N, Fy, tanh);
    else
        swiglu ? ax_swiglu_forward(m->ctx, hs, h, N, Fy)
               : ax_gelu_forward(m->ctx, hs, h, N, Fy, tanh);
}

void tp_grad_sync_begin(ax_model_t *m, int t) {
    tp_grad_sync_begin_to(m, t, m->grads + m->tp[t].shard_off);
}

void tp_grad_sync_begin_to(ax_model_t *m, int t, float *recv) {
    tp_tensor *p = &m->tp[t];
    if (dimz(m) == 1) return; /* gfull is the slab itself */
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

/* out: a GEMM-only activation (bf16 storage when gin16) */
static void tp_rmsnorm_forward(ax_model_t *m, int t, void *out, float *rstd, const float *in,
                               int N) {
    float *ss = m->rowstat;
    ax_rmsnorm_sumsq(m->ctx, ss, in, N, m->Cx);
    allreduce_sum(m, AX_AXIS_X, ss, N);
    if (m->gin16)
        ax_rmsnorm_apply_bf16(m->ctx, out, rstd, in, m->tp[t].full, ss, N, m->Cx, m->cfg.dim,
                              m->cfg.norm_eps);
    else
        ax_rmsnorm_apply(m->ctx, out, rstd, in, m->tp[t].full, ss, N, m->Cx, m->cfg.dim,
                         m->cfg.norm_eps);
}

static void tp_rmsnorm_backward(ax_model_t *m, int t, float *din, const float *dout,
                                const float *in, const float *rstd, int N) {
    float *dot = m->rowstat;
    const float *w = m->tp[t].full;
    ax_rmsnorm_backward_dot(m->ctx, dot, dout, in, w, N, m->Cx);
    allreduce_sum(m, AX_AXIS_X, dot, N);
    ax_rmsnorm_backward_apply(m->ctx, din, m->tp[t].gfull, dout, in, w, rstd, dot, N, m->Cx,
                              m->cfg.dim);
}

/* LayerNorm over the hidden dimension split across X: the row sum, then the squared deviations
 * from the mean it gives, each all-reduced over X (two passes: docs/DESIGN.md "Architectures") */
static void tp_layernorm_forward(ax_model_t *m, int t, int tb, void *out, float *mean, float *rstd,
                                 const float *in, int N) {
    float *sum = m->rowstat, *sq = m->rowstat + N;
    const float *w = m->tp[t].full, *b = m->tp[tb].full;
    ax_layernorm_rowsum(m->ctx, sum, in, N, m->Cx);
    allreduce_sum(m, AX_AXIS_X, sum, N);
    ax_layernorm_sqdev(m->ctx, sq, in, sum, N, m->Cx, m->cfg.dim);
    allreduce_sum(m, AX_AXIS_X, sq, N);
    if (m->gin16)
        ax_layernorm_apply_bf16(m->ctx, out, mean, rstd, in, w, b, sum, sq, N, m->Cx, m->cfg.dim,
                                m->cfg.norm_eps);
    else
        ax_layernorm_apply(m->ctx, out, mean, rstd, in, w, b, sum, sq, N, m->Cx, m->cfg.dim,
                           m->cfg.norm_eps);
}

static void tp_layernorm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout,
                                  const float *in, const float *mean, const float *rstd, int N) {
    float *dots = m->rowstat; /* [2N]: both row sums in one all-reduce */
    const float *w = m->tp[t].full;
    ax_layernorm_backward_dot(m->ctx, dots, dout, in, w, mean, rstd, N, m->Cx);
    allreduce_sum(m, AX_AXIS_X, dots, 2L * N);
    ax_layernorm_backward_apply(m->ctx, din, m->tp[t].gfull, m->tp[tb].gfull, dout, in, w, mean,
                                rstd, dots, N, m->Cx, m->cfg.dim);
}

void tp_norm_forward(ax_model_t *m, int t, int tb, void *out, float *mean, float *rstd,
                     const float *in, int N) {
    if (m->cfg.norm == AX_NORM_LAYER)
        tp_layernorm_forward(m, t, tb, out, mean, rstd, in, N);
    else
        tp_rmsnorm_forward(m, t, out, rstd, in, N);
}

void tp_norm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout, const float *in,
                      const float *mean, const float *rstd, int N) {
    if (m->cfg.norm == AX_NORM_LAYER)
        tp_layernorm_backward(m, t, tb, din, dout, in, mean, rstd, N);
    else
        tp_rmsnorm_backward(m, t, din, dout, in, rstd, N);
}

/* A bias is split like the output columns of its layer (TP_YVEC for normal layers, TP_VEC for
 * transposed ones), so its local block is as wide as this rank's output rows. */
void tp_bias_forward(ax_model_t *m, int tb, float *out, int N) {
    if (tb < 0) return;
    ax_bias_add(m->ctx, out, m->tp[tb].full, N, (int)m->tp[tb].cols_l);
}

void tp_bias_backward(ax_model_t *m, int tb, const float *dout, int N) {
    if (tb < 0) return;
    ax_bias_backward(m->ctx, m->tp[tb].gfull, dout, N, (int)m->tp[tb].cols_l);
}
