/* A model from a checkpoint: its shape from the manifest's config (the keys `axmem train`
 * writes: layers, dim, heads, ffn, vocab, tie-embeddings, rope-theta) and its tensors from the
 * global-layout blobs, sharded for whatever grid loads it. */
#pragma once
#include "lib/ckpt/ckpt.h"
#include "lib/model/model.h"

ax_status ax_model_config_from_ckpt(const ax_ckpt_t *ck, ax_model_config *out);
/* Checks the tensor table matches the model, reads global blob `blob` ("params", "adam_m",
 * "adam_v") and scatters this rank's shards into `local` (a slab with the model's layout). */
ax_status ax_model_load_blob(ax_model_t *m, const ax_ckpt_t *ck, const char *blob, float *local);
