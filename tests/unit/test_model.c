/* The whole model's backward against finite differences of its forward, and basic training
 * behaviour. Per-op float64 checks live in test_ops*.c; this checks the wiring. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dist/grid.h"
#include "lib/model/model.h"
#include "lib/model/optim.h"
#include "lib/core/rng.h"

static ax_model_config tiny_cfg(int tie) {
    ax_model_config c = {.n_layers = 2,
                         .dim = 16,
                         .n_heads = 2,
                         .ffn = 24,
                         .vocab = 300,
                         .tie_embeddings = tie,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    return c;
}

static void make_batch(int N, int V, int32_t *in, int32_t *tg, uint8_t *mask, uint64_t seed) {
    for (int i = 0; i < N; i++) {
        in[i] = (int32_t)ax_rng_below(seed, 0, (uint64_t)i, (uint64_t)V);
        tg[i] = (int32_t)ax_rng_below(seed, 1, (uint64_t)i, (uint64_t)V);
        mask[i] = (uint8_t)(i % 3 != 1); /* some targets dropped, as goldfish will */
    }
}

static double loss_at(ax_model_t *m, const int32_t *in, const int32_t *tg, const uint8_t *mask,
                      int B, int n_sup) {
    return ax_model_forward(m, in, tg, mask, B, 1.0f, 0) / n_sup;
}

/* directional derivative: (L(p + e d) - L(p - e d)) / 2e  vs  <grad, d> */
static void check_directional(int tie) {
    ax_model_config c = tiny_cfg(tie);
    int B = 2, T = 8, N = B * T;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    ax_model_init(m, 42);
    /* larger weights than the 0.02 init make the function less flat, so FD has signal */
    int64_t n = ax_model_n_params(m); /* = n_local on one rank */
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++) p[i] *= 3.0f;
    cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(N, c.vocab, in, tg, mask, 5);
    int n_sup = 0;
    for (int i = 0; i < N; i++) n_sup += mask[i];

    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, B, 1.0f / (float)n_sup, 1);
    ax_model_backward(m);
    float *g = malloc((size_t)n * sizeof *g), *p0 = malloc((size_t)n * sizeof *p0);
    float *d = malloc((size_t)n * sizeof *d);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    memcpy(p0, p, (size_t)n * sizeof *p0);
    for (int trial = 0; trial < 4; trial++) {
        double dot = 0;
        for (int64_t i = 0; i < n; i++) {
            d[i] = ax_rng_normal(99, (uint64_t)trial, (uint64_t)i);
            dot += (double)g[i] * d[i];
        }
        double eps = 3e-4, lp, lm;
        for (int64_t i = 0; i < n; i++) p[i] = p0[i] + (float)eps * d[i];
        cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
        lp = loss_at(m, in, tg, mask, B, n_sup);
        for (int64_t i = 0; i < n; i++) p[i] = p0[i] - (float)eps * d[i];
        cr_assert_eq(ax_model_write_params(m, p, 0, n), AX_OK);
        lm = loss_at(m, in, tg, mask, B, n_sup);
        cr_assert_eq(ax_model_write_params(m, p0, 0, n), AX_OK);
        double fd = (lp - lm) / (2 * eps);
        cr_assert(fabs(fd - dot) <= 2e-2 * fabs(dot) + 1e-3,
                  "tie=%d trial %d: finite difference %.6g vs backward %.6g", tie, trial, fd, dot);
    }
    free(g), free(p0), free(d), free(p);
    ax_model_free(m);
}

Test(model, backward_matches_finite_differences_tied) {
    check_directional(1);
}
Test(model, backward_matches_finite_differences_untied) {
    check_directional(0);
}

Test(model, initial_loss_is_log_vocab) {
    ax_model_config c = tiny_cfg(1);
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 2, 8, &m), AX_OK);
    ax_model_init(m, 1);
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(16, c.vocab, in, tg, mask, 3);
    memset(mask, 1, sizeof mask);
    double l = ax_model_forward(m, in, tg, mask, 2, 1.0f, 0) / 16;
    cr_assert(fabs(l - log(c.vocab)) < 0.05, "initial loss %.4f vs ln V %.4f", l, log(c.vocab));
    ax_model_free(m);
}

