/* config.json of a Llama-family, GPT-NeoX or GPT-2 model -> ax_model_config, refusing what
 * the engine lacks with the file and the key named. */
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ax_status get_int(const ax_json *c, const char *key, const char *path, int64_t lo,
                         int64_t hi, int *out) {
    const ax_json *v = ax_json_get(c, key);
    int64_t x;
    if (!v || !ax_json_int_in(v, lo, hi, &x))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be an integer in [%lld, %lld]", path, key,
                         (long long)lo, (long long)hi);
    *out = (int)x;
    return AX_OK;
}

/* as get_int, keeping *out (the default) when the key is absent or null */
static ax_status opt_int(const ax_json *c, const char *key, const char *path, int64_t lo,
                         int64_t hi, int *out) {
    const ax_json *v = ax_json_get(c, key);
    return v && v->type != AX_JSON_NULL ? get_int(c, key, path, lo, hi, out) : AX_OK;
}

static ax_status opt_bool(const ax_json *c, const char *key, const char *path, int *out) {
    const ax_json *v = ax_json_get(c, key);
    if (!v) return AX_OK;
    if (v->type != AX_JSON_BOOL)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be true or false", path, key);
    *out = v->num != 0;
    return AX_OK;
}

/* a norm epsilon: *out keeps the architecture's default when the key is absent */
static ax_status opt_eps(const ax_json *c, const char *key, const char *path, float *out) {
    const ax_json *v = ax_json_get(c, key);
    if (!v) return AX_OK;
    if (v->type != AX_JSON_NUM || !(v->num >= 1e-12 && v->num <= 1))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be a number in [1e-12, 1]", path, key);
    *out = (float)v->num;
    return AX_OK;
}

/* a key the engine cannot honour unless it is absent, null or false */
static ax_status refuse_set(const ax_json *c, const char *key, const char *path, const char *why) {
    const ax_json *v = ax_json_get(c, key);
    if (!v || v->type == AX_JSON_NULL || (v->type == AX_JSON_BOOL && v->num == 0)) return AX_OK;
    return ax_errorf(AX_ERR_ARG, "%s: \"%s\" is set; axmem cannot import it: %s", path, key, why);
}

/* a GELU activation name (transformers' ACT2FN) -> the engine's kind; the tanh forms
 * (gelu_new, gelu_fast, gelu_pytorch_tanh) are one formula */
static ax_status gelu_kind(const ax_json *c, const char *key, const char *def, const char *path,
                           ax_mlp_kind *out) {
    const ax_json *v = ax_json_get(c, key);
    const char *a = v && v->type == AX_JSON_STR ? v->str : v ? "" : def;
    if (!strcmp(a, "gelu"))
        *out = AX_MLP_GELU;
    else if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_fast") || !strcmp(a, "gelu_pytorch_tanh"))
        *out = AX_MLP_GELU_TANH;
    else
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"%s\" is \"%.32s\"; axmem imports \"gelu\" (exact) and the tanh "
                         "forms \"gelu_new\", \"gelu_fast\", \"gelu_pytorch_tanh\" only",
                         path, key, a);
    return AX_OK;
}

/* transformers >= 5 writes "rope_parameters": {"rope_type", "rope_theta", ...}; older
 * releases a top-level key (`legacy`: rope_theta, GPT-NeoX's rotary_emb_base) and, for scaled
 * variants, "rope_scaling". *theta keeps the default when neither is present. */
static ax_status rope_theta(const ax_json *c, const char *legacy, const char *path, float *theta) {
    AX_CHECK(refuse_set(c, "rope_scaling", path, "only plain rotary embeddings are supported"));
    const ax_json *rp = ax_json_get(c, "rope_parameters");
    if (rp && rp->type != AX_JSON_NULL) {
        const ax_json *ty = ax_json_get(rp, "rope_type");
        if (rp->type != AX_JSON_OBJ ||
            (ty && (ty->type != AX_JSON_STR || strcmp(ty->str, "default"))))
            return ax_errorf(AX_ERR_ARG,
                             "%s: \"rope_parameters\" asks for a rope_type other than "
                             "\"default\"; axmem cannot import it: only plain rotary embeddings "
                             "are supported",
                             path);
    } else
        rp = NULL;
    const char *key = rp && ax_json_get(rp, "rope_theta") ? "rope_theta" : legacy;
    const ax_json *th = rp && ax_json_get(rp, "rope_theta") ? ax_json_get(rp, "rope_theta")
                                                            : ax_json_get(c, legacy);
    if (!th) return AX_OK;
    if (th->type != AX_JSON_NUM || !(th->num > 1 && th->num <= 1e12))
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be a number in (1, 1e12]", path, key);
    *theta = (float)th->num;
    return AX_OK;
}

