/* Hugging Face model directory -> axmem checkpoint in the global layout
 * (ax_model_tensor_table): wqkv [C + 2 KV D, C] = q rows, then k, then v (head h at rows h*D of
 * its block; KV = num_key_value_heads, kept natively); w_up [2F, C] = gate rows, then up (SwiGLU)
 * or [F, C] (GELU); wo [C, C] and w_down [C, F] as [out, in]. Llama and GPT-NeoX store [out, in]
 * already, GPT-2's Conv1D [in, out]. Rotary pairs (i, i + rd/2) are transformers' rotate-half
 * layout already, so no row permutation is needed beyond GPT-NeoX's per-head q/k/v interleave. */
#include "interop/hf_model.h"
#include "lib/core/json.h"
#include "lib/model/model_io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One import: the directory's tensors and a scratch buffer as large as the largest tensor. */
typedef struct {
    const ax_hf_weights *w;
    const char *dir;
    const ax_hf_config *hc;
    const char *gpt2; /* GPT-2 tensor prefix: "transformer." (GPT2LMHeadModel) or "" (GPT2Model) */
    int kv_rep;       /* each source K/V head written this many times (model import --kv-heads) */
    float *tmp;
} src_t;

/* dst <- tensor `name` after checking its shape is [rows, cols] (cols 0: a vector [rows]) */
static ax_status fetch(const src_t *s, const char *name, int64_t rows, int64_t cols, float *dst) {
    const ax_st_file *f;
    const ax_st_tensor *t;
    AX_CHECK(ax_hf_weights_find(s->w, name, &f, &t));
    if (t->dtype == AX_ST_BOOL)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tensor \"%s\" has dtype BOOL; weights must be F32, F16 or BF16",
                         ax_st_path(f), name);
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
            ax_st_path(f), name, got, s->dir, (long long)rows, cols ? ", " : "", (long long)cols);
    }
    ax_st_read_f32(f, t, dst);
    return AX_OK;
}

/* dst [rows, cols] <- the transpose of tensor `name` [cols, rows]: GPT-2's Conv1D stores its
 * weight [in, out] (y = x W + b), the engine [out, in] */
static ax_status fetch_t(const src_t *s, const char *name, int64_t rows, int64_t cols, float *dst) {
    AX_CHECK(fetch(s, name, cols, rows, s->tmp));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = s->tmp[c * rows + r];
    return AX_OK;
}

/* GPT-NeoX's query_key_value rows are per head [H, 3, D] (q, k, v of head 0, then head 1);
 * the engine's are [3, H, D] (all q, then all k, then all v). cols 0: the bias. */
static ax_status fetch_neox_qkv(const src_t *s, const char *name, float *dst, int64_t cols) {
    int64_t C = s->hc->cfg.dim, H = s->hc->cfg.n_heads, D = C / H, w = cols ? cols : 1;
    AX_CHECK(fetch(s, name, 3 * C, cols, s->tmp));
    for (int64_t h = 0; h < H; h++)
        for (int64_t j = 0; j < 3; j++)
            memcpy(dst + (j * C + h * D) * w, s->tmp + (h * 3 * D + j * D) * w,
                   (size_t)(D * w) * sizeof *dst);
    return AX_OK;
}

