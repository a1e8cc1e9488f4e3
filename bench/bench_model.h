/* The model the training, scoring and decoding benchmarks time: GPT-2 small's shape (12 layers,
 * width 768, 12 heads) with a SwiGLU MLP of 2048 and tied embeddings, over `vocab` tokens. */
#pragma once
#include "lib/model/model.h"

static inline ax_model_config bench_gpt2_small(int vocab) {
    return (ax_model_config){.n_layers = 12,
                             .dim = 768,
                             .n_heads = 12,
                             .ffn = 2048,
                             .vocab = vocab,
                             .tie_embeddings = 1,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f};
}
