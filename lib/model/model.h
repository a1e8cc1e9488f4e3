/* Decoder-only transformer, 4D-parallel (AxoNN, docs/grid.md): token embedding
 * (+ learned positions), L x [norm -> QKV (+bias) -> rotary (whole or partial head; none with
 * learned positions) -> causal attention -> out-proj (+bias) -> residual; norm -> MLP (SwiGLU,
 * or GELU with biases) -> residual] (or GPT-NeoX's parallel residual x + attn(ln1 x) +
 * mlp(ln2 x)), final norm, LM head (tied to the embedding or separate), masked cross-entropy.
 * Norms are RMSNorm or LayerNorm with bias. All-zero architecture fields: Llama (RMSNorm, RoPE,
 * SwiGLU, no biases); GPT-NeoX/Pythia and GPT-2 set them (docs/training.md "Architectures").
 *
 * On a grid DxXxYxZ each rank holds, per weight matrix, a block split over X and Y (normal
 * layers: output rows over Y, input columns over X; transposed layers the other way round),
 * and of that block a 1/Z shard (ZeRO-3 along Z: parameters, gradients and optimizer state).
 * The residual stream is [tokens, C/Gx], replicated over Y; heads are split over Y; the
 * vocabulary is split over Y for the embedding and the LM head. The batch is split over
 * Gdata x Gz. Global weights are a function of the seed only, so every grid trains the same
 * model; on 1x1x1x1 the local slab is the global (checkpoint) layout.
 *
 * Parameters, gradients and the optimizer's moments each live in one local slab with the
 * same offset table (llm.c): tensor i's shard occupies [local offset, + local count). */
#pragma once
#include <stdint.h>
#include "lib/ckpt/ckpt.h"
#include "lib/dist/grid.h"
#include "lib/core/status.h"
#include "lib/model/sample.h"

typedef enum { AX_NORM_RMS = 0, AX_NORM_LAYER = 1 } ax_norm_kind; /* LayerNorm has a bias */
/* GELU = the exact erf form (GPT-NeoX/Pythia "gelu"); GELU_TANH = the tanh approximation (GPT-2
 * "gelu_new"). GELU MLPs: h = act(ln2 W_up^T + b_up), out = h W_down^T + b_down. */
typedef enum { AX_MLP_SWIGLU = 0, AX_MLP_GELU = 1, AX_MLP_GELU_TANH = 2 } ax_mlp_kind;
typedef enum { AX_POS_ROPE = 0, AX_POS_LEARNED = 1 } ax_pos_kind;

/* The shape and architecture. The fields after norm_eps all zero are the Llama model (the
 * checkpoint keys and train flags of docs/training.md "Architectures" set them). */
typedef struct {
    int n_layers;
    int dim;     /* C */
    int n_heads; /* H; head dim D = C / H (even when all of it rotates) */
    int ffn;     /* F: MLP hidden size (SwiGLU: gate and up are each [F, C]) */
    int vocab;   /* V */
    int tie_embeddings;
    float rope_theta;
    float norm_eps;
    ax_norm_kind norm;
    ax_mlp_kind mlp;
    int bias;              /* qkv, out-proj, MLP up and down have biases */
    int parallel_residual; /* x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX); 0: sequential */
    int rotary_dim;        /* dims rotated per head (partial rotary, even, <= head dim); 0 = all */
    ax_pos_kind pos;       /* learned positions add wpe[t] to the token embedding (GPT-2) */
    int max_pos;           /* rows of wpe (AX_POS_LEARNED); T must be <= max_pos */
    int n_kv_heads; /* grouped-query attention: Hkv K/V heads (dividing H); query head h reads
                     * K/V head h / (H / Hkv); wqkv is [(H + 2 Hkv) D, C]. 0 = n_heads */
} ax_model_config;

/* Checks the shape is buildable; the error names the offending numbers and flags. */
ax_status ax_model_config_check(const ax_model_config *c);
/* Checks the shape splits over the grid (heads and K/V heads by Gy, dim by Gx, ffn by Gy);
 * names both. */
ax_status ax_model_config_check_grid(const ax_model_config *c, const int dims[4]);
/* Parameters of the model (embedding counted once when tied). */
int64_t ax_model_config_n_params(const ax_model_config *c);
/* Training FLOPs per token for sequence length T: 6 * (matmul params) + 12 * L * C * T
 * (the attention score and value products, forward + backward). */
double ax_model_flops_per_token(const ax_model_config *c, int T);

typedef struct ax_model ax_model_t;