/* Llama / Mistral: tensor `what` of layer l (l < 0: a global tensor) */
static ax_status map_llama(const src_t *s, const char *what, int l, float *dst) {
    const ax_model_config *c = &s->hc->cfg;
    int64_t C = c->dim, F = c->ffn, V = c->vocab, H = c->n_heads, D = C / H, KV = s->hc->kv_heads;
    char name[160];
    if (l < 0) {
        if (!strcmp(what, "wte")) return fetch(s, "model.embed_tokens.weight", V, C, dst);
        if (!strcmp(what, "final_norm")) return fetch(s, "model.norm.weight", C, 0, dst);
        if (!strcmp(what, "lm_head")) return fetch(s, "lm_head.weight", V, C, dst);
    }
#define LNAME(FMT) snprintf(name, sizeof name, "model.layers.%d." FMT, l)
    if (!strcmp(what, "attn_norm"))
        return LNAME("input_layernorm.weight"), fetch(s, name, C, 0, dst);
    if (!strcmp(what, "mlp_norm"))
        return LNAME("post_attention_layernorm.weight"), fetch(s, name, C, 0, dst);
    if (!strcmp(what, "wo")) return LNAME("self_attn.o_proj.weight"), fetch(s, name, C, C, dst);
    if (!strcmp(what, "w_down")) return LNAME("mlp.down_proj.weight"), fetch(s, name, C, F, dst);
    if (!strcmp(what, "w_up")) {
        LNAME("mlp.gate_proj.weight");
        AX_CHECK(fetch(s, name, F, C, dst));
        return LNAME("mlp.up_proj.weight"), fetch(s, name, F, C, dst + F * C);
    }
    int qkv_w = !strcmp(what, "wqkv"), qkv_b = !strcmp(what, "bqkv");
    if ((qkv_w || qkv_b) && (qkv_w || s->hc->attn_bias)) {
        int64_t w = qkv_w ? C : 1; /* a row's width: the weight's C, the bias's 1 */
        if (qkv_w)
            LNAME("self_attn.q_proj.weight");
        else
            LNAME("self_attn.q_proj.bias");
        AX_CHECK(fetch(s, name, C, qkv_w ? C : 0, dst));
        /* grouped-query attention: the engine's query head h reads K/V head h / (H / KVn), as
         * transformers' repeat_kv does, so the KV heads' rows go in as they are; with kv_rep > 1
         * each source head is written kv_rep times in a row (head j = source head j / kv_rep),
         * which computes the same function with more, smaller groups */
        int64_t KVn = KV * s->kv_rep;
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s_proj.%s", l, k ? "v" : "k",
                     qkv_w ? "weight" : "bias");
            AX_CHECK(fetch(s, name, KV * D, qkv_w ? C : 0, s->tmp));
            for (int64_t j = 0; j < KVn; j++)
                memcpy(dst + (C + k * KVn * D + j * D) * w, s->tmp + (j / s->kv_rep) * D * w,
                       (size_t)(D * w) * sizeof *dst);
        }
        return AX_OK;
    }
    /* attention_bias or mlp_bias false while the other is true: zero biases, the same function */
    if (qkv_b) return memset(dst, 0, (size_t)(C + 2 * KV * s->kv_rep * D) * sizeof *dst), AX_OK;
    if (!strcmp(what, "bo"))
        return s->hc->attn_bias ? (LNAME("self_attn.o_proj.bias"), fetch(s, name, C, 0, dst))
                                : (memset(dst, 0, (size_t)C * sizeof *dst), AX_OK);
    if (!strcmp(what, "b_down"))
        return s->hc->mlp_bias ? (LNAME("mlp.down_proj.bias"), fetch(s, name, C, 0, dst))
                               : (memset(dst, 0, (size_t)C * sizeof *dst), AX_OK);
    if (!strcmp(what, "b_up")) {
        if (!s->hc->mlp_bias) return memset(dst, 0, (size_t)(2 * F) * sizeof *dst), AX_OK;
        LNAME("mlp.gate_proj.bias");
        AX_CHECK(fetch(s, name, F, 0, dst));
        return LNAME("mlp.up_proj.bias"), fetch(s, name, F, 0, dst + F);
    }
#undef LNAME
    return ax_errorf(AX_ERR_INTERNAL, "unexpected model tensor %s", what);
}

/* GPT-NeoX and GPT-2: tensor `what` of layer l by the architecture's table
 * (interop/hf_layout.c), named `layers` + "N." + its name */
static ax_status map_layer(const src_t *s, const ax_hf_layer_tensor *tab, const char *layers,
                           const char *what, int l, float *dst) {
    const ax_model_config *c = &s->hc->cfg;
    int64_t dims[3] = {c->dim, c->ffn, 3 * (int64_t)c->dim};
    char name[160];
    for (int i = 0; i < 12; i++) {
        const ax_hf_layer_tensor *e = &tab[i];
        if (strcmp(what, e->ax)) continue;
        int64_t r = dims[e->rows], cols = e->cols == AX_HF_VEC ? 0 : dims[e->cols];
        if (e->attn_bias && !s->hc->attn_bias) /* no attention biases: zeros compute the same */
            return memset(dst, 0, (size_t)(r * (cols ? cols : 1)) * sizeof *dst), AX_OK;
        snprintf(name, sizeof name, "%s%d.%s", layers, l, e->hf);
        return e->layout == AX_HF_CONV1D     ? fetch_t(s, name, r, cols, dst)
               : e->layout == AX_HF_NEOX_QKV ? fetch_neox_qkv(s, name, dst, cols)
                                             : fetch(s, name, r, cols, dst);
    }
    return ax_errorf(AX_ERR_INTERNAL, "unexpected model tensor %s", what);
}

