/* The training state in a checkpoint manifest, checked before anything continues from it.
 *
 * A manifest is plain JSON that people edit by hand, and the shards' XXH3 does not cover it: a
 * step or an optimizer count that is wrong would train on from an impossible state without a
 * word. So every field a run reads back is checked here and a bad one is refused, naming the
 * manifest and the field and saying what to do. The state object:
 *   step            == the manifest's "step" (== its step-NNNNNN folder: lib/ckpt checks that)
 *   optim_t         AdamW updates so far: one per optimizer step, so == step
 *   dataset_xxh3    the training set's checksum ("0x" + up to 16 hex digits)
 *   dataset_tokens  its token count (1 .. 2^53); the caller compares both with --data
 *   val_dataset_xxh3            optional: the validation set's checksum
 *   init_ckpt, init_xxh3        a fine-tuning run's start (both, exactly when config "init" is
 *                               set)
 * and of the config: the settings every train manifest has recorded are present (a setting
 * added later and missing means its default, ax_train_merge_resumed), and step <= "steps". */
#pragma once
#include <stdint.h>
#include "lib/ckpt/ckpt.h"
#include "lib/core/status.h"

typedef enum {
    AX_STATE_RESUME, /* --resume: every field above */
    AX_STATE_INIT,   /* --init: the weights only; a training state, if there is one, is checked
                      * for consistency (an imported model's state is {"step":0}) */
} ax_state_use;

/* AX_OK, or AX_ERR_CORRUPT naming the manifest, the field and what to do. */
ax_status ax_train_check_state(const ax_ckpt_t *ck, ax_state_use use);
