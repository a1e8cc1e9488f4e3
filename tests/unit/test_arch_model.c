/* GPT-NeoX- and GPT-2-shaped models (docs/training.md "Architectures") on one rank: the whole
 * backward against finite differences of the forward for every combination the two use (and
 * mixtures), KV-cached decoding against the forward, the initialisation and tensor table of
 * the interface, and the configuration checks. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/rng.h"
#include "lib/model/model.h"
#include "lib/model/model_io.h"
#include "tests/unit/test_model_fd.h"

static ax_model_config base(void) {
    return (ax_model_config){.n_layers = 2,
                             .dim = 16,
                             .n_heads = 2,
                             .ffn = 24,
                             .vocab = 300,
                             .tie_embeddings = 0,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f};
}
/* Pythia's shape: LayerNorm, exact GELU, biases, parallel residual, a quarter of each head
 * rotating (here 4 of 8 dims), untied */
static ax_model_config neox(void) {
    ax_model_config c = base();
    c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU, c.bias = 1, c.parallel_residual = 1;
    c.rotary_dim = 4;
    return c;
}
/* GPT-2's: LayerNorm, tanh GELU, biases, learned positions, sequential residual, tied */
static ax_model_config gpt2(void) {
    ax_model_config c = base();
    c.norm = AX_NORM_LAYER, c.mlp = AX_MLP_GELU_TANH, c.bias = 1, c.pos = AX_POS_LEARNED;
    c.max_pos = 12, c.tie_embeddings = 1;
    return c;
}

TestSuite(arch_model);

Test(arch_model, neox_backward_matches_finite_differences) {
    check_model_fd("neox", neox());
}
Test(arch_model, gpt2_backward_matches_finite_differences) {
    check_model_fd("gpt2", gpt2());
}
/* the options one at a time and in other mixtures than the two architectures' */
Test(arch_model, mixtures_backward_match_finite_differences) {
    ax_model_config c = base();
    c.norm = AX_NORM_LAYER;
    check_model_fd("layernorm only", c);
    c = base(), c.mlp = AX_MLP_GELU, c.bias = 1;
    check_model_fd("rms + gelu + bias", c);
    c = base(), c.parallel_residual = 1, c.rotary_dim = 2;
    check_model_fd("llama + parallel + rotary 2", c);
    c = base(), c.pos = AX_POS_LEARNED, c.max_pos = 8, c.bias = 1;
    check_model_fd("swiglu + bias + learned positions", c);
    c = neox(), c.rotary_dim = 0, c.tie_embeddings = 1;
    check_model_fd("neox full rotary tied", c);
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
        int32_t tok[2] = {in[pos], in[T + pos]}, arg[2];
        ax_model_decode_step(m, tok, pos);
        cr_assert_eq(ax_model_decode_full_logits(m, full), AX_OK);
        cr_assert_eq(ax_model_decode_argmax(m, arg), AX_OK);
        for (int b = 0; b < B; b++) {
            const float *want = ref + ((long)b * T + pos) * c.vocab;
            int best = 0;
            for (int v = 0; v < c.vocab; v++) {
                cr_assert(fabsf(full[(long)b * c.vocab + v] - want[v]) <=
                              1e-4f * (1 + fabsf(want[v])),
                          "%s pos %d seq %d logit %d: %g vs %g", what, pos, b, v,
                          full[(long)b * c.vocab + v], want[v]);
                if (want[v] > want[best]) best = v;
            }
            cr_assert_eq(arg[b], best, "%s pos %d seq %d argmax", what, pos, b);
        }
    }
    free(ref), free(full);
    ax_model_free(m);
}

Test(arch_model, kv_cached_decoding_matches_forward) {
    check_decode("neox", neox());
    check_decode("gpt2", gpt2());
}

/* The tensor table of the interface: names, shapes and order; the model's equals the one
 * converters get from ax_model_tensor_table; biases start at 0, norm weights at 1, positions
 * random; the parameter count matches. */
