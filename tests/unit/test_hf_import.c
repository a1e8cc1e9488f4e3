/* Hugging Face Llama-family import/export against the committed fixtures (written by
 * scripts/make_hf_fixtures.py with transformers): the imported checkpoint's logits match
 * transformers' (max relative error < 1e-4), export -> re-import is exact, and config.json /
 * weights that disagree are refused naming the file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/model/model_io.h"

#define FB 2
#define FT 12

static const char *fixture_root(void) {
    static const char *cands[] = {"tests/fixtures/hf", "../tests/fixtures/hf",
                                  "../../tests/fixtures/hf"};
    for (int i = 0; i < 3; i++)
        if (ax_path_exists(cands[i])) return cands[i];
    cr_assert_fail("tests/fixtures/hf not found (run from the repository root)");
    return NULL;
}

static void *slurp(const char *dir, const char *name, size_t want) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *d;
    size_t n;
    cr_assert_eq(ax_read_file(path, &d, &n), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(n, want, "%s: %zu bytes, want %zu", path, n, want);
    return d;
}

/* logits [FB, FT, V] of checkpoint step dir on ids */
static float *run_ckpt(const char *step, const int32_t *ids, int *V) {
    ax_ckpt_t *ck;
    cr_assert_eq(ax_ckpt_open(step, &ck), AX_OK, "%s", ax_error_msg());
    ax_model_config c;
    cr_assert_eq(ax_model_config_from_ckpt(ck, &c), AX_OK, "%s", ax_error_msg());
    ax_model_t *m;
    cr_assert_eq(ax_model_create(&c, FB, FT, &m), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_load_blob(m, ck, "params", ax_model_slab(m, AX_SLAB_PARAMS)), AX_OK, "%s",
                 ax_error_msg());
    uint8_t mask[FB * FT];
    memset(mask, 1, sizeof mask);
    ax_model_forward(m, ids, ids, mask, FB, 1.0f, 0);
    int v0, valid, Vl;
    ax_model_vocab_slice(m, &v0, &valid, &Vl);
    cr_assert(v0 == 0 && valid == c.vocab);
    float *buf = malloc(sizeof(float) * FB * FT * Vl),
          *out = malloc(sizeof(float) * FB * FT * valid);
    cr_assert_eq(ax_model_read_logits(m, buf), AX_OK);
    for (int r = 0; r < FB * FT; r++)
        memcpy(out + (size_t)r * valid, buf + (size_t)r * Vl, sizeof(float) * valid);
    free(buf);
    ax_model_free(m);
    ax_ckpt_free(ck);
    *V = valid;
    return out;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return e / s;
}

static void check_fixture(const char *name) {
    char src[256], tmp[] = "/tmp/ax_hf_XXXXXX", ck[300], step[400], out[300], ck2[300], step2[400];
    snprintf(src, sizeof src, "%s/%s", fixture_root(), name);
    cr_assert(mkdtemp(tmp));
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_eq(ax_hf_import(src, ck, step, sizeof step), AX_OK, "%s", ax_error_msg());
    int32_t *ids = slurp(src, "ids.i32", sizeof(int32_t) * FB * FT);
    int V;
    float *got = run_ckpt(step, ids, &V);
    float *ref = slurp(src, "logits.f32", sizeof(float) * FB * FT * V);
    double e = max_rel(got, ref, (size_t)FB * FT * V);
    cr_assert_lt(e, 1e-4, "%s: max relative error %g against transformers", name, e);
    /* export -> re-import: the same parameters, so identical logits */
    snprintf(out, sizeof out, "%s/exported", tmp);
    cr_assert_eq(ax_hf_export(step, out), AX_OK, "%s", ax_error_msg());
    cr_assert_neq(ax_hf_export(step, out), AX_OK, "an existing --out must be refused");
    ax_error_clear();
    snprintf(ck2, sizeof ck2, "%s/ck2", tmp);
    cr_assert_eq(ax_hf_import(out, ck2, step2, sizeof step2), AX_OK, "%s", ax_error_msg());
    float *again = run_ckpt(step2, ids, &V);
    cr_assert_eq(memcmp(again, got, sizeof(float) * FB * FT * V), 0, "%s: re-import differs", name);
    free(again), free(got), free(ref), free(ids);
    ax_rm_rf(tmp);
}

Test(hf_import, tied_gqa_fp32) {
    check_fixture("llama_tied_gqa");
}
Test(hf_import, untied_sharded_fp32) {
    check_fixture("llama_untied_sharded");
}
Test(hf_import, mistral_gqa_bf16) {
    check_fixture("mistral_gqa_bf16");
}
Test(hf_import, walkthrough_one_layer) {
    check_fixture("llama_walkthrough");
}

/* a copy of a fixture with config.json replaced */
static void with_config(const char *name, const char *from, const char *to, const char *fault) {
    char src[256], tmp[] = "/tmp/ax_hfc_XXXXXX", p[400], q[400], ck[400];
    snprintf(src, sizeof src, "%s/%s", fixture_root(), name);
    cr_assert(mkdtemp(tmp));
    char *cfg;
    size_t n;
    snprintf(p, sizeof p, "%s/config.json", src);
    cr_assert_eq(ax_read_file(p, &cfg, &n), AX_OK);
    char *at = strstr(cfg, from);
    cr_assert(at, "%s has no %s", p, from);
    char *edited = malloc(n + strlen(to) + 1);
    sprintf(edited, "%.*s%s%s", (int)(at - cfg), cfg, to, at + strlen(from));
    snprintf(q, sizeof q, "%s/config.json", tmp);
    cr_assert_eq(ax_write_file(q, edited, strlen(edited)), AX_OK);
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    snprintf(q, sizeof q, "%s/model.safetensors", tmp);
    cr_assert_eq(symlink(p[0] == '/' ? p : realpath(p, NULL), q), 0);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_neq(ax_hf_import(tmp, ck, NULL, 0), AX_OK, "accepted %s", to);
    cr_assert(strstr(ax_error_msg(), fault), "want '%s' in: %s", fault, ax_error_msg());
    cr_assert(!ax_path_exists(ck), "a refused import left %s", ck);
    free(cfg), free(edited);
    ax_rm_rf(tmp);
}

Test(hf_import, refuses_disagreeing_config) {
    /* shapes that disagree with config.json: the weights file is named */
    with_config("llama_tied_gqa", "\"intermediate_size\": 96", "\"intermediate_size\": 128",
                "model.safetensors");
    with_config("llama_tied_gqa", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4",
                "config.json");
    with_config("llama_tied_gqa", "\"rope_type\": \"default\"", "\"rope_type\": \"linear\"",
                "rope_parameters");
    with_config("llama_tied_gqa", "\"pad_token_id\": null",
                "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}", "rope_scaling");
    with_config("llama_tied_gqa", "\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"", "architectures");
    with_config("llama_tied_gqa", "\"attention_bias\": false", "\"attention_bias\": true",
                "attention_bias");
    with_config("llama_tied_gqa", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"",
                "hidden_act");
}