Test(model, masked_targets_do_not_count) {
    ax_model_config c = tiny_cfg(1);
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, 1, 8, &m), AX_OK);
    ax_model_init(m, 1);
    int32_t in[8], tg[8], tg2[8];
    uint8_t mask[8];
    make_batch(8, c.vocab, in, tg, mask, 4);
    memcpy(tg2, tg, sizeof tg);
    for (int i = 0; i < 8; i++)
        if (!mask[i]) tg2[i] = (tg[i] + 17) % c.vocab; /* change only dropped targets */
    double a = ax_model_forward(m, in, tg, mask, 1, 1.0f, 0);
    double b = ax_model_forward(m, in, tg2, mask, 1, 1.0f, 0);
    cr_assert_eq(a, b, "a dropped target changed the loss: %.9g vs %.9g", a, b);
    ax_model_free(m);
}

Test(model, same_seed_same_weights_and_shape_checks) {
    ax_model_config c = tiny_cfg(0);
    ax_model_t *a = NULL, *b = NULL;
    cr_assert_eq(ax_model_create(&c, 1, 4, &a), AX_OK);
    cr_assert_eq(ax_model_create(&c, 3, 4, &b), AX_OK); /* different batch, same weights */
    ax_model_init(a, 7);
    ax_model_init(b, 7);
    int64_t n = ax_model_n_params(a);
    cr_assert_eq(n, ax_model_config_n_params(&c));
    float *pa = malloc((size_t)n * sizeof *pa), *pb = malloc((size_t)n * sizeof *pb);
    cr_assert_eq(ax_model_read_params(a, pa, 0, n), AX_OK);
    cr_assert_eq(ax_model_read_params(b, pb, 0, n), AX_OK);
    cr_assert(!memcmp(pa, pb, (size_t)n * sizeof(float)));
    free(pa), free(pb);
    ax_model_free(a);
    ax_model_free(b);
    c.n_heads = 3;
    ax_model_t *bad = NULL;
    cr_assert_eq(ax_model_create(&c, 1, 4, &bad), AX_ERR_ARG);
    cr_assert_null(bad);
}

Test(model, overfits_a_fixed_batch) {
    ax_model_config c = tiny_cfg(1);
    int B = 2, T = 16, N = B * T;
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.0f, 1.0f};
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    cr_assert_eq(ax_optim_create(m, &oc, &o), AX_OK);
    ax_model_init(m, 3);
    int32_t in[32], tg[32];
    uint8_t mask[32];
    make_batch(N, c.vocab, in, tg, mask, 8);
    memset(mask, 1, sizeof mask);
    double first = 0, last = 0;
    for (int s = 0; s < 150; s++) {
        ax_model_zero_grad(m);
        double l = ax_model_forward(m, in, tg, mask, B, 1.0f / N, 1) / N;
        ax_model_backward(m);
        double gn;
        cr_assert_eq(ax_optim_step(o, m, 1e-2, &gn), AX_OK, "%s", ax_error_msg());
        if (s == 0) first = l;
        last = l;
    }
    cr_assert(last < 0.2 * first, "loss %.4f -> %.4f: did not overfit one batch", first, last);
    ax_optim_free(o);
    ax_model_free(m);
}

Test(optim, schedule_warmup_then_cosine) {
    ax_lr_schedule s = {.lr = 1.0, .min_lr_frac = 0.1, .warmup = 10, .total = 110};
    cr_assert_float_eq(ax_lr_at(&s, 0), 0.1, 1e-12);
    cr_assert_float_eq(ax_lr_at(&s, 9), 1.0, 1e-12);
    cr_assert_float_eq(ax_lr_at(&s, 10), 1.0, 1e-12);
    cr_assert_float_eq(ax_lr_at(&s, 60), 0.55, 1e-12); /* halfway down the cosine */
    cr_assert_float_eq(ax_lr_at(&s, 110), 0.1, 1e-12);
    cr_assert_float_eq(ax_lr_at(&s, 500), 0.1, 1e-12);
}

