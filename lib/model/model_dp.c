/* DP-SGD's micro-batch (docs/privacy.md "DP-SGD"): per-example gradient norms over every
 * parameter without per-example gradients, then the normal backward on loss gradients rescaled
 * row by row, so the gradients come out as scale * sum_i min(1, clip / ||g_i||) g_i.
 *
 * The backward is linear in the loss gradient and examples never mix (attention is within a
 * sequence, norms within a token), so scaling example i's rows of dlogits by c_i scales exactly
 * its contribution to every gradient by c_i. The norms come from a first backward (the DP pass,
 * m->dp_pass) that runs every input-gradient GEMM and collective as usual but, where the normal
 * backward would add to a gradient, adds the example's squared norm of that contribution:
 *   a linear W [n, k] with the example's inputs a_t [k] and output gradients g_t [n]:
 *     ||sum_t g_t a_t^T||^2 = sum_{t,s} (a_t . a_s)(g_t . g_s), two T x T Gram matrices (ghost
 *     norm: Li et al. 2022, Bu et al. 2023), or, when T (n + k) > n k, the gradient itself in
 *     row chunks (the same flops as the dW GEMM, bounded memory);
 *   the embedding: the example's rows of the gradient are the sums of dres over equal tokens
 *     (a scatter into T compacted rows); tied to the LM head, ||H + E||^2 adds 2 <H, E>, read
 *     from the head's gradient columns of the example's tokens;
 *   norm weights and biases, learned positions: the per-example sums themselves.
 * On a grid each rank adds the norms of its blocks (replicated tensors on one replica:
 * model_owns_xy), and the partials are summed over X and Y; the batch is split over data x Z, so
 * an example's norm is complete on the ranks holding its row. */
#include "lib/model/tp_linear.h"
#include "lib/backend/ops.h"

#include <math.h>

/* floats of one materialised chunk of a per-example gradient (rows of W at a time) */
#define DP_CHUNK (1L << 18)

void dp_free(ax_model_t *m) {
    ax_ctx *c = m->ctx;
    ax_dev_free(c, m->dp_s1), ax_dev_free(c, m->dp_s2), ax_dev_free(c, m->dp_s3);
    ax_dev_free(c, m->dp_vec), ax_dev_free(c, m->dp_w);
    ax_dev_free(c, m->dp_cid), ax_dev_free(c, m->dp_uid);
    ax_host_free(c, m->dp_sq), ax_host_free(c, m->dp_hcid), ax_host_free(c, m->dp_huid);
    ax_host_free(c, m->dp_nuniq);
    m->dp_s1 = m->dp_s2 = m->dp_s3 = m->dp_vec = m->dp_w = NULL;
    m->dp_cid = m->dp_uid = m->dp_hcid = m->dp_huid = NULL;
    m->dp_sq = NULL;
    m->dp_nuniq = NULL;
}

static ax_status dp_alloc(ax_model_t *m) {
    if (m->dp_sq) return AX_OK;
    int64_t T = m->T, N = (int64_t)m->B * T, s1 = T * T, vec = 1;
    if (s1 < DP_CHUNK) s1 = DP_CHUNK;
    if (s1 < T * m->Cx) s1 = T * m->Cx; /* the embedding's compacted rows */
    for (int i = 0; i < m->n_tensors; i++) {
        const tp_tensor *p = &m->tp[i];
        if (s1 < p->cols_l) s1 = p->cols_l; /* one materialised row */
        if ((p->kind == TP_VEC || p->kind == TP_YVEC) && vec < p->cols_l) vec = p->cols_l;
    }
    ax_ctx *c = m->ctx;
    size_t tt = (size_t)(T * T > 2 * T ? T * T : 2 * T) * sizeof(float);
    m->dp_s1_n = s1, m->dp_vec_n = vec;
    m->dp_s1 = ax_dev_alloc(c, (size_t)s1 * sizeof(float));
    m->dp_s2 = ax_dev_alloc(c, tt), m->dp_s3 = ax_dev_alloc(c, tt);
    m->dp_vec = ax_dev_alloc(c, 2 * (size_t)(m->B * vec) * sizeof(float));
    m->dp_w = ax_dev_alloc(c, (size_t)N * sizeof(float));
    m->dp_cid = ax_dev_alloc(c, (size_t)N * sizeof(int32_t));
    m->dp_uid = ax_dev_alloc(c, (size_t)N * sizeof(int32_t));
    m->dp_hcid = ax_host_alloc(c, (size_t)N * sizeof(int32_t));
    m->dp_huid = ax_host_alloc(c, (size_t)N * sizeof(int32_t));
    m->dp_nuniq = ax_host_alloc(c, (size_t)m->B * sizeof(int));
    m->dp_sq = ax_host_alloc(c, (size_t)m->B * sizeof(double));
    if (!m->dp_s1 || !m->dp_s2 || !m->dp_s3 || !m->dp_vec || !m->dp_w || !m->dp_cid || !m->dp_uid ||
        !m->dp_hcid || !m->dp_huid || !m->dp_nuniq || !m->dp_sq) {
        dp_free(m);
        return ax_errorf(AX_ERR_NOMEM,
                         "out of memory for DP-SGD's per-example norm scratch (batch %d x %d)",
                         m->B, m->T);
    }
    return AX_OK;
}

