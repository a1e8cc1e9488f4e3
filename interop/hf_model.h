/* Hugging Face Llama-family models <-> axmem checkpoints (docs/DESIGN.md "Hugging Face
 * models"). A model directory is config.json plus model.safetensors, or shards named by
 * model.safetensors.index.json ("weight_map": tensor -> file). */
#pragma once
#include <stddef.h>
#include "interop/safetensors.h"
#include "lib/model/model.h"

typedef struct {
    ax_model_config cfg; /* heads = num_attention_heads */
    int kv_heads;        /* num_key_value_heads: divides heads */
    int max_pos;         /* max_position_embeddings (0 if absent) */
} ax_hf_config;

/* Reads DIR/config.json: LlamaForCausalLM or MistralForCausalLM with SiLU, no rope_scaling,
 * no attention or MLP biases, no sliding window, head_dim = hidden / heads. Anything else is
 * refused naming the file and the key. */
ax_status ax_hf_config_load(const char *dir, ax_hf_config *out);

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

/* Imports DIR into CKPT_DIR/step-000000 (atomically, ax_ckpt_write); grouped-query K/V heads
 * are replicated for their query group, which computes the same function. The written step
 * directory goes to step_out[n] (may be NULL). */
ax_status ax_hf_import(const char *hf_dir, const char *ckpt_dir, char *step_out, size_t n);
/* Exports a checkpoint step directory to OUT_DIR (config.json + fp32 model.safetensors, as
 * LlamaForCausalLM). OUT_DIR must not exist; it is written as OUT_DIR.partial and renamed. */
ax_status ax_hf_export(const char *step_dir, const char *out_dir);
