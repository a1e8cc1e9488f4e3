/* One transformer block on the 4D grid, forward then backward, in the order they run (the
 * model around it: model_step.c); the norms, the MLP's activation and the biases below.
 *
 * On each rank the residual stream is [N, Cx] (C split over X, replicated over Y); the heads
 * (Hy query, Hky K/V) and the MLP's hidden units (Fy) are split over Y. QKV and the up
 * projection are column-parallel linears (outputs over Y), the out- and down projections
 * row-parallel (inputs over Y), so each pair runs without re-layout (tp_linear.h). The comment
 * at a linear names the collective that completes it; everything else but the norms is local. */
#include "lib/model/tp_linear.h"
#include "lib/backend/ops.h"

void block_forward(ax_model_t *m, int l, int B, int whole) {
    const ax_model_config *c = &m->cfg;
    const int *w = &m->lt[l * L_SLOTS]; /* the block's tensors (-1: none in this architecture) */
    int T = m->T, Cx = m->Cx, Cy = m->Cy, Hy = m->Hy, Hky = m->Hky, D = c->dim / c->n_heads;
    int N = B * T, rd = model_rotary_dim(c), par = c->parallel_residual, g16 = m->gin16;
    long Q3 = (long)Cy + 2L * m->Ky; /* a qkv row: [q (Hy heads) | k (Hky) | v (Hky)] */
    layer_acts *a = &m->acts[l];
    float *res_out = l + 1 < c->n_layers ? m->acts[l + 1].res : m->res_final;

    /* attention: ln1 = norm1(res) (row statistics all-reduced over X), qkv = ln1 Wqkv^T + bqkv,
     * rotary, causal attention over this rank's heads, res_mid = atty Wo^T + bo (+ res unless
     * the residual is parallel) */
    tp_norm_forward(m, w[L_NORM1], w[L_NORM1B], a->ln1, a->mean1, a->rstd1, a->res, N);
    tp_col_forward(m, w[L_WQKV], a->qkv, a->ln1, g16, N); /* all-reduce over X */
    tp_bias_forward(m, w[L_BQKV], a->qkv, N);
    if (rd) {
        ax_rope_partial_forward(m->ctx, a->qkv, m->rope_cos, m->rope_sin, B, T, Hy, D, rd, Q3);
        ax_rope_partial_forward(m->ctx, a->qkv + Cy, m->rope_cos, m->rope_sin, B, T, Hky, D, rd,
                                Q3);
    }
    ax_attention_forward_gqa(m->ctx, a->atty, a->att, a->qkv, B, T, Cy, Hy, Hky);
    tp_row_forward(m, w[L_WO], a->res_mid, a->atty, 0, N); /* all-reduce over Y */
    tp_bias_forward(m, w[L_BO], a->res_mid, N);
    if (!par) ax_accumulate(m->ctx, a->res_mid, a->res, (long)N * Cx);

    /* MLP: ln2 = norm2(res_mid), res_out = res_mid + act(ln2 Wup^T + b_up) Wdown^T + b_down.
     * Parallel residual (GPT-NeoX): ln2 = norm2(res) and res_out adds res too */
    tp_norm_forward(m, w[L_NORM2], w[L_NORM2B], a->ln2, a->mean2, a->rstd2,
                    par ? a->res : a->res_mid, N);
    tp_col_forward(m, w[L_WUP], a->h, a->ln2, g16, N); /* all-reduce over X */
    tp_bias_forward(m, w[L_BUP], a->h, N);
    tp_mlp_act_forward(m, a->hs, a->h, N);
    if (!whole) return; /* recomputation: the block above already consumed the output */
    tp_row_forward(m, w[L_WDOWN], res_out, a->hs, g16, N); /* all-reduce over Y */
    tp_bias_forward(m, w[L_BDOWN], res_out, N);
    ax_accumulate(m->ctx, res_out, a->res_mid, (long)N * Cx);
    if (par) ax_accumulate(m->ctx, res_out, a->res, (long)N * Cx);
}