/* A model on grid g for micro-batches of B sequences of T tokens PER RANK (the global
 * micro-batch is B x Gdata x Gz). overlap: hide communication behind compute (AxoNN's OAR,
 * ORS, OAG) as lib/dist/overlap.h's AX_OVERLAP_* (1: on every axis; 2: only on axes where it
 * can help; 0 issues every collective blocking, for comparison). The grid is borrowed. */
ax_status ax_model_create_on(ax_grid_t *g, const ax_model_config *c, int B, int T, int overlap,
                             ax_model_t **out);
/* As ax_model_create_on, on the backend named by device ("cpu", or "cuda" in a CUDA build;
 * the --device flag), optionally with ":PRECISION" (--precision: "cuda:bf16", "cuda:fp32";
 * none or ":auto" is bf16 on cuda, fp32 on cpu; ax_ctx_open). ax_model_create_on uses "cpu". */
ax_status ax_model_create_dev(ax_grid_t *g, const ax_model_config *c, int B, int T, int overlap,
                              const char *device, ax_model_t **out);
/* How a model runs; none of it changes what it computes. */
typedef struct {
    int overlap;        /* as ax_model_create_on's */
    const char *device; /* as ax_model_create_dev's; NULL is "cpu" */
    /* activation recomputation (checkpointing): keep only each layer's input between the
     * forward and the backward, and rebuild the layer's other activations in the backward by
     * running its forward again (all but the down projection; the top layer's are still there).
     * Activation memory per layer falls from ~(5C + 3F + qkv) to C floats a token, for about a
     * third more compute and the forward's tensor-parallel all-reduces once more; results are
     * bit-identical. */
    int recompute;
    /* with Gz > 1: gather each layer's weights over Z just before its forward and again before
     * its backward, keeping two layers' blocks instead of every layer's for the whole step, and
     * reduce-scatter its gradients every micro-batch (AxoNN at scale, ZeRO-3). Gathered memory
     * falls by ~L/2 at the price of up to two gathers a layer a micro-batch. Results: the same
     * bits with one micro-batch, the same to rounding with more (the sum over Z comes per
     * micro-batch). Decoding (probe, generate) needs a model without it. */
    int stream_z;
    /* a model that only runs forwards and decodes (the scans): no gradient slab or blocks, a
     * params-sized buffer less (494 MB for GPT-2-124M). Backward, zero_grad, grad_sumsq,
     * read_grads and ax_optim_create refuse it (AX_ERR_ARG); ax_model_slab(.., AX_SLAB_GRADS)
     * is NULL. Not with stream_z. */
    int inference;
    /* reduce the gradients in bf16 (train --grad-comm bf16; lib/model/model_gradcomm.c): the Z
     * reduce-scatters and the data all-reduce move half the bytes, each partial sum rounded to
     * bf16 (a relative 2^-9 per combine), so results differ from fp32 reduction by that
     * rounding; the update stays fp32. Costs bf16 staging of half a float per gradient-block
     * element (Z > 1) and per slab element (D > 1); a no-op on a grid with D = Z = 1. Not with
     * inference. */
    int grad_comm_bf16;
} ax_model_opts;
ax_status ax_model_create_ex(ax_grid_t *g, const ax_model_config *c, int B, int T,
                             const ax_model_opts *opts, ax_model_t **out);
/* Bytes of this rank's activation buffers (the forward's saved activations and the backward's
 * scratch), as allocated. */
size_t ax_model_activation_bytes(const ax_model_t *m);
/* Bytes of the bf16 staging that gradients reduced in bf16 use (ax_model_opts.grad_comm_bf16;
 * 0 without it or on a grid with neither a data nor a Z axis), as allocated. */
size_t ax_model_grad_comm_bytes(const ax_model_t *m);
/* 1 when the activations only GEMMs read (norm and MLP outputs) are stored in bf16: a bf16
 * context on a backend that writes them so (lib/backend/backend.h) */
int ax_model_bf16_activations(const ax_model_t *m);
/* Serial convenience: a private 1x1x1x1 grid. */
ax_status ax_model_create(const ax_model_config *c, int B, int T, ax_model_t **out);
void ax_model_free(ax_model_t *m);
const ax_model_config *ax_model_config_of(const ax_model_t *m);
/* The sequences per rank (*B) and positions (*T) the model was created for: a forward reads
 * B x T tokens. */
void ax_model_shape(const ax_model_t *m, int *B, int *T);
ax_grid_t *ax_model_grid(const ax_model_t *m);
/* The model's overlap state (lib/dist/overlap.h): per axis, whether its collectives overlap and
 * why; a training run may switch an axis between steps (lib/dist/overlap_trial.h). */
struct ax_overlap *ax_model_overlap(const ax_model_t *m);
/* The execution context every op of the model runs on (lib/backend/backend.h). */
struct ax_ctx *ax_model_ctx(const ax_model_t *m);

