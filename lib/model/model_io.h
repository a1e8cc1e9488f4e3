/* A model from a checkpoint: its shape from the manifest's config (the keys `axmem train`
 * writes: layers, dim, heads, ffn, vocab, tie-embeddings, rope-theta, norm-eps) and its tensors
 * from the global-layout blobs, sharded for whatever grid loads it. */
#pragma once
#include "lib/ckpt/ckpt.h"
#include "lib/model/model.h"

/* RMSNorm epsilon of manifests that do not store "norm-eps" (written before it was stored),
 * and train's default: a double, so that (float) of it is the 1e-5f those runs used. */
#define AX_NORM_EPS_DEFAULT 1e-5
#define AX_NORM_EPS_DEFAULT_TEXT "1e-5"

ax_status ax_model_config_from_ckpt(const ax_ckpt_t *ck, ax_model_config *out);
/* Checks the tensor table matches the model, reads global blob `blob` ("params", "adam_m",
 * "adam_v") and scatters this rank's shards into the slab `local` (ax_model_slab(m,
 * AX_SLAB_PARAMS), or a moment: ax_optim_slab). */
ax_status ax_model_load_blob(ax_model_t *m, const ax_ckpt_t *ck, const char *blob, ax_slab *local);
/* The global tensor table of a model of shape c (names, shapes, offsets and counts exactly as
 * ax_model_tensors gives them), without building a model: what a converter needs to write a
 * checkpoint every grid loads. out holds ax_model_config_n_tensors(c) entries. */
int ax_model_config_n_tensors(const ax_model_config *c);
void ax_model_tensor_table(const ax_model_config *c, ax_tensor_info *out);
/* Per tensor of shape c in slab order, emit(u, layer, block): its layer (-1: outside the
 * layers) and the elements of its block on one rank of grid dims {D, X, Y, Z} before the ZeRO
 * split over Z (what model.c allocates; the performance model, plan/perfmodel.c, counts them). */
void ax_model_rank_blocks(const ax_model_config *c, const int dims[4],
                          void (*emit)(void *u, int layer, int64_t block), void *u);
/* The position limit a checkpoint's model declares (an export's max_position_embeddings):
 * "max-positions" in its config (an imported model's, from its config.json); else the larger
 * of the state's "init_max_positions" (a fine-tune: the limit of the checkpoint `train --init`
 * started from) and "seq-len" (the sequences it trained on); else 2048 (LlamaConfig's
 * default). */
int ax_model_position_limit(const ax_ckpt_t *ck);
