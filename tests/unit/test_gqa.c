/* Grouped-query attention (docs/training.md "Architectures"): the ops against a float64 reference
 * and its central finite differences; the blocked kernels (several query and key tiles) against
 * multi-head attention on K/V heads replicated per group (what GQA means); decoding against
 * replicated caches; and whole GQA models: backward against finite differences, KV-cached
 * decoding against the forward, the tensor table, the checkpoint key and the refusals. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/ops.h"
#include "lib/core/rng.h"
#include "lib/model/model.h"
#include "lib/model/model_io.h"
#include "tests/unit/test_model_fd.h"

static ax_ctx *cpu_ctx(void) {
    static ax_ctx *ctx;
    if (!ctx) cr_assert_eq(ax_ctx_create(ax_backend_cpu(), 1 << 20, &ctx), AX_OK);
    return ctx;
}
#define CTX cpu_ctx()

static float *frand(long n, double scale, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (long i = 0; i < n; i++) x[i] = (float)(scale * ax_rng_normal(seed, 0, (uint64_t)i));
    return x;
}

/* ---- the op against a float64 reference ---- */
typedef struct {
    const double *qkv, *G; /* qkv[B,T,(H + 2 Hkv) D], G[B,T,H D] */
    int B, T, H, Hkv, D;
} gqa_ref;

/* out[B,T,H D] of causal attention with query head h reading K/V head h / (H / Hkv) */
static void ref_forward(const gqa_ref *r, double *out) {
    int B = r->B, T = r->T, H = r->H, D = r->D, G = H / r->Hkv;
    long C = (long)H * D, R = C + 2L * r->Hkv * D;
    double scale = 1.0 / sqrt((double)D), p[64];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const double *q = r->qkv + ((long)b * T + t) * R + (long)h * D;
                double mx = -INFINITY, sum = 0;
                for (int s = 0; s <= t; s++) {
                    const double *k = r->qkv + ((long)b * T + s) * R + C + (long)(h / G) * D;
                    double d = 0;
                    for (int i = 0; i < D; i++) d += q[i] * k[i];
                    p[s] = d * scale, mx = fmax(mx, p[s]);
                }
                for (int s = 0; s <= t; s++) sum += p[s] = exp(p[s] - mx);
                double *o = out + ((long)b * T + t) * C + (long)h * D;
                for (int i = 0; i < D; i++) o[i] = 0;
                for (int s = 0; s <= t; s++) {
                    const double *v =
                        r->qkv + ((long)b * T + s) * R + C + (long)r->Hkv * D + (long)(h / G) * D;
                    for (int i = 0; i < D; i++) o[i] += p[s] / sum * v[i];
                }
            }
}
static double ref_loss(const gqa_ref *r, double *out) {
    ref_forward(r, out);
    double s = 0;
    for (long i = 0; i < (long)r->B * r->T * r->H * r->D; i++) s += r->G[i] * out[i];
    return s;
}

static double *todbl(const float *x, long n) {
    double *d = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++) d[i] = x[i];
    return d;
}

TestSuite(gqa);

/* every coordinate of dqkv (q, the shared k and v) by central differences */
Test(gqa, attention_matches_reference_and_finite_differences) {
    int B = 2, T = 5, H = 4, Hkv = 2, D = 4;
    long C = (long)H * D, R = C + 2L * Hkv * D, nq = (long)B * T * R, no = (long)B * T * C;
    float *qkv = frand(nq, 1.0, 1), *G = frand(no, 1.0, 2), *out = calloc((size_t)no, 4);
    float *att = calloc((size_t)B * H * T, 4), *scr = calloc((size_t)B * H * T, 4);
    float *dqkv = calloc((size_t)nq, 4);
    ax_attention_forward_gqa(CTX, out, att, qkv, B, T, (int)C, H, Hkv);
    ax_attention_backward_gqa(CTX, dqkv, scr, G, qkv, att, NULL, B, T, (int)C, H, Hkv);
    double *x = todbl(qkv, nq), *g = todbl(G, no), *o = malloc(sizeof(double) * (size_t)no);
    gqa_ref r = {x, g, B, T, H, Hkv, D};
    ref_forward(&r, o);
    for (long i = 0; i < no; i++)
        cr_expect(fabs(out[i] - o[i]) <= 1e-5 * (1 + fabs(o[i])), "out[%ld] %g vs %g", i, out[i],
                  o[i]);
    for (long i = 0; i < nq; i++) {
        double x0 = x[i], h = 1e-5;
        x[i] = x0 + h;
        double lp = ref_loss(&r, o);
        x[i] = x0 - h;
        double lm = ref_loss(&r, o);
        x[i] = x0;
        double fd = (lp - lm) / (2 * h);
        cr_expect(fabs(dqkv[i] - fd) <= 1e-4 * (1 + fabs(fd)), "dqkv[%ld] (col %ld): %g vs fd %g",
                  i, i % R, dqkv[i], fd);
    }
    free(qkv), free(G), free(out), free(att), free(scr), free(dqkv), free(x), free(g), free(o);
}

