/* axmem checkpoint -> Hugging Face LlamaForCausalLM directory: config.json and one fp32
 * model.safetensors, the inverse of hf_import.c's mapping (K/V heads: one per query head). */
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/model/model_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_PER_LAYER 9

static const ax_tensor_info *find_t(const ax_ckpt_t *ck, const char *name, int64_t numel) {
    for (int i = 0; i < ax_ckpt_n_tensors(ck); i++) {
        const ax_tensor_info *t = ax_ckpt_tensor(ck, i);
        if (!strcmp(t->name, name) && t->numel == numel) return t;
    }
    return NULL;
}

static void add(ax_st_out *o, int *n, char *names, const char *name, const float *data, int64_t r,
                int64_t c) {
    char *slot = names + (size_t)*n * 96;
    snprintf(slot, 96, "%s", name);
    o[*n] = (ax_st_out){.name = slot, .ndim = c ? 2 : 1, .shape = {r, c}, .data = data};
    (*n)++;
}

static ax_status config_json(const ax_model_config *c, int max_pos, const char *path) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "architectures"), ax_jw_arr_begin(&w), ax_jw_str(&w, "LlamaForCausalLM");
    ax_jw_arr_end(&w);
    ax_jw_key(&w, "model_type"), ax_jw_str(&w, "llama");
    ax_jw_key(&w, "hidden_act"), ax_jw_str(&w, "silu");
    ax_jw_key(&w, "hidden_size"), ax_jw_int(&w, c->dim);
    ax_jw_key(&w, "intermediate_size"), ax_jw_int(&w, c->ffn);
    ax_jw_key(&w, "num_hidden_layers"), ax_jw_int(&w, c->n_layers);
    ax_jw_key(&w, "num_attention_heads"), ax_jw_int(&w, c->n_heads);
    ax_jw_key(&w, "num_key_value_heads"), ax_jw_int(&w, c->n_heads);
    ax_jw_key(&w, "vocab_size"), ax_jw_int(&w, c->vocab);
    ax_jw_key(&w, "max_position_embeddings"), ax_jw_int(&w, max_pos);
    ax_jw_key(&w, "rope_theta"), ax_jw_num(&w, c->rope_theta);
    ax_jw_key(&w, "rms_norm_eps"), ax_jw_num(&w, c->norm_eps);
    ax_jw_key(&w, "tie_word_embeddings"), ax_jw_bool(&w, c->tie_embeddings);
    ax_jw_key(&w, "attention_bias"), ax_jw_bool(&w, 0);
    ax_jw_key(&w, "mlp_bias"), ax_jw_bool(&w, 0);
    ax_jw_key(&w, "rope_scaling"), ax_jw_null(&w);
    ax_jw_key(&w, "torch_dtype"), ax_jw_str(&w, "float32");
    ax_jw_obj_end(&w);
    const char *t = ax_jw_text(&w);
    ax_status st = t ? ax_write_file(path, t, strlen(t)) : ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_jw_free(&w);
    return st;
}

static ax_status export_ck(const ax_ckpt_t *ck, const char *tmp_dir) {
    const char *path = ax_ckpt_path(ck);
    ax_model_config c;
    AX_CHECK(ax_model_config_from_ckpt(ck, &c));
    int64_t C = c.dim, F = c.ffn, V = c.vocab, L = c.n_layers, n = ax_ckpt_blob_count(ck, "params");
    if (n <= 0 || n != ax_model_config_n_params(&c))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the \"params\" blob holds %lld values, the model "
                         "%lld",
                         path, (long long)n, (long long)ax_model_config_n_params(&c));
    int max_pos = 2048; /* what the model was trained for, when the manifest says */
    const ax_json *sl = ax_json_get(ax_ckpt_config(ck), "seq-len"),
                  *mp = ax_json_get(ax_ckpt_config(ck), "max-positions");
    int64_t x;
    if (mp && ax_json_int_in(mp, 1, 1 << 30, &x))
        max_pos = (int)x;
    else if (sl && ax_json_int_in(sl, 1, 1 << 30, &x))
        max_pos = (int)x;
    float *p = malloc((size_t)n * sizeof *p);
    ax_st_out *o = calloc((size_t)(L * OUT_PER_LAYER + 3), sizeof *o);
    char *names = calloc((size_t)(L * OUT_PER_LAYER + 3), 96);
    ax_status st = p && o && names ? ax_ckpt_read_blob(ck, "params", 0, n, p)
                                   : ax_errorf(AX_ERR_NOMEM, "out of memory exporting %s", path);
    int k = 0;
    char nm[96], an[64];
    const ax_tensor_info *t;
