/* axmem checkpoint -> Hugging Face directory: config.json and one fp32 model.safetensors, as
 * LlamaForCausalLM, GPTNeoXForCausalLM or GPT2LMHeadModel (chosen from the checkpoint's
 * architecture keys), the inverse of hf_import.c's mapping (Llama K/V heads: one per query
 * head; GPT-NeoX q/k/v interleaved per head again; GPT-2 Conv1D weights transposed back). */
#include "interop/hf_model.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/model/model_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_LEN 96

/* the output tensor list; buffers made for a transposed or permuted copy are owned */
typedef struct {
    ax_st_out *o;
    char *names;
    float **owned;
    int n, n_owned, cap;
    const ax_ckpt_t *ck;
    const float *p; /* the params blob, global layout */
    ax_status st;
} outs;

/* tensor `name` of the checkpoint (numel checked), NULL with st set when absent */
static const float *tensor(outs *u, const char *name, int64_t numel) {
    if (u->st != AX_OK) return NULL;
    for (int i = 0; i < ax_ckpt_n_tensors(u->ck); i++) {
        const ax_tensor_info *t = ax_ckpt_tensor(u->ck, i);
        if (!strcmp(t->name, name) && t->numel == numel) return u->p + t->offset;
    }
    u->st = ax_errorf(AX_ERR_CORRUPT,
                      "%s: no tensor %s of %lld values; the checkpoint's tensor table does not "
                      "match its config",
                      ax_ckpt_path(u->ck), name, (long long)numel);
    return NULL;
}

static void add(outs *u, const char *name, const float *data, int64_t r, int64_t c) {
    if (u->st != AX_OK || !data) return;
    if (u->n == u->cap) {
        u->st = ax_errorf(AX_ERR_INTERNAL, "export: more tensors than planned");
        return;
    }
    char *slot = u->names + (size_t)u->n * NAME_LEN;
    snprintf(slot, NAME_LEN, "%s", name);
    u->o[u->n++] = (ax_st_out){.name = slot, .ndim = c ? 2 : 1, .shape = {r, c}, .data = data};
}

static float *owned(outs *u, int64_t n) {
    if (u->st != AX_OK) return NULL;
    float *b = malloc((size_t)n * sizeof *b);
    if (!b || u->n_owned == u->cap) {
        free(b);
        u->st = ax_errorf(AX_ERR_NOMEM, "out of memory exporting %s", ax_ckpt_path(u->ck));
        return NULL;
    }
    return u->owned[u->n_owned++] = b;
}

/* GPT-2 Conv1D: src [rows, cols] ([out, in]) written as [cols, rows] ([in, out]) */
static void add_t(outs *u, const char *name, const float *src, int64_t rows, int64_t cols) {
    float *b = src ? owned(u, rows * cols) : NULL;
    if (!b) return;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) b[c * rows + r] = src[r * cols + c];
    add(u, name, b, cols, rows);
}

/* GPT-NeoX query_key_value: [3, H, D] rows -> [H, 3, D] (cols 0: the bias) */
static void add_neox_qkv(outs *u, const char *name, const float *src, int64_t C, int64_t H,
                         int64_t cols) {
    int64_t D = C / H, w = cols ? cols : 1;
    float *b = src ? owned(u, 3 * C * w) : NULL;
    if (!b) return;
    for (int64_t h = 0; h < H; h++)
        for (int64_t j = 0; j < 3; j++)
            memcpy(b + (h * 3 * D + j * D) * w, src + (j * C + h * D) * w,
                   (size_t)(D * w) * sizeof *b);
    add(u, name, b, 3 * C, cols);
}

static const char *const MLP_KEY[] = {"swiglu", "gelu", "gelu-tanh"};

