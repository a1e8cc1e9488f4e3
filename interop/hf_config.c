/* config.json of a Llama-family model -> ax_model_config, refusing what the engine lacks. */
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

/* a key the engine cannot honour unless it is absent, null or false */
static ax_status refuse_set(const ax_json *c, const char *key, const char *path, const char *why) {
    const ax_json *v = ax_json_get(c, key);
    if (!v || v->type == AX_JSON_NULL || (v->type == AX_JSON_BOOL && v->num == 0)) return AX_OK;
    return ax_errorf(AX_ERR_ARG, "%s: \"%s\" is set; axmem cannot import it: %s", path, key, why);
}

static ax_status parse(const ax_json *c, const char *path, ax_hf_config *out) {
    const ax_json *arch = ax_json_get(c, "architectures");
    const char *a =
        arch && arch->type == AX_JSON_ARR && arch->n == 1 && arch->items[0]->type == AX_JSON_STR
            ? arch->items[0]->str
            : "";
    if (strcmp(a, "LlamaForCausalLM") && strcmp(a, "MistralForCausalLM"))
        return ax_errorf(AX_ERR_ARG,
                         "%s: \"architectures\" is [\"%.64s\"]; axmem imports LlamaForCausalLM "
                         "and MistralForCausalLM only",
                         path, a);
    const ax_json *act = ax_json_get(c, "hidden_act");
    if (act && (act->type != AX_JSON_STR || strcmp(act->str, "silu")))
        return ax_errorf(AX_ERR_ARG, "%s: \"hidden_act\" must be \"silu\" (SwiGLU)", path);
    AX_CHECK(refuse_set(c, "rope_scaling", path, "only plain rotary embeddings are supported"));
    AX_CHECK(refuse_set(c, "attention_bias", path, "the engine has no attention biases"));
    AX_CHECK(refuse_set(c, "mlp_bias", path, "the engine has no MLP biases"));
    AX_CHECK(refuse_set(c, "sliding_window", path,
                        "the engine has full causal attention only (set it to null only if the "
                        "model never attends past the window)"));
    ax_model_config m = {0};
    int kv = 0, maxp = 0;
    AX_CHECK(get_int(c, "num_hidden_layers", path, 1, 1024, &m.n_layers));
    AX_CHECK(get_int(c, "hidden_size", path, 2, 65536, &m.dim));
    AX_CHECK(get_int(c, "num_attention_heads", path, 1, 1024, &m.n_heads));
    AX_CHECK(get_int(c, "intermediate_size", path, 1, 262144, &m.ffn));
    AX_CHECK(get_int(c, "vocab_size", path, 1, 1 << 24, &m.vocab));
    if (m.vocab < 257)
        return ax_errorf(AX_ERR_ARG,
                         "%s: vocab_size %d is below 257, the smallest vocabulary axmem models "
                         "hold (256 bytes + end-of-text)",
                         path, m.vocab);
    kv = m.n_heads;
    if (ax_json_get(c, "num_key_value_heads"))
        AX_CHECK(get_int(c, "num_key_value_heads", path, 1, m.n_heads, &kv));
    if (m.n_heads % kv)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: num_key_value_heads %d does not divide num_attention_heads %d", path,
                         kv, m.n_heads);
    if (m.dim % m.n_heads || (m.dim / m.n_heads) % 2)
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
    if (ax_json_get(c, "max_position_embeddings"))
        AX_CHECK(get_int(c, "max_position_embeddings", path, 1, 1 << 30, &maxp));
    /* transformers >= 5 writes "rope_parameters": {"rope_type", "rope_theta"}; older
     * releases a top-level "rope_theta" and, for scaled variants, "rope_scaling" */
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
    }
    const ax_json *th = rp && ax_json_get(rp, "rope_theta") ? ax_json_get(rp, "rope_theta")
                                                            : ax_json_get(c, "rope_theta"),
                  *eps = ax_json_get(c, "rms_norm_eps"),
                  *tie = ax_json_get(c, "tie_word_embeddings");
    double theta = 10000.0, e = 1e-6; /* transformers' defaults for LlamaConfig */
    if (th) {
        if (th->type != AX_JSON_NUM || !(th->num > 1 && th->num <= 1e12))
            return ax_errorf(AX_ERR_CORRUPT, "%s: \"rope_theta\" must be a number in (1, 1e12]",
                             path);
        theta = th->num;
    }
    if (eps) {
        if (eps->type != AX_JSON_NUM || !(eps->num >= 1e-12 && eps->num <= 1))
            return ax_errorf(AX_ERR_CORRUPT, "%s: \"rms_norm_eps\" must be in [1e-12, 1]", path);
        e = eps->num;
    }
    if (tie && tie->type != AX_JSON_BOOL)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"tie_word_embeddings\" must be true or false", path);
    /* LlamaConfig defaults to untied, MistralConfig too */
    m.tie_embeddings = tie ? tie->num != 0 : 0;
    m.rope_theta = (float)theta;
    m.norm_eps = (float)e;
    ax_status st = ax_model_config_check(&m);
    if (st != AX_OK) return st;
    *out = (ax_hf_config){.cfg = m, .kv_heads = kv, .max_pos = maxp};
    return AX_OK;
}

ax_status ax_hf_config_load(const char *dir, ax_hf_config *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = NULL;
    size_t len = 0;
    AX_CHECK(ax_read_file_max(path, 16u << 20, &text, &len));
    ax_json *c = NULL;
    ax_status st = ax_json_parse(text, len, path, &c);
    free(text);
    if (st != AX_OK) return st;
    if (c->type != AX_JSON_OBJ)
        st = ax_errorf(AX_ERR_CORRUPT, "%s: not a JSON object", path);
    else
        st = parse(c, path, out);
    ax_json_free(c);
    return st;
}