/* GQA == multi-head attention on K/V heads copied to every query head of their group, with
 * dK, dV of a shared head the sum over its group; T = 300 runs several query tiles and two key
 * tiles of the blocked kernels */
static void check_vs_replicated(int B, int T, int H, int Hkv, int D) {
    long C = (long)H * D, R = C + 2L * Hkv * D, Ckv = (long)Hkv * D, N = (long)B * T;
    int Gs = H / Hkv;
    float *qkv = frand(N * R, 1.0, 3), *G = frand(N * C, 1.0, 4),
          *rep = malloc(4 * (size_t)N * 3 * C);
    for (long n = 0; n < N; n++) {
        memcpy(rep + n * 3 * C, qkv + n * R, sizeof(float) * (size_t)C);
        for (int h = 0; h < H; h++) {
            memcpy(rep + n * 3 * C + C + (long)h * D, qkv + n * R + C + (long)(h / Gs) * D,
                   sizeof(float) * (size_t)D);
            memcpy(rep + n * 3 * C + 2 * C + (long)h * D,
                   qkv + n * R + C + Ckv + (long)(h / Gs) * D, sizeof(float) * (size_t)D);
        }
    }
    float *o1 = calloc((size_t)N * C, 4), *o2 = calloc((size_t)N * C, 4);
    float *a1 = calloc((size_t)B * H * T, 4), *a2 = calloc((size_t)B * H * T, 4);
    float *s = calloc((size_t)B * H * T, 4);
    float *d1 = calloc((size_t)N * R, 4), *d2 = calloc((size_t)N * 3 * C, 4);
    ax_attention_forward_gqa(CTX, o1, a1, qkv, B, T, (int)C, H, Hkv);
    ax_attention_forward_gqa(CTX, o2, a2, rep, B, T, (int)C, H, H);
    for (long i = 0; i < N * C; i++)
        cr_assert(fabsf(o1[i] - o2[i]) <= 1e-6f * (1 + fabsf(o2[i])), "T=%d out[%ld]: %g vs %g", T,
                  i, o1[i], o2[i]);
    for (long i = 0; i < (long)B * H * T; i++) cr_assert(fabsf(a1[i] - a2[i]) <= 1e-5f);
    ax_attention_backward_gqa(CTX, d1, s, G, qkv, a1, NULL, B, T, (int)C, H, Hkv);
    ax_attention_backward_gqa(CTX, d2, s, G, rep, a2, NULL, B, T, (int)C, H, H);
    for (long n = 0; n < N; n++) {
        for (long i = 0; i < C; i++) /* dq */
            cr_assert(fabsf(d1[n * R + i] - d2[n * 3 * C + i]) <=
                          1e-5f * (1 + fabsf(d2[n * 3 * C + i])),
                      "T=%d dq row %ld col %ld", T, n, i);
        for (int part = 1; part <= 2; part++) /* dk, dv: the group's sum */
            for (int hk = 0; hk < Hkv; hk++)
                for (int d = 0; d < D; d++) {
                    double want = 0;
                    for (int h = hk * Gs; h < hk * Gs + Gs; h++)
                        want += d2[n * 3 * C + part * C + (long)h * D + d];
                    float got = d1[n * R + C + (part - 1) * Ckv + (long)hk * D + d];
                    cr_assert(fabs(got - want) <= 1e-4 * (1 + fabs(want)),
                              "T=%d d%s row %ld head %d: %g vs %g", T, part == 1 ? "k" : "v", n, hk,
                              got, want);
                }
    }
    free(qkv), free(G), free(rep), free(o1), free(o2), free(a1), free(a2), free(s), free(d1),
        free(d2);
}

Test(gqa, blocked_kernels_equal_replicated_heads) {
    check_vs_replicated(2, 300, 4, 2, 8); /* groups of 2 */
    check_vs_replicated(1, 70, 6, 1, 4);  /* multi-query: one K/V head */
    check_vs_replicated(1, 9, 3, 3, 4);   /* Hkv == H is multi-head */
}

