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