Test(arch_model, tensor_table_and_init) {
    ax_model_config cs[2] = {neox(), gpt2()};
    static const char *want_neox[] = {"wte",
                                      "layers.0.attn_norm",
                                      "layers.0.attn_norm_bias",
                                      "layers.0.wqkv",
                                      "layers.0.bqkv",
                                      "layers.0.wo",
                                      "layers.0.bo",
                                      "layers.0.mlp_norm",
                                      "layers.0.mlp_norm_bias",
                                      "layers.0.w_up",
                                      "layers.0.b_up",
                                      "layers.0.w_down",
                                      "layers.0.b_down"};
    for (int k = 0; k < 2; k++) {
        ax_model_config c = cs[k];
        ax_model_t *m = NULL;
        cr_assert_eq(ax_model_create(&c, 1, 8, &m), AX_OK, "%s", ax_error_msg());
        ax_model_init(m, 3);
        int n = ax_model_n_tensors(m);
        cr_assert_eq(n, ax_model_config_n_tensors(&c));
        ax_tensor_info *tab = calloc((size_t)n, sizeof *tab);
        ax_model_tensor_table(&c, tab);
        const ax_tensor_info *ts = ax_model_tensors(m);
        for (int i = 0; i < n; i++)
            cr_assert(!strcmp(ts[i].name, tab[i].name) && ts[i].numel == tab[i].numel &&
                          ts[i].offset == tab[i].offset && ts[i].ndim == tab[i].ndim &&
                          ts[i].shape[0] == tab[i].shape[0] && ts[i].shape[1] == tab[i].shape[1],
                      "tensor %d: %s vs %s", i, ts[i].name, tab[i].name);
        cr_assert_eq(ax_model_n_params(m), ax_model_config_n_params(&c));
        int64_t np = ax_model_n_params(m);
        float *p = malloc((size_t)np * sizeof *p);
        cr_assert_eq(ax_model_read_params(m, p, 0, np), AX_OK);
        for (int i = 0; i < n; i++) {
            const char *nm = ts[i].name;
            int is_bias = strstr(nm, "bias") || strstr(nm, ".b"),
                is_norm = !is_bias && strstr(nm, "norm");
            double lo = INFINITY, hi = -INFINITY;
            for (int64_t e = 0; e < ts[i].numel; e++)
                lo = fmin(lo, p[ts[i].offset + e]), hi = fmax(hi, p[ts[i].offset + e]);
            if (is_bias)
                cr_expect(lo == 0 && hi == 0, "%s: bias not zero", nm);
            else if (is_norm)
                cr_expect(lo == 1 && hi == 1, "%s: norm weight not one", nm);
            else
                cr_expect(hi > lo && hi < 0.2 && lo > -0.2, "%s: not N(0, 0.02)-like", nm);
        }
        free(p);
        if (k == 0) {
            for (int i = 0; i < 13; i++)
                cr_expect(!strcmp(ts[i].name, want_neox[i]), "neox tensor %d is %s, want %s", i,
                          ts[i].name, want_neox[i]);
            cr_expect(ts[4].ndim == 1 && ts[4].shape[0] == 3 * c.dim);     /* bqkv [3C] */
            cr_expect(ts[9].shape[0] == c.ffn && ts[9].shape[1] == c.dim); /* w_up [F, C] */
            cr_expect(!strcmp(ts[n - 2].name, "final_norm_bias") &&
                      !strcmp(ts[n - 1].name, "lm_head"));
        } else {
            cr_expect(!strcmp(ts[1].name, "wpe") && ts[1].shape[0] == c.max_pos &&
                          ts[1].shape[1] == c.dim,
                      "gpt2 tensor 1 is %s", ts[1].name);
            cr_expect(!strcmp(ts[n - 1].name, "final_norm_bias")); /* tied: no lm_head */
        }
        free(tab);
        ax_model_free(m);
    }
}

/* A fresh model predicts about uniformly: the initial loss is near ln V. */
Test(arch_model, initial_loss_is_log_vocab) {
    ax_model_config cs[2] = {neox(), gpt2()};
    for (int k = 0; k < 2; k++) {
        ax_model_t *m = NULL;
        cr_assert_eq(ax_model_create(&cs[k], 2, 8, &m), AX_OK);
        ax_model_init(m, 1);
        int32_t in[16], tg[16];
        uint8_t mask[16];
        make_batch(16, cs[k].vocab, in, tg, mask, 3);
        memset(mask, 1, sizeof mask);
        double l = ax_model_forward(m, in, tg, mask, 2, 1.0f, 0) / 16;
        cr_expect(fabs(l - log(cs[k].vocab)) < 0.05, "arch %d: initial loss %.4f vs ln V %.4f", k,
                  l, log(cs[k].vocab));
        ax_model_free(m);
    }
}

static void expect_refused(ax_model_config c, int T, const char *needle) {
    ax_model_t *m = NULL;
    cr_expect_eq(ax_model_create(&c, 1, T, &m), AX_ERR_ARG, "accepted (wanted '%s')", needle);
    cr_expect_null(m);
    cr_expect(strstr(ax_error_msg(), needle), "message '%s' lacks '%s'", ax_error_msg(), needle);
    ax_error_clear();
    ax_model_free(m);
}

Test(arch_model, impossible_configurations_are_refused) {
    ax_model_config c = neox();
    c.rotary_dim = 3; /* odd */
    expect_refused(c, 8, "--rotary-dim 3");
    c.rotary_dim = 10; /* > head size 8 */
    expect_refused(c, 8, "--rotary-dim 10");
    c.rotary_dim = -2;
    expect_refused(c, 8, "--rotary-dim -2");
    c = gpt2();
    expect_refused(c, 13, "exceeds the 12 learned positions"); /* T > max_pos */
    c.rotary_dim = 4;
    expect_refused(c, 8, "learned positions have no rotary");
    c = gpt2(), c.max_pos = 0;
    expect_refused(c, 8, "--max-pos");
    c = base(), c.norm = (ax_norm_kind)2;
    expect_refused(c, 8, "architecture fields");
    c = base(), c.mlp = (ax_mlp_kind)3;
    expect_refused(c, 8, "architecture fields");
    c = base(), c.bias = 2;
    expect_refused(c, 8, "architecture fields");
    /* an odd head size is fine when only part of it rotates, or nothing does */
    c = base(), c.dim = 18, c.n_heads = 2, c.rotary_dim = 4; /* head size 9 */
    ax_model_t *m = NULL;
    cr_expect_eq(ax_model_create(&c, 1, 8, &m), AX_OK, "%s", ax_error_msg());
    ax_model_free(m);
    c.rotary_dim = 0, c.pos = AX_POS_LEARNED, c.max_pos = 8;
    m = NULL;
    cr_expect_eq(ax_model_create(&c, 1, 8, &m), AX_OK, "%s", ax_error_msg());
    ax_model_free(m);
    c.pos = AX_POS_ROPE, c.max_pos = 0;
    expect_refused(c, 8, "must be even");
}