/* the backward's dK, dV sum over a group in a fixed order: any thread count, the same bits */
Test(gqa, backward_is_deterministic) {
    int B = 2, T = 130, H = 4, Hkv = 2, D = 8;
    long C = (long)H * D, R = C + 2L * Hkv * D, N = (long)B * T;
    float *qkv = frand(N * R, 1.0, 5), *G = frand(N * C, 1.0, 6), *o = calloc((size_t)N * C, 4);
    float *a = calloc((size_t)B * H * T, 4), *s = calloc((size_t)B * H * T, 4);
    float *d[2] = {calloc((size_t)N * R, 4), calloc((size_t)N * R, 4)};
    ax_attention_forward_gqa(CTX, o, a, qkv, B, T, (int)C, H, Hkv);
    int threads[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(threads[k]);
        ax_attention_backward_gqa(CTX, d[k], s, G, qkv, a, NULL, B, T, (int)C, H, Hkv);
    }
    omp_set_num_threads(1);
    cr_assert(memcmp(d[0], d[1], sizeof(float) * (size_t)(N * R)) == 0);
    free(qkv), free(G), free(o), free(a), free(s), free(d[0]), free(d[1]);
}

/* decoding reads K/V head h / (H / Hkv) of caches [B, Hkv, Tmax, D] */
Test(gqa, decode_equals_replicated_caches) {
    int B = 2, H = 6, Hkv = 2, D = 4, Tmax = 7, len = 5, Gs = H / Hkv;
    long cache = (long)B * Hkv * Tmax * D, rep = (long)B * H * Tmax * D;
    float *q = frand((long)B * H * D, 1.0, 7), *kc = frand(cache, 1.0, 8),
          *vc = frand(cache, 1.0, 9);
    float *kr = malloc(4 * (size_t)rep), *vr = malloc(4 * (size_t)rep);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long dst = ((long)b * H + h) * Tmax * D, src = ((long)b * Hkv + h / Gs) * Tmax * D;
            memcpy(kr + dst, kc + src, sizeof(float) * (size_t)Tmax * D);
            memcpy(vr + dst, vc + src, sizeof(float) * (size_t)Tmax * D);
        }
    float o1[48], o2[48];
    ax_attention_decode_gqa(CTX, o1, q, kc, vc, B, H, Hkv, D, len, Tmax);
    ax_attention_decode_gqa(CTX, o2, q, kr, vr, B, H, H, D, len, Tmax);
    for (int i = 0; i < B * H * D; i++) cr_assert_float_eq(o1[i], o2[i], 1e-6f);
    free(q), free(kc), free(vc), free(kr), free(vr);
}

/* ---- whole models ---- */
static ax_model_config llama_gqa(void) {
    return (ax_model_config){.n_layers = 2,
                             .dim = 16,
                             .n_heads = 4,
                             .ffn = 24,
                             .vocab = 300,
                             .tie_embeddings = 0,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f,
                             .n_kv_heads = 2};
}
/* a GPT-NeoX shape with GQA: biases on q, k, v, partial rotary on the k heads too */
static ax_model_config neox_gqa(void) {
    ax_model_config c = llama_gqa();
    c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU, c.bias = 1, c.parallel_residual = 1;
    c.rotary_dim = 2, c.n_kv_heads = 1;
    return c;
}

Test(gqa, model_backward_matches_finite_differences) {
    check_model_fd("llama gqa", llama_gqa());
    check_model_fd("neox gqa (multi-query)", neox_gqa());
}

static void check_decode(const char *what, ax_model_config c) {
    int B = 2, T = 10;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, 5);
    roughen(m);
    int32_t in[20], tg[20];
    uint8_t mask[20];
    make_batch(B * T, c.vocab, in, tg, mask, 6);
    ax_model_forward(m, in, tg, mask, B, 1.0f, 0);
    float *ref = malloc(sizeof(float) * (size_t)B * T * c.vocab);
    float *full = malloc(sizeof(float) * (size_t)B * c.vocab);
    cr_assert_eq(ax_model_read_logits(m, ref), AX_OK);
    cr_assert_eq(ax_model_decode_begin(m, B), AX_OK);
    for (int pos = 0; pos < T; pos++) {
        int32_t tok[2] = {in[pos], in[T + pos]};
        ax_model_decode_step(m, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(m, full), AX_OK);
        for (int b = 0; b < B; b++)
            for (int v = 0; v < c.vocab; v++) {
                float want = ref[((long)b * T + pos) * c.vocab + v];
                cr_assert(fabsf(full[(long)b * c.vocab + v] - want) <= 1e-4f * (1 + fabsf(want)),
                          "%s pos %d seq %d logit %d: %g vs %g", what, pos, b, v,
                          full[(long)b * c.vocab + v], want);
            }
    }
    free(ref), free(full);
    ax_model_free(m);
}