#define NEED(NAME, NUMEL)                                                                          \
    if (st == AX_OK && !(t = find_t(ck, NAME, NUMEL)))                                             \
        st = ax_errorf(AX_ERR_CORRUPT,                                                             \
                       "%s: no tensor %s of %lld values; not a Llama-style "                       \
                       "axmem checkpoint",                                                         \
                       path, NAME, (long long)(NUMEL));
    NEED("wte", V * C);
    if (st == AX_OK) add(o, &k, names, "model.embed_tokens.weight", p + t->offset, V, C);
    for (int l = 0; st == AX_OK && l < L; l++) {
        static const char *const qkv[3] = {"q", "k", "v"};
        snprintf(an, sizeof an, "layers.%d.attn_norm", l);
        NEED(an, C);
        snprintf(nm, sizeof nm, "model.layers.%d.input_layernorm.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset, C, 0);
        snprintf(an, sizeof an, "layers.%d.wqkv", l);
        NEED(an, 3 * C * C);
        for (int j = 0; st == AX_OK && j < 3; j++) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.%s_proj.weight", l, qkv[j]);
            add(o, &k, names, nm, p + t->offset + j * C * C, C, C);
        }
        snprintf(an, sizeof an, "layers.%d.wo", l);
        NEED(an, C * C);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.o_proj.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset, C, C);
        snprintf(an, sizeof an, "layers.%d.mlp_norm", l);
        NEED(an, C);
        snprintf(nm, sizeof nm, "model.layers.%d.post_attention_layernorm.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset, C, 0);
        snprintf(an, sizeof an, "layers.%d.w_up", l);
        NEED(an, 2 * F * C);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.gate_proj.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset, F, C);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.up_proj.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset + F * C, F, C);
        snprintf(an, sizeof an, "layers.%d.w_down", l);
        NEED(an, C * F);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.down_proj.weight", l);
        if (st == AX_OK) add(o, &k, names, nm, p + t->offset, C, F);
    }
    NEED("final_norm", C);
    if (st == AX_OK) add(o, &k, names, "model.norm.weight", p + t->offset, C, 0);
    if (!c.tie_embeddings) { /* tied: transformers ties lm_head to the embedding itself */
        NEED("lm_head", V * C);
        if (st == AX_OK) add(o, &k, names, "lm_head.weight", p + t->offset, V, C);
    }
#undef NEED
    char fp[4400];
    snprintf(fp, sizeof fp, "%s/model.safetensors", tmp_dir);
    if (st == AX_OK) st = ax_st_write(fp, o, k, "{\"format\":\"pt\"}");
    snprintf(fp, sizeof fp, "%s/config.json", tmp_dir);
    if (st == AX_OK) st = config_json(&c, max_pos, fp);
    free(p), free(o), free(names);
    return st;
}

ax_status ax_hf_export(const char *step_dir, const char *out_dir) {
    if (ax_path_exists(out_dir))
        return ax_errorf(AX_ERR_ARG, "--out %s already exists; name a new directory", out_dir);
    ax_ckpt_t *ck = NULL;
    AX_CHECK(ax_ckpt_open(step_dir, &ck));
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.partial", out_dir);
    ax_status st = ax_path_exists(tmp) ? ax_rm_rf(tmp) : AX_OK; /* a crashed export's leftovers */
    if (st == AX_OK) st = ax_mkdir_p(tmp);
    if (st == AX_OK) st = export_ck(ck, tmp);
    if (st == AX_OK) st = ax_rename_durable(tmp, out_dir);
    if (st != AX_OK && ax_path_exists(tmp)) {
        ax_status keep = st;
        ax_rm_rf(tmp);
        st = keep;
    }
    ax_ckpt_free(ck);
    return st;
}