/* GPT-NeoX / Pythia */
static ax_status map_neox(const src_t *s, const char *what, int l, float *dst) {
    int64_t C = s->hc->cfg.dim, V = s->hc->cfg.vocab;
    if (l < 0) {
        if (!strcmp(what, "wte")) return fetch(s, "gpt_neox.embed_in.weight", V, C, dst);
        if (!strcmp(what, "final_norm"))
            return fetch(s, "gpt_neox.final_layer_norm.weight", C, 0, dst);
        if (!strcmp(what, "final_norm_bias"))
            return fetch(s, "gpt_neox.final_layer_norm.bias", C, 0, dst);
        if (!strcmp(what, "lm_head")) return fetch(s, "embed_out.weight", V, C, dst);
    }
    return map_layer(s, ax_hf_neox_layer, "gpt_neox.layers.", what, l, dst);
}

/* GPT-2 (Conv1D weights transposed) */
static ax_status map_gpt2(const src_t *s, const char *what, int l, float *dst) {
    const ax_model_config *c = &s->hc->cfg;
    int64_t C = c->dim, V = c->vocab;
    const char *p = s->gpt2;
    char name[160];
    if (l < 0) {
        if (!strcmp(what, "wte"))
            return snprintf(name, sizeof name, "%swte.weight", p), fetch(s, name, V, C, dst);
        if (!strcmp(what, "wpe"))
            return snprintf(name, sizeof name, "%swpe.weight", p),
                   fetch(s, name, c->max_pos, C, dst);
        if (!strcmp(what, "final_norm"))
            return snprintf(name, sizeof name, "%sln_f.weight", p), fetch(s, name, C, 0, dst);
        if (!strcmp(what, "final_norm_bias"))
            return snprintf(name, sizeof name, "%sln_f.bias", p), fetch(s, name, C, 0, dst);
        if (!strcmp(what, "lm_head")) return fetch(s, "lm_head.weight", V, C, dst);
    }
    snprintf(name, sizeof name, "%sh.", p);
    return map_layer(s, ax_hf_gpt2_layer, name, what, l, dst);
}

/* Tensors the import uses or may ignore; anything else (biases the config rules out, another
 * architecture's weights, a layer past the config's count) means the model is not what
 * config.json says. Buffers some saves carry (causal masks, rotary tables) are ignored. */
static int known_name(const src_t *s, const char *n) {
    /* llama[]: from LLAMA_ATTN_BIAS on, attention_bias tensors; from LLAMA_MLP_BIAS, mlp_bias */
    enum { LLAMA_ATTN_BIAS = 10, LLAMA_MLP_BIAS = 14 };
    static const char *const llama[] = {
        "input_layernorm.weight",  "post_attention_layernorm.weight",
        "self_attn.q_proj.weight", "self_attn.k_proj.weight",
        "self_attn.v_proj.weight", "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",    "mlp.up_proj.weight",
        "mlp.down_proj.weight",    "self_attn.rotary_emb.inv_freq",
        "self_attn.q_proj.bias", /* attention_bias */
        "self_attn.k_proj.bias",   "self_attn.v_proj.bias",
        "self_attn.o_proj.bias",   "mlp.gate_proj.bias", /* mlp_bias */
        "mlp.up_proj.bias",        "mlp.down_proj.bias"};
    /* besides their tables' (interop/hf_layout.c): the buffers some saves carry */
    static const char *const neox[] = {"attention.bias", "attention.masked_bias",
                                       "attention.rotary_emb.inv_freq"};
    static const char *const gpt2[] = {"attn.bias", "attn.masked_bias"};
    int L = s->hc->cfg.n_layers, l, off = 0;
    const char *const *per = llama;
    size_t n_per = sizeof llama / sizeof *llama;
    const ax_hf_layer_tensor *tab = NULL;
    /* lm_head / embed_out when tied: a copy of the embedding, ignored */
    if (s->hc->arch == AX_HF_LLAMA) {
        if (!strcmp(n, "model.embed_tokens.weight") || !strcmp(n, "model.norm.weight") ||
            !strcmp(n, "lm_head.weight"))
            return 1;
        if (sscanf(n, "model.layers.%d.%n", &l, &off) != 1) return 0;
    } else if (s->hc->arch == AX_HF_NEOX) {
        if (!strcmp(n, "gpt_neox.embed_in.weight") || !strcmp(n, "embed_out.weight") ||
            !strcmp(n, "gpt_neox.final_layer_norm.weight") ||
            !strcmp(n, "gpt_neox.final_layer_norm.bias"))
            return 1;
        if (sscanf(n, "gpt_neox.layers.%d.%n", &l, &off) != 1) return 0;
        per = neox, n_per = sizeof neox / sizeof *neox, tab = ax_hf_neox_layer;
    } else {
        size_t pl = strlen(s->gpt2);
        if (!strcmp(n, "lm_head.weight")) return 1;
        if (strncmp(n, s->gpt2, pl)) return 0;
        n += pl;
        if (!strcmp(n, "wte.weight") || !strcmp(n, "wpe.weight") || !strcmp(n, "ln_f.weight") ||
            !strcmp(n, "ln_f.bias"))
            return 1;
        if (sscanf(n, "h.%d.%n", &l, &off) != 1) return 0;
        per = gpt2, n_per = sizeof gpt2 / sizeof *gpt2, tab = ax_hf_gpt2_layer;
    }
    if (off == 0 || l < 0 || l >= L) return 0;
    for (int i = 0; tab && i < 12; i++) /* attention biases only when the config has them */
        if (!strcmp(n + off, tab[i].hf)) return !tab[i].attn_bias || s->hc->attn_bias;
    for (size_t i = 0; i < n_per; i++)
        if (!strcmp(n + off, per[i])) /* Llama's biases only when the config asks for them */
            return per != llama || i < LLAMA_ATTN_BIAS ||
                   (i < LLAMA_MLP_BIAS ? s->hc->attn_bias : s->hc->mlp_bias);
    return 0;
}