static ax_status check_vocab(const ax_model_config *m, const char *path) {
    if (m->vocab < 257)
        return ax_errorf(AX_ERR_ARG,
                         "%s: vocab_size %d is below 257, the smallest vocabulary axmem models "
                         "hold (256 bytes + end-of-text)",
                         path, m->vocab);
    if (m->dim % m->n_heads)
        return ax_errorf(AX_ERR_ARG,
                         "%s: hidden size %d is not divisible by the %d attention heads", path,
                         m->dim, m->n_heads);
    return AX_OK;
}

/* the Llama and GPT-NeoX keys of the model's shape, and what the engine needs of it */
static ax_status get_shape(const ax_json *c, const char *path, ax_model_config *m) {
    AX_CHECK(get_int(c, "num_hidden_layers", path, 1, 1024, &m->n_layers));
    AX_CHECK(get_int(c, "hidden_size", path, 2, 65536, &m->dim));
    AX_CHECK(get_int(c, "num_attention_heads", path, 1, 1024, &m->n_heads));
    AX_CHECK(get_int(c, "intermediate_size", path, 1, 262144, &m->ffn));
    AX_CHECK(get_int(c, "vocab_size", path, 1, 1 << 24, &m->vocab));
    return check_vocab(m, path);
}

/* MistralConfig's and LlamaConfig's defaults for the keys a config.json may leave out */
#define MISTRAL_WINDOW_DEFAULT 4096
#define MISTRAL_MAX_POS_DEFAULT 131072
#define LLAMA_MAX_POS_DEFAULT 2048

/* Mistral attends to the last sliding_window positions only; the engine has full causal
 * attention, the same function as long as no sequence reaches past the window, which holds
 * when the window covers the position limit (maxp; 0: absent, the config class's default).
 * A Mistral config without the key has MistralConfig's default window. LlamaForCausalLM
 * ignores the key; a window it sets is checked alike all the same (the conservative
 * reading: set it to null if the model never used one). */
static ax_status check_window(const ax_json *c, const char *path, int mistral, int maxp) {
    const ax_json *v = ax_json_get(c, "sliding_window");
    int64_t w = mistral ? MISTRAL_WINDOW_DEFAULT : 0;
    if (v && v->type == AX_JSON_NULL) return AX_OK;
    if (v && !ax_json_int_in(v, 1, (int64_t)1 << 40, &w))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: \"sliding_window\" must be a positive integer or null", path);
    int limit = maxp ? maxp : mistral ? MISTRAL_MAX_POS_DEFAULT : LLAMA_MAX_POS_DEFAULT;
    if (!w || w >= limit) return AX_OK;
    return ax_errorf(AX_ERR_ARG,
                     "%s: \"sliding_window\" is %lld%s, below the model's position limit %d%s: "
                     "a token attends to the last %lld positions only, and axmem has full "
                     "causal attention only, so it cannot import it (a window of at least "
                     "the position limit, or null, never acts and is accepted)",
                     path, (long long)w, v ? "" : " (absent: MistralConfig's default)", limit,
                     maxp ? " (max_position_embeddings)"
                          : " (max_position_embeddings absent: the default)",
                     (long long)w);
}

