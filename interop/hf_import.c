/* Hugging Face Llama-family directory -> axmem checkpoint in the global layout
 * (lib/model/model.c build_tensors): wqkv [3C, C] = q rows, then k, then v (head h at rows
 * h*D of its block); w_up [2F, C] = gate rows, then up; wo [C, C] and w_down [C, F] as
 * transformers stores them ([out, in]). Rotary pairs (i, i + D/2) are transformers'
 * rotate-half layout already, so no row permutation is needed. */
#include "interop/hf_model.h"
#include "lib/core/json.h"
#include "lib/model/model_io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dst <- tensor `name` after checking its shape is [rows, cols] (cols 0: a vector [rows]) */
static ax_status fetch(const ax_hf_weights *w, const char *dir, const char *name, int64_t rows,
                       int64_t cols, float *dst) {
    const ax_st_file *f;
    const ax_st_tensor *t;
    AX_CHECK(ax_hf_weights_find(w, name, &f, &t));
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                  : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[128] = "", *p = got;
        for (int d = 0; d < t->ndim && p < got + 100; d++)
            p += snprintf(p, 16, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        return ax_errorf(
            AX_ERR_MISMATCH,
            "%s: tensor \"%s\" has shape [%s] but %s/config.json implies [%lld%s%.0lld]; "
            "the weights and the config disagree",
            ax_st_path(f), name, got, dir, (long long)rows, cols ? ", " : "", (long long)cols);
    }
    ax_st_read_f32(f, t, dst);
    return AX_OK;
}

/* Tensors the import uses or may ignore; anything else (biases, another architecture's
 * weights) means the model is not what config.json says. */
static int known_name(const char *n, int L) {
    static const char *const per_layer[] = {
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
        "self_attn.rotary_emb.inv_freq"}; /* the last: old saves store the rotary table */
    if (!strcmp(n, "model.embed_tokens.weight") || !strcmp(n, "model.norm.weight")) return 1;
    if (!strcmp(n, "lm_head.weight")) return 1; /* when tied: a copy of the embedding, ignored */
    int l, off = 0;
    if (sscanf(n, "model.layers.%d.%n", &l, &off) != 1 || off == 0 || l < 0 || l >= L) return 0;
    for (size_t i = 0; i < sizeof per_layer / sizeof *per_layer; i++)
        if (!strcmp(n + off, per_layer[i])) return 1;
    return 0;
}

/* Fills the global parameter vector (tensor table ts[n_t]) from the directory. */
static ax_status fill(const ax_tensor_info *ts, int n_t, const ax_hf_config *hc,
                      const ax_hf_weights *w, const char *dir, float *global) {
    const ax_model_config *c = &hc->cfg;
    int64_t C = c->dim, F = c->ffn, V = c->vocab, H = c->n_heads, D = C / H, KV = hc->kv_heads;
    char name[160];
    float *kv = malloc((size_t)(KV * D * C) * sizeof *kv);
    if (!kv) return ax_errorf(AX_ERR_NOMEM, "out of memory importing %s", dir);
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < n_t; i++) {
        float *dst = global + ts[i].offset;
        const char *n = ts[i].name;
        int l = -1;
        char what[32] = "";
        if (!strcmp(n, "wte"))
            st = fetch(w, dir, "model.embed_tokens.weight", V, C, dst);
        else if (!strcmp(n, "final_norm"))
            st = fetch(w, dir, "model.norm.weight", C, 0, dst);
        else if (!strcmp(n, "lm_head"))
            st = fetch(w, dir, "lm_head.weight", V, C, dst);
        else if (sscanf(n, "layers.%d.%31s", &l, what) != 2)
            st = ax_errorf(AX_ERR_INTERNAL, "unexpected model tensor %s", n);
        else if (!strcmp(what, "attn_norm"))
            snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l),
                st = fetch(w, dir, name, C, 0, dst);
        else if (!strcmp(what, "mlp_norm"))
            snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l),
                st = fetch(w, dir, name, C, 0, dst);
        else if (!strcmp(what, "wo"))
            snprintf(name, sizeof name, "model.layers.%d.self_attn.o_proj.weight", l),
                st = fetch(w, dir, name, C, C, dst);
        else if (!strcmp(what, "w_down"))
            snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj.weight", l),
                st = fetch(w, dir, name, C, F, dst);
        else if (!strcmp(what, "w_up")) {
            snprintf(name, sizeof name, "model.layers.%d.mlp.gate_proj.weight", l);
            st = fetch(w, dir, name, F, C, dst);
            snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", l);
            if (st == AX_OK) st = fetch(w, dir, name, F, C, dst + F * C);
        } else if (!strcmp(what, "wqkv")) {
            snprintf(name, sizeof name, "model.layers.%d.self_attn.q_proj.weight", l);
            st = fetch(w, dir, name, C, C, dst);
            /* grouped-query attention: query head h reads K/V head h / (H / KV) (transformers'
             * repeat_kv), so copying that head's rows to every h of the group is exact */
            for (int k = 0; st == AX_OK && k < 2; k++) {
                snprintf(name, sizeof name, "model.layers.%d.self_attn.%s_proj.weight", l,
                         k ? "v" : "k");
                st = fetch(w, dir, name, KV * D, C, kv);
                for (int64_t h = 0; st == AX_OK && h < H; h++)
                    memcpy(dst + (1 + k) * C * C + h * D * C, kv + (h / (H / KV)) * D * C,
                           (size_t)(D * C) * sizeof *kv);
            }
        } else
            st = ax_errorf(AX_ERR_INTERNAL, "unexpected model tensor %s", n);
    }
    free(kv);
    return st;
}

