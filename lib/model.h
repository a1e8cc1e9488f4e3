/* Llama-style decoder on one rank: token embedding, L x [RMSNorm -> QKV -> RoPE -> causal
 * attention -> out-proj -> residual; RMSNorm -> SwiGLU MLP -> residual], final RMSNorm,
 * LM head (tied to the embedding or separate), masked cross-entropy.
 *
 * Parameters, gradients (and the optimizer's moments, see optim.h) each live in one slab
 * with the same offset table (llm.c): tensor i occupies [offset, offset + numel). */
#pragma once
#include <stdint.h>
#include "lib/ckpt.h"
#include "lib/status.h"

typedef struct {
    int n_layers;
    int dim;     /* C */
    int n_heads; /* H; head dim D = C / H, must be even for RoPE */
    int ffn;     /* F: SwiGLU hidden size (gate and up are each [F, C]) */
    int vocab;   /* V */
    int tie_embeddings;
    float rope_theta;
    float norm_eps;
} ax_model_config;

/* Checks the shape is buildable; the error names the offending numbers and flags. */
ax_status ax_model_config_check(const ax_model_config *c);
/* Parameters of the model (embedding counted once when tied). */
int64_t ax_model_config_n_params(const ax_model_config *c);
/* Training FLOPs per token for sequence length T: 6 * (matmul params) + 12 * L * C * T
 * (the attention score and value products, forward + backward). */
double ax_model_flops_per_token(const ax_model_config *c, int T);

typedef struct ax_model ax_model_t;

/* Allocates parameters, gradients and activations for micro-batches of B x T tokens. */
ax_status ax_model_create(const ax_model_config *c, int B, int T, ax_model_t **out);
void ax_model_free(ax_model_t *m);
const ax_model_config *ax_model_config_of(const ax_model_t *m);

/* Counter-based init: element j of tensor i is drawn from (seed, stream i, index j), so the
 * weights depend only on the seed and the global shape. Norm weights start at 1. */
void ax_model_init(ax_model_t *m, uint64_t seed);

int64_t ax_model_n_params(const ax_model_t *m);
float *ax_model_params(ax_model_t *m);
float *ax_model_grads(ax_model_t *m);
int ax_model_n_tensors(const ax_model_t *m);
const ax_tensor_info *ax_model_tensors(const ax_model_t *m);
/* weight decay applies to matrices only (not norms) */
int ax_model_tensor_decays(const ax_model_t *m, int i);

void ax_model_zero_grad(ax_model_t *m);

/* Forward over inputs[B,T] with targets[B,T] and mask[B,T] (1 = supervised). Returns the
 * sum of per-target losses over supervised targets. With want_grad, the logits buffer is
 * replaced by dloss/dlogits scaled by dscale (= 1 / global supervised count) ready for
 * ax_model_backward. B may be smaller than the allocated batch. */
double ax_model_forward(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                        const uint8_t *mask, int B, float dscale, int want_grad);
/* Accumulates parameter gradients for the last forward (which must have had want_grad). */
void ax_model_backward(ax_model_t *m);

/* Logits of the last forward without want_grad: [B, T, V]. */
const float *ax_model_logits(const ax_model_t *m);
/* Per-target losses of the last forward: [B, T] (0 where mask is 0). */
const float *ax_model_losses(const ax_model_t *m);
