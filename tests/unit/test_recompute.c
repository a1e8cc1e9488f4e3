/* Activation recomputation (ax_model_opts.recompute): the same losses and gradients, bit for
 * bit, as keeping every activation, on every architecture option the layer has; over
 * accumulated micro-batches; with decoding afterwards; and less activation memory. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"
#include "lib/dist/grid.h"
#include "lib/model/model.h"

static ax_model_config llama(void) {
    return (ax_model_config){.n_layers = 3,
                             .dim = 16,
                             .n_heads = 4,
                             .ffn = 24,
                             .vocab = 263,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f};
}

static void batch(int N, int V, int32_t *in, int32_t *tg, uint8_t *mask, uint64_t seed) {
    for (int i = 0; i < N; i++) {
        in[i] = (int32_t)ax_rng_below(seed, 0, (uint64_t)i, (uint64_t)V);
        tg[i] = (int32_t)ax_rng_below(seed, 1, (uint64_t)i, (uint64_t)V);
        mask[i] = (uint8_t)(i % 4 != 2);
    }
}

static ax_model_t *make(ax_grid_t *g, const ax_model_config *c, int B, int T, int recompute) {
    ax_model_opts o = {.device = "cpu", .recompute = recompute};
    ax_model_t *m = NULL;
    cr_assert_eq(ax_model_create_ex(g, c, B, T, &o, &m), AX_OK, "%s", ax_error_msg());
    ax_model_init(m, 7);
    return m;
}

/* two micro-batches accumulated, then the gradients; the losses returned through *loss */
static float *grads_after(ax_model_t *m, int B, int T, int V, double loss[2]) {
    int N = B * T;
    int32_t *in = malloc(sizeof(int32_t) * (size_t)N), *tg = malloc(sizeof(int32_t) * (size_t)N);
    uint8_t *mask = malloc((size_t)N);
    ax_model_zero_grad(m);
    for (int mb = 0; mb < 2; mb++) {
        batch(N, V, in, tg, mask, 11 + (uint64_t)mb);
        loss[mb] = ax_model_forward(m, in, tg, mask, B, 0.01f, 1);
        ax_model_backward_ex(m, mb == 1);
    }
    int64_t n = ax_model_n_local(m);
    float *g = malloc(sizeof(float) * (size_t)n);
    cr_assert_eq(ax_model_read_grads(m, g, 0, n), AX_OK);
    free(in), free(tg), free(mask);
    return g;
}

static void check_same(const char *what, ax_model_config c) {
    int B = 2, T = 8;
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_model_t *keep = make(g, &c, B, T, 0), *re = make(g, &c, B, T, 1);
    double lk[2], lr[2];
    float *gk = grads_after(keep, B, T, c.vocab, lk), *gr = grads_after(re, B, T, c.vocab, lr);
    int64_t n = ax_model_n_local(keep);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(memcmp(&lk[i], &lr[i], sizeof(double)), 0, "%s: loss %d %.17g vs %.17g", what,
                     i, lk[i], lr[i]);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(&gk[i], &gr[i], sizeof(float)), 0, "%s: gradient %lld %.9g vs %.9g",
                     what, (long long)i, gk[i], gr[i]);
    /* the saving: every layer but one keeps only its input */
    size_t bk = ax_model_activation_bytes(keep), br = ax_model_activation_bytes(re);
    cr_assert(c.n_layers > 1 ? br < bk : br == bk, "%s: %zu bytes with recompute, %zu without",
              what, br, bk);
    free(gk), free(gr);
    ax_model_free(keep), ax_model_free(re);
    ax_grid_free(g);
}

TestSuite(recompute);

Test(recompute, same_gradients_on_every_layer_option) {
    check_same("llama", llama());
    ax_model_config c = llama();
    c.n_kv_heads = 2;
    check_same("grouped-query attention", c);
    c = llama(), c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU, c.bias = 1;
    c.parallel_residual = 1, c.rotary_dim = 2;
    check_same("neox", c);
    c = llama(), c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU_TANH, c.bias = 1;
    c.pos = AX_POS_LEARNED, c.max_pos = 8, c.tie_embeddings = 1;
    check_same("gpt2", c);
    c = llama(), c.n_layers = 1;
    check_same("one layer (nothing to recompute)", c);
}

/* the activation arena: L layers' (res + working set) become L res + one working set */
Test(recompute, activation_memory_shrinks_with_depth) {
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_model_config c = llama();
    c.n_layers = 8;
    ax_model_t *keep = make(g, &c, 4, 32, 0), *re = make(g, &c, 4, 32, 1);
    double ratio = (double)ax_model_activation_bytes(re) / (double)ax_model_activation_bytes(keep);
    /* per layer and token: 16 floats kept of 16 (res) + 16 + 48 (qkv) + 16 + 16 + 16 + 48 + 24
     * (+ 2 row stats): about a tenth, plus the shared working set and the head's buffers */
    cr_assert(ratio < 0.5, "recompute keeps %.2f of the activation bytes", ratio);
    ax_model_free(keep), ax_model_free(re);
    ax_grid_free(g);
}

/* decoding shares the working set's first layer as scratch: it still matches the forward */
Test(recompute, decoding_after_training_matches_the_other_model) {
    ax_grid_t *g = NULL;
    cr_assert_eq(ax_grid_create_serial(&g), AX_OK);
    ax_model_config c = llama();
    int B = 2, T = 8;
    ax_model_t *keep = make(g, &c, B, T, 0), *re = make(g, &c, B, T, 1);
    double l[2];
    free(grads_after(keep, B, T, c.vocab, l));
    free(grads_after(re, B, T, c.vocab, l));
    cr_assert_eq(ax_model_decode_begin(keep, B), AX_OK);
    cr_assert_eq(ax_model_decode_begin(re, B), AX_OK);
    int32_t tok[2] = {3, 41};
    float *a = malloc(sizeof(float) * (size_t)B * c.vocab);
    float *b = malloc(sizeof(float) * (size_t)B * c.vocab);
    for (int pos = 0; pos < 4; pos++) {
        ax_model_decode_step(keep, tok, pos);
        ax_model_decode_step(re, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(keep, a), AX_OK);
        cr_assert_eq(ax_model_decode_full_logits(re, b), AX_OK);
        cr_assert_eq(memcmp(a, b, sizeof(float) * (size_t)B * c.vocab), 0, "position %d", pos);
        tok[0] = (tok[0] * 7 + pos) % c.vocab, tok[1] = (tok[1] * 5 + 1) % c.vocab;
    }
    free(a), free(b);
    ax_model_free(keep), ax_model_free(re);
    ax_grid_free(g);
}