static ax_status write_ckpt(const ax_tensor_info *ts, int n_t, int64_t n, const ax_hf_config *hc,
                            const char *hf_dir, const char *ckpt_dir, const float *global) {
    const ax_model_config *c = &hc->cfg;
    ax_jw cw;
    ax_jw_init(&cw);
    ax_jw_obj_begin(&cw);
    ax_jw_key(&cw, "layers"), ax_jw_int(&cw, c->n_layers);
    ax_jw_key(&cw, "dim"), ax_jw_int(&cw, c->dim);
    ax_jw_key(&cw, "heads"), ax_jw_int(&cw, c->n_heads);
    ax_jw_key(&cw, "ffn"), ax_jw_int(&cw, c->ffn);
    ax_jw_key(&cw, "vocab"), ax_jw_int(&cw, c->vocab);
    ax_jw_key(&cw, "tie-embeddings"), ax_jw_bool(&cw, c->tie_embeddings);
    ax_jw_key(&cw, "rope-theta"), ax_jw_num(&cw, c->rope_theta);
    ax_jw_key(&cw, "norm-eps"), ax_jw_num(&cw, c->norm_eps);
    if (hc->max_pos) ax_jw_key(&cw, "max-positions"), ax_jw_int(&cw, hc->max_pos);
    ax_jw_key(&cw, "imported-from"), ax_jw_str(&cw, hf_dir);
    ax_jw_key(&cw, "kv-heads-replicated-from"), ax_jw_int(&cw, hc->kv_heads);
    ax_jw_obj_end(&cw);
    ax_ckpt_blob blob = {.name = "params", .data = global, .count = n};
    ax_ckpt_write_args a = {.grid = "1x1x1x1",
                            .config_json = ax_jw_text(&cw),
                            .state_json = "{\"step\":0}",
                            .tensors = ts,
                            .n_tensors = n_t,
                            .blobs = &blob,
                            .n_blobs = 1};
    ax_status st =
        a.config_json ? ax_ckpt_write(ckpt_dir, 0, &a) : ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_jw_free(&cw);
    return st;
}

ax_status ax_hf_import(const char *hf_dir, const char *ckpt_dir, char *step_out, size_t len) {
    ax_hf_config hc;
    AX_CHECK(ax_hf_config_load(hf_dir, &hc));
    ax_hf_weights *w = NULL;
    AX_CHECK(ax_hf_weights_open(hf_dir, &w));
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < ax_hf_weights_count(w); i++) {
        const ax_st_file *f;
        const char *name = ax_hf_weights_name(w, i, &f);
        if (!known_name(name, hc.cfg.n_layers))
            st = ax_errorf(AX_ERR_ARG,
                           "%s: tensor \"%s\" has no place in a %d-layer Llama model without "
                           "biases; axmem cannot import this model as config.json describes it",
                           ax_st_path(f), name, hc.cfg.n_layers);
    }
    /* the engine's own global layout, so every grid loads the checkpoint */
    int n_t = ax_model_config_n_tensors(&hc.cfg);
    int64_t n = ax_model_config_n_params(&hc.cfg);
    ax_tensor_info *ts = calloc((size_t)n_t, sizeof *ts);
    float *global = NULL;
    if (st == AX_OK && (!ts || (uint64_t)n > SIZE_MAX / sizeof *global ||
                        !(global = malloc((size_t)n * sizeof *global))))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory importing %s (%lld parameters)", hf_dir,
                       (long long)n);
    if (st == AX_OK) ax_model_tensor_table(&hc.cfg, ts);
    if (st == AX_OK) st = fill(ts, n_t, &hc, w, hf_dir, global);
    if (st == AX_OK) st = write_ckpt(ts, n_t, n, &hc, hf_dir, ckpt_dir, global);
    if (st == AX_OK && step_out) snprintf(step_out, len, "%s/step-000000", ckpt_dir);
    free(global);
    free(ts);
    ax_hf_weights_close(w);
    return st;
}