Test(model, kv_cached_decoding_matches_forward) {
    ax_model_config c = tiny_cfg(0);
    int B = 2, T = 12;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    ax_model_init(m, 5);
    int32_t in[24], tg[24];
    uint8_t mask[24];
    make_batch(B * T, c.vocab, in, tg, mask, 6);
    ax_model_forward(m, in, tg, mask, B, 1.0f, 0);
    float *ref = malloc(sizeof(float) * (size_t)B * T * c.vocab);
    cr_assert_eq(ax_model_read_logits(m, ref), AX_OK); /* [B, T, V]: one rank holds all */
    cr_assert_eq(ax_model_decode_begin(m, B), AX_OK);
    float *full = malloc(sizeof(float) * (size_t)B * c.vocab);
    for (int pos = 0; pos < T; pos++) {
        int32_t tok[2] = {in[pos], in[T + pos]};
        ax_model_decode_step(m, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(m, full), AX_OK);
        int32_t arg[2];
        cr_assert_eq(ax_model_decode_argmax(m, arg), AX_OK);
        for (int b = 0; b < B; b++) {
            const float *want = ref + ((long)b * T + pos) * c.vocab;
            int best = 0;
            for (int v = 0; v < c.vocab; v++) {
                cr_assert(fabsf(full[(long)b * c.vocab + v] - want[v]) <=
                              1e-4f * (1 + fabsf(want[v])),
                          "pos %d seq %d logit %d: %g vs %g", pos, b, v,
                          full[(long)b * c.vocab + v], want[v]);
                if (want[v] > want[best]) best = v;
            }
            cr_assert_eq(arg[b], best, "pos %d seq %d argmax", pos, b);
        }
    }
    free(ref), free(full);
    ax_model_free(m);
}

/* Decoding multiplies packed copies of the weights (ax_matmul_packs): after the weights change
 * (here re-initialised, then a training forward, which gathers them and clears the model's
 * stale flag) the next decoding step must repack, or it would decode with the old model. */
Test(model, kv_cached_decoding_repacks_after_a_weight_write) {
    ax_model_config c = tiny_cfg(0);
    int B = 2, T = 6;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    ax_model_init(m, 5);
    int32_t in[12], tg[12];
    uint8_t mask[12];
    make_batch(B * T, c.vocab, in, tg, mask, 6);
    cr_assert_eq(ax_model_decode_begin(m, B), AX_OK);
    int32_t tok[2] = {in[0], in[T]};
    ax_model_decode_step(m, tok, 0); /* packs the seed-5 weights */
    ax_model_init(m, 9);
    ax_model_forward(m, in, tg, mask, B, 1.0f, 0);
    float *ref = malloc(sizeof(float) * (size_t)B * T * c.vocab);
    cr_assert_eq(ax_model_read_logits(m, ref), AX_OK);
    cr_assert_eq(ax_model_decode_begin(m, B), AX_OK);
    float *full = malloc(sizeof(float) * (size_t)B * c.vocab);
    for (int pos = 0; pos < T; pos++) {
        int32_t t2[2] = {in[pos], in[T + pos]};
        ax_model_decode_step(m, t2, pos);
        cr_assert_eq(ax_model_decode_full_logits(m, full), AX_OK);
        for (int b = 0; b < B; b++)
            for (int v = 0; v < c.vocab; v++) {
                float want = ref[((long)b * T + pos) * c.vocab + v];
                cr_assert(fabsf(full[(long)b * c.vocab + v] - want) <= 1e-4f * (1 + fabsf(want)),
                          "pos %d seq %d logit %d: %g vs %g (stale packed weights?)", pos, b, v,
                          full[(long)b * c.vocab + v], want);
            }
    }
    free(ref), free(full);
    ax_model_free(m);
}

/* A prompt fed with ax_model_decode_feed (no logits) leaves the caches as ax_model_decode_step
 * does: every later step's logits are the same bits. Until a full step nothing reads logits. */