/* Counter-based init: element j (row-major global index) of tensor i is drawn from
 * (seed, stream i, index j), so weights depend only on the seed and the global shape. */
void ax_model_init(ax_model_t *m, uint64_t seed);

/* ---- the local slabs ----
 * Parameters, gradients and the optimizer's moments live in the backend's memory (a GPU's, with
 * a device backend), which host code never dereferences. Host code copies through the backend
 * with the read/write functions below (one-time or inspection work: initialisation tweaks,
 * tests; never per step), and names a whole slab to the checkpoint functions with an opaque
 * ax_slab handle, which only lib/model turns back into memory. */
typedef struct ax_slab ax_slab;
typedef enum { AX_SLAB_PARAMS, AX_SLAB_GRADS } ax_model_slab_id;
int64_t ax_model_n_params(const ax_model_t *m); /* global parameter count */
int64_t ax_model_n_local(const ax_model_t *m);  /* floats in this rank's slabs */
/* The handle of this rank's parameter or gradient slab [n_local]. */
ax_slab *ax_model_slab(ax_model_t *m, ax_model_slab_id which);
/* host[0, n) <- the parameter / gradient slab's [off, off + n), in the local layout (on
 * 1x1x1x1 the global one; tensor i at ax_model_local_range). AX_ERR_ARG when the range leaves
 * [0, n_local); otherwise ax_ctx_status of the copy. */
ax_status ax_model_read_params(const ax_model_t *m, float *host, int64_t off, int64_t n);
ax_status ax_model_read_grads(const ax_model_t *m, float *host, int64_t off, int64_t n);
/* The parameter slab's [off, off + n) <- host[0, n); the blocks gathered over Z are refreshed
 * before the next forward (what every change of the parameters needs). */
ax_status ax_model_write_params(ax_model_t *m, const float *host, int64_t off, int64_t n);
int ax_model_n_tensors(const ax_model_t *m);
/* global tensor table (names, global shapes, offsets in the checkpoint blobs) */
const ax_tensor_info *ax_model_tensors(const ax_model_t *m);
/* this rank's shard of tensor i within the local slabs */
void ax_model_local_range(const ax_model_t *m, int i, int64_t *offset, int64_t *count);
/* weight decay applies to matrices only (not norms) */
int ax_model_tensor_decays(const ax_model_t *m, int i);

void ax_model_zero_grad(ax_model_t *m);
/* Sum of squared gradients of the GLOBAL model (collective; replicas counted once). */
ax_status ax_model_grad_sumsq(ax_model_t *m, double *out);

/* Forward over this rank's inputs[B,T], targets[B,T], mask[B,T] (1 = supervised). Returns
 * the sum of per-target losses over this rank's supervised targets (sum over the BATCH axis
 * for the global loss). With want_grad the logits become dloss/dlogits scaled by dscale
 * (= 1 / global supervised count), ready for backward. B may be below the allocated batch.
 * Collective over the grid. */
double ax_model_forward(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                        const uint8_t *mask, int B, float dscale, int want_grad);
/* Accumulates gradients of the last forward. last_micro: this is the step's last micro-batch,
 * so the gradients are also reduce-scattered over Z and all-reduced over data, ready for the
 * optimizer. ax_model_backward(m) == ax_model_backward_ex(m, 1). Collective. */
void ax_model_backward(ax_model_t *m);
void ax_model_backward_ex(ax_model_t *m, int last_micro);
/* ---- DP-SGD (lib/model/model_dp.c; docs/privacy.md "DP-SGD") ----
 * One micro-batch of a DP step: rows are examples, g_i the gradient of row i's mean loss over
 * its supervised targets (over ALL parameters). grads += scale * sum_i min(1, clip / ||g_i||) g_i
 * over this rank's rows (rows with no supervised target contribute nothing); with last_micro the
 * gradients are then reduced as ax_model_backward_ex does (summed over the ranks that split the
 * batch), ready for the noise and the optimizer. norms[B] (may be NULL) receives ||g_i||, the
 * global norm over every parameter, for this rank's rows (0 for padding rows). The norms come
 * from one backward that computes no gradients (ghost norms: docs/privacy.md), then the normal
 * backward runs on the rescaled loss gradients. Returns the sum of per-target losses over this
 * rank's supervised targets, as ax_model_forward (NAN when the model cannot: ax_model_status
 * says why). Collective over the grid. Call ax_model_zero_grad first in a step. */
double ax_model_dp_micro(ax_model_t *m, const int32_t *inputs, const int32_t *targets,
                         const uint8_t *mask, int B, float clip, float scale, int last_micro,
                         float *norms);