Test(gqa, kv_cached_decoding_matches_forward) {
    check_decode("llama gqa", llama_gqa());
    check_decode("neox gqa", neox_gqa());
}

/* wqkv [(H + 2 Hkv) D, C], bqkv likewise; the parameter count; a GQA model is a MHA model whose
 * K/V rows are shared: copying them per group gives the same logits */
Test(gqa, tensor_shapes_and_equivalence_to_replicated_heads) {
    ax_model_config c = neox_gqa(), r = c;
    r.n_kv_heads = 0;
    int C = c.dim, D = C / c.n_heads, Ckv = c.n_kv_heads * D, Gs = c.n_heads / c.n_kv_heads;
    cr_assert_eq(ax_model_config_n_params(&c),
                 ax_model_config_n_params(&r) - c.n_layers * (int64_t)(2 * (C - Ckv)) * (C + 1));
    int B = 1, T = 6;
    ax_model_t *mg = NULL, *mr = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &mg), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_create(&r, B, T, &mr), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_n_params(mg), ax_model_config_n_params(&c));
    ax_model_init(mg, 9);
    roughen(mg);
    const ax_tensor_info *tg = ax_model_tensors(mg), *tr = ax_model_tensors(mr);
    cr_assert_eq(ax_model_n_tensors(mg), ax_model_n_tensors(mr));
    int64_t ng = ax_model_n_params(mg), nr = ax_model_n_params(mr);
    float *pg = malloc((size_t)ng * 4), *pr = malloc((size_t)nr * 4);
    cr_assert_eq(ax_model_read_params(mg, pg, 0, ng), AX_OK);
    for (int t = 0; t < ax_model_n_tensors(mg); t++) {
        const float *src = pg + tg[t].offset;
        float *dst = pr + tr[t].offset;
        int wqkv = strstr(tg[t].name, "wqkv") != NULL, bqkv = strstr(tg[t].name, "bqkv") != NULL;
        if (!wqkv && !bqkv) {
            cr_assert_eq(tg[t].numel, tr[t].numel, "%s", tg[t].name);
            memcpy(dst, src, sizeof(float) * (size_t)tg[t].numel);
            continue;
        }
        int w = wqkv ? C : 1; /* row length */
        if (wqkv) {
            cr_assert_eq(tg[t].shape[0], C + 2 * Ckv, "%s rows", tg[t].name);
            cr_assert_eq(tg[t].shape[1], C);
        } else {
            cr_assert_eq(tg[t].shape[0], C + 2 * Ckv, "%s entries", tg[t].name);
        }
        memcpy(dst, src, sizeof(float) * (size_t)C * w); /* q */
        for (int part = 1; part <= 2; part++)
            for (int h = 0; h < c.n_heads; h++)
                memcpy(dst + ((long)part * C + (long)h * D) * w,
                       src + ((long)C + (part - 1) * Ckv + (long)(h / Gs) * D) * w,
                       sizeof(float) * (size_t)D * w);
    }
    cr_assert_eq(ax_model_write_params(mr, pr, 0, nr), AX_OK);
    int32_t in[6] = {1, 50, 7, 299, 3, 3}, tgt[6] = {2, 3, 4, 5, 6, 7};
    uint8_t mask[6] = {1, 1, 1, 1, 1, 1};
    double lg = ax_model_forward(mg, in, tgt, mask, B, 1.0f, 0);
    double lr = ax_model_forward(mr, in, tgt, mask, B, 1.0f, 0);
    cr_assert(fabs(lg - lr) <= 1e-5 * fabs(lr), "GQA loss %.9g vs replicated %.9g", lg, lr);
    free(pg), free(pr);
    ax_model_free(mg), ax_model_free(mr);
}

Test(gqa, refusals_name_the_flag) {
    ax_model_config c = llama_gqa();
    c.n_kv_heads = 3; /* does not divide 4 heads */
    cr_assert_eq(ax_model_config_check(&c), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--kv-heads 3"), "%s", ax_error_msg());
    c.n_kv_heads = 8;
    cr_assert_eq(ax_model_config_check(&c), AX_ERR_ARG);
    c.n_kv_heads = -1;
    cr_assert_eq(ax_model_config_check(&c), AX_ERR_ARG);
    ax_error_clear();
    c = llama_gqa();
    int dims[4] = {1, 1, 4, 1}; /* Y = 4 splits 4 heads, not 2 K/V heads */
    cr_assert_eq(ax_model_config_check_grid(&c, dims), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--grid 1x1x4x1") && strstr(ax_error_msg(), "kv-heads 2"),
              "%s", ax_error_msg());
    dims[2] = 2;
    cr_assert_eq(ax_model_config_check_grid(&c, dims), AX_OK);
}