static void feed_matches_step(ax_model_config c) {
    int B = 2, T = 8, P = 5; /* feed positions 0..P-2, step from P-1 on */
    ax_model_t *a = NULL, *b = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &a), AX_OK);
    cr_assert_eq(ax_model_create(&c, B, T, &b), AX_OK);
    ax_model_init(a, 5), ax_model_init(b, 5);
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(B * T, c.vocab, in, tg, mask, 6);
    cr_assert_eq(ax_model_decode_begin(a, B), AX_OK);
    cr_assert_eq(ax_model_decode_begin(b, B), AX_OK);
    int32_t arg[2];
    cr_assert_eq(ax_model_decode_argmax(b, arg), AX_ERR_ARG, "argmax before any step");
    ax_error_clear();
    size_t n = (size_t)B * c.vocab;
    float *la = malloc(sizeof(float) * n), *lb = malloc(sizeof(float) * n);
    for (int pos = 0; pos < T; pos++) {
        int32_t tok[2] = {in[pos], in[T + pos]};
        ax_model_decode_step(a, tok, pos);
        if (pos < P - 1) {
            ax_model_decode_feed(b, tok, pos);
            cr_assert_eq(ax_model_decode_argmax(b, arg), AX_ERR_ARG, "argmax after a feed");
            cr_assert_eq(ax_model_decode_full_logits(b, lb), AX_ERR_ARG);
            ax_sample_params sp = {.temperature = 1, .top_p = 1};
            uint64_t keys[2] = {1, 2};
            cr_assert_eq(ax_model_decode_sample(b, &sp, keys, arg), AX_ERR_ARG);
            cr_assert(strstr(ax_error_msg(), "ax_model_decode_argmax: no logits"), "%s",
                      ax_error_msg()); /* the first refusal's message is kept */
            ax_error_clear();
            continue;
        }
        ax_model_decode_step(b, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(a, la), AX_OK);
        cr_assert_eq(ax_model_decode_full_logits(b, lb), AX_OK);
        cr_assert(memcmp(la, lb, sizeof(float) * n) == 0, "pos %d: logits differ after a feed",
                  pos);
        cr_assert_eq(ax_model_decode_argmax(b, arg), AX_OK);
    }
    cr_assert_eq(ax_model_status(b), AX_OK);
    free(la), free(lb);
    ax_model_free(a), ax_model_free(b);
}

Test(model, decode_feed_fills_the_caches_like_a_step) {
    feed_matches_step(tiny_cfg(0));
    ax_model_config neox = tiny_cfg(1); /* the last layer's parallel residual reads x itself */
    neox.norm = AX_NORM_LAYER, neox.mlp = AX_MLP_GELU, neox.bias = 1, neox.parallel_residual = 1;
    feed_matches_step(neox);
}

/* An inference model (the scans' model) computes what a training model does, bit for bit, and
 * refuses everything that needs gradients, with a message naming the call. */
Test(model, inference_model_has_no_gradients) {
    ax_model_config c = tiny_cfg(1);
    int B = 2, T = 6;
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_model_t *train = NULL, *inf = NULL;
    ax_model_opts to = {.device = "cpu"}, io = {.device = "cpu", .inference = 1};
    cr_assert_eq(ax_model_create_ex(g, &c, B, T, &to, &train), AX_OK);
    cr_assert_eq(ax_model_create_ex(g, &c, B, T, &io, &inf), AX_OK);
    ax_model_init(train, 5), ax_model_init(inf, 5);
    int32_t in[12], tg[12];
    uint8_t mask[12];
    make_batch(B * T, c.vocab, in, tg, mask, 6);
    double la = ax_model_forward(train, in, tg, mask, B, 1.0f, 0);
    double lb = ax_model_forward(inf, in, tg, mask, B, 1.0f, 0);
    cr_assert_eq(la, lb, "loss %.17g vs %.17g", la, lb);
    size_t n = (size_t)B * T * c.vocab;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    cr_assert_eq(ax_model_read_logits(train, a), AX_OK);
    cr_assert_eq(ax_model_read_logits(inf, b), AX_OK);
    cr_assert(memcmp(a, b, sizeof(float) * n) == 0, "forward logits differ");
    cr_assert_eq(ax_model_decode_begin(train, B), AX_OK);
    cr_assert_eq(ax_model_decode_begin(inf, B), AX_OK);
    for (int pos = 0; pos < T; pos++) {
        int32_t tok[2] = {in[pos], in[T + pos]};
        ax_model_decode_step(train, tok, pos), ax_model_decode_step(inf, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(train, a), AX_OK);
        cr_assert_eq(ax_model_decode_full_logits(inf, b), AX_OK);
        cr_assert(memcmp(a, b, sizeof(float) * B * c.vocab) == 0, "decode pos %d differs", pos);
    }
    cr_assert_null(ax_model_slab(inf, AX_SLAB_GRADS));
    double ss;
    cr_assert_eq(ax_model_grad_sumsq(inf, &ss), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "ax_model_grad_sumsq: this model was created for inference"),
              "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_model_read_grads(inf, a, 0, 4), AX_ERR_ARG);
    ax_error_clear();
    ax_optim_t *o = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    cr_assert_eq(ax_optim_create(inf, &oc, &o), AX_ERR_ARG);
    cr_assert_null(o);
    ax_error_clear();
    cr_assert_eq(ax_model_status(inf), AX_OK);
    ax_model_forward(inf, in, tg, mask, B, 1.0f, 1);
    ax_model_zero_grad(inf);
    cr_assert_eq(ax_model_status(inf), AX_ERR_ARG, "zero_grad on an inference model");
    cr_assert(strstr(ax_error_msg(), "ax_model_zero_grad"), "%s", ax_error_msg());
    ax_model_clear_status(inf), ax_error_clear();
    ax_model_backward(inf);
    cr_assert_eq(ax_model_status(inf), AX_ERR_ARG, "backward on an inference model");
    cr_assert(strstr(ax_error_msg(), "ax_model_backward"), "%s", ax_error_msg());
    ax_model_clear_status(inf), ax_error_clear();
    ax_model_opts bad = {.device = "cpu", .inference = 1, .stream_z = 1};
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create_ex(g, &c, B, T, &bad, &m), AX_ERR_ARG);
    cr_assert_null(m);
    ax_error_clear();
    free(a), free(b);
    ax_model_free(train), ax_model_free(inf);
    ax_grid_free(g);
}

