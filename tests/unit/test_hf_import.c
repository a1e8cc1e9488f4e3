/* Hugging Face Llama-family import/export against the committed fixtures (written by
 * scripts/make_hf_fixtures.py with transformers): the imported checkpoint's logits match
 * transformers' (max relative error < 1e-4), export -> re-import is exact, and config.json /
 * weights that disagree are refused naming the file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
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
Test(hf_import, tied_gqa_f16) {
    check_fixture("llama_tied_f16");
}
Test(hf_import, walkthrough_one_layer) {
    check_fixture("llama_walkthrough");
}

/* A copy of fixture `name` with one edit (`from` -> `to`) in its file `file` (the other files
 * symlinked): the import must fail, with `fault` in the message, and write nothing. */
static void with_edit(const char *name, const char *file, const char *from, const char *to,
                      const char *fault) {
    char src[256], tmp[] = "/tmp/ax_hfc_XXXXXX", p[600], q[600], ck[400];
    snprintf(src, sizeof src, "%s/%s", fixture_root(), name);
    cr_assert(mkdtemp(tmp));
    DIR *d = opendir(src);
    cr_assert(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, file)) continue;
        snprintf(p, sizeof p, "%s/%s", src, e->d_name);
        snprintf(q, sizeof q, "%s/%s", tmp, e->d_name);
        char *abs = realpath(p, NULL);
        cr_assert(abs, "%s", p);
        cr_assert_eq(symlink(abs, q), 0);
        free(abs);
    }
    closedir(d);
    char *text;
    size_t n;
    snprintf(p, sizeof p, "%s/%s", src, file);
    cr_assert_eq(ax_read_file(p, &text, &n), AX_OK);
    char *at = strstr(text, from);
    cr_assert(at, "%s has no %s", p, from);
    char *edited = malloc(n + strlen(to) + 1);
    sprintf(edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    snprintf(q, sizeof q, "%s/%s", tmp, file);
    cr_assert_eq(ax_write_file(q, edited, strlen(edited)), AX_OK);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_neq(ax_hf_import(tmp, ck, NULL, 0), AX_OK, "accepted %s", to);
    cr_assert(strstr(ax_error_msg(), fault), "want '%s' in: %s", fault, ax_error_msg());
    cr_assert(!ax_path_exists(ck), "a refused import left %s", ck);
    free(text), free(edited);
    ax_rm_rf(tmp);
}

static void with_config(const char *name, const char *from, const char *to, const char *fault) {
    with_edit(name, "config.json", from, to, fault);
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

Test(hf_import, refuses_bad_shards_and_windows) {
    with_config("mistral_gqa_bf16", "\"sliding_window\": null", "\"sliding_window\": 4096",
                "sliding_window");
    /* the index maps a tensor to a shard that does not hold it, or outside the directory */
    with_edit("llama_untied_sharded", "model.safetensors.index.json",
              "\"model.layers.0.mlp.down_proj.weight\": \"model-00002-of-00003.safetensors\"",
              "\"model.layers.0.mlp.down_proj.weight\": \"model-00003-of-00003.safetensors\"",
              "does not hold it");
    with_edit("llama_untied_sharded", "model.safetensors.index.json",
              "\"lm_head.weight\": \"model-00003-of-00003.safetensors\"",
              "\"lm_head.weight\": \"../model-00003-of-00003.safetensors\"", "plain file names");
    /* the index names a tensor no shard holds */
    with_edit("llama_untied_sharded", "model.safetensors.index.json", "\"weight_map\": {",
              "\"weight_map\": {\"model.layers.0.self_attn.q_proj.bias\": "
              "\"model-00003-of-00003.safetensors\", ",
              "does not hold it");
}

/* the fixture's tensors plus an attention bias: a tensor with no place is refused by name */
Test(hf_import, refuses_unknown_tensor) {
    char src[256], tmp[] = "/tmp/ax_hfb_XXXXXX", p[400], q[400], ck[400];
    snprintf(src, sizeof src, "%s/llama_tied_gqa", fixture_root());
    cr_assert(mkdtemp(tmp));
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    ax_st_file *f;
    cr_assert_eq(ax_st_open(p, &f), AX_OK, "%s", ax_error_msg());
    int n = ax_st_n_tensors(f);
    ax_st_out *o = calloc((size_t)n + 1, sizeof *o);
    float **bufs = calloc((size_t)n + 1, sizeof *bufs);
    for (int i = 0; i < n; i++) {
        const ax_st_tensor *t = ax_st_tensor_at(f, i);
        bufs[i] = malloc(sizeof(float) * (size_t)t->numel);
        ax_st_read_f32(f, t, bufs[i]);
        o[i] = (ax_st_out){.name = t->name, .ndim = t->ndim, .data = bufs[i]};
        memcpy(o[i].shape, t->shape, sizeof t->shape);
    }
    bufs[n] = calloc(64, sizeof(float));
    o[n] = (ax_st_out){
        .name = "model.layers.1.self_attn.q_proj.bias", .ndim = 1, .shape = {64}, .data = bufs[n]};
    snprintf(q, sizeof q, "%s/model.safetensors", tmp);
    cr_assert_eq(ax_st_write(q, o, n + 1, NULL), AX_OK, "%s", ax_error_msg());
    ax_st_close(f);
    for (int i = 0; i <= n; i++) free(bufs[i]);
    free(bufs), free(o);
    char *cfg;
    size_t len;
    snprintf(p, sizeof p, "%s/config.json", src);
    cr_assert_eq(ax_read_file(p, &cfg, &len), AX_OK);
    snprintf(q, sizeof q, "%s/config.json", tmp);
    cr_assert_eq(ax_write_file(q, cfg, len), AX_OK);
    free(cfg);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_neq(ax_hf_import(tmp, ck, NULL, 0), AX_OK);
    cr_assert(strstr(ax_error_msg(), "q_proj.bias") && strstr(ax_error_msg(), "model.safetensors"),
              "%s", ax_error_msg());
    ax_rm_rf(tmp);
}

/* the converters' tensor table is the model's own, tensor for tensor */
Test(hf_import, tensor_table_matches_model) {
    for (int tie = 0; tie < 2; tie++) {
        ax_model_config c = {.n_layers = 3,
                             .dim = 32,
                             .n_heads = 4,
                             .ffn = 48,
                             .vocab = 301,
                             .tie_embeddings = tie,
                             .rope_theta = 1e4f,
                             .norm_eps = 1e-5f};
        ax_model_t *m;
        cr_assert_eq(ax_model_create(&c, 1, 1, &m), AX_OK, "%s", ax_error_msg());
        int n = ax_model_config_n_tensors(&c);
        cr_assert_eq(n, ax_model_n_tensors(m));
        ax_tensor_info *t = calloc((size_t)n, sizeof *t);
        ax_model_tensor_table(&c, t);
        const ax_tensor_info *u = ax_model_tensors(m);
        for (int i = 0; i < n; i++) {
            cr_assert_str_eq(t[i].name, u[i].name);
            cr_assert(t[i].ndim == u[i].ndim && t[i].shape[0] == u[i].shape[0] &&
                          t[i].shape[1] == u[i].shape[1] && t[i].offset == u[i].offset &&
                          t[i].numel == u[i].numel,
                      "tensor %s differs", u[i].name);
        }
        cr_assert_eq(t[n - 1].offset + t[n - 1].numel, ax_model_n_params(m));
        free(t);
        ax_model_free(m);
    }
}