void block_backward(ax_model_t *m, int l, int B, float *dres, float *dacc) {
    const ax_model_config *c = &m->cfg;
    const int *w = &m->lt[l * L_SLOTS];
    int T = m->T, Cy = m->Cy, Hy = m->Hy, Hky = m->Hky, D = c->dim / c->n_heads;
    int N = B * T, rd = model_rotary_dim(c), g16 = m->gin16;
    long Q3 = (long)Cy + 2L * m->Ky;
    layer_acts *a = &m->acts[l];
    float *dln = m->dln, *dbig = m->dbig; /* dbig: the gradient of hs, then of atty */

    /* recomputation: this block's activations again (the top block's are still in place) */
    if (m->recompute && l < c->n_layers - 1) block_forward(m, l, B, 0);
    if (dacc != dres) ax_copy(m->ctx, dacc, dres, (size_t)N * m->Cx * sizeof(float), AX_COPY_D2D);

    /* MLP; each linear's dX all-reduce runs behind its dW GEMM (OAR) */
    tp_bias_backward(m, w[L_BDOWN], dres, N);
    tp_row_backward(m, w[L_WDOWN], dbig, dres, 0, a->hs, g16, N); /* all-reduce over X */
    tp_mlp_act_backward(m, dbig, a->h, N);
    tp_bias_backward(m, w[L_BUP], m->dh, N); /* only with biases: dh is fp32 then */
    tp_col_backward(m, w[L_WUP], dln, m->dh, m->dh16, a->ln2, g16, N); /* all-reduce over Y */
    tp_norm_backward(m, w[L_NORM2], w[L_NORM2B], dacc, dln,
                     c->parallel_residual ? a->res : a->res_mid, a->mean2, a->rstd2, N);

    /* attention */
    tp_bias_backward(m, w[L_BO], dres, N);
    tp_row_backward(m, w[L_WO], dbig, dres, 0, a->atty, 0, N); /* all-reduce over X */
    ax_zero(m->ctx, m->dqkv, (size_t)(N * Q3) * sizeof(float));
    ax_attention_backward_gqa(m->ctx, m->dqkv, m->att_scratch, dbig, a->qkv, a->att, a->atty, B, T,
                              Cy, Hy, Hky);
    if (rd) {
        ax_rope_partial_backward(m->ctx, m->dqkv, m->rope_cos, m->rope_sin, B, T, Hy, D, rd, Q3);
        ax_rope_partial_backward(m->ctx, m->dqkv + Cy, m->rope_cos, m->rope_sin, B, T, Hky, D, rd,
                                 Q3);
    }
    tp_bias_backward(m, w[L_BQKV], m->dqkv, N);
    tp_col_backward(m, w[L_WQKV], dln, m->dqkv, 0, a->ln1, g16, N); /* all-reduce over Y */
    tp_norm_backward(m, w[L_NORM1], w[L_NORM1B], dacc, dln, a->res, a->mean1, a->rstd1, N);
}

/* The helpers: norms over the hidden dimension split across X (row statistics all-reduced
 * over X), the MLP's activation and the biases (local). */

void tp_norm_forward(ax_model_t *m, int t, int tb, void *out, float *mean, float *rstd,
                     const float *in, int N) {
    int Cx = m->Cx, C = m->cfg.dim;
    float eps = m->cfg.norm_eps, *s1 = m->rowstat, *s2 = m->rowstat + N;
    const float *w = m->tp[t].full;
    if (m->cfg.norm == AX_NORM_RMS) {
        ax_rmsnorm_sumsq(m->ctx, s1, in, N, Cx);
        tp_allreduce_sum(m, AX_AXIS_X, s1, N);
        if (m->gin16)
            ax_rmsnorm_apply_bf16(m->ctx, out, rstd, in, w, s1, N, Cx, C, eps);
        else
            ax_rmsnorm_apply(m->ctx, out, rstd, in, w, s1, N, Cx, C, eps);
        return;
    }
    /* LayerNorm in two passes: the row sum, then the squared deviations from the mean it gives */
    const float *b = m->tp[tb].full;
    ax_layernorm_rowsum(m->ctx, s1, in, N, Cx);
    tp_allreduce_sum(m, AX_AXIS_X, s1, N);
    ax_layernorm_sqdev(m->ctx, s2, in, s1, N, Cx, C);
    tp_allreduce_sum(m, AX_AXIS_X, s2, N);
    if (m->gin16)
        ax_layernorm_apply_bf16(m->ctx, out, mean, rstd, in, w, b, s1, s2, N, Cx, C, eps);
    else
        ax_layernorm_apply(m->ctx, out, mean, rstd, in, w, b, s1, s2, N, Cx, C, eps);
}

void tp_norm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout, const float *in,
                      const float *mean, const float *rstd, int N) {
    int Cx = m->Cx, C = m->cfg.dim;
    float *dots = m->rowstat; /* LayerNorm's two row sums go in one all-reduce */
    const float *w = m->tp[t].full;
    if (m->dp_pass) { /* DP-SGD's norm pass: per-example weight (and bias) gradients */
        dp_norm_backward(m, t, tb, din, dout, in, mean, rstd, N);
        return;
    }
    if (m->cfg.norm == AX_NORM_RMS) {
        ax_rmsnorm_backward_dot(m->ctx, dots, dout, in, w, N, Cx);
        tp_allreduce_sum(m, AX_AXIS_X, dots, N);
        ax_rmsnorm_backward_apply(m->ctx, din, m->tp[t].gfull, dout, in, w, rstd, dots, N, Cx, C);
        return;
    }
    ax_layernorm_backward_dot(m->ctx, dots, dout, in, w, mean, rstd, N, Cx);
    tp_allreduce_sum(m, AX_AXIS_X, dots, 2L * N);
    ax_layernorm_backward_apply(m->ctx, din, m->tp[t].gfull, m->tp[tb].gfull, dout, in, w, mean,
                                rstd, dots, N, Cx, C);
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

/* A bias is split like its layer's outputs (TP_YVEC for a column-parallel layer, TP_VEC for a
 * row-parallel one), so its local block is as wide as this rank's output columns. */
void tp_bias_forward(ax_model_t *m, int tb, float *out, int N) {
    if (tb < 0) return;
    ax_bias_add(m->ctx, out, m->tp[tb].full, N, (int)m->tp[tb].cols_l);
}

void tp_bias_backward(ax_model_t *m, int tb, const float *dout, int N) {
    if (tb < 0) return;
    if (m->dp_pass) {
        dp_bias_norms(m, tb, dout, N);
        return;
    }
    ax_bias_backward(m->ctx, m->tp[tb].gfull, dout, N, (int)m->tp[tb].cols_l);
}