/* The slabs live in backend memory: host code copies through ax_model_read/write_*, which check
 * their ranges, and what they read is what the model computes with. */
Test(model, slab_and_activation_copies) {
    ax_model_config c = tiny_cfg(1);
    int B = 2, T = 8, N = B * T;
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    ax_model_init(m, 4);
    int64_t n = ax_model_n_local(m);
    float *p = malloc((size_t)n * sizeof *p), *q = malloc((size_t)n * sizeof *q);
    cr_assert_eq(ax_model_read_params(m, p, 0, n), AX_OK);
    /* a sub-range written lands there and nowhere else */
    int64_t off, cnt;
    ax_model_local_range(m, 1, &off, &cnt); /* layers.0.attn_norm: initialised to 1 */
    for (int64_t i = 0; i < cnt; i++) cr_assert_eq(p[off + i], 1.0f);
    float *w = malloc((size_t)cnt * sizeof *w);
    for (int64_t i = 0; i < cnt; i++) w[i] = 0.5f + (float)i;
    cr_assert_eq(ax_model_write_params(m, w, off, cnt), AX_OK);
    cr_assert_eq(ax_model_read_params(m, q, 0, n), AX_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(q[i], i >= off && i < off + cnt ? w[i - off] : p[i], "element %lld",
                     (long long)i);
    /* ranges outside the slab are refused with a message naming the call */
    cr_assert_eq(ax_model_read_params(m, q, n - 1, 2), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "ax_model_read_params"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_model_write_params(m, q, -1, 1), AX_ERR_ARG);
    ax_error_clear();
    cr_assert_eq(ax_model_read_grads(m, q, 0, n + 1), AX_ERR_ARG);
    ax_error_clear();
    /* activations exist only after a forward */
    float *lg = malloc(sizeof(float) * (size_t)N * c.vocab), losses[16];
    float *res = malloc(sizeof(float) * (size_t)N * c.dim);
    cr_assert_eq(ax_model_read_logits(m, lg), AX_ERR_ARG);
    ax_error_clear();
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(N, c.vocab, in, tg, mask, 9);
    double sum = ax_model_forward(m, in, tg, mask, B, 1.0f, 0);
    /* the per-target losses add up to the returned sum, 0 where the target is dropped, and each
     * is -log softmax of its logits row */
    cr_assert_eq(ax_model_read_losses(m, losses), AX_OK);
    cr_assert_eq(ax_model_read_logits(m, lg), AX_OK);
    double total = 0;
    for (int i = 0; i < N; i++) {
        total += losses[i];
        if (!mask[i]) {
            cr_assert_eq(losses[i], 0.0f, "row %d is dropped", i);
            continue;
        }
        const float *row = lg + (size_t)i * c.vocab;
        double mx = row[0], z = 0;
        for (int v = 1; v < c.vocab; v++) mx = fmax(mx, row[v]);
        for (int v = 0; v < c.vocab; v++) z += exp(row[v] - mx);
        double want = log(z) + mx - row[tg[i]];
        cr_assert(fabs(losses[i] - want) <= 1e-4 * fabs(want), "row %d: %g vs %g", i, losses[i],
                  want);
    }
    cr_assert(fabs(total - sum) <= 1e-5 * fabs(sum), "losses add to %g, forward said %g", total,
              sum);
    /* the residual entering layer 0 is the embedding of the inputs (wte rows, tied) */
    cr_assert_eq(ax_model_read_residual(m, 0, res), AX_OK);
    ax_model_local_range(m, 0, &off, &cnt); /* wte [V, C] */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < c.dim; k++)
            cr_assert_eq(res[(size_t)i * c.dim + k], q[off + (int64_t)in[i] * c.dim + k]);
    cr_assert_eq(ax_model_read_residual(m, c.n_layers, res), AX_OK);
    cr_assert_eq(ax_model_read_residual(m, c.n_layers + 1, res), AX_ERR_ARG);
    ax_error_clear();
    free(p), free(q), free(w), free(lg), free(res);
    ax_model_free(m);
}