static ax_status parse_llama(const ax_json *c, const char *path, int mistral, ax_hf_config *out) {
    const ax_json *act = ax_json_get(c, "hidden_act");
    if (act && (act->type != AX_JSON_STR || strcmp(act->str, "silu")))
        return ax_errorf(AX_ERR_ARG, "%s: \"hidden_act\" must be \"silu\" (SwiGLU)", path);
    /* LlamaConfig's defaults: theta 10000, eps 1e-6, untied (MistralConfig too) */
    ax_model_config m = {.rope_theta = 10000.0f, .norm_eps = 1e-6f};
    int kv = 0, maxp = 0;
    AX_CHECK(get_shape(c, path, &m));
    kv = m.n_heads;
    if (ax_json_get(c, "num_key_value_heads"))
        AX_CHECK(get_int(c, "num_key_value_heads", path, 1, m.n_heads, &kv));
    if (m.n_heads % kv)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: num_key_value_heads %d does not divide num_attention_heads %d", path,
                         kv, m.n_heads);
    if ((m.dim / m.n_heads) % 2)
        return ax_errorf(AX_ERR_ARG,
                         "%s: hidden_size %d / num_attention_heads %d must be an even "
                         "integer (the head dimension)",
                         path, m.dim, m.n_heads);
    const ax_json *hd = ax_json_get(c, "head_dim");
    if (hd && hd->type != AX_JSON_NULL &&
        !(hd->type == AX_JSON_NUM && hd->num == m.dim / m.n_heads))
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"head_dim\" differs from hidden_size / num_attention_heads; the "
                         "engine derives the head dimension",
                         path);
    AX_CHECK(opt_int(c, "max_position_embeddings", path, 1, 1 << 30, &maxp));
    AX_CHECK(check_window(c, path, mistral, maxp));
    AX_CHECK(rope_theta(c, "rope_theta", path, &m.rope_theta));
    AX_CHECK(opt_eps(c, "rms_norm_eps", path, &m.norm_eps));
    AX_CHECK(opt_bool(c, "tie_word_embeddings", path, &m.tie_embeddings));
    /* the engine's biases are all or none: one set of the two is imported as zeros */
    int ab = 0, mb = 0;
    AX_CHECK(opt_bool(c, "attention_bias", path, &ab));
    AX_CHECK(opt_bool(c, "mlp_bias", path, &mb));
    m.bias = ab || mb;
    m.n_kv_heads = kv == m.n_heads ? 0 : kv; /* grouped-query attention, natively */
    *out = (ax_hf_config){.cfg = m,
                          .arch = AX_HF_LLAMA,
                          .kv_heads = kv,
                          .max_pos = maxp,
                          .attn_bias = ab,
                          .mlp_bias = mb};
    return AX_OK;
}

/* GPT-NeoX (Pythia): LayerNorm with bias, GELU MLP with biases, q/k/v/out biases unless
 * attention_bias is false, rotary on the first int(head_dim * rotary_pct) dims of each head,
 * parallel residual unless use_parallel_residual is false. */
static ax_status parse_neox(const ax_json *c, const char *path, ax_hf_config *out) {
    ax_model_config m = {.rope_theta = 10000.0f,
                         .norm_eps = 1e-5f,
                         .norm = AX_NORM_LAYER,
                         .bias = 1,
                         .parallel_residual = 1,
                         .pos = AX_POS_ROPE};
    int maxp = 0, attn_bias = 1;
    AX_CHECK(gelu_kind(c, "hidden_act", "gelu", path, &m.mlp));
    AX_CHECK(get_shape(c, path, &m));
    AX_CHECK(opt_int(c, "max_position_embeddings", path, 1, 1 << 30, &maxp));
    AX_CHECK(opt_eps(c, "layer_norm_eps", path, &m.norm_eps));
    AX_CHECK(opt_bool(c, "use_parallel_residual", path, &m.parallel_residual));
    AX_CHECK(opt_bool(c, "attention_bias", path, &attn_bias));
    AX_CHECK(opt_bool(c, "tie_word_embeddings", path, &m.tie_embeddings));
    AX_CHECK(rope_theta(c, "rotary_emb_base", path, &m.rope_theta));
    /* the rotated share: rope_parameters.partial_rotary_factor (transformers >= 5) or
     * rotary_pct (older saves, every Pythia), default 0.25 as GPTNeoXConfig's */
    const ax_json *rp = ax_json_get(c, "rope_parameters"),
                  *pf = rp && rp->type == AX_JSON_OBJ ? ax_json_get(rp, "partial_rotary_factor")
                                                      : NULL;
    const char *pkey = pf ? "rope_parameters.partial_rotary_factor" : "rotary_pct";
    if (!pf) pf = ax_json_get(c, "rotary_pct");
    double pct = 0.25;
    if (pf) {
        if (pf->type != AX_JSON_NUM || !(pf->num > 0 && pf->num <= 1))
            return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" must be a number in (0, 1]", path, pkey);
        pct = pf->num;
    }
    int D = m.dim / m.n_heads;
    int rd = (int)(D * pct); /* transformers: int(head_size * rotary_pct) */
    if (rd < 2 || rd % 2)
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"%s\" %g of the head dimension %d rotates %d dims; axmem needs an "
                         "even number >= 2 (rotate-half pairs)",
                         path, pkey, pct, D, rd);
    m.rotary_dim = rd == D ? 0 : rd; /* 0: the whole head, the Llama path */
    *out = (ax_hf_config){.cfg = m,
                          .arch = AX_HF_NEOX,
                          .kv_heads = m.n_heads,
                          .max_pos = maxp,
                          .attn_bias = attn_bias,
                          .mlp_bias = 1};
    return AX_OK;
}