/* The architecture the config keys describe; another mix is refused with the keys named. */
static ax_status pick_arch(const ax_model_config *c, const char *path, ax_hf_arch *out) {
    int D = c->dim / c->n_heads, gelu = c->mlp == AX_MLP_GELU || c->mlp == AX_MLP_GELU_TANH;
    if (c->norm == AX_NORM_RMS && c->mlp == AX_MLP_SWIGLU && !c->parallel_residual &&
        c->pos == AX_POS_ROPE && (c->rotary_dim == 0 || c->rotary_dim == D))
        *out = AX_HF_LLAMA;
    else if (c->norm == AX_NORM_LAYER && gelu && c->bias && c->pos == AX_POS_ROPE)
        *out = AX_HF_NEOX;
    else if (c->norm == AX_NORM_LAYER && gelu && c->bias && c->pos == AX_POS_LEARNED &&
             !c->parallel_residual)
        *out = AX_HF_GPT2;
    else
        return ax_errorf(
            AX_ERR_ARG,
            "%s: the config's architecture (norm %s, mlp %s, bias %s, parallel-residual %s, "
            "rotary-dim %d, pos %s) is none that axmem exports: LlamaForCausalLM (norm rms, mlp "
            "swiglu, sequential, rope over the whole head), GPTNeoXForCausalLM (norm "
            "layer, mlp gelu or gelu-tanh, bias, rope) or GPT2LMHeadModel (norm layer, mlp gelu "
            "or gelu-tanh, bias, sequential, pos learned)",
            path, c->norm == AX_NORM_LAYER ? "layer" : "rms", MLP_KEY[c->mlp],
            c->bias ? "true" : "false", c->parallel_residual ? "true" : "false", c->rotary_dim,
            c->pos == AX_POS_LEARNED ? "learned" : "rope");
    if (c->n_kv_heads && c->n_kv_heads != c->n_heads && *out != AX_HF_LLAMA)
        return ax_errorf(AX_ERR_ARG,
                         "%s: kv-heads %d (grouped-query attention) has no %s form; only the Llama "
                         "architecture exports it (num_key_value_heads)",
                         path, c->n_kv_heads,
                         *out == AX_HF_NEOX ? "GPTNeoXForCausalLM" : "GPT2LMHeadModel");
    return AX_OK;
}

/* 1 when some value of the per-layer tensors a [na] or b [nb] is not zero: a model imported
 * with attention_bias (or Llama's mlp_bias) false and never trained has those biases all zero
 * and is exported without them again */
static int any_nonzero(outs *u, const ax_model_config *c, const char *a, int64_t na, const char *b,
                       int64_t nb) {
    char an[64];
    for (int l = 0; u->st == AX_OK && l < c->n_layers; l++)
        for (int k = 0; k < 2; k++) {
            snprintf(an, sizeof an, "layers.%d.%s", l, k ? b : a);
            const float *x = tensor(u, an, k ? nb : na);
            for (int64_t i = 0; x && i < (k ? nb : na); i++)
                if (x[i] != 0.0f) return 1;
        }
    return 0;
}

static void tensors_llama(outs *u, const ax_model_config *c, int attn_bias, int mlp_bias) {
    int64_t C = c->dim, F = c->ffn, V = c->vocab;
    /* [q | k | v] rows: C, then Ckv and Ckv (grouped-query attention's K/V heads) */
    int64_t Ckv = (int64_t)(c->n_kv_heads ? c->n_kv_heads : c->n_heads) * (C / c->n_heads);
    int64_t off[3] = {0, C, C + Ckv}, rows[3] = {C, Ckv, Ckv};
    char nm[NAME_LEN], an[64];
    const float *t;
    add(u, "model.embed_tokens.weight", tensor(u, "wte", V * C), V, C);
    for (int l = 0; u->st == AX_OK && l < c->n_layers; l++) {
        static const char *const qkv[3] = {"q", "k", "v"};
#define AN(S) (snprintf(an, sizeof an, "layers.%d." S, l), an)
#define NM(S) (snprintf(nm, sizeof nm, "model.layers.%d." S, l), nm)
        add(u, NM("input_layernorm.weight"), tensor(u, AN("attn_norm"), C), C, 0);
        t = tensor(u, AN("wqkv"), (C + 2 * Ckv) * C);
        for (int j = 0; t && j < 3; j++) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.%s_proj.weight", l, qkv[j]);
            add(u, nm, t + off[j] * C, rows[j], C);
        }
        t = attn_bias ? tensor(u, AN("bqkv"), C + 2 * Ckv) : NULL;
        for (int j = 0; t && j < 3; j++) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.%s_proj.bias", l, qkv[j]);
            add(u, nm, t + off[j], rows[j], 0);
        }
        add(u, NM("self_attn.o_proj.weight"), tensor(u, AN("wo"), C * C), C, C);
        if (attn_bias) add(u, NM("self_attn.o_proj.bias"), tensor(u, AN("bo"), C), C, 0);
        add(u, NM("post_attention_layernorm.weight"), tensor(u, AN("mlp_norm"), C), C, 0);
        t = tensor(u, AN("w_up"), 2 * F * C);
        add(u, NM("mlp.gate_proj.weight"), t, F, C);
        add(u, NM("mlp.up_proj.weight"), t ? t + F * C : NULL, F, C);
        add(u, NM("mlp.down_proj.weight"), tensor(u, AN("w_down"), C * F), C, F);
        t = mlp_bias ? tensor(u, AN("b_up"), 2 * F) : NULL;
        add(u, NM("mlp.gate_proj.bias"), t, F, 0);
        add(u, NM("mlp.up_proj.bias"), t ? t + F : NULL, F, 0);
        if (mlp_bias) add(u, NM("mlp.down_proj.bias"), tensor(u, AN("b_down"), C), C, 0);