/* One AdamW step from zero moments: m = (1 - b1) g, v = (1 - b2) g^2 (read through the
 * backend), and every parameter moves by lr * g / (|g| + eps) (bias-corrected, t = 1). */
Test(optim, moments_after_one_step) {
    ax_model_config c = tiny_cfg(0);
    int B = 2, T = 8, N = B * T;
    ax_model_t *m = NULL;
    ax_optim_t *o = NULL;
    ax_adamw_config oc = {0.9f, 0.95f, 1e-8f, 0.0f, 0.0f}; /* no decay, no clipping */
    cr_assert_eq(ax_model_create(&c, B, T, &m), AX_OK);
    cr_assert_eq(ax_optim_create(m, &oc, &o), AX_OK);
    ax_model_init(m, 6);
    int32_t in[16], tg[16];
    uint8_t mask[16];
    make_batch(N, c.vocab, in, tg, mask, 10);
    ax_model_zero_grad(m);
    ax_model_forward(m, in, tg, mask, B, 1.0f / N, 1);
    ax_model_backward(m);
    int64_t n = ax_model_n_local(m);
    float *g = malloc((size_t)n * sizeof *g), *p0 = malloc((size_t)n * sizeof *p0);
    float *p1 = malloc((size_t)n * sizeof *p1), *mm = malloc((size_t)n * sizeof *mm);
    float *vv = malloc((size_t)n * sizeof *vv);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    cr_assert_eq(ax_model_read_params(m, p0, 0, n), AX_OK);
    double gn;
    cr_assert_eq(ax_optim_step(o, m, 1e-3, &gn), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_optim_read_m(o, mm, 0, n), AX_OK);
    cr_assert_eq(ax_optim_read_v(o, vv, 0, n), AX_OK);
    cr_assert_eq(ax_model_read_params(m, p1, 0, n), AX_OK);
    int64_t moved = 0;
    for (int64_t i = 0; i < n; i++) {
        float wm = 0.1f * g[i], wv = 0.05f * g[i] * g[i];
        cr_assert(fabsf(mm[i] - wm) <= 1e-6f * fabsf(wm), "m[%lld] %g vs %g", (long long)i, mm[i],
                  wm);
        cr_assert(fabsf(vv[i] - wv) <= 1e-5f * fabsf(wv) + 1e-30f, "v[%lld] %g vs %g", (long long)i,
                  vv[i], wv);
        double step = 1e-3 * g[i] / (fabs(g[i]) + 1e-8);
        cr_assert(fabs((p0[i] - p1[i]) - step) <= 1e-3 * fabs(step) + 1e-7, "p[%lld] moved %g, %g",
                  (long long)i, p0[i] - p1[i], step);
        moved += g[i] != 0;
    }
    cr_assert(moved > n / 2, "only %lld of %lld gradients are non-zero", (long long)moved,
              (long long)n);
    cr_assert_eq(ax_optim_read_m(o, mm, 1, n), AX_ERR_ARG);
    ax_error_clear();
    free(g), free(p0), free(p1), free(mm), free(vv);
    ax_optim_free(o);
    ax_model_free(m);
}