/* row r of a GEMM operand [rows, ld] in fp32 or bf16 storage */
static const void *row_at(const void *x, int x16, int64_t r, long ld) {
    return x16 ? (const void *)((const uint16_t *)x + r * ld)
               : (const void *)((const float *)x + r * ld);
}
static long ld_of(int x16, long cols) {
    return x16 ? ax_bf16_ld(cols) : cols;
}
/* C = op(A) op(B) with either operand fp32 or bf16 storage */
static void gemm2(ax_model_t *m, char ta, char tb, long M, long Nc, long K, const void *A, int a16,
                  long lda, const void *Bm, int b16, long ldb, float *C, long ldc) {
    if (a16 || b16)
        ax_gemm_mixed(m->ctx, ta, tb, M, Nc, K, 1.0f, A, a16, lda, Bm, b16, ldb, 0.0f, C, ldc);
    else
        ax_gemm(m->ctx, ta, tb, M, Nc, K, 1.0f, (const float *)A, lda, (const float *)Bm, ldb, 0.0f,
                C, ldc);
}

void dp_linear_norms(ax_model_t *m, int t, const void *dout, int dout16, const void *in, int in16,
                     int N) {
    const tp_tensor *p = &m->tp[t];
    long n = (long)p->rows_l, k = (long)p->cols_l, T = m->T;
    long ldo = ld_of(dout16, n), ldi = ld_of(in16, k);
    int ghost = T * (n + k) <= n * k;
    long rc = DP_CHUNK / k > 0 ? DP_CHUNK / k : 1; /* materialised rows per chunk */
    float *s1 = m->dp_s1, *s2 = m->dp_s2;
    for (int b = 0; b < N / T; b++) {
        const void *g = row_at(dout, dout16, b * T, ldo), *a = row_at(in, in16, b * T, ldi);
        if (ghost) { /* (a a^T) . (g g^T), both [T, T] */
            gemm2(m, 'N', 'T', T, T, k, a, in16, ldi, a, in16, ldi, s1, T);
            gemm2(m, 'N', 'T', T, T, n, g, dout16, ldo, g, dout16, ldo, s2, T);
            m->dp_sq[b] += ax_dot(m->ctx, s1, s2, T * T);
            continue;
        }
        for (long r0 = 0; r0 < n; r0 += rc) { /* rows [r0, r1) of g^T a */
            long r1 = r0 + rc < n ? r0 + rc : n;
            const void *gc = dout16 ? (const void *)((const uint16_t *)g + r0)
                                    : (const void *)((const float *)g + r0);
            gemm2(m, 'T', 'N', r1 - r0, k, T, gc, dout16, ldo, a, in16, ldi, s1, k);
            m->dp_sq[b] += ax_sum_squares(m->ctx, s1, (r1 - r0) * k);
        }
    }
}

void dp_norm_backward(ax_model_t *m, int t, int tb, float *din, const float *dout, const float *in,
                      const float *mean, const float *rstd, int N) {
    int Cx = m->Cx, C = m->cfg.dim, T = m->T, B = N / T, own = model_owns_xy(m, t);
    long TC = (long)T * Cx;
    float *dots = m->rowstat, *dw = m->dp_vec, *db = m->dp_vec + (long)B * m->dp_vec_n;
    const float *w = m->tp[t].full;
    if (m->cfg.norm == AX_NORM_RMS) {
        ax_rmsnorm_backward_dot(m->ctx, dots, dout, in, w, N, Cx);
        tp_allreduce_sum(m, AX_AXIS_X, dots, N);
        if (!own) {
            ax_rmsnorm_backward_apply(m->ctx, din, NULL, dout, in, w, rstd, dots, N, Cx, C);
            return;
        }
        ax_zero(m->ctx, dw, (size_t)B * Cx * sizeof(float));
        for (int b = 0; b < B; b++) {
            ax_rmsnorm_backward_apply(m->ctx, din + b * TC, dw + (long)b * Cx, dout + b * TC,
                                      in + b * TC, w, rstd + (long)b * T, dots + (long)b * T, T, Cx,
                                      C);
            m->dp_sq[b] += ax_sum_squares(m->ctx, dw + (long)b * Cx, Cx);
        }
        return;
    }
    ax_layernorm_backward_dot(m->ctx, dots, dout, in, w, mean, rstd, N, Cx);
    tp_allreduce_sum(m, AX_AXIS_X, dots, 2L * N);
    if (!own) {
        ax_layernorm_backward_apply(m->ctx, din, NULL, NULL, dout, in, w, mean, rstd, dots, N, Cx,
                                    C);
        return;
    }
    ax_zero(m->ctx, dw, (size_t)B * Cx * sizeof(float));
    ax_zero(m->ctx, db, (size_t)B * Cx * sizeof(float));
    float *d2 = m->dp_s3; /* example b's two row sums side by side, as the op reads them */
    for (int b = 0; b < B; b++) {
        ax_copy(m->ctx, d2, dots + (long)b * T, (size_t)T * sizeof(float), AX_COPY_D2D);
        ax_copy(m->ctx, d2 + T, dots + N + (long)b * T, (size_t)T * sizeof(float), AX_COPY_D2D);
        ax_layernorm_backward_apply(m->ctx, din + b * TC, dw + (long)b * Cx,
                                    tb >= 0 ? db + (long)b * Cx : NULL, dout + b * TC, in + b * TC,
                                    w, mean + (long)b * T, rstd + (long)b * T, d2, T, Cx, C);
        m->dp_sq[b] += ax_sum_squares(m->ctx, dw + (long)b * Cx, Cx);
        if (tb >= 0) m->dp_sq[b] += ax_sum_squares(m->ctx, db + (long)b * Cx, Cx);
    }
}