#undef NM
#undef AN
    }
    add(u, "model.norm.weight", tensor(u, "final_norm", C), C, 0);
    /* tied: transformers ties lm_head to the embedding itself */
    if (!c->tie_embeddings) add(u, "lm_head.weight", tensor(u, "lm_head", V * C), V, C);
}

/* GPT-NeoX and GPT-2: layer l's tensors by the architecture's table (interop/hf_layout.c),
 * named `layers` + "N." + its name */
static void layer_by_table(outs *u, const ax_model_config *c, const ax_hf_layer_tensor *tab,
                           const char *layers, int l, int attn_bias) {
    int64_t C = c->dim, dims[3] = {C, c->ffn, 3 * C};
    char nm[NAME_LEN], an[64];
    for (int i = 0; i < 12; i++) {
        const ax_hf_layer_tensor *e = &tab[i];
        int64_t r = dims[e->rows], cols = e->cols == AX_HF_VEC ? 0 : dims[e->cols];
        if (e->attn_bias && !attn_bias) continue;
        snprintf(nm, sizeof nm, "%s%d.%s", layers, l, e->hf);
        snprintf(an, sizeof an, "layers.%d.%s", l, e->ax);
        const float *t = tensor(u, an, r * (cols ? cols : 1));
        if (e->layout == AX_HF_CONV1D)
            add_t(u, nm, t, r, cols);
        else if (e->layout == AX_HF_NEOX_QKV)
            add_neox_qkv(u, nm, t, C, c->n_heads, cols);
        else
            add(u, nm, t, r, cols);
    }
}

static void tensors_neox(outs *u, const ax_model_config *c, int attn_bias) {
    int64_t C = c->dim, V = c->vocab;
    add(u, "gpt_neox.embed_in.weight", tensor(u, "wte", V * C), V, C);
    for (int l = 0; u->st == AX_OK && l < c->n_layers; l++)
        layer_by_table(u, c, ax_hf_neox_layer, "gpt_neox.layers.", l, attn_bias);
    add(u, "gpt_neox.final_layer_norm.weight", tensor(u, "final_norm", C), C, 0);
    add(u, "gpt_neox.final_layer_norm.bias", tensor(u, "final_norm_bias", C), C, 0);
    if (!c->tie_embeddings) add(u, "embed_out.weight", tensor(u, "lm_head", V * C), V, C);
}