/* The reduced gradients (as the optimizer reads them) += N(0, std^2) per parameter element,
 * element j (row-major global index) of global tensor i drawn from a counter-based Gaussian
 * keyed by (seed, step, i, j): the noised gradient is identical on every grid, and added once
 * per parameter (replicas add the same value to the same reduced gradient). */
ax_status ax_model_dp_noise(ax_model_t *m, double std, uint64_t seed, int64_t step);
/* The Gaussian ax_model_dp_noise adds to element j of global tensor i (before the std). */
double ax_model_dp_noise_value(uint64_t seed, int64_t step, int i, int64_t j);

/* First communication or op failure seen (collectives and ops inside forward/backward cannot
 * return one; see ax_ctx_status); AX_OK if none. */
ax_status ax_model_status(const ax_model_t *m);
/* Forgets a collective failure that ax_model_status has reported, so a caller that handled it
 * (a retried step, a test) can go on with the next step; the message is ax_error_clear's. */
void ax_model_clear_status(ax_model_t *m);

/* ---- inspection of the last forward (tests, tools; copies through the backend) ----
 * B is the last forward's batch; each returns AX_ERR_ARG before any forward, otherwise
 * ax_ctx_status of the copy. Decoding reuses layer 0's buffers as scratch: read the residual
 * stream before decoding. */
/* host[B, T, Vl] <- the logits of the last forward without want_grad: this rank's vocabulary
 * slice, columns for global ids [v0, v0 + valid) (see ax_model_vocab_slice). */
ax_status ax_model_read_logits(const ax_model_t *m, float *host);
void ax_model_vocab_slice(const ax_model_t *m, int *v0, int *valid, int *Vl);
/* host[B, T, C/Gx] <- the residual stream entering layer l (l = n_layers: the last layer's
 * output), this rank's slice; AX_ERR_ARG for l outside [0, n_layers]. */
ax_status ax_model_read_residual(const ax_model_t *m, int l, float *host);
/* host[B, T] <- the per-target losses of the last forward (0 where mask is 0). */
ax_status ax_model_read_losses(const ax_model_t *m, float *host);

/* ---- KV-cached decoding (lib/model/model_decode.c); collective over the grid ----
 * Up to B sequences per rank (B <= the allocated batch x T), positions 0..T-1. Feed the prompt
 * one position at a time, then the chosen tokens: each step appends every sequence's token at
 * position pos to the caches and leaves this rank's logits slice [B, Vl] (see
 * ax_model_vocab_slice) for the next token. */
ax_status ax_model_decode_begin(ax_model_t *m, int B);
/* The rows every step decodes: the largest B begun since the caches were allocated (a smaller
 * B reuses them, its extra rows computing on whatever tokens they are fed). Token, key and out
 * arrays of the calls below hold this many entries. */
int ax_model_decode_batch(const ax_model_t *m);
void ax_model_decode_step(ax_model_t *m, const int32_t *tokens, int pos);
/* A step whose logits nobody reads (a prompt token before the last): the caches come out bit
 * for bit as ax_model_decode_step leaves them, but the last layer stops at its keys and values
 * (no attention, MLP, final norm or LM head: for GPT-2-124M a third of a step's multiply-adds).
 * The calls below refuse (AX_ERR_ARG) until the next ax_model_decode_step. */
void ax_model_decode_feed(ax_model_t *m, const int32_t *tokens, int pos);
/* Greedy choice over the whole vocabulary (all Y ranks): out[B], ties to the lowest id. */
ax_status ax_model_decode_argmax(ax_model_t *m, int32_t *out);
/* One draw per sequence from softmax(logits / T) truncated to the top-k ids and the top-p
 * nucleus, over the whole vocabulary (all Y ranks; lib/model/sample.h): out[B], sequence b's
 * draw keyed by keys[b], so (seed, key) gives the same token on every grid. Collective. */
ax_status ax_model_decode_sample(ax_model_t *m, const ax_sample_params *p, const uint64_t *keys,
                                 int32_t *out);
/* The full logits [B, V] of the last decode step on every rank (all-gathered over Y). */
ax_status ax_model_decode_full_logits(ax_model_t *m, float *out);

/* ---- checkpoints in the global layout (any grid writes, any grid reads) ----
 * Gathers this rank's slab `local` (ax_model_slab, or an optimizer moment: ax_optim_slab)
 * into the global tensor i, host global_out[numel], on rank 0 (other ranks may pass NULL).
 * Collective. */
ax_status ax_model_gather_tensor(ax_model_t *m, int i, const ax_slab *local, float *global_out);
/* Copies this rank's shard of global tensor i (host global[numel]) into the slab `local`. */
void ax_model_scatter_tensor(ax_model_t *m, int i, const float *global, ax_slab *local);
