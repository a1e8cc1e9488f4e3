/* The per-layer tensors of GPT-NeoX and GPT-2 (interop/hf_model.h), one table each for import
 * and export. */
#include "interop/hf_model.h"

const ax_hf_layer_tensor ax_hf_neox_layer[12] = {
    {"attn_norm", "input_layernorm.weight", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"attn_norm_bias", "input_layernorm.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"wqkv", "attention.query_key_value.weight", AX_HF_3C, AX_HF_C, AX_HF_NEOX_QKV, 0},
    {"bqkv", "attention.query_key_value.bias", AX_HF_3C, AX_HF_VEC, AX_HF_NEOX_QKV, 1},
    {"wo", "attention.dense.weight", AX_HF_C, AX_HF_C, AX_HF_PLAIN, 0},
    {"bo", "attention.dense.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 1},
    {"mlp_norm", "post_attention_layernorm.weight", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"mlp_norm_bias", "post_attention_layernorm.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"w_up", "mlp.dense_h_to_4h.weight", AX_HF_F, AX_HF_C, AX_HF_PLAIN, 0},
    {"b_up", "mlp.dense_h_to_4h.bias", AX_HF_F, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"w_down", "mlp.dense_4h_to_h.weight", AX_HF_C, AX_HF_F, AX_HF_PLAIN, 0},
    {"b_down", "mlp.dense_4h_to_h.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
};

/* c_attn's columns are [q | k | v], head h at h*D of each part: the engine's row order */
const ax_hf_layer_tensor ax_hf_gpt2_layer[12] = {
    {"attn_norm", "ln_1.weight", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"attn_norm_bias", "ln_1.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"wqkv", "attn.c_attn.weight", AX_HF_3C, AX_HF_C, AX_HF_CONV1D, 0},
    {"bqkv", "attn.c_attn.bias", AX_HF_3C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"wo", "attn.c_proj.weight", AX_HF_C, AX_HF_C, AX_HF_CONV1D, 0},
    {"bo", "attn.c_proj.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"mlp_norm", "ln_2.weight", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"mlp_norm_bias", "ln_2.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"w_up", "mlp.c_fc.weight", AX_HF_F, AX_HF_C, AX_HF_CONV1D, 0},
    {"b_up", "mlp.c_fc.bias", AX_HF_F, AX_HF_VEC, AX_HF_PLAIN, 0},
    {"w_down", "mlp.c_proj.weight", AX_HF_C, AX_HF_F, AX_HF_CONV1D, 0},
    {"b_down", "mlp.c_proj.bias", AX_HF_C, AX_HF_VEC, AX_HF_PLAIN, 0},
};
