/* Hugging Face import/export (Llama, Mistral, GPT-NeoX, GPT-2) against the committed fixtures
 * (written by scripts/make_hf_fixtures.py with transformers): the imported checkpoint's logits
 * match transformers' (max relative error < 1e-4), the checkpoint's config is the one
 * config.json describes, the export is the same architecture with the source's tensors
 * (names, shapes, values), export -> re-import is exact, and config.json / weights that
 * disagree are refused naming the file and the key. */
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

static void same_cfg(const ax_model_config *a, const ax_model_config *b, const char *what) {
    cr_assert(a->n_layers == b->n_layers && a->dim == b->dim && a->n_heads == b->n_heads &&
                  a->ffn == b->ffn && a->vocab == b->vocab &&
                  a->tie_embeddings == b->tie_embeddings && a->rope_theta == b->rope_theta &&
                  a->norm_eps == b->norm_eps,
              "%s: the shape differs", what);
    cr_assert_eq(a->n_kv_heads, b->n_kv_heads, "%s: kv-heads %d, expected %d", what, a->n_kv_heads,
                 b->n_kv_heads);
    cr_assert(a->norm == b->norm && a->mlp == b->mlp && a->bias == b->bias &&
                  a->parallel_residual == b->parallel_residual && a->rotary_dim == b->rotary_dim &&
                  a->pos == b->pos && (a->pos != AX_POS_LEARNED || a->max_pos == b->max_pos),
              "%s: the architecture differs (norm %d/%d mlp %d/%d bias %d/%d parallel %d/%d "
              "rotary %d/%d pos %d/%d)",
              what, a->norm, b->norm, a->mlp, b->mlp, a->bias, b->bias, a->parallel_residual,
              b->parallel_residual, a->rotary_dim, b->rotary_dim, a->pos, b->pos);
}

static int is_buffer(const char *n) {
    static const char *const ends[] = {".attn.bias", ".attn.masked_bias", ".attention.bias",
                                       ".attention.masked_bias", ".inv_freq"};
    size_t ln = strlen(n);
    for (int i = 0; i < 5; i++)
        if (ln >= strlen(ends[i]) && !strcmp(n + ln - strlen(ends[i]), ends[i])) return 1;
    return 0;
}

/* The exporter's file read back by the C reader: every tensor is the source's tensor of the
 * same name (GPT2Model saves lack "transformer."), same shape, same values (fp16/bf16 sources
 * upcast exactly); every source tensor but buffers and a tied head's copy is there, the K/V
 * projections of a grouped-query source too (kept natively, not expanded). */
static void same_tensors(const char *src, const char *out, const ax_hf_config *hc) {
    ax_hf_weights *a, *b;
    cr_assert_eq(ax_hf_weights_open(src, &a), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_hf_weights_open(out, &b), AX_OK, "%s", ax_error_msg());
    int want = 0;
    for (int i = 0; i < ax_hf_weights_count(a); i++) {
        const ax_st_file *f;
        const char *n = ax_hf_weights_name(a, i, &f);
        int head = !strcmp(n, "lm_head.weight") || !strcmp(n, "embed_out.weight");
        want += !is_buffer(n) && !(head && hc->cfg.tie_embeddings);
    }
    cr_assert_eq(ax_hf_weights_count(b), want, "%s: %d tensors, the source %d", out,
                 ax_hf_weights_count(b), want);
    for (int i = 0; i < ax_hf_weights_count(b); i++) {
        const ax_st_file *fb, *fa;
        const ax_st_tensor *tb, *ta;
        const char *n = ax_hf_weights_name(b, i, &fb);
        tb = ax_st_find(fb, n);
        cr_assert_eq(tb->dtype, AX_ST_F32);
        if (ax_hf_weights_find(a, n, &fa, &ta) != AX_OK) {
            ax_error_clear();
            cr_assert(!strncmp(n, "transformer.", 12) &&
                          ax_hf_weights_find(a, n + 12, &fa, &ta) == AX_OK,
                      "%s: exported tensor %s is not in the source", out, n);
        }
        cr_assert(ta->ndim == tb->ndim && !memcmp(ta->shape, tb->shape, sizeof(int64_t) * ta->ndim),
                  "%s: tensor %s has another shape than the source's", out, n);
        float *x = malloc(sizeof(float) * (size_t)ta->numel),
              *y = malloc(sizeof(float) * (size_t)ta->numel);
        ax_st_read_f32(fa, ta, x);
        ax_st_read_f32(fb, tb, y);
        cr_assert_eq(memcmp(x, y, sizeof(float) * (size_t)ta->numel), 0,
                     "%s: tensor %s differs from the source's", out, n);
        free(x), free(y);
    }
    ax_hf_weights_close(a);
    ax_hf_weights_close(b);
}