/* GPT-2: learned positions (n_positions rows), LayerNorm, GELU MLP, biases everywhere,
 * attention scaled by 1/sqrt(head dim), embeddings tied unless the config says otherwise. */
static ax_status parse_gpt2(const ax_json *c, const char *path, ax_hf_config *out) {
    ax_model_config m = {.rope_theta = 10000.0f, /* unused: no rotary */
                         .norm_eps = 1e-5f,
                         .norm = AX_NORM_LAYER,
                         .bias = 1,
                         .pos = AX_POS_LEARNED,
                         .tie_embeddings = 1};
    AX_CHECK(gelu_kind(c, "activation_function", "gelu_new", path, &m.mlp));
    AX_CHECK(refuse_set(c, "scale_attn_by_inverse_layer_idx", path,
                        "the engine scales attention by 1/sqrt(head dim) only"));
    AX_CHECK(refuse_set(c, "add_cross_attention", path, "axmem models are decoders only"));
    int scaled = 1;
    AX_CHECK(opt_bool(c, "scale_attn_weights", path, &scaled));
    if (!scaled)
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"scale_attn_weights\" is false; axmem cannot import it: the "
                         "engine always scales attention by 1/sqrt(head dim)",
                         path);
    /* reorder_and_upcast_attn changes only how the scores are rounded: ignored */
    AX_CHECK(get_int(c, "n_layer", path, 1, 1024, &m.n_layers));
    AX_CHECK(get_int(c, "n_embd", path, 2, 65536, &m.dim));
    AX_CHECK(get_int(c, "n_head", path, 1, 1024, &m.n_heads));
    AX_CHECK(get_int(c, "vocab_size", path, 1, 1 << 24, &m.vocab));
    AX_CHECK(get_int(c, "n_positions", path, 1, 1 << 24, &m.max_pos));
    AX_CHECK(check_vocab(&m, path));
    m.ffn = 4 * m.dim; /* n_inner null: 4 x n_embd */
    AX_CHECK(opt_int(c, "n_inner", path, 1, 262144, &m.ffn));
    AX_CHECK(opt_eps(c, "layer_norm_epsilon", path, &m.norm_eps));
    AX_CHECK(opt_bool(c, "tie_word_embeddings", path, &m.tie_embeddings));
    *out = (ax_hf_config){.cfg = m,
                          .arch = AX_HF_GPT2,
                          .kv_heads = m.n_heads,
                          .max_pos = m.max_pos,
                          .attn_bias = 1,
                          .mlp_bias = 1};
    return AX_OK;
}

/* The model classes axmem imports, with the model_type transformers builds each from. */
typedef enum { CLS_LLAMA, CLS_MISTRAL, CLS_NEOX, CLS_GPT2, CLS_N } hf_class;
static const char *const CLASS_NAME[CLS_N] = {"LlamaForCausalLM", "MistralForCausalLM",
                                              "GPTNeoXForCausalLM", "GPT2LMHeadModel"};