void dp_bias_norms(ax_model_t *m, int tb, const float *dout, int N) {
    if (!model_owns_xy(m, tb)) return;
    int T = m->T, B = N / T, cols = (int)m->tp[tb].cols_l;
    float *v = m->dp_vec;
    ax_zero(m->ctx, v, (size_t)B * cols * sizeof(float));
    for (int b = 0; b < B; b++) {
        ax_bias_backward(m->ctx, v + (long)b * cols, dout + (long)b * T * cols, T, cols);
        m->dp_sq[b] += ax_sum_squares(m->ctx, v + (long)b * cols, cols);
    }
}

/* Each example's tokens in this rank's vocabulary slice, compacted: cid[t] the row of token t
 * among the example's distinct owned tokens (-1: not owned), uid[j] the local vocabulary row of
 * distinct token j; on the host, then copied for the ops. */
static void compact_tokens(ax_model_t *m, const int32_t *inputs, int B) {
    int T = m->T;
    for (int b = 0; b < B; b++) {
        int32_t *cid = m->dp_hcid + (long)b * T, *uid = m->dp_huid + (long)b * T;
        int u = 0;
        for (int t = 0; t < T; t++) {
            int32_t r = inputs[(long)b * T + t] - m->v0;
            cid[t] = -1;
            if (r < 0 || r >= m->vvalid) continue;
            int j = 0;
            while (j < u && uid[j] != r) j++;
            if (j == u) uid[u++] = r;
            cid[t] = j;
        }
        for (int j = u; j < T; j++) uid[j] = 0;
        m->dp_nuniq[b] = u;
    }
    size_t bytes = (size_t)B * T * sizeof(int32_t);
    ax_copy(m->ctx, m->dp_cid, m->dp_hcid, bytes, AX_COPY_H2D);
    ax_copy(m->ctx, m->dp_uid, m->dp_huid, bytes, AX_COPY_H2D);
}

/* The embedding's (and learned positions') per-example norms from dres, the gradient of the
 * embedding's output; a tied LM head's cross term with it. */
static void embedding_norms(ax_model_t *m, const float *dres, int B) {
    int T = m->T, Cx = m->Cx, Vl = m->Vl, tied = m->t_head == m->t_wte;
    long TC = (long)T * Cx, ldf = ld_of(m->gin16, Cx);
    float *E = m->dp_s1, *G = m->dp_s2, *M = m->dp_s3;
    for (int b = 0; b < B; b++) {
        int u = m->dp_nuniq[b];
        if (u == 0) continue;
        /* E [u, Cx]: the example's nonzero rows of the embedding's gradient */
        ax_zero(m->ctx, E, (size_t)u * Cx * sizeof(float));
        ax_embedding_shard_backward(m->ctx, E, dres + b * TC, m->dp_cid + (long)b * T, T, Cx, 0, u);
        m->dp_sq[b] += ax_sum_squares(m->ctx, E, (long)u * Cx);
        if (!tied) continue;
        /* <H, E> = sum_j H[uid_j] . E[j], H = dlogits^T lnf: G [T, u] the dlogits columns of the
         * tokens, M [T, u] = lnf E^T */
        ax_gather_cols(m->ctx, G, m->logits + (long)b * T * Vl, Vl, m->dp_uid + (long)b * T, T, u);
        gemm2(m, 'N', 'T', T, u, Cx, row_at(m->lnf, m->gin16, (int64_t)b * T, ldf), m->gin16, ldf,
              E, 0, Cx, M, u);
        m->dp_sq[b] += 2.0 * ax_dot(m->ctx, G, M, (long)T * u);
    }
    if (m->t_wpe >= 0 && model_owns_xy(m, m->t_wpe)) /* wpe's rows 0..T-1 get dres itself */
        for (int b = 0; b < B; b++) m->dp_sq[b] += ax_sum_squares(m->ctx, dres + b * TC, TC);
}