static void check_fixture(const char *name) {
    char src[256], tmp[] = "/tmp/ax_hf_XXXXXX", ck[300], step[400], out[300], ck2[300], step2[400];
    snprintf(src, sizeof src, "%s/%s", fixture_root(), name);
    cr_assert(mkdtemp(tmp));
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_eq(ax_hf_import(src, ck, 0, step, sizeof step), AX_OK, "%s", ax_error_msg());
    int32_t *ids = slurp(src, "ids.i32", sizeof(int32_t) * FB * FT);
    int V;
    float *got = run_ckpt(step, ids, &V);
    float *ref = slurp(src, "logits.f32", sizeof(float) * FB * FT * V);
    double e = max_rel(got, ref, (size_t)FB * FT * V);
    cr_assert_lt(e, 1e-4, "%s: max relative error %g against transformers", name, e);
    /* the checkpoint's config keys say what config.json says */
    ax_hf_config hc, hx;
    cr_assert_eq(ax_hf_config_load(src, &hc), AX_OK, "%s", ax_error_msg());
    ax_ckpt_t *c;
    ax_model_config mc;
    cr_assert_eq(ax_ckpt_open(step, &c), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_model_config_from_ckpt(c, &mc), AX_OK, "%s", ax_error_msg());
    ax_ckpt_free(c);
    same_cfg(&mc, &hc.cfg, step);
    /* grouped-query attention is kept: K/V heads as config.json has them */
    cr_assert_eq(mc.n_kv_heads ? mc.n_kv_heads : mc.n_heads, hc.kv_heads, "%s", name);
    /* export: the same architecture, the source's tensors */
    snprintf(out, sizeof out, "%s/exported", tmp);
    cr_assert_eq(ax_hf_export(step, out, NULL, 0), AX_OK, "%s", ax_error_msg());
    cr_assert_neq(ax_hf_export(step, out, NULL, 0), AX_OK, "an existing --out must be refused");
    ax_error_clear();
    cr_assert_eq(ax_hf_config_load(out, &hx), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(hx.arch, hc.arch, "%s: exported as another architecture", name);
    same_cfg(&hx.cfg, &hc.cfg, out);
    same_tensors(src, out, &hc);
    /* export -> re-import: the same parameters, so identical logits */
    snprintf(ck2, sizeof ck2, "%s/ck2", tmp);
    cr_assert_eq(ax_hf_import(out, ck2, 0, step2, sizeof step2), AX_OK, "%s", ax_error_msg());
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
/* attention and MLP biases, grouped-query K/V biases kept natively as their weights */
Test(hf_import, llama_biases_gqa) {
    check_fixture("llama_bias_gqa");
}
/* GPT-NeoX as the hub's Pythia files are: rotary_pct / rotary_emb_base keys, mask buffers */
Test(hf_import, neox_parallel_pythia_hub_fp32) {
    check_fixture("neox_parallel");
}
Test(hf_import, neox_sequential_rotary_half_sharded) {
    check_fixture("neox_sequential_sharded");
}
Test(hf_import, neox_no_attention_bias_f16) {
    check_fixture("neox_noattnbias_f16");
}
Test(hf_import, neox_pythia_walkthrough) {
    check_fixture("pythia_walkthrough");
}
/* GPT-NeoX settings axmem can train besides Pythia's: tied, tanh gelu, whole-head rotary */
Test(hf_import, neox_tied_tanh_full_rotary) {
    check_fixture("neox_tied_tanh_fullrot");
}
Test(hf_import, gpt2_untied) {
    check_fixture("gpt2_untied");
}
Test(hf_import, gpt2_tied_fp32) {
    check_fixture("gpt2_tied");
}
/* GPT2Model naming (no "transformer." prefix) with attn.bias buffers, exact gelu, n_inner */
Test(hf_import, gpt2_hub_gelu_bf16) {
    check_fixture("gpt2_gelu_bf16");
}

/* A copy of fixture `name` in tmp (a mkdtemp template) with edits to its file `file`: each
 * pair of `edits` (NULL-terminated: from, to, from, to, ..., NULL) replaces the first `from`;
 * the other files are symlinked. */
static void edited_copy(const char *name, const char *file, const char *const *edits, char *tmp) {
    char src[256], p[600], q[600];
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
    for (int k = 0; edits[k]; k += 2) {
        const char *from = edits[k], *to = edits[k + 1];
        char *at = strstr(text, from);
        cr_assert(at, "%s has no %s", p, from);
        char *edited = malloc(strlen(text) + strlen(to) + 1);
        sprintf(edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        free(text);
        text = edited;
    }
    snprintf(q, sizeof q, "%s/%s", tmp, file);
    cr_assert_eq(ax_write_file(q, text, strlen(text)), AX_OK);
    free(text);
}

/* the import of a copy of fixture `name` with `edits` to `file` must fail, with `fault` in the
 * message, and write nothing */
static void with_edits(const char *name, const char *file, const char *const *edits,
                       const char *fault) {
    char tmp[] = "/tmp/ax_hfc_XXXXXX", ck[400];
    edited_copy(name, file, edits, tmp);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    ax_error_clear();
    cr_assert_neq(ax_hf_import(tmp, ck, 0, NULL, 0), AX_OK, "accepted %s", edits[1]);
    cr_assert(strstr(ax_error_msg(), fault), "want '%s' in: %s", fault, ax_error_msg());
    cr_assert(!ax_path_exists(ck), "a refused import left %s", ck);
    ax_rm_rf(tmp);
}

/* as with_edits, one edit */
static void with_edit(const char *name, const char *file, const char *from, const char *to,
                      const char *fault) {
    const char *edits[] = {from, to, NULL};
    with_edits(name, file, edits, fault);
}

static void with_config(const char *name, const char *from, const char *to, const char *fault) {
    with_edit(name, "config.json", from, to, fault);
}

/* A copy of fixture `name` with `edits` to config.json imports as the fixture itself: the
 * same config, logits within 1e-4 of transformers'. */
static void imports_as_source(const char *name, const char *const *edits) {
    char src[256], tmp[] = "/tmp/ax_hfa_XXXXXX", ck[400], step[500];
    snprintf(src, sizeof src, "%s/%s", fixture_root(), name);
    edited_copy(name, "config.json", edits, tmp);
    ax_hf_config hc, he;
    cr_assert_eq(ax_hf_config_load(src, &hc), AX_OK, "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_hf_config_load(tmp, &he), AX_OK, "%s: %s", name, ax_error_msg());
    cr_assert_eq(he.arch, hc.arch, "%s: read as another architecture", name);
    same_cfg(&he.cfg, &hc.cfg, name);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    cr_assert_eq(ax_hf_import(tmp, ck, 0, step, sizeof step), AX_OK, "%s", ax_error_msg());
    int32_t *ids = slurp(src, "ids.i32", sizeof(int32_t) * FB * FT);
    int V;
    float *got = run_ckpt(step, ids, &V);
    float *ref = slurp(src, "logits.f32", sizeof(float) * FB * FT * V);
    double e = max_rel(got, ref, (size_t)FB * FT * V);
    cr_assert_lt(e, 1e-4, "%s: max relative error %g against transformers", name, e);
    free(got), free(ref), free(ids);
    ax_rm_rf(tmp);
}

/* no "architectures": the class model_type names, as transformers' AutoModelForCausalLM */
Test(hf_import, model_type_without_architectures) {
    static const struct {
        const char *fixture, *arch;
    } cases[] = {{"llama_tied_gqa", "LlamaForCausalLM"},
                 {"mistral_gqa_bf16", "MistralForCausalLM"},
                 {"neox_parallel", "GPTNeoXForCausalLM"},
                 {"gpt2_tied", "GPT2LMHeadModel"}};
    char absent[128], nul[128], empty[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(absent, sizeof absent, "\"architectures\": [\n    \"%s\"\n  ],", cases[i].arch);
        snprintf(nul, sizeof nul, "\"architectures\": [\n    \"%s\"\n  ]", cases[i].arch);
        snprintf(empty, sizeof empty, "\"%s\"", cases[i].arch);
        const char *drop[] = {absent, "", NULL},
                   *as_null[] = {nul, "\"architectures\": null", NULL},
                   *as_empty[] = {empty, "", NULL};
        imports_as_source(cases[i].fixture, drop);
        imports_as_source(cases[i].fixture, as_null);
        imports_as_source(cases[i].fixture, as_empty);
    }
    /* then model_type must name a supported class */
    const char *bert[] = {"\"architectures\": [\n    \"LlamaForCausalLM\"\n  ],", "",
                          "\"model_type\": \"llama\"", "\"model_type\": \"bert\"", NULL};
    with_edits("llama_tied_gqa", "config.json", bert,
               "no \"architectures\" and \"model_type\" is \"bert\"");
    const char *neither[] = {"\"architectures\": [\n    \"LlamaForCausalLM\"\n  ],", "",
                             "\"model_type\": \"llama\",", "", NULL};
    with_edits("llama_tied_gqa", "config.json", neither, "\"model_type\" is absent");
}

/* Mistral's sliding window never acts when it covers the position limit (64 here), null or a
 * Llama/Mistral naming mix: the import is the model transformers runs */
Test(hf_import, mistral_window_at_least_the_limit) {
    const char *at_limit[] = {"\"sliding_window\": null", "\"sliding_window\": 64", NULL},
               *above[] = {"\"sliding_window\": null", "\"sliding_window\": 4096", NULL},
               *absent[] = {"\"sliding_window\": null,", "", NULL},
               *as_llama[] = {"\"MistralForCausalLM\"", "\"LlamaForCausalLM\"", NULL};
    imports_as_source("mistral_gqa_bf16", at_limit);
    imports_as_source("mistral_gqa_bf16", above);
    imports_as_source("mistral_gqa_bf16", absent); /* MistralConfig's 4096 >= 64 */
    imports_as_source("mistral_gqa_bf16", as_llama);
    /* named Llama, model_type mistral: Mistral's rule, its default window, still applies */
    const char *llama_named_long[] = {"\"MistralForCausalLM\"",
                                      "\"LlamaForCausalLM\"",
                                      "\"sliding_window\": null,",
                                      "",
                                      "\"max_position_embeddings\": 64",
                                      "\"max_position_embeddings\": 8192",
                                      NULL};
    with_edits("mistral_gqa_bf16", "config.json", llama_named_long, "MistralConfig's default");
}

/* model import --kv-heads: K/V heads copied for their query groups compute the same function */
Test(hf_import, kv_heads_copied_for_wider_grids) {
    char src[256], tmp[] = "/tmp/ax_hf_XXXXXX", ck[300], step[400];
    snprintf(src, sizeof src, "%s/mistral_gqa_bf16", fixture_root()); /* 4 heads, 1 K/V head */
    cr_assert(mkdtemp(tmp));
    int32_t *ids = slurp(src, "ids.i32", sizeof(int32_t) * FB * FT);
    float *ref = NULL;
    for (int kv = 2; kv <= 4; kv += 2) {
        snprintf(ck, sizeof ck, "%s/ck%d", tmp, kv);
        cr_assert_eq(ax_hf_import(src, ck, kv, step, sizeof step), AX_OK, "%s", ax_error_msg());
        ax_ckpt_t *c;
        ax_model_config mc;
        cr_assert_eq(ax_ckpt_open(step, &c), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(ax_model_config_from_ckpt(c, &mc), AX_OK, "%s", ax_error_msg());
        ax_ckpt_free(c);
        cr_assert_eq(mc.n_kv_heads ? mc.n_kv_heads : mc.n_heads, kv, "kv-heads %d stored", kv);
        int V;
        float *got = run_ckpt(step, ids, &V);
        if (!ref) ref = slurp(src, "logits.f32", sizeof(float) * FB * FT * V);
        double e = max_rel(got, ref, (size_t)FB * FT * V);
        cr_assert_lt(e, 1e-4, "--kv-heads %d: max relative error %g against transformers", kv, e);
        free(got);
    }
    /* not a multiple of the source's count dividing the heads, or a model without GQA */
    snprintf(ck, sizeof ck, "%s/bad", tmp);
    cr_assert_neq(ax_hf_import(src, ck, 3, NULL, 0), AX_OK);
    cr_assert(strstr(ax_error_msg(), "--kv-heads 3"), "%s", ax_error_msg());
    cr_assert_neq(ax_hf_import(src, ck, 8, NULL, 0), AX_OK);
    snprintf(src, sizeof src, "%s/neox_parallel", fixture_root());
    cr_assert_neq(ax_hf_import(src, ck, 1, NULL, 0), AX_OK);
    cr_assert(strstr(ax_error_msg(), "--kv-heads"), "%s", ax_error_msg());
    ax_error_clear();
    free(ref), free(ids);
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
    with_config("llama_tied_gqa", "\"LlamaForCausalLM\"", "\"BertForMaskedLM\"", "architectures");
    /* "architectures" and "model_type" disagree: transformers builds the model_type's class */
    with_config("llama_tied_gqa", "\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"",
                "\"model_type\" is \"llama\", which transformers builds as LlamaForCausalLM");
    with_config("llama_tied_gqa", "\"model_type\": \"llama\"", "\"model_type\": \"qwen2\"",
                "\"model_type\" is \"qwen2\"");
    /* another supported architecture's config over Llama weights: its keys are missing */
    const char *gpt2_over_llama[] = {"\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"",
                                     "\"model_type\": \"llama\"", "\"model_type\": \"gpt2\"", NULL};
    with_edits("llama_tied_gqa", "config.json", gpt2_over_llama, "\"n_layer\"");
    with_config("llama_tied_gqa", "\"attention_bias\": false", "\"attention_bias\": true",
                "no tensor \"model.layers.0.self_attn.q_proj.bias\"");
    with_config("llama_bias_gqa", "\"mlp_bias\": true", "\"mlp_bias\": false",
                "bias\" has no place in a 1-layer Llama model without MLP biases");
    with_config("llama_tied_gqa", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"",
                "hidden_act");
}

Test(hf_import, refuses_bad_shards_and_windows) {
    /* a window below the position limit (64) acts on long sequences: refused */
    with_config("mistral_gqa_bf16", "\"sliding_window\": null", "\"sliding_window\": 63",
                "\"sliding_window\" is 63, below the model's position limit 64");
    with_config("mistral_gqa_bf16", "\"sliding_window\": null", "\"sliding_window\": \"4096\"",
                "\"sliding_window\" must be a positive integer or null");
    /* absent: MistralConfig's 4096, below a limit of 8192 */
    const char *no_window_long[] = {"\"sliding_window\": null,", "",
                                    "\"max_position_embeddings\": 64",
                                    "\"max_position_embeddings\": 8192", NULL};
    with_edits("mistral_gqa_bf16", "config.json", no_window_long,
               "\"sliding_window\" is 4096 (absent: MistralConfig's default), below the model's "
               "position limit 8192");
    /* both absent: MistralConfig's 4096 window and 131072 positions */
    const char *no_window_no_limit[] = {"\"sliding_window\": null,", "",
                                        "\"max_position_embeddings\": 64,", "", NULL};
    with_edits("mistral_gqa_bf16", "config.json", no_window_no_limit, "position limit 131072");
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

Test(hf_import, refuses_neox_configs) {
    with_config("neox_sequential_sharded", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"",
                "hidden_act");
    /* int(16 * 0.4375) = 7 rotated dims: odd, no rotate-half pairs */
    with_config("neox_sequential_sharded", "\"partial_rotary_factor\": 0.5",
                "\"partial_rotary_factor\": 0.4375", "partial_rotary_factor");
    with_config("neox_parallel", "\"rotary_pct\": 0.25", "\"rotary_pct\": 0.1875", "rotary_pct");
    with_config("neox_sequential_sharded", "\"rope_type\": \"default\"",
                "\"rope_type\": \"dynamic\"", "rope_parameters");
    with_config("neox_parallel", "\"intermediate_size\": 64", "\"intermediate_size\": 96",
                "model.safetensors: tensor \"gpt_neox.layers.0.mlp.dense_h_to_4h.weight\" has "
                "shape [64, 32]");
    /* biases the config rules out, or asks for and the weights lack */
    with_config("neox_sequential_sharded", "\"attention_bias\": true", "\"attention_bias\": false",
                "bias\" has no place in a 2-layer GPT-NeoX without attention biases");
    with_config("neox_noattnbias_f16", "\"attention_bias\": false", "\"attention_bias\": true",
                "no tensor \"gpt_neox.layers.0.attention.query_key_value.bias\"");
    with_config("neox_parallel", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1",
                "gpt_neox.layers.1.");
}

Test(hf_import, refuses_gpt2_configs) {
    with_config("gpt2_tied", "\"scale_attn_by_inverse_layer_idx\": false",
                "\"scale_attn_by_inverse_layer_idx\": true", "scale_attn_by_inverse_layer_idx");
    with_config("gpt2_tied", "\"scale_attn_weights\": true", "\"scale_attn_weights\": false",
                "scale_attn_weights");
    with_config("gpt2_tied", "\"add_cross_attention\": false", "\"add_cross_attention\": true",
                "add_cross_attention");
    with_config("gpt2_tied", "\"activation_function\": \"gelu_new\"",
                "\"activation_function\": \"relu\"", "activation_function");
    with_config("gpt2_tied", "\"n_positions\": 32", "\"n_positions\": 16",
                "tensor \"transformer.wpe.weight\" has shape [32, 32]");
    with_config("gpt2_gelu_bf16", "\"n_inner\": 48", "\"n_inner\": null", "mlp.c_fc.weight");
    with_config("gpt2_gelu_bf16", "\"n_layer\": 2", "\"n_layer\": 1", "h.1.");
    with_config("gpt2_tied", "\"n_embd\": 32", "\"n_embd\": 30", "divisible");
}

/* A checkpoint of config c (config_json its manifest's config) is written and exported: the
 * export must fail naming want_a and want_b, and leave no output. */
static void export_refused(const ax_model_config *c, const char *config_json, const char *want_a,
                           const char *want_b) {
    int n_t = ax_model_config_n_tensors(c);
    int64_t n = ax_model_config_n_params(c);
    ax_tensor_info *ts = calloc((size_t)n_t, sizeof *ts);
    ax_model_tensor_table(c, ts);
    float *p = calloc((size_t)n, sizeof *p);
    ax_ckpt_blob blob = {.name = "params", .data = p, .count = n};
    ax_ckpt_write_args a = {.grid = "1x1x1x1",
                            .config_json = config_json,
                            .state_json = "{\"step\":0}",
                            .tensors = ts,
                            .n_tensors = n_t,
                            .blobs = &blob,
                            .n_blobs = 1};
    char tmp[] = "/tmp/ax_hfx_XXXXXX", ck[300], out[300];
    cr_assert(mkdtemp(tmp));
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    snprintf(out, sizeof out, "%s/out", tmp);
    cr_assert_eq(ax_ckpt_write(ck, 0, &a), AX_OK, "%s", ax_error_msg());
    snprintf(ck, sizeof ck, "%s/ck/step-000000", tmp);
    ax_error_clear();
    cr_assert_neq(ax_hf_export(ck, out, NULL, 0), AX_OK);
    cr_assert(strstr(ax_error_msg(), want_a) && strstr(ax_error_msg(), want_b), "%s",
              ax_error_msg());
    cr_assert(!ax_path_exists(out), "a refused export left %s", out);
    free(p), free(ts);
    ax_rm_rf(tmp);
}

/* one layer with LayerNorm: the tests below set what makes it unexportable */
static ax_model_config layer_norm_model(void) {
    return (ax_model_config){.n_layers = 1,
                             .dim = 32,
                             .n_heads = 2,
                             .ffn = 48,
                             .vocab = 300,
                             .rope_theta = 1e4f,
                             .norm_eps = 1e-5f,
                             .norm = AX_NORM_LAYER};
}

/* a checkpoint whose architecture keys match no exported architecture is refused, named */
Test(hf_import, export_refuses_unknown_mix) {
    ax_model_config c = layer_norm_model();
    c.mlp = AX_MLP_SWIGLU;
    export_refused(&c,
                   "{\"layers\":1,\"dim\":32,\"heads\":2,\"ffn\":48,\"vocab\":300,\"tie-"
                   "embeddings\":false,\"rope-theta\":10000,\"norm-eps\":1e-5,\"norm\":"
                   "\"layer\",\"mlp\":\"swiglu\"}",
                   "norm layer, mlp swiglu", "GPTNeoXForCausalLM");
}

/* grouped-query attention exists only in the Llama format: a GPT-NeoX-shaped checkpoint with
 * kv-heads is refused, naming it */
Test(hf_import, export_refuses_gqa_outside_llama) {
    ax_model_config c = layer_norm_model();
    c.mlp = AX_MLP_GELU, c.bias = 1, c.n_kv_heads = 1;
    export_refused(&c,
                   "{\"layers\":1,\"dim\":32,\"heads\":2,\"ffn\":48,\"vocab\":300,\"tie-"
                   "embeddings\":false,\"rope-theta\":10000,\"norm-eps\":1e-5,\"norm\":"
                   "\"layer\",\"mlp\":\"gelu\",\"bias\":true,\"kv-heads\":1}",
                   "kv-heads 1", "GPTNeoXForCausalLM");
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
    cr_assert_neq(ax_hf_import(tmp, ck, 0, NULL, 0), AX_OK);
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
