/* Hugging Face models (Llama family, GPT-NeoX / Pythia, GPT-2) <-> axmem checkpoints
 * (docs/interop.md). A model directory is config.json plus
 * model.safetensors, or shards named by model.safetensors.index.json ("weight_map": tensor ->
 * file). */
#pragma once
#include <stddef.h>
#include "interop/safetensors.h"
#include "lib/core/json.h"
#include "lib/model/model.h"

typedef enum { AX_HF_LLAMA = 0, AX_HF_NEOX = 1, AX_HF_GPT2 = 2 } ax_hf_arch;

typedef struct {
    ax_model_config cfg; /* heads = num_attention_heads */
    ax_hf_arch arch;
    int kv_heads;  /* num_key_value_heads: divides heads (heads for NeoX and GPT-2) */
    int max_pos;   /* max_position_embeddings / n_positions (0 if absent) */
    int attn_bias; /* attention_bias: q/k/v/out biases (false with cfg.bias: imported as zeros) */
    int mlp_bias;  /* Llama's mlp_bias: gate/up/down biases (false with cfg.bias: zeros) */
} ax_hf_config;

/* Reads DIR/config.json: LlamaForCausalLM or MistralForCausalLM (SiLU, no rope_scaling, a
 * sliding window null or at least the position limit, so it never acts, head_dim = hidden /
 * heads, attention_bias / mlp_bias as the engine's biases), GPTNeoXForCausalLM (gelu or a tanh
 * gelu, plain rotary on int(head_dim * rotary_pct) even dims) or GPT2LMHeadModel
 * (scale_attn_weights, no layer-index scaling, no cross-attention). The class is the one
 * "architectures" names, else the one "model_type" names (llama, mistral, gpt_neox, gpt2), as
 * transformers chooses; the two must agree when both are given. Anything else is refused
 * naming the file and the key. */
ax_status ax_hf_config_load(const char *dir, ax_hf_config *out);

/* The JSON file at path (at most max_bytes) parsed into *out (free with ax_json_free). */
ax_status ax_hf_read_json(const char *path, size_t max_bytes, ax_json **out);

/* The tensors of a model directory, single file or sharded. */
typedef struct ax_hf_weights ax_hf_weights;
ax_status ax_hf_weights_open(const char *dir, ax_hf_weights **out);
void ax_hf_weights_close(ax_hf_weights *w);
/* Tensor `name` and the file holding it; AX_ERR_CORRUPT naming the directory if absent. */
ax_status ax_hf_weights_find(const ax_hf_weights *w, const char *name, const ax_st_file **file,
                             const ax_st_tensor **t);
/* Every tensor name of the directory (for refusing unknown ones): n and the i-th name. */
int ax_hf_weights_count(const ax_hf_weights *w);
const char *ax_hf_weights_name(const ax_hf_weights *w, int i, const ax_st_file **file);

/* Imports DIR into CKPT_DIR/step-000000 (atomically, ax_ckpt_write); the written step
 * directory goes to step_out[n] (may be NULL). kv_heads 0 keeps grouped-query K/V heads as
 * config.json has them (the checkpoint's "kv-heads"); K > 0 copies each source K/V head for
 * K / num_key_value_heads consecutive heads, the same function, so a grouped-query model loads
 * on grids whose Y divides K but not the source's count (each Y rank holds whole K/V heads). K
 * must be a multiple of the source's count dividing the query heads; AX_ERR_ARG naming
 * --kv-heads otherwise. */
ax_status ax_hf_import(const char *hf_dir, const char *ckpt_dir, int kv_heads, char *step_out,
                       size_t n);
/* A per-layer tensor of GPT-NeoX or GPT-2, in the order export writes them: the engine's name
 * (ax_model_tensor_table's after "layers.N."), the Hugging Face name after the layer prefix,
 * the engine's shape [rows, cols] (AX_HF_VEC cols: a vector [rows]) and how the file stores
 * it. Import reads, export writes and import accepts names by these tables. */
enum { AX_HF_C, AX_HF_F, AX_HF_3C, AX_HF_VEC };
enum {
    AX_HF_PLAIN,    /* as the engine's [out, in] */
    AX_HF_CONV1D,   /* GPT-2's Conv1D: transposed, [in, out] */
    AX_HF_NEOX_QKV, /* GPT-NeoX query_key_value: rows per head [H, 3, D], the engine's [3, H, D] */
};
typedef struct {
    const char *ax, *hf;
    int rows, cols, layout;
    int attn_bias; /* 1: present only with attention_bias (else imported as zeros) */
} ax_hf_layer_tensor;
extern const ax_hf_layer_tensor ax_hf_neox_layer[12], ax_hf_gpt2_layer[12];

/* Exports a checkpoint to OUT_DIR (config.json + fp32 model.safetensors) as the architecture
 * its config keys describe: LlamaForCausalLM (RMSNorm, SwiGLU, rotary), GPTNeoXForCausalLM
 * (LayerNorm, GELU, biases, rotary) or GPT2LMHeadModel (LayerNorm, GELU, biases, learned
 * positions); another mix is refused naming the keys. ckpt is a step directory, a training
 * run or a checkpoint directory (its newest complete step: ax_ckpt_resolve), whose path goes
 * to step_out[n] (may be NULL). max_position_embeddings is ax_model_position_limit's. OUT_DIR
 * must not exist; it is written as OUT_DIR.partial and renamed. */
ax_status ax_hf_export(const char *ckpt, const char *out_dir, char *step_out, size_t n);