/* The DP pass: the backward's order and collectives (model_step.c), norms instead of
 * gradients. */
static void norm_pass(ax_model_t *m) {
    int B = m->cur_B, N = B * m->T, L = m->cfg.n_layers;
    float *dres = m->dres, *dacc = m->cfg.parallel_residual ? m->dres2 : m->dres;
    for (int b = 0; b < B; b++) m->dp_sq[b] = 0.0;
    m->dp_pass = 1;
    tp_col_backward(m, m->t_head, m->dln, m->logits, 0, m->lnf, m->gin16, N); /* over Y */
    ax_zero(m->ctx, dres, (size_t)N * m->Cx * sizeof(float));
    tp_norm_backward(m, m->t_normf, m->t_normfb, dres, m->dln, m->res_final, m->meanf, m->rstdf, N);
    for (int l = L - 1; l >= 0; l--) {
        if (l > 0) stream_gather_begin(m, l - 1);
        stream_gather_end(m, l);
        block_backward(m, l, B, dres, dacc);
        if (dacc != dres) {
            float *tmp = dres;
            dres = dacc, dacc = tmp;
        }
    }
    embedding_norms(m, dres, B);
    m->dp_pass = 0;
}

double ax_model_dp_micro(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                         const uint8_t *mask, int B, float clip, float scale, int last_micro,
                         float *norms) {
    if (m->inference) {
        tp_note(m, model_needs_grads(m, "ax_model_dp_micro"));
        return NAN;
    }
    if (B < 1 || B > m->B || !(clip > 0.0f)) {
        tp_note(m, ax_errorf(AX_ERR_ARG,
                             "ax_model_dp_micro: batch %d outside [1, %d] or clip norm %g not "
                             "positive",
                             B, m->B, (double)clip));
        return NAN;
    }
    ax_status st = dp_alloc(m);
    if (st != AX_OK) {
        tp_note(m, st);
        return NAN;
    }
    int T = m->T, N = B * T, L = m->cfg.n_layers;
    /* the loss gradient of each row's SUM of losses (dscale 1); row i's mean is 1 / n_i of it */
    double loss = ax_model_forward(m, inputs, targets, mask, B, 1.0f, 1);
    compact_tokens(m, inputs, B);
    norm_pass(m);
    if (m->dims[AX_AXIS_X] > 1)
        tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_X, m->dp_sq, B, AX_DT_F64, AX_OP_SUM));
    if (m->dims[AX_AXIS_Y] > 1)
        tp_note(m, ax_coll_allreduce(m->grid, AX_AXIS_Y, m->dp_sq, B, AX_DT_F64, AX_OP_SUM));
    /* row factors: scale * min(1, clip / ||g_i||) / n_i, the same on every rank of the row */
    float *w = ax_host_alloc(m->ctx, (size_t)N * sizeof(float));
    if (!w) {
        tp_note(m, ax_errorf(AX_ERR_NOMEM, "ax_model_dp_micro: out of memory"));
        return NAN;
    }
    for (int b = 0; b < B; b++) {
        int n_sup = 0;
        for (int t = 0; t < T; t++) n_sup += mask ? mask[(long)b * T + t] != 0 : 1;
        double norm = n_sup ? sqrt(m->dp_sq[b] > 0 ? m->dp_sq[b] : 0) / n_sup : 0.0;
        double f = n_sup ? scale * (norm > clip ? clip / norm : 1.0) / n_sup : 0.0;
        if (norms) norms[b] = (float)norm;
        for (int t = 0; t < T; t++) w[(long)b * T + t] = (float)f;
    }
    ax_copy(m->ctx, m->dp_w, w, (size_t)N * sizeof(float), AX_COPY_H2D);
    ax_sync(m->ctx); /* w is host memory freed below */
    ax_host_free(m->ctx, w);
    ax_scale_rows(m->ctx, m->logits, m->dp_w, N, m->Vl);
    /* the normal backward starts at the top layer: its weights back in their slot (the DP pass
     * left the bottom two there) and, with recomputation, its activations (the pass rebuilt the
     * others over them) */
    stream_gather_begin(m, L - 1);
    stream_gather_end(m, L - 1);
    if (m->recompute && L > 1) block_forward(m, L - 1, B, 0);
    ax_model_backward_ex(m, last_micro);
    return loss;
}