static void tensors_gpt2(outs *u, const ax_model_config *c) {
    int64_t C = c->dim, V = c->vocab;
    add(u, "transformer.wte.weight", tensor(u, "wte", V * C), V, C);
    add(u, "transformer.wpe.weight", tensor(u, "wpe", (int64_t)c->max_pos * C), c->max_pos, C);
    for (int l = 0; u->st == AX_OK && l < c->n_layers; l++)
        layer_by_table(u, c, ax_hf_gpt2_layer, "transformer.h.", l, 1);
    add(u, "transformer.ln_f.weight", tensor(u, "final_norm", C), C, 0);
    add(u, "transformer.ln_f.bias", tensor(u, "final_norm_bias", C), C, 0);
    if (!c->tie_embeddings) add(u, "lm_head.weight", tensor(u, "lm_head", V * C), V, C);
}

/* rotary_pct whose int(head_dim * pct) is rd, as transformers computes it */
static double rotary_pct(int rd, int D) {
    double pct = (double)rd / D;
    while ((int)(D * pct) < rd) pct = nextafter(pct, 2.0);
    return pct;
}

static ax_status config_json(const ax_model_config *c, ax_hf_arch arch, int max_pos, int attn_bias,
                             int mlp_bias, const char *path) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    static const char *const names[] = {"LlamaForCausalLM", "GPTNeoXForCausalLM",
                                        "GPT2LMHeadModel"},
                             *types[] = {"llama", "gpt_neox", "gpt2"};
    const char *act = c->mlp == AX_MLP_GELU ? "gelu" : "gelu_new";
    ax_jw_key(&w, "architectures"), ax_jw_arr_begin(&w), ax_jw_str(&w, names[arch]);
    ax_jw_arr_end(&w);
    ax_jw_key(&w, "model_type"), ax_jw_str(&w, types[arch]);
    if (arch == AX_HF_GPT2) {
        ax_jw_key(&w, "activation_function"), ax_jw_str(&w, act);
        ax_jw_key(&w, "n_embd"), ax_jw_int(&w, c->dim);
        ax_jw_key(&w, "n_inner"), ax_jw_int(&w, c->ffn);
        ax_jw_key(&w, "n_layer"), ax_jw_int(&w, c->n_layers);
        ax_jw_key(&w, "n_head"), ax_jw_int(&w, c->n_heads);
        ax_jw_key(&w, "n_positions"), ax_jw_int(&w, c->max_pos);
        ax_jw_key(&w, "layer_norm_epsilon"), ax_jw_num(&w, c->norm_eps);
        ax_jw_key(&w, "scale_attn_weights"), ax_jw_bool(&w, 1);
        ax_jw_key(&w, "scale_attn_by_inverse_layer_idx"), ax_jw_bool(&w, 0);
        ax_jw_key(&w, "reorder_and_upcast_attn"), ax_jw_bool(&w, 0);
        ax_jw_key(&w, "add_cross_attention"), ax_jw_bool(&w, 0);
        /* GPT2Config's 50256 would lie outside a small vocabulary */
        ax_jw_key(&w, "bos_token_id"), ax_jw_null(&w);
        ax_jw_key(&w, "eos_token_id"), ax_jw_null(&w);
    } else {
        ax_jw_key(&w, "hidden_act"), ax_jw_str(&w, arch == AX_HF_NEOX ? act : "silu");
        ax_jw_key(&w, "hidden_size"), ax_jw_int(&w, c->dim);
        ax_jw_key(&w, "intermediate_size"), ax_jw_int(&w, c->ffn);
        ax_jw_key(&w, "num_hidden_layers"), ax_jw_int(&w, c->n_layers);
        ax_jw_key(&w, "num_attention_heads"), ax_jw_int(&w, c->n_heads);
        ax_jw_key(&w, "max_position_embeddings"), ax_jw_int(&w, max_pos);
    }
    ax_jw_key(&w, "vocab_size"), ax_jw_int(&w, c->vocab);
    if (arch == AX_HF_LLAMA) {
        ax_jw_key(&w, "num_key_value_heads"),
            ax_jw_int(&w, c->n_kv_heads ? c->n_kv_heads : c->n_heads);
        ax_jw_key(&w, "rope_theta"), ax_jw_num(&w, c->rope_theta);
        ax_jw_key(&w, "rms_norm_eps"), ax_jw_num(&w, c->norm_eps);
        ax_jw_key(&w, "attention_bias"), ax_jw_bool(&w, attn_bias);
        ax_jw_key(&w, "mlp_bias"), ax_jw_bool(&w, mlp_bias);
        ax_jw_key(&w, "rope_scaling"), ax_jw_null(&w);
    } else if (arch == AX_HF_NEOX) {
        int D = c->dim / c->n_heads;
        /* the keys every transformers release reads (>= 5 folds them into rope_parameters) */
        ax_jw_key(&w, "rotary_pct"),
            ax_jw_num(&w, rotary_pct(c->rotary_dim ? c->rotary_dim : D, D));
        ax_jw_key(&w, "rotary_emb_base"), ax_jw_num(&w, c->rope_theta);
        ax_jw_key(&w, "layer_norm_eps"), ax_jw_num(&w, c->norm_eps);
        ax_jw_key(&w, "use_parallel_residual"), ax_jw_bool(&w, c->parallel_residual);
        ax_jw_key(&w, "attention_bias"), ax_jw_bool(&w, attn_bias);
    }
    ax_jw_key(&w, "tie_word_embeddings"), ax_jw_bool(&w, c->tie_embeddings);
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
    ax_hf_arch arch = AX_HF_LLAMA;
    AX_CHECK(pick_arch(&c, path, &arch));
    int64_t n = ax_ckpt_blob_count(ck, "params");
    if (n <= 0 || n != ax_model_config_n_params(&c))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the \"params\" blob holds %lld values, the model "
                         "%lld",
                         path, (long long)n, (long long)ax_model_config_n_params(&c));
    int max_pos = ax_model_position_limit(ck);
    int cap = 14 * c.n_layers + 8;
    float *p = malloc((size_t)n * sizeof *p);
    outs u = {.o = calloc((size_t)cap, sizeof *u.o),
              .names = calloc((size_t)cap, NAME_LEN),
              .owned = calloc((size_t)cap, sizeof *u.owned),
              .cap = cap,
              .ck = ck,
              .p = p};
    u.st = p && u.o && u.names && u.owned
               ? ax_ckpt_read_blob(ck, "params", 0, n, p)
               : ax_errorf(AX_ERR_NOMEM, "out of memory exporting %s", path);
    /* biases: GPT-2 always; GPT-NeoX's MLP always; the rest unless all zero */
    int64_t C = c.dim, F = c.ffn;
    int64_t Q3 = C + 2 * (int64_t)(c.n_kv_heads ? c.n_kv_heads : c.n_heads) * (C / c.n_heads);
    int attn_bias =
            c.bias && arch != AX_HF_GPT2 ? any_nonzero(&u, &c, "bqkv", Q3, "bo", C) : c.bias,
        mlp_bias = c.bias && arch == AX_HF_LLAMA ? any_nonzero(&u, &c, "b_up", 2 * F, "b_down", C)
                                                 : c.bias;
    if (arch == AX_HF_NEOX)
        tensors_neox(&u, &c, attn_bias);
    else if (arch == AX_HF_GPT2)
        tensors_gpt2(&u, &c);
    else
        tensors_llama(&u, &c, attn_bias, mlp_bias);
    ax_status st = u.st;
    char fp[4400];
    snprintf(fp, sizeof fp, "%s/model.safetensors", tmp_dir);
    if (st == AX_OK) st = ax_st_write(fp, u.o, u.n, "{\"format\":\"pt\"}");
    snprintf(fp, sizeof fp, "%s/config.json", tmp_dir);
    if (st == AX_OK) st = config_json(&c, arch, max_pos, attn_bias, mlp_bias, fp);
    for (int i = 0; i < u.n_owned; i++) free(u.owned[i]);
    free(p), free(u.o), free(u.names), free(u.owned);
    return st;
}

ax_status ax_hf_export(const char *ckpt, const char *out_dir, char *step_out, size_t n) {
    if (ax_path_exists(out_dir))
        return ax_errorf(AX_ERR_ARG, "--out %s already exists; name a new directory", out_dir);
    char step_dir[4200];
    AX_CHECK(ax_ckpt_resolve(ckpt, "--ckpt", step_dir, sizeof step_dir));
    if (step_out) snprintf(step_out, n, "%s", step_dir);
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