/* Fills the global parameter vector (tensor table ts[n_t]) from the directory. */
static ax_status fill(const ax_tensor_info *ts, int n_t, src_t *s, float *global) {
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < n_t; i++) {
        float *dst = global + ts[i].offset;
        const char *n = ts[i].name;
        int l = -1;
        char what[64] = "";
        if (!strncmp(n, "layers.", 7) && sscanf(n, "layers.%d.%63s", &l, what) != 2)
            return ax_errorf(AX_ERR_INTERNAL, "unexpected model tensor %s", n);
        if (l < 0) snprintf(what, sizeof what, "%s", n);
        st = s->hc->arch == AX_HF_NEOX   ? map_neox(s, what, l, dst)
             : s->hc->arch == AX_HF_GPT2 ? map_gpt2(s, what, l, dst)
                                         : map_llama(s, what, l, dst);
    }
    return st;
}

static const char *arch_desc(const ax_hf_config *hc) {
    switch (hc->arch) {
    case AX_HF_NEOX:
        return hc->attn_bias ? "GPT-NeoX" : "GPT-NeoX without attention biases";
    case AX_HF_GPT2:
        return "GPT-2";
    default:
        return hc->attn_bias && hc->mlp_bias ? "Llama model"
               : hc->attn_bias               ? "Llama model without MLP biases"
               : hc->mlp_bias                ? "Llama model without attention biases"
                                             : "Llama model without biases";
    }
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
    if (hc->arch == AX_HF_LLAMA && c->bias) ax_jw_key(&cw, "bias"), ax_jw_bool(&cw, 1);
    if (c->n_kv_heads) ax_jw_key(&cw, "kv-heads"), ax_jw_int(&cw, c->n_kv_heads);
    if ((c->n_kv_heads ? c->n_kv_heads : c->n_heads) != hc->kv_heads) /* model import --kv-heads */
        ax_jw_key(&cw, "kv-heads-replicated-from"), ax_jw_int(&cw, hc->kv_heads);
    if (hc->arch != AX_HF_LLAMA) { /* the architecture keys (absent: Llama's defaults) */
        static const char *const mlp[] = {"swiglu", "gelu", "gelu-tanh"};
        ax_jw_key(&cw, "norm"), ax_jw_str(&cw, c->norm == AX_NORM_LAYER ? "layer" : "rms");
        ax_jw_key(&cw, "mlp"), ax_jw_str(&cw, mlp[c->mlp]);
        ax_jw_key(&cw, "bias"), ax_jw_bool(&cw, c->bias);
        ax_jw_key(&cw, "parallel-residual"), ax_jw_bool(&cw, c->parallel_residual);
        ax_jw_key(&cw, "rotary-dim"), ax_jw_int(&cw, c->rotary_dim);
        ax_jw_key(&cw, "pos"), ax_jw_str(&cw, c->pos == AX_POS_LEARNED ? "learned" : "rope");
        if (c->pos == AX_POS_LEARNED) ax_jw_key(&cw, "max-pos"), ax_jw_int(&cw, c->max_pos);
        ax_jw_key(&cw, "imported-architecture"),
            ax_jw_str(&cw, hc->arch == AX_HF_NEOX ? "GPTNeoXForCausalLM" : "GPT2LMHeadModel");
    }
    ax_jw_key(&cw, "imported-from"), ax_jw_str(&cw, hf_dir);
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

ax_status ax_hf_import(const char *hf_dir, const char *ckpt_dir, int kv_heads, char *step_out,
                       size_t len) {
    ax_hf_config hc;
    AX_CHECK(ax_hf_config_load(hf_dir, &hc));
    int H = hc.cfg.n_heads, rep = 1;
    if (kv_heads) {
        if (kv_heads < hc.kv_heads || kv_heads % hc.kv_heads || H % kv_heads)
            return ax_errorf(AX_ERR_ARG,
                             "--kv-heads %d: %s/config.json has %d K/V heads for %d query heads; "
                             "give a multiple of %d that divides %d (each K/V head is copied for "
                             "its query group, the same function)",
                             kv_heads, hf_dir, hc.kv_heads, H, hc.kv_heads, H);
        if (hc.arch != AX_HF_LLAMA && kv_heads != H)
            return ax_errorf(AX_ERR_ARG,
                             "--kv-heads %d: %s is a %s model, which has one K/V head per query "
                             "head (%d); drop --kv-heads",
                             kv_heads, hf_dir, hc.arch == AX_HF_NEOX ? "GPT-NeoX" : "GPT-2", H);
        rep = kv_heads / hc.kv_heads;
        hc.cfg.n_kv_heads = kv_heads == H ? 0 : kv_heads;
    }
    ax_hf_weights *w = NULL;
    AX_CHECK(ax_hf_weights_open(hf_dir, &w));
    src_t s = {.w = w, .dir = hf_dir, .hc = &hc, .gpt2 = "transformer.", .kv_rep = rep};
    const ax_st_file *f;
    const ax_st_tensor *t;
    /* GPT2Model saves (the original gpt2 checkpoints) name tensors without the prefix */
    if (hc.arch == AX_HF_GPT2 && ax_hf_weights_find(w, "transformer.wte.weight", &f, &t) != AX_OK) {
        ax_error_clear();
        s.gpt2 = "";
    }
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < ax_hf_weights_count(w); i++) {
        const char *name = ax_hf_weights_name(w, i, &f);
        if (!known_name(&s, name))
            st = ax_errorf(AX_ERR_ARG,
                           "%s: tensor \"%s\" has no place in a %d-layer %s; axmem cannot "
                           "import this model as config.json describes it",
                           ax_st_path(f), name, hc.cfg.n_layers, arch_desc(&hc));
    }
    /* the engine's own global layout, so every grid loads the checkpoint */
    int n_t = ax_model_config_n_tensors(&hc.cfg);
    int64_t n = ax_model_config_n_params(&hc.cfg), big = 0;
    ax_tensor_info *ts = calloc((size_t)n_t, sizeof *ts);
    float *global = NULL;
    if (st == AX_OK && (!ts || (uint64_t)n > SIZE_MAX / sizeof *global ||
                        !(global = malloc((size_t)n * sizeof *global))))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory importing %s (%lld parameters)", hf_dir,
                       (long long)n);
    if (st == AX_OK) ax_model_tensor_table(&hc.cfg, ts);
    for (int i = 0; st == AX_OK && i < n_t; i++) big = ts[i].numel > big ? ts[i].numel : big;
    if (st == AX_OK && !(s.tmp = malloc((size_t)big * sizeof *s.tmp)))
        st = ax_errorf(AX_ERR_NOMEM, "out of memory importing %s", hf_dir);
    if (st == AX_OK) st = fill(ts, n_t, &s, global);
    if (st == AX_OK) st = write_ckpt(ts, n_t, n, &hc, hf_dir, ckpt_dir, global);
    if (st == AX_OK && step_out) snprintf(step_out, len, "%s/step-000000", ckpt_dir);
    free(s.tmp);
    free(global);
    free(ts);
    ax_hf_weights_close(w);
    return st;
}