static const char *const MODEL_TYPE[CLS_N] = {"llama", "mistral", "gpt_neox", "gpt2"};

static int class_named(const char *s, const char *const *names) {
    for (int k = 0; k < CLS_N; k++)
        if (!strcmp(s, names[k])) return k;
    return -1;
}

/* The class "architectures" names; without it (absent, null or []) the one "model_type"
 * names, as transformers' AutoModelForCausalLM chooses. When both are given they must agree
 * (Llama and Mistral read alike here): transformers builds the model_type's class. */
static ax_status pick_class(const ax_json *c, const char *path, hf_class *out) {
    const ax_json *arch = ax_json_get(c, "architectures"), *mt = ax_json_get(c, "model_type");
    const char *t = mt && mt->type == AX_JSON_STR ? mt->str : NULL;
    int from_type = t ? class_named(t, MODEL_TYPE) : -1;
    if (!arch || arch->type == AX_JSON_NULL || (arch->type == AX_JSON_ARR && arch->n == 0)) {
        if (from_type < 0)
            return ax_errorf(AX_ERR_ARG,
                             "%s: no \"architectures\" and \"model_type\" is %s%.64s%s; axmem "
                             "imports the model types llama, mistral, gpt_neox and gpt2 only",
                             path, t ? "\"" : "", t ? t : "absent", t ? "\"" : "");
        *out = (hf_class)from_type;
        return AX_OK;
    }
    const char *a = arch->type == AX_JSON_ARR && arch->n == 1 && arch->items[0]->type == AX_JSON_STR
                        ? arch->items[0]->str
                        : "";
    int k = class_named(a, CLASS_NAME);
    if (k < 0)
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"architectures\" is [\"%.64s\"]; axmem imports LlamaForCausalLM, "
                         "MistralForCausalLM, GPTNeoXForCausalLM and GPT2LMHeadModel only",
                         path, a);
    int llama_like = k <= CLS_MISTRAL && from_type >= 0 && from_type <= CLS_MISTRAL;
    if (t && from_type != k && !llama_like)
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"architectures\" is [\"%s\"] but \"model_type\" is \"%.64s\", "
                         "which transformers builds as %s; fix the one that is wrong",
                         path, a, t, from_type >= 0 ? CLASS_NAME[from_type] : "another class");
    /* Llama named one way and Mistral the other: Mistral's sliding-window rule applies */
    *out = llama_like && from_type == CLS_MISTRAL ? CLS_MISTRAL : (hf_class)k;
    return AX_OK;
}

static ax_status parse(const ax_json *c, const char *path, ax_hf_config *out) {
    hf_class k = CLS_LLAMA;
    AX_CHECK(pick_class(c, path, &k));
    ax_status st = k == CLS_NEOX   ? parse_neox(c, path, out)
                   : k == CLS_GPT2 ? parse_gpt2(c, path, out)
                                   : parse_llama(c, path, k == CLS_MISTRAL, out);
    if (st != AX_OK) return st;
    st = ax_model_config_check(&out->cfg);
    if (st != AX_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", ax_error_msg());
        ax_error_clear();
        return ax_errorf(AX_ERR_ARG, "%s: the model it describes cannot be built: %s", path, why);
    }
    return AX_OK;
}

ax_status ax_hf_read_json(const char *path, size_t max_bytes, ax_json **out) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    AX_CHECK(ax_read_file_max(path, max_bytes, &text, &len));
    ax_status st = ax_json_parse(text, len, path, out);
    free(text);
    return st;
}

ax_status ax_hf_config_load(const char *dir, ax_hf_config *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    ax_json *c = NULL;
    AX_CHECK(ax_hf_read_json(path, 16u << 20, &c));
    ax_status st;
    if (c->type != AX_JSON_OBJ)
        st = ax_errorf(AX_ERR_CORRUPT, "%s: not a JSON object", path);
    else
        st = parse(c, path, out);
    ax_json_free(c);
    return st;
}
